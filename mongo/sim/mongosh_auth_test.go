package sim_test

import (
	"testing"
	"time"
)

// The "Deploy Replica Set With Keyfile Authentication" tutorial through
// mongosh: rs.initiate() and db.createUser() over the localhost exception,
// then roles as a deployment tool manages them.
func TestMongoshKeyfileBootstrap(t *testing.T) {
	sh := mongoshJS(t)
	kf := keyFile(t, "bW9uZ29zaC1ib290c3RyYXAta2V5")
	m := newMember(t, "--keyFile", kf)
	local := "mongodb://" + m.host + "/?directConnection=true"
	mongosh(t, sh, local, `rs.initiate({_id: "rs0", members: [{_id: 0, host: "`+m.host+`"}]}).ok`)
	waitPrimary(t, []*member{m}, 30*time.Second)
	if out := mongosh(t, sh, local, `rs.status().ok`); out != "1" {
		t.Fatalf("rs.status() under the localhost exception: %s", out)
	}
	if out := mongosh(t, sh, local, `try { db.getSiblingDB("app").c.findOne(); print("read") } catch (e) { print(e.codeName) }`); out != "Unauthorized" {
		t.Fatalf("find under the localhost exception: %s", out)
	}
	mongosh(t, sh, local, `db.getSiblingDB("admin").createUser({user: "admin", pwd: "pw", roles: ["root"]}).ok`)
	authed := "mongodb://admin:pw@" + m.host + "/?directConnection=true&authSource=admin"
	out := mongosh(t, sh, authed, `const app = db.getSiblingDB("app");
app.createRole({role: "r", privileges: [{resource: {db: "app", collection: "c"}, actions: ["find", "insert"]}], roles: ["read"]});
const got = app.getRole("r", {showPrivileges: true});
print(JSON.stringify(got.privileges) + " " + JSON.stringify(got.roles))`)
	if out != `[{"resource":{"db":"app","collection":"c"},"actions":["find","insert"]}] [{"role":"read","db":"app"}]` {
		t.Fatalf("getRole: %s", out)
	}
	if out := mongosh(t, sh, authed, `db.adminCommand({listDatabases: 1}).ok`); out != "1" {
		t.Fatalf("show dbs as root: %s", out)
	}
}
