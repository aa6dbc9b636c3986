package sim

import (
	"testing"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestUserAndRoleCommands(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DBPath = t.TempDir()
	cfg.Auth = true
	n, err := NewNode(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = n.store.Close() }()
	local := &conn{n: n, nc: nopConn{}, id: 1, local: true}
	do := func(c *conn, db string, d bson.D) bson.Raw {
		reply, _ := c.handle(&Request{Body: mustRaw(append(d, bson.E{Key: "$db", Value: db}))})
		return mustRaw(reply)
	}
	code := func(r bson.Raw) int64 { v, _ := r.Lookup("code").AsInt64OK(); return v }
	// localhost exception: first user only in admin
	if r := do(local, "app", bson.D{{Key: "createUser", Value: "u"}, {Key: "pwd", Value: "p"}, {Key: "roles", Value: bson.A{}}}); code(r) != 13 {
		t.Fatalf("first user outside admin: %v", r)
	}
	if r := do(local, "admin", bson.D{{Key: "createUser", Value: "boss"}, {Key: "pwd", Value: "p"}, {Key: "roles", Value: bson.A{"userAdminAnyDatabase"}}}); code(r) != 0 {
		t.Fatalf("first user: %v", r)
	}
	if r := do(local, "admin", bson.D{{Key: "createUser", Value: "x"}, {Key: "pwd", Value: "p"}, {Key: "roles", Value: bson.A{}}}); code(r) != 13 {
		t.Fatalf("exception must close after the first user: %v", r)
	}
	boss := &conn{n: n, nc: nopConn{}, id: 2, users: []authedUser{{user: "boss", db: "admin"}}}
	if r := do(boss, "admin", bson.D{{Key: "createUser", Value: "boss"}, {Key: "pwd", Value: "p"}, {Key: "roles", Value: bson.A{}}}); code(r) != 51003 {
		t.Fatalf("duplicate user: %v", r)
	}
	if r := do(boss, "app", bson.D{{Key: "createRole", Value: "reporter"}, {Key: "privileges", Value: bson.A{}}, {Key: "roles", Value: bson.A{"read"}}}); code(r) != 0 {
		t.Fatalf("createRole: %v", r)
	}
	if r := do(boss, "app", bson.D{{Key: "createUser", Value: "rep"}, {Key: "pwd", Value: "p"}, {Key: "roles", Value: bson.A{"reporter"}}}); code(r) != 0 {
		t.Fatalf("user with custom role: %v", r)
	}
	if r := do(boss, "app", bson.D{{Key: "createUser", Value: "bad"}, {Key: "pwd", Value: "p"}, {Key: "roles", Value: bson.A{"nosuchrole"}}}); code(r) != 31 {
		t.Fatalf("unknown role: %v", r)
	}
	rep := &conn{n: n, nc: nopConn{}, id: 3, users: []authedUser{{user: "rep", db: "app"}}}
	if r := do(rep, "app", bson.D{{Key: "find", Value: "c"}}); code(r) != 0 {
		t.Fatalf("inherited read: %v", r)
	}
	if r := do(rep, "app", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{}}}}); code(r) != 13 {
		t.Fatalf("reporter insert: %v", r)
	}
	if r := do(rep, "other", bson.D{{Key: "find", Value: "c"}}); code(r) != 13 {
		t.Fatalf("reporter on another db: %v", r)
	}
	if r := do(boss, "app", bson.D{{Key: "updateUser", Value: "rep"}, {Key: "roles", Value: bson.A{"readWrite"}}}); code(r) != 0 {
		t.Fatalf("updateUser: %v", r)
	}
	r := do(boss, "app", bson.D{{Key: "usersInfo", Value: "rep"}})
	users, _ := r.Lookup("users").Array().Values()
	if len(users) != 1 || mustValues(users[0].Document().Lookup("roles"))[0].Document().Lookup("role").StringValue() != "readWrite" {
		t.Fatalf("usersInfo: %v", r)
	}
	if _, err := users[0].Document().LookupErr("credentials"); err == nil {
		t.Fatal("credentials shown without showCredentials")
	}
	if r := do(boss, "app", bson.D{{Key: "rolesInfo", Value: "reporter"}}); len(mustValues(r.Lookup("roles"))) != 1 {
		t.Fatalf("rolesInfo: %v", r)
	}
	if r := do(boss, "app", bson.D{{Key: "dropUser", Value: "rep"}}); code(r) != 0 {
		t.Fatalf("dropUser: %v", r)
	}
	if r := do(boss, "app", bson.D{{Key: "dropUser", Value: "rep"}}); code(r) != 11 {
		t.Fatalf("dropUser twice: %v", r)
	}
	unauth := &conn{n: n, nc: nopConn{}, id: 4}
	if r := do(unauth, "admin", bson.D{{Key: "serverStatus", Value: 1}}); code(r) != 13 {
		t.Fatalf("unauthenticated serverStatus: %v", r)
	}
	for _, cmd := range []string{"hello", "ping", "buildInfo"} {
		if r := do(unauth, "admin", bson.D{{Key: cmd, Value: 1}}); code(r) != 0 {
			t.Fatalf("unauthenticated %s: %v", cmd, r)
		}
	}
}

func mustValues(v bson.RawValue) []bson.RawValue {
	arr, _ := v.ArrayOK()
	vals, _ := arr.Values()
	return vals
}

func TestReauthentication(t *testing.T) {
	c := &conn{users: []authedUser{{user: "a", db: "app"}}}
	if e := c.reauthentication("a", "app"); e != nil {
		t.Fatalf("same user again: %v", e)
	}
	if e := c.reauthentication("b", "app"); e == nil || e.Code != 5626701 || e.Msg != "Each client connection may only be authenticated once. Previously authenticated as: a@app" {
		t.Fatalf("another user: %v", e)
	}
	if e := c.reauthentication("a", "admin"); e == nil || e.Code != 5626702 {
		t.Fatalf("another database: %v", e)
	}
	if e := (&conn{}).reauthentication("a", "app"); e != nil {
		t.Fatalf("first authentication: %v", e)
	}
}
