package sim

import (
	"testing"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestResourceCovers(t *testing.T) {
	db := func(d string) Resource { return Resource{DB: d} }
	ns := func(d, c string) Resource { return Resource{DB: d, Collection: c} }
	cases := []struct {
		p, target Resource
		want      bool
	}{
		{Resource{Any: true}, clusterRes(), true},
		{Resource{Any: true}, ns("local", "oplog.rs"), true},
		{clusterRes(), db("admin"), false},
		{db("app"), clusterRes(), false},
		{db("app"), db("app"), true},
		{db("app"), ns("app", "c"), true},
		{db("app"), ns("app", "system.users"), false},
		{db("app"), ns("other", "c"), false},
		{Resource{}, ns("app", "c"), true},
		{Resource{}, db("app"), true},
		{Resource{}, ns("local", "oplog.rs"), false},
		{Resource{}, ns("config", "c"), false},
		{Resource{}, db("local"), false},
		{Resource{}, ns("app", "system.js"), false},
		{db("local"), ns("local", "oplog.rs"), true},
		{db("local"), ns("local", "replset.minvalid"), false},
		{ns("app", "c"), ns("app", "c"), true},
		{ns("app", "c"), ns("app", "d"), false},
		{ns("app", "c"), db("app"), false},
		{ns("", "system.users"), ns("hr", "system.users"), true},
		{ns("", "c"), ns("x", "c"), true},
	}
	for _, c := range cases {
		if got := c.p.covers(c.target); got != c.want {
			t.Errorf("%+v covers %+v: %v, want %v", c.p, c.target, got, c.want)
		}
	}
	if !allowed([]Privilege{{Resource: db("app"), Actions: []string{"anyAction"}}}, ns("app", "c"), "find", "dropCollection") {
		t.Error("anyAction does not grant every action")
	}
}

func TestBuiltinRolesByVersion(t *testing.T) {
	// directShardOperations: a placeholder without privileges in 6.0,
	// issueDirectShardOperations from 7.0 (root holds it through the role).
	if !builtinRoleExists("directShardOperations", "admin") || builtinRoleExists("directShardOperations", "app") {
		t.Error("directShardOperations is an admin role")
	}
	if builtinRoleExists("root", "app") || !builtinRoleExists("read", "app") {
		t.Error("admin-only roles")
	}
	has := func(role, mm string) bool {
		return allowed(builtinPrivileges(role, "admin", mm), clusterRes(), "issueDirectShardOperations")
	}
	if has("directShardOperations", "6.0") || !has("directShardOperations", "7.0") || !has("root", "8.0") || has("root", "6.0") {
		t.Error("issueDirectShardOperations by version")
	}
}

// renameCollection's rule (the command itself belongs to another slice).
func TestRenameCollectionAuthz(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DBPath = t.TempDir()
	cfg.Auth = true
	n, err := NewNode(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = n.store.Close() }()
	do := func(c *conn, db string, d bson.D) bson.Raw {
		reply, _ := c.handle(&Request{Body: mustRaw(append(d, bson.E{Key: "$db", Value: db}))})
		return mustRaw(reply)
	}
	local := &conn{n: n, nc: nopConn{}, id: 1, local: true}
	do(local, "admin", bson.D{{Key: "createUser", Value: "root"}, {Key: "pwd", Value: "p"}, {Key: "roles", Value: bson.A{"root"}}})
	root := &conn{n: n, nc: nopConn{}, id: 2, users: []authedUser{{user: "root", db: "admin"}}}
	for _, u := range []struct {
		name  string
		roles bson.A
	}{{"rw", bson.A{bson.D{{Key: "role", Value: "readWrite"}, {Key: "db", Value: "app"}}}},
		{"r", bson.A{bson.D{{Key: "role", Value: "read"}, {Key: "db", Value: "app"}}}},
		{"rwBoth", bson.A{bson.D{{Key: "role", Value: "readWrite"}, {Key: "db", Value: "app"}}, bson.D{{Key: "role", Value: "readWrite"}, {Key: "db", Value: "other"}}}}} {
		do(root, "admin", bson.D{{Key: "createUser", Value: u.name}, {Key: "pwd", Value: "p"}, {Key: "roles", Value: u.roles}})
	}
	rename := func(user, from, to string) bool {
		c := &conn{n: n, nc: nopConn{}, id: 3, users: []authedUser{{user: user, db: "admin"}}}
		req := &Request{Body: mustRaw(bson.D{{Key: "renameCollection", Value: from}, {Key: "to", Value: to}, {Key: "$db", Value: "admin"}})}
		return authzRenameCollection(c, req) == nil
	}
	if !rename("rw", "app.a", "app.b") {
		t.Error("readWrite cannot rename within its database")
	}
	if rename("r", "app.a", "app.b") {
		t.Error("read renames")
	}
	if rename("rw", "app.a", "other.b") {
		t.Error("readWrite on app renames into other")
	}
	if !rename("rwBoth", "app.a", "other.b") {
		t.Error("readWrite on both cannot rename across")
	}
}
