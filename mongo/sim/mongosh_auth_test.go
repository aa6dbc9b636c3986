package sim_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// mongoshPath finds mongosh under MONGOSH_DIR (an npm prefix), as the
// localkube images do, or skips with the reason.
func mongoshPath(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("MONGOSH_DIR")
	if dir == "" {
		t.Skip("MONGOSH_DIR unset: mongosh not checked")
	}
	p := filepath.Join(dir, "node_modules", "mongosh", "bin", "mongosh.js")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("no mongosh at %s: %v", p, err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("no node on PATH: mongosh not checked")
	}
	return p
}

func mongosh(t *testing.T, sh, uri, js string) string {
	t.Helper()
	out, err := exec.Command("node", sh, "--quiet", "--norc", uri, "--eval", js).CombinedOutput()
	if err != nil {
		t.Fatalf("mongosh %q: %v\n%s", js, err, out)
	}
	return strings.TrimSpace(string(out))
}

// The "Deploy Replica Set With Keyfile Authentication" tutorial through
// mongosh: rs.initiate() and db.createUser() over the localhost exception,
// then roles as a deployment tool manages them.
func TestMongoshKeyfileBootstrap(t *testing.T) {
	sh := mongoshPath(t)
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
