package sim_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// authedMember is a one-member keyFile set with a root user admin:pw.
func authedMember(t *testing.T, extra ...string) (*member, *mongo.Client) {
	t.Helper()
	kf := keyFile(t, "YXV0aHotdGVzdHMta2V5ZmlsZQ")
	ms, _ := initiated(t, 1, fastSettings, append([]string{"--keyFile", kf}, extra...)...)
	mustRun(t, ms[0].client(t), bson.D{{Key: "createUser", Value: "admin"}, {Key: "pwd", Value: "pw"},
		{Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "root"}, {Key: "db", Value: "admin"}}}}})
	return ms[0], ms[0].client(t, "admin:pw@", "authSource=admin")
}

func runOn(c *mongo.Client, db string, cmd bson.D) (bson.Raw, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return c.Database(db).RunCommand(ctx, cmd).Raw()
}

// Every built-in role against a set of commands, as the manual's
// "Built-In Roles" tables grant them (db roles granted on app).
func TestBuiltinRoleMatrix(t *testing.T) {
	m, ac := authedMember(t)
	if _, err := runOn(ac, "app", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "x", Value: 1}}}}}); err != nil {
		t.Fatal(err)
	}
	type probe struct {
		name, db string
		cmd      bson.D
	}
	probes := []probe{
		{"find", "app", bson.D{{Key: "find", Value: "c"}}},
		{"insert", "app", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "y", Value: 1}}}}}},
		{"listDatabases", "admin", bson.D{{Key: "listDatabases", Value: 1}, {Key: "authorizedDatabases", Value: false}}},
		{"dbStats", "app", bson.D{{Key: "dbStats", Value: 1}}},
		{"collStats", "app", bson.D{{Key: "collStats", Value: "c"}}},
		{"oplog", "local", bson.D{{Key: "find", Value: "oplog.rs"}, {Key: "limit", Value: 1}}},
		{"serverStatus", "admin", bson.D{{Key: "serverStatus", Value: 1}}},
		{"replSetGetStatus", "admin", bson.D{{Key: "replSetGetStatus", Value: 1}}},
		{"getCmdLineOpts", "admin", bson.D{{Key: "getCmdLineOpts", Value: 1}}},
		{"usersInfo", "app", bson.D{{Key: "usersInfo", Value: 1}}},
		{"systemUsers", "admin", bson.D{{Key: "find", Value: "system.users"}}},
		{"fsync", "admin", bson.D{{Key: "fsync", Value: 1}}},
		{"createIndexes", "app", bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "x", Value: 1}}}, {Key: "name", Value: "x_1"}}}}}},
	}
	allowed := map[string]string{
		"read":                  "find dbStats collStats",
		"readWrite":             "find insert dbStats collStats createIndexes",
		"dbAdmin":               "dbStats collStats createIndexes",
		"dbOwner":               "find insert dbStats collStats usersInfo createIndexes",
		"userAdmin":             "usersInfo",
		"clusterMonitor":        "listDatabases dbStats collStats oplog serverStatus replSetGetStatus getCmdLineOpts",
		"clusterManager":        "replSetGetStatus",
		"clusterAdmin":          "listDatabases dbStats collStats oplog serverStatus replSetGetStatus getCmdLineOpts fsync",
		"hostManager":           "fsync",
		"backup":                "find listDatabases collStats oplog serverStatus systemUsers",
		"restore":               "insert usersInfo systemUsers createIndexes",
		"readAnyDatabase":       "find listDatabases dbStats collStats",
		"readWriteAnyDatabase":  "find insert listDatabases dbStats collStats createIndexes",
		"userAdminAnyDatabase":  "listDatabases usersInfo systemUsers",
		"dbAdminAnyDatabase":    "listDatabases dbStats collStats createIndexes",
		"root":                  "find insert listDatabases dbStats collStats oplog serverStatus replSetGetStatus getCmdLineOpts usersInfo systemUsers fsync createIndexes",
		"enableSharding":        "",
		"directShardOperations": "",
	}
	for role, want := range allowed {
		db := "admin"
		if role == "read" || role == "readWrite" || role == "dbAdmin" || role == "dbOwner" || role == "userAdmin" {
			db = "app"
		}
		user := "u_" + role
		mustRun(t, ac, bson.D{{Key: "createUser", Value: user}, {Key: "pwd", Value: "pw"},
			{Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: role}, {Key: "db", Value: db}}}}})
		uc := m.client(t, user+":pw@", "authSource=admin")
		for _, p := range probes {
			_, err := runOn(uc, p.db, p.cmd)
			ok := !hasCode(err, 13)
			if exp := strings.Contains(" "+want+" ", " "+p.name+" "); ok != exp {
				t.Errorf("%s %s: allowed=%v, want %v (%v)", role, p.name, ok, exp, err)
			}
		}
	}
}

// Privileges are resolved per command: a grant or revoke reaches an open
// connection, and a dropped user's connection is refused.
func TestRoleChangesReachOpenConnections(t *testing.T) {
	m, ac := authedMember(t)
	mustRun(t, ac, bson.D{{Key: "createUser", Value: "app"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{}}})
	uc := m.client(t, "app:pw@", "authSource=admin")
	find := func() error {
		_, err := runOn(uc, "shop", bson.D{{Key: "find", Value: "orders"}})
		return err
	}
	if err := find(); !hasCode(err, 13) {
		t.Fatalf("find without roles: want 13, got %v", err)
	}
	mustRun(t, ac, bson.D{{Key: "grantRolesToUser", Value: "app"}, {Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "read"}, {Key: "db", Value: "shop"}}}}})
	if err := find(); err != nil {
		t.Fatalf("find after grantRolesToUser: %v", err)
	}
	mustRun(t, ac, bson.D{{Key: "revokeRolesFromUser", Value: "app"}, {Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "read"}, {Key: "db", Value: "shop"}}}}})
	if err := find(); !hasCode(err, 13) {
		t.Fatalf("find after revokeRolesFromUser: want 13, got %v", err)
	}
	// A custom role's change reaches its holders too.
	mustRun(t, ac, bson.D{{Key: "createRole", Value: "reader"}, {Key: "privileges", Value: bson.A{}}, {Key: "roles", Value: bson.A{}}})
	mustRun(t, ac, bson.D{{Key: "grantRolesToUser", Value: "app"}, {Key: "roles", Value: bson.A{"reader"}}})
	if err := find(); !hasCode(err, 13) {
		t.Fatalf("find with an empty role: want 13, got %v", err)
	}
	mustRun(t, ac, bson.D{{Key: "grantPrivilegesToRole", Value: "reader"}, {Key: "privileges", Value: bson.A{
		bson.D{{Key: "resource", Value: bson.D{{Key: "db", Value: "shop"}, {Key: "collection", Value: "orders"}}}, {Key: "actions", Value: bson.A{"find"}}}}}})
	if err := find(); err != nil {
		t.Fatalf("find after grantPrivilegesToRole: %v", err)
	}
	if _, err := runOn(uc, "shop", bson.D{{Key: "find", Value: "other"}}); !hasCode(err, 13) {
		t.Fatalf("a privilege on one collection granted another: %v", err)
	}
	mustRun(t, ac, bson.D{{Key: "dropUser", Value: "app"}})
	if err := find(); !hasCode(err, 13) {
		t.Fatalf("find after dropUser: want 13, got %v", err)
	}
}

// The localhost exception as mongod: before any user or role, a loopback
// client may initiate, watch the set and create the first user in admin;
// nothing else.
func TestLocalhostExceptionBootstrap(t *testing.T) {
	kf := keyFile(t, "bG9jYWxob3N0LWV4Y2VwdGlvbi1rZXk")
	ms := []*member{newMember(t, "--keyFile", kf), newMember(t, "--keyFile", kf), newMember(t, "--keyFile", kf)}
	c := ms[0].client(t)
	// the tutorial: rs.initiate(), rs.status(), then db.createUser() on the primary
	mustRun(t, c, bson.D{{Key: "replSetInitiate", Value: rsConfig(ms, fastSettings)}})
	p := waitPrimary(t, ms, 30*time.Second)
	pc := ms[p].client(t)
	mustRun(t, pc, bson.D{{Key: "replSetGetStatus", Value: 1}})
	for _, probe := range []struct {
		db  string
		cmd bson.D
	}{
		{"app", bson.D{{Key: "find", Value: "c"}}},
		{"app", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{}}}}},
		{"admin", bson.D{{Key: "replSetGetConfig", Value: 1}}},
		{"admin", bson.D{{Key: "serverStatus", Value: 1}}},
		{"app", bson.D{{Key: "createUser", Value: "u"}, {Key: "pwd", Value: "p"}, {Key: "roles", Value: bson.A{}}}},
		{"admin", bson.D{{Key: "createRole", Value: "r"}, {Key: "privileges", Value: bson.A{}}, {Key: "roles", Value: bson.A{}}}},
	} {
		if _, err := runOn(pc, probe.db, probe.cmd); !hasCode(err, 13) {
			t.Fatalf("%s under the localhost exception: want 13, got %v", probe.cmd[0].Key, err)
		}
	}
	// listDatabases runs, showing only databases the (absent) user may use.
	r := mustRun(t, pc, bson.D{{Key: "listDatabases", Value: 1}})
	if vals, _ := r.Lookup("databases").Array().Values(); len(vals) != 0 {
		t.Fatalf("listDatabases under the localhost exception: %v", r)
	}
	mustRun(t, pc, bson.D{{Key: "createUser", Value: "admin"}, {Key: "pwd", Value: "pw"},
		{Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "userAdminAnyDatabase"}, {Key: "db", Value: "admin"}}, "readWriteAnyDatabase"}}})
	if _, err := run(pc, bson.D{{Key: "replSetGetStatus", Value: 1}}); !hasCode(err, 13) {
		t.Fatalf("replSetGetStatus after the first user: want 13, got %v", err)
	}
	ac := ms[p].client(t, "admin:pw@", "authSource=admin")
	if _, err := runOn(ac, "app", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{}}}}); err != nil {
		t.Fatal(err)
	}
	// the user reaches every member
	for _, m := range ms {
		mc := m.client(t, "admin:pw@", "authSource=admin", "readPreference=secondaryPreferred")
		waitFor(t, 20*time.Second, "user replicated to "+m.host, func() bool {
			_, err := run(mc, bson.D{{Key: "connectionStatus", Value: 1}})
			return err == nil
		})
	}
}

func TestLocalhostExceptionDisabled(t *testing.T) {
	kf := keyFile(t, "bm8tbG9jYWxob3N0LWJ5cGFzcy1rZXk")
	m := newMember(t, "--keyFile", kf, "--setParameter", "enableLocalhostAuthBypass=false")
	if _, err := run(m.client(t), bson.D{{Key: "replSetInitiate", Value: rsConfig([]*member{m}, fastSettings)}}); !hasCode(err, 13) {
		t.Fatalf("replSetInitiate with enableLocalhostAuthBypass=false: want 13, got %v", err)
	}
	if _, err := run(m.client(t), bson.D{{Key: "createUser", Value: "admin"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{}}}); !hasCode(err, 13) {
		t.Fatalf("createUser with enableLocalhostAuthBypass=false: want 13, got %v", err)
	}
}

// Special resources: system collections, local and config, collection
// privileges, anyAction, listDatabases/listCollections filtering.
func TestPrivilegeResources(t *testing.T) {
	m, ac := authedMember(t)
	for _, db := range []string{"shop", "hr"} {
		if _, err := runOn(ac, db, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{}}}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, coll := range []string{"secret", "hidden"} {
		if _, err := runOn(ac, "shop", bson.D{{Key: "insert", Value: coll}, {Key: "documents", Value: bson.A{bson.D{}}}}); err != nil {
			t.Fatal(err)
		}
	}
	mustRun(t, ac, bson.D{{Key: "createRole", Value: "ops"}, {Key: "roles", Value: bson.A{}}, {Key: "privileges", Value: bson.A{
		bson.D{{Key: "resource", Value: bson.D{{Key: "db", Value: "shop"}, {Key: "collection", Value: "c"}}}, {Key: "actions", Value: bson.A{"anyAction"}}},
		bson.D{{Key: "resource", Value: bson.D{{Key: "cluster", Value: true}}}, {Key: "actions", Value: bson.A{"serverStatus"}}},
		bson.D{{Key: "resource", Value: bson.D{{Key: "db", Value: "shop"}, {Key: "collection", Value: "secret"}}}, {Key: "actions", Value: bson.A{"update"}}},
	}}})
	mustRun(t, ac, bson.D{{Key: "createUser", Value: "op"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{"ops", bson.D{{Key: "role", Value: "read"}, {Key: "db", Value: "hr"}}}}})
	oc := m.client(t, "op:pw@", "authSource=admin")
	cases := []struct {
		db    string
		cmd   bson.D
		allow bool
	}{
		{"shop", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{}}}}, true},
		{"shop", bson.D{{Key: "find", Value: "c"}}, true},
		{"shop", bson.D{{Key: "find", Value: "secret"}}, false},
		{"shop", bson.D{{Key: "update", Value: "secret"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}}}}}}}, true},
		{"shop", bson.D{{Key: "update", Value: "secret"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}}}, {Key: "upsert", Value: true}}}}}, false},
		{"shop", bson.D{{Key: "dbStats", Value: 1}}, false},
		{"admin", bson.D{{Key: "serverStatus", Value: 1}}, true},
		{"admin", bson.D{{Key: "replSetGetStatus", Value: 1}}, false},
		{"hr", bson.D{{Key: "find", Value: "c"}}, true},
		{"hr", bson.D{{Key: "find", Value: "system.users"}}, false},
		{"hr", bson.D{{Key: "find", Value: "system.js"}}, true},
		{"local", bson.D{{Key: "find", Value: "oplog.rs"}}, false},
		{"shop", bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$lookup", Value: bson.D{{Key: "from", Value: "secret"}, {Key: "localField", Value: "a"}, {Key: "foreignField", Value: "b"}, {Key: "as", Value: "x"}}}}}}, {Key: "cursor", Value: bson.D{}}}, false},
		{"shop", bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{}}}}}, {Key: "cursor", Value: bson.D{}}}, true},
		{"hr", bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$out", Value: "copy"}}}}, {Key: "cursor", Value: bson.D{}}}, false},
		{"shop", bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$merge", Value: bson.D{{Key: "into", Value: "c"}}}}}}, {Key: "cursor", Value: bson.D{}}}, true},
		{"shop", bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}}}, {Key: "upsert", Value: true}}}}}, true},
		{"hr", bson.D{{Key: "listCollections", Value: 1}}, true},
		{"shop", bson.D{{Key: "listCollections", Value: 1}}, false},
	}
	for _, cs := range cases {
		_, err := runOn(oc, cs.db, cs.cmd)
		if got := !hasCode(err, 13); got != cs.allow {
			t.Errorf("%s %v: allowed=%v, want %v (%v)", cs.db, cs.cmd[0], got, cs.allow, err)
		}
	}
	// mongod's message names the whole command as BSONObj::toString prints it.
	_, err := runOn(oc, "shop", bson.D{{Key: "find", Value: "secret"}, {Key: "filter", Value: bson.D{{Key: "n", Value: int32(1)}}}})
	if msg := fmt.Sprint(err); !strings.Contains(msg, `not authorized on shop to execute command { find: "secret", filter: { n: 1 }, `) || !strings.Contains(msg, `$db: "shop"`) {
		t.Fatalf("unauthorized message: %s", msg)
	}
	// listDatabases without the privilege: the databases the user has privileges in.
	r, err := runOn(oc, "admin", bson.D{{Key: "listDatabases", Value: 1}, {Key: "nameOnly", Value: true}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	vals, _ := r.Lookup("databases").Array().Values()
	for _, v := range vals {
		names = append(names, v.Document().Lookup("name").StringValue())
	}
	if fmt.Sprint(names) != "[hr shop]" {
		t.Fatalf("listDatabases for a user without listDatabases: %v", names)
	}
	// listCollections authorizedCollections: only the collections privileges name.
	r, err = runOn(oc, "shop", bson.D{{Key: "listCollections", Value: 1}, {Key: "nameOnly", Value: true}, {Key: "authorizedCollections", Value: true}})
	if err != nil {
		t.Fatal(err)
	}
	vals, _ = r.Lookup("cursor", "firstBatch").Array().Values()
	names = nil
	for _, v := range vals {
		names = append(names, v.Document().Lookup("name").StringValue())
	}
	if fmt.Sprint(names) != "[c secret]" {
		t.Fatalf("authorizedCollections: %v", names)
	}
}

// A cursor belongs to the user that opened it: another user's getMore is
// refused, and the cursor survives for its owner.
func TestCursorBelongsToItsUser(t *testing.T) {
	m, ac := authedMember(t)
	if _, err := runOn(ac, "app", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{}, bson.D{}, bson.D{}}}}); err != nil {
		t.Fatal(err)
	}
	mustRun(t, ac, bson.D{{Key: "createUser", Value: "other"}, {Key: "pwd", Value: "pw"}, {Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "read"}, {Key: "db", Value: "app"}}}}})
	r := mustRunOn(t, ac, "app", bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 1}})
	id := r.Lookup("cursor", "id").Int64()
	oc := m.client(t, "other:pw@", "authSource=admin")
	getMore := bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}}
	wantErr(t, oc, "app", getMore, 13, fmt.Sprintf("cursor id %d was not created by the authenticated user", id))
	if r := mustRunOn(t, ac, "app", getMore); len(mustArray(r.Lookup("cursor", "nextBatch"))) != 2 {
		t.Fatalf("owner's getMore: %v", r)
	}
}

func mustArray(v bson.RawValue) []bson.RawValue {
	vals, _ := v.Array().Values()
	return vals
}
