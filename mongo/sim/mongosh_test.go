package sim_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// mongoshJS is the shell of MONGOSH_DIR (an npm prefix with
// node_modules/mongosh); the test skips visibly without one.
func mongoshJS(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("MONGOSH_DIR")
	js := filepath.Join(dir, "node_modules", "mongosh", "bin", "mongosh.js")
	if _, err := os.Stat(js); dir == "" || err != nil {
		t.Skip("MONGOSH_DIR unset or without node_modules/mongosh: the shell checks need it (make kubelet-mongosh)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("no node on PATH: the shell checks need it")
	}
	return js
}

// mongosh runs a script in the shell (js, from mongoshJS) against uri.
func mongosh(t *testing.T, js, uri, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "node", js, "--quiet", "--norc", uri, "--eval", script).CombinedOutput()
	if err != nil {
		t.Fatalf("mongosh %q: %v\n%s", script, err, out)
	}
	return strings.TrimSpace(string(out))
}

// What a deployment tool asks through the shell: the version of the image,
// the FCV, the server's status and options.
func TestMongoshAdminHelpers(t *testing.T) {
	js := mongoshJS(t)
	t.Setenv("MONGO_VERSION", "8.0")
	ms, p := initiated(t, 1, fastSettings, "--wiredTigerCacheSizeGB", "0.25")
	out := mongosh(t, js, "mongodb://"+ms[p].host+"/?directConnection=true", `print(db.version()); print(db.adminCommand({getParameter: 1, featureCompatibilityVersion: 1}).featureCompatibilityVersion.version);`+
		`print(db.serverStatus().process); print(db.serverCmdLineOpts().parsed.storage.wiredTiger.engineConfig.cacheSizeGB);`+
		`print(db.hostInfo().os.type); print(db.stats(1024).scaleFactor); print(db.adminCommand({setParameter: 1, logLevel: 1}).was)`)
	want := "8.0.4\n8.0\nmongod\n0.25\nLinux\nLong('1024')\n0" // dbStats' scaleFactor is an Int64, as mongod's
	if out != want {
		t.Fatalf("mongosh printed\n%s\nwant\n%s", out, want)
	}
}
