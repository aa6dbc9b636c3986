package conformance

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// mongoshScript is what a person types into mongosh on a new replica set;
// every check throws (so mongosh exits non-zero) when the answer is not
// mongod's.
const mongoshScript = `
function check(cond, what) { if (!cond) { throw new Error("conformance: " + what); } }
const d = db.getSiblingDB("shell");
d.items.drop();
check(d.items.createIndex({sku: 1}, {unique: true}) === "sku_1", "createIndex names sku_1");
d.items.insertOne({sku: "a", tags: ["x"], parts: [{p: 1}, {p: 2}]});
let code = 0;
try { d.items.insertOne({sku: "a"}); } catch (e) { code = e.code; }
check(code === 11000, "a duplicate sku is refused with 11000, got " + code);
check(d.items.getIndexes().map(i => i.name).join() === "_id_,sku_1", "getIndexes lists _id_ and sku_1");
check(d.items.countDocuments({"parts.p": 2}) === 1, "a dotted path finds an array element");
check(d.items.countDocuments({parts: {$elemMatch: {p: {$gt: 1}}}}) === 1, "$elemMatch");
d.items.updateOne({sku: "a"}, {$addToSet: {tags: {$each: ["x", "y"]}}});
check(d.items.findOne({sku: "a"}).tags.join() === "x,y", "$addToSet with $each");
const g = d.items.aggregate([{$unwind: "$parts"}, {$group: {_id: null, s: {$sum: "$parts.p"}}}]).toArray();
check(g.length === 1 && g[0].s === 3, "$unwind and $group $sum: " + JSON.stringify(g));
const st = rs.status();
check(st.ok === 1 && st.members.length === 3, "rs.status lists 3 members");
const fcv = db.adminCommand({getParameter: 1, featureCompatibilityVersion: 1});
check(fcv.ok === 1 && typeof fcv.featureCompatibilityVersion.version === "string", "getParameter featureCompatibilityVersion");
check(db.adminCommand({listDatabases: 1, nameOnly: true}).databases.some(x => x.name === "shell"), "listDatabases shows shell");
print("CONFORMANCE OK");
`

// TestMongoshEveryday runs the same everyday checks through the MongoDB shell
// from the mongo images (npm's mongosh, MONGOSH_DIR), a client we did not write.
func TestMongoshEveryday(t *testing.T) {
	dir := os.Getenv("MONGOSH_DIR")
	js := filepath.Join(dir, "node_modules", "mongosh", "bin", "mongosh.js")
	node, err := exec.LookPath("node")
	if dir == "" || err != nil {
		t.Skip("MONGOSH_DIR or node missing: mongosh is not installed here (make test installs it)")
	}
	if _, err := os.Stat(js); err != nil {
		t.Skipf("no mongosh under MONGOSH_DIR: %v", err)
	}
	eachServer(t, func(t *testing.T, bin string) {
		rs := startReplSet(t, bin)
		hosts := make([]string, len(rs.members))
		for i, m := range rs.members {
			hosts[i] = m.host
		}
		uri := "mongodb://" + strings.Join(hosts, ",") + "/?replicaSet=rs0"
		c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(c, node, js, "--quiet", "--norc", uri, "--eval", mongoshScript)
		cmd.Env = append(os.Environ(), "MONGOSH_NO_UPDATE_CHECK=1", "DO_NOT_TRACK=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "CONFORMANCE OK") {
			t.Fatalf("mongosh: %v\n%s", err, out)
		}
	})
}
