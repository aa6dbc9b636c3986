package sim_test

import (
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

func wantErr(t *testing.T, c *mongo.Client, db string, cmd bson.D, code int32, msg string) {
	t.Helper()
	_, err := runOn(c, db, cmd)
	if !hasCode(err, code) || !strings.Contains(fmt.Sprint(err), msg) {
		t.Fatalf("%s: want %d %q, got %v", cmd[0].Key, code, msg, err)
	}
}

func keys(d bson.Raw) string {
	els, _ := d.Elements()
	var out []string
	for _, e := range els {
		out = append(out, e.Key())
	}
	return strings.Join(out, ",")
}

func oneDoc(t *testing.T, r bson.Raw, field string) bson.Raw {
	t.Helper()
	vals, _ := r.Lookup(field).Array().Values()
	if len(vals) != 1 {
		t.Fatalf("want one %s, got %v", field, r)
	}
	return vals[0].Document()
}

func TestUserCommandsAsMongod(t *testing.T) {
	_, ac := authedMember(t)
	wantErr(t, ac, "app", bson.D{{Key: "createUser", Value: "u"}, {Key: "pwd", Value: "p"}}, 40414, "BSON field 'createUser.roles' is missing but a required field")
	create := bson.D{{Key: "createUser", Value: "u"}, {Key: "pwd", Value: "p"}, {Key: "customData", Value: bson.D{{Key: "team", Value: "a"}}},
		{Key: "roles", Value: bson.A{"readWrite"}}, {Key: "mechanisms", Value: bson.A{"SCRAM-SHA-256"}},
		{Key: "authenticationRestrictions", Value: bson.A{bson.D{{Key: "clientSource", Value: bson.A{"127.0.0.1"}}}}}}
	if _, err := runOn(ac, "app", create); err != nil {
		t.Fatal(err)
	}
	wantErr(t, ac, "app", create, 51003, `User "u@app" already exists`)
	wantErr(t, ac, "app", bson.D{{Key: "createUser", Value: "v"}, {Key: "pwd", Value: "p"}, {Key: "roles", Value: bson.A{"nope"}}}, 31, "Could not find role: nope@app")
	wantErr(t, ac, "local", bson.D{{Key: "createUser", Value: "v"}, {Key: "pwd", Value: "p"}, {Key: "roles", Value: bson.A{}}}, 2, "Cannot create users in the local database")

	r, err := runOn(ac, "app", bson.D{{Key: "usersInfo", Value: "u"}})
	if err != nil {
		t.Fatal(err)
	}
	u := oneDoc(t, r, "users")
	if k := keys(u); k != "_id,userId,user,db,customData,roles,mechanisms" {
		t.Fatalf("usersInfo fields: %s", k)
	}
	if m := u.Lookup("mechanisms").String(); m != `["SCRAM-SHA-256"]` {
		t.Fatalf("mechanisms: %s", m)
	}
	r, _ = runOn(ac, "app", bson.D{{Key: "usersInfo", Value: "u"}, {Key: "showCredentials", Value: true},
		{Key: "showAuthenticationRestrictions", Value: true}, {Key: "showCustomData", Value: false}})
	if k := keys(oneDoc(t, r, "users")); k != "_id,userId,user,db,mechanisms,credentials,authenticationRestrictions,roles,inheritedRoles,inheritedPrivileges,inheritedAuthenticationRestrictions" {
		t.Fatalf("usersInfo show* fields: %s", k)
	}
	r, _ = runOn(ac, "app", bson.D{{Key: "usersInfo", Value: bson.D{{Key: "user", Value: "u"}, {Key: "db", Value: "app"}}}, {Key: "showPrivileges", Value: true}})
	u = oneDoc(t, r, "users")
	if ir := u.Lookup("inheritedRoles").String(); ir != `[{"role": "readWrite","db": "app"}]` {
		t.Fatalf("inheritedRoles: %s", ir)
	}
	if ip, _ := u.Lookup("inheritedPrivileges").Array().Values(); len(ip) != 2 {
		t.Fatalf("inheritedPrivileges (app and app.system.js): %v", u.Lookup("inheritedPrivileges"))
	}
	wantErr(t, ac, "app", bson.D{{Key: "usersInfo", Value: 1}, {Key: "showPrivileges", Value: true}}, 20, "Privilege or restriction details require exact-match usersInfo queries")
	// filter and forAllDBs
	mustRun(t, ac, bson.D{{Key: "createUser", Value: "w"}, {Key: "pwd", Value: "p"}, {Key: "roles", Value: bson.A{}}})
	r, _ = runOn(ac, "admin", bson.D{{Key: "usersInfo", Value: bson.D{{Key: "forAllDBs", Value: true}}}, {Key: "filter", Value: bson.D{{Key: "db", Value: "app"}}}})
	if vals, _ := r.Lookup("users").Array().Values(); len(vals) != 1 {
		t.Fatalf("forAllDBs filtered: %v", r)
	}
	// updateUser, revokeRolesFromUser, dropAllUsersFromDatabase
	wantErr(t, ac, "app", bson.D{{Key: "updateUser", Value: "u"}}, 2, "Must specify at least one field to update in updateUser")
	wantErr(t, ac, "app", bson.D{{Key: "updateUser", Value: "nobody"}, {Key: "customData", Value: bson.D{}}}, 11, "User nobody@app not found")
	wantErr(t, ac, "app", bson.D{{Key: "grantRolesToUser", Value: "nobody"}, {Key: "roles", Value: bson.A{"read"}}}, 11, `Could not find user "nobody" for db "app"`)
	wantErr(t, ac, "app", bson.D{{Key: "grantRolesToUser", Value: "u"}, {Key: "roles", Value: bson.A{}}}, 2, `grantRolesToUser command requires a non-empty "roles" array`)
	wantErr(t, ac, "app", bson.D{{Key: "dropUser", Value: "nobody"}}, 11, "User 'nobody@app' not found")
	if _, err := runOn(ac, "app", bson.D{{Key: "updateUser", Value: "u"}, {Key: "customData", Value: bson.D{{Key: "team", Value: "b"}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := runOn(ac, "app", bson.D{{Key: "revokeRolesFromUser", Value: "u"}, {Key: "roles", Value: bson.A{"readWrite"}}}); err != nil {
		t.Fatal(err)
	}
	mustRunOn(t, ac, "app", bson.D{{Key: "createUser", Value: "two"}, {Key: "pwd", Value: "p"}, {Key: "roles", Value: bson.A{}}})
	mustRunOn(t, ac, "app", bson.D{{Key: "updateUser", Value: "two"}, {Key: "mechanisms", Value: bson.A{"SCRAM-SHA-256"}}})
	wantErr(t, ac, "app", bson.D{{Key: "updateUser", Value: "two"}, {Key: "mechanisms", Value: bson.A{"SCRAM-SHA-1"}}}, 2, "mechanisms field must be a subset of previously set mechanisms")
	mustRunOn(t, ac, "app", bson.D{{Key: "dropUser", Value: "two"}})
	r, _ = runOn(ac, "app", bson.D{{Key: "usersInfo", Value: "u"}})
	u = oneDoc(t, r, "users")
	if u.Lookup("roles").String() != "[]" || u.Lookup("customData", "team").StringValue() != "b" {
		t.Fatalf("after updateUser/revokeRolesFromUser: %v", u)
	}
	r, err = runOn(ac, "app", bson.D{{Key: "dropAllUsersFromDatabase", Value: 1}})
	if err != nil || r.Lookup("n").AsInt64() != 1 {
		t.Fatalf("dropAllUsersFromDatabase: %v %v", r, err)
	}
	// connectionStatus lists the user's roles and privileges
	r = mustRun(t, ac, bson.D{{Key: "connectionStatus", Value: 1}, {Key: "showPrivileges", Value: true}})
	if ps, _ := r.Lookup("authInfo", "authenticatedUserPrivileges").Array().Values(); len(ps) < 5 {
		t.Fatalf("connectionStatus privileges: %v", r)
	}
	if roles := r.Lookup("authInfo", "authenticatedUserRoles").String(); roles != `[{"role": "root","db": "admin"}]` {
		t.Fatalf("connectionStatus roles: %s", roles)
	}
}

func TestRoleCommandsAsMongod(t *testing.T) {
	m, ac := authedMember(t)
	priv := func(db, coll string, acts ...string) bson.D {
		a := bson.A{}
		for _, x := range acts {
			a = append(a, x)
		}
		return bson.D{{Key: "resource", Value: bson.D{{Key: "db", Value: db}, {Key: "collection", Value: coll}}}, {Key: "actions", Value: a}}
	}
	wantErr(t, ac, "app", bson.D{{Key: "createRole", Value: "r"}, {Key: "privileges", Value: bson.A{priv("app", "", "fly")}}, {Key: "roles", Value: bson.A{}}}, 2, "Unknown action type in privilege set: 'fly'")
	wantErr(t, ac, "app", bson.D{{Key: "createRole", Value: "r"}, {Key: "roles", Value: bson.A{}}}, 40414, "BSON field 'createRole.privileges' is missing but a required field")
	wantErr(t, ac, "app", bson.D{{Key: "createRole", Value: "read"}, {Key: "privileges", Value: bson.A{}}, {Key: "roles", Value: bson.A{}}}, 2, "Cannot create roles with the same name as a built-in role")
	wantErr(t, ac, "app", bson.D{{Key: "createRole", Value: "r"}, {Key: "privileges", Value: bson.A{priv("other", "", "find")}}, {Key: "roles", Value: bson.A{}}}, 49, "Roles on the 'app' database cannot be granted privileges that target other databases or the cluster")
	desired := bson.D{{Key: "createRole", Value: "r"}, {Key: "privileges", Value: bson.A{priv("app", "orders", "find", "insert"), priv("app", "", "listCollections")}},
		{Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "read"}, {Key: "db", Value: "app"}}}}}
	if _, err := runOn(ac, "app", desired); err != nil {
		t.Fatal(err)
	}
	wantErr(t, ac, "app", desired, 51002, `Role "r@app" already exists`)
	// rolesInfo returns what was stored, so a tool comparing sees no difference
	r, err := runOn(ac, "app", bson.D{{Key: "rolesInfo", Value: "r"}, {Key: "showPrivileges", Value: true}})
	if err != nil {
		t.Fatal(err)
	}
	got := oneDoc(t, r, "roles")
	if k := keys(got); k != "_id,role,db,privileges,roles,inheritedRoles,inheritedPrivileges,isBuiltin" {
		t.Fatalf("rolesInfo fields: %s", k)
	}
	if g, w := got.Lookup("privileges").String(), mustRawDoc(bson.D{{Key: "p", Value: desired[1].Value}}).Lookup("p").String(); g != w {
		t.Fatalf("privileges: got %s, want %s", g, w)
	}
	if g := got.Lookup("roles").String(); g != `[{"role": "read","db": "app"}]` {
		t.Fatalf("roles: %s", g)
	}
	// cycles are refused
	mustRunOn(t, ac, "app", bson.D{{Key: "createRole", Value: "s"}, {Key: "privileges", Value: bson.A{}}, {Key: "roles", Value: bson.A{"r"}}})
	wantErr(t, ac, "app", bson.D{{Key: "grantRolesToRole", Value: "r"}, {Key: "roles", Value: bson.A{"s"}}}, 49, "Granting roles to r@app would introduce a cycle in the role graph")
	wantErr(t, ac, "app", bson.D{{Key: "grantRolesToRole", Value: "r"}, {Key: "roles", Value: bson.A{"r"}}}, 49, "Cannot grant role r@app to itself.")
	wantErr(t, ac, "app", bson.D{{Key: "grantPrivilegesToRole", Value: "read"}, {Key: "privileges", Value: bson.A{priv("app", "", "find")}}}, 2, "read@app is a built-in role and cannot be modified")
	// inherited roles and privileges through s
	r, _ = runOn(ac, "app", bson.D{{Key: "rolesInfo", Value: bson.D{{Key: "role", Value: "s"}, {Key: "db", Value: "app"}}}, {Key: "showPrivileges", Value: true}})
	s := oneDoc(t, r, "roles")
	if ir := s.Lookup("inheritedRoles").String(); ir != `[{"role": "r","db": "app"},{"role": "read","db": "app"}]` {
		t.Fatalf("inheritedRoles: %s", ir)
	}
	// asUserFragment
	r, _ = runOn(ac, "app", bson.D{{Key: "rolesInfo", Value: bson.A{"s"}}, {Key: "showPrivileges", Value: "asUserFragment"}})
	if _, err := r.LookupErr("userFragment", "inheritedPrivileges"); err != nil {
		t.Fatalf("asUserFragment: %v", r)
	}
	// built-ins: listed with showBuiltinRoles, privileges shown
	r, _ = runOn(ac, "app", bson.D{{Key: "rolesInfo", Value: 1}, {Key: "showBuiltinRoles", Value: true}})
	var names []string
	vals, _ := r.Lookup("roles").Array().Values()
	for _, v := range vals {
		names = append(names, v.Document().Lookup("role").StringValue())
	}
	if n := strings.Join(names, ","); n != "dbAdmin,dbOwner,enableSharding,read,readWrite,userAdmin,r,s" {
		t.Fatalf("rolesInfo showBuiltinRoles on app: %s", n)
	}
	r, _ = runOn(ac, "admin", bson.D{{Key: "rolesInfo", Value: "clusterMonitor"}, {Key: "showPrivileges", Value: true}})
	cm := oneDoc(t, r, "roles")
	if !strings.Contains(cm.Lookup("privileges").String(), `"replSetGetStatus"`) || keys(cm) != "db,role,roles,privileges,inheritedRoles,inheritedPrivileges,isBuiltin" {
		t.Fatalf("clusterMonitor: %v", cm)
	}
	wantErr(t, ac, "app", bson.D{{Key: "rolesInfo", Value: 1}, {Key: "showPrivileges", Value: "asUserFragment"}}, 20, "Cannot get user fragment for all roles in a database")
	// updateRole, revokePrivilegesFromRole, revokeRolesFromRole
	wantErr(t, ac, "app", bson.D{{Key: "updateRole", Value: "r"}}, 2, "Must specify at least one field to update in updateRole")
	mustRunOn(t, ac, "app", bson.D{{Key: "revokePrivilegesFromRole", Value: "r"}, {Key: "privileges", Value: bson.A{priv("app", "orders", "insert")}}})
	mustRunOn(t, ac, "app", bson.D{{Key: "revokeRolesFromRole", Value: "r"}, {Key: "roles", Value: bson.A{"read"}}})
	r, _ = runOn(ac, "app", bson.D{{Key: "rolesInfo", Value: "r"}, {Key: "showPrivileges", Value: true}})
	got = oneDoc(t, r, "roles")
	if p := got.Lookup("privileges").String(); p != `[{"resource": {"db": "app","collection": "orders"},"actions": ["find"]},{"resource": {"db": "app","collection": ""},"actions": ["listCollections"]}]` {
		t.Fatalf("after revokePrivilegesFromRole: %s", p)
	}
	mustRunOn(t, ac, "app", bson.D{{Key: "updateRole", Value: "r"}, {Key: "privileges", Value: bson.A{priv("app", "", "find")}}})
	// dropRole removes the role from its holders
	mustRunOn(t, ac, "app", bson.D{{Key: "createUser", Value: "h"}, {Key: "pwd", Value: "p"}, {Key: "roles", Value: bson.A{"s"}}})
	hc := m.client(t, "h:p@", "authSource=app")
	if _, err := runOn(hc, "app", bson.D{{Key: "find", Value: "c"}}); err != nil {
		t.Fatalf("find through s -> r: %v", err)
	}
	mustRunOn(t, ac, "app", bson.D{{Key: "dropRole", Value: "s"}})
	r, _ = runOn(ac, "app", bson.D{{Key: "usersInfo", Value: "h"}})
	if oneDoc(t, r, "users").Lookup("roles").String() != "[]" {
		t.Fatalf("dropRole left the grant: %v", r)
	}
	if _, err := runOn(hc, "app", bson.D{{Key: "find", Value: "c"}}); !hasCode(err, 13) {
		t.Fatalf("find after dropRole: want 13, got %v", err)
	}
	r = mustRunOn(t, ac, "app", bson.D{{Key: "dropAllRolesFromDatabase", Value: 1}})
	if r.Lookup("n").AsInt64() != 1 {
		t.Fatalf("dropAllRolesFromDatabase: %v", r)
	}
}

func mustRunOn(t *testing.T, c *mongo.Client, db string, cmd bson.D) bson.Raw {
	t.Helper()
	r, err := runOn(c, db, cmd)
	if err != nil {
		t.Fatalf("%s: %v", cmd[0].Key, err)
	}
	return r
}

func mustRawDoc(d bson.D) bson.Raw {
	b, err := bson.Marshal(d)
	if err != nil {
		panic(err)
	}
	return b
}

// authenticationRestrictions are enforced at authentication, for the
// user's own list and the lists of the roles it holds.
func TestAuthenticationRestrictions(t *testing.T) {
	m, ac := authedMember(t)
	restr := func(field string, addrs ...string) bson.A {
		a := bson.A{}
		for _, x := range addrs {
			a = append(a, x)
		}
		return bson.A{bson.D{{Key: field, Value: a}}}
	}
	mustRunOn(t, ac, "app", bson.D{{Key: "createUser", Value: "near"}, {Key: "pwd", Value: "p"}, {Key: "roles", Value: bson.A{"read"}},
		{Key: "authenticationRestrictions", Value: restr("clientSource", "127.0.0.0/8")}})
	mustRunOn(t, ac, "app", bson.D{{Key: "createUser", Value: "far"}, {Key: "pwd", Value: "p"}, {Key: "roles", Value: bson.A{"read"}},
		{Key: "authenticationRestrictions", Value: restr("clientSource", "10.9.8.7")}})
	mustRunOn(t, ac, "app", bson.D{{Key: "createRole", Value: "elsewhere"}, {Key: "privileges", Value: bson.A{}}, {Key: "roles", Value: bson.A{}},
		{Key: "authenticationRestrictions", Value: restr("serverAddress", "10.0.0.0/8")}})
	mustRunOn(t, ac, "app", bson.D{{Key: "createUser", Value: "viaRole"}, {Key: "pwd", Value: "p"}, {Key: "roles", Value: bson.A{"elsewhere"}}})
	mustRunOn(t, ac, "app", bson.D{{Key: "createUser", Value: "here"}, {Key: "pwd", Value: "p"}, {Key: "roles", Value: bson.A{"read"}},
		{Key: "authenticationRestrictions", Value: restr("serverAddress", m.ip)}})
	for user, ok := range map[string]bool{"near": true, "far": false, "viaRole": false, "here": true} {
		_, err := runOn(m.client(t, user+":p@", "authSource=app"), "app", bson.D{{Key: "ping", Value: 1}})
		if (err == nil) != ok {
			t.Errorf("%s: authenticated=%v, want %v (%v)", user, err == nil, ok, err)
		}
		if !ok && !strings.Contains(fmt.Sprint(err), "Authentication failed") {
			t.Errorf("%s: %v", user, err)
		}
	}
}
