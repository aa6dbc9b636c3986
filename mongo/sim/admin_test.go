package sim_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
)

func cmdErr(t *testing.T, c *mongo.Client, db string, cmd bson.D) mongo.CommandError {
	t.Helper()
	err := c.Database(db).RunCommand(context.Background(), cmd).Err()
	var ce mongo.CommandError
	if err == nil || !errors.As(err, &ce) {
		t.Fatalf("%v: want a command error, got %v", cmd, err)
	}
	return ce
}

func runDB(c *mongo.Client, db string, cmd bson.D) (bson.Raw, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return c.Database(db).RunCommand(ctx, cmd, options.RunCmd().SetReadPreference(readpref.PrimaryPreferred())).Raw()
}

func mustRunDB(t *testing.T, c *mongo.Client, db string, cmd bson.D) bson.Raw {
	t.Helper()
	r, err := runDB(c, db, cmd)
	if err != nil {
		t.Fatalf("%v: %v", cmd[0].Key, err)
	}
	return r
}

func num(v bson.RawValue) int64 {
	n, ok := v.AsInt64OK()
	if !ok {
		if f, ok := v.DoubleOK(); ok {
			return int64(f)
		}
	}
	return n
}

// Options mongod knows and the simulator does not model are accepted and
// shown by getCmdLineOpts under their YAML names; secrets are hidden.
func TestGetCmdLineOptsShowsAcceptedOptions(t *testing.T) {
	m := newMember(t, "--sslAllowInvalidCertificates", "--tlsAllowInvalidCertificates", "--relaxPermChecks",
		"--wiredTigerCacheSizeGB", "0.25", "--transitionToAuth", "--enableFreeMonitoring=off", "--setParameter", "cursorTimeoutMillis=1000",
		"--tlsCertificateKeyFilePassword", "hunter2")
	c := m.client(t)
	r := mustRun(t, c, bson.D{{Key: "getCmdLineOpts", Value: 1}})
	p := r.Lookup("parsed").Document()
	if v := p.Lookup("storage", "wiredTiger", "engineConfig", "cacheSizeGB").Double(); v != 0.25 {
		t.Errorf("cacheSizeGB %v", v)
	}
	if !p.Lookup("net", "tls", "allowInvalidCertificates").Boolean() || !p.Lookup("security", "relaxPermChecks").Boolean() ||
		!p.Lookup("security", "transitionToAuth").Boolean() || p.Lookup("cloud", "monitoring", "free", "state").StringValue() != "off" {
		t.Errorf("parsed %v", p)
	}
	if strings.Contains(r.String(), "hunter2") {
		t.Errorf("getCmdLineOpts shows a password: %v", r)
	}
	// the startup parameter is typed and visible
	gp := mustRun(t, c, bson.D{{Key: "getParameter", Value: 1}, {Key: "cursorTimeoutMillis", Value: 1}})
	if n := num(gp.Lookup("cursorTimeoutMillis")); n != 1000 {
		t.Errorf("cursorTimeoutMillis %v", gp)
	}
	waitFor(t, 10*time.Second, "21951 line", func() bool { return strings.Contains(m.out.String(), `"id":21951`) })
	if !strings.Contains(m.out.String(), "--wiredTigerCacheSizeGB") || strings.Contains(m.out.String(), "hunter2") {
		t.Errorf("start-up log:\n%s", tail(m.out.String(), 20))
	}
}

func TestSetParameterAndListCommands(t *testing.T) {
	m := newMember(t)
	c := m.client(t)
	r := mustRun(t, c, bson.D{{Key: "setParameter", Value: 1}, {Key: "logLevel", Value: 2}})
	if num(r.Lookup("was")) != 0 {
		t.Errorf("was %v", r)
	}
	r = mustRun(t, c, bson.D{{Key: "getParameter", Value: 1}, {Key: "logLevel", Value: 1}})
	if num(r.Lookup("logLevel")) != 2 {
		t.Errorf("logLevel after setParameter: %v", r)
	}
	if ce := cmdErr(t, c, "admin", bson.D{{Key: "setParameter", Value: 1}, {Key: "noSuchParameter", Value: 1}}); ce.Code != 72 ||
		!strings.Contains(ce.Message, "attempted to set unrecognized parameter [noSuchParameter]") {
		t.Errorf("unknown: %v", ce)
	}
	if ce := cmdErr(t, c, "admin", bson.D{{Key: "setParameter", Value: 1}, {Key: "enableLocalhostAuthBypass", Value: false}}); ce.Code != 72 ||
		!strings.Contains(ce.Message, "not allowed to change [enableLocalhostAuthBypass] at runtime") {
		t.Errorf("startup-only: %v", ce)
	}
	r = mustRun(t, c, bson.D{{Key: "getParameter", Value: bson.D{{Key: "showDetails", Value: true}}}, {Key: "logLevel", Value: 1}})
	if d := r.Lookup("logLevel").Document(); num(d.Lookup("value")) != 2 || !d.Lookup("settableAtRuntime").Boolean() || !d.Lookup("settableAtStartup").Boolean() {
		t.Errorf("showDetails: %v", r)
	}
	all := mustRun(t, c, bson.D{{Key: "getParameter", Value: "*"}})
	if all.Lookup("scramIterationCount").Type == 0 || all.Lookup("featureCompatibilityVersion").Type == 0 {
		t.Errorf("getParameter '*': %v", all)
	}
	all = mustRun(t, c, bson.D{{Key: "getParameter", Value: bson.D{{Key: "allParameters", Value: true}, {Key: "showDetails", Value: true}}}})
	if all.Lookup("enableLocalhostAuthBypass", "settableAtRuntime").Boolean() {
		t.Errorf("allParameters showDetails: %v", all.Lookup("enableLocalhostAuthBypass"))
	}
	for _, name := range []string{"getParameter", "setParameter", "getCmdLineOpts", "getLog", "currentOp", "top"} {
		if ce := cmdErr(t, c, "app", bson.D{{Key: name, Value: 1}, {Key: "logLevel", Value: 1}}); ce.Code != 13 || ce.Message != name+" may only be run against the admin database." {
			t.Errorf("%s outside admin: %v", name, ce)
		}
	}
	lc := mustRun(t, c, bson.D{{Key: "listCommands", Value: 1}}).Lookup("commands").Document()
	for _, name := range []string{"find", "insert", "replSetGetStatus", "setParameter", "explain", "listCommands"} {
		if lc.Lookup(name).Type == 0 {
			t.Errorf("listCommands lacks %s", name)
		}
	}
	if !lc.Lookup("replSetGetStatus", "adminOnly").Boolean() || lc.Lookup("insert", "secondaryOk").Boolean() || !lc.Lookup("find", "secondaryOk").Boolean() ||
		lc.Lookup("hello", "requiresAuth").Boolean() || lc.Lookup("find", "help").StringValue() == "" {
		t.Errorf("listCommands fields: %v %v %v", lc.Lookup("replSetGetStatus"), lc.Lookup("insert"), lc.Lookup("hello"))
	}
}

// serverStatus counts for real: opcounters, network, per-command metrics;
// {repl: 0} leaves a section out.
func TestServerStatusCounts(t *testing.T) {
	ms, p := initiated(t, 2, fastSettings)
	c := ms[p].client(t)
	before := mustRun(t, c, bson.D{{Key: "serverStatus", Value: 1}})
	coll := c.Database("app").Collection("things")
	if _, err := coll.InsertMany(context.Background(), []any{bson.D{{Key: "a", Value: 1}}, bson.D{{Key: "a", Value: 2}}, bson.D{{Key: "a", Value: 3}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.Find(context.Background(), bson.D{}); err != nil {
		t.Fatal(err)
	}
	_ = c.Database("admin").RunCommand(context.Background(), bson.D{{Key: "noSuchCommand", Value: 1}}).Err()
	after := mustRun(t, c, bson.D{{Key: "serverStatus", Value: 1}})
	if d := num(after.Lookup("opcounters", "insert")) - num(before.Lookup("opcounters", "insert")); d != 3 {
		t.Errorf("opcounters.insert grew by %d, want 3", d)
	}
	if d := num(after.Lookup("opcounters", "query")) - num(before.Lookup("opcounters", "query")); d != 1 {
		t.Errorf("opcounters.query grew by %d, want 1", d)
	}
	if num(after.Lookup("network", "bytesIn")) <= num(before.Lookup("network", "bytesIn")) || num(after.Lookup("network", "numRequests")) <= num(before.Lookup("network", "numRequests")) {
		t.Errorf("network did not grow: %v -> %v", before.Lookup("network"), after.Lookup("network"))
	}
	if num(after.Lookup("metrics", "commands", "insert", "total")) < 1 || num(after.Lookup("metrics", "commands", "<UNKNOWN>", "total")) != 1 {
		t.Errorf("metrics.commands %v", after.Lookup("metrics", "commands"))
	}
	for _, k := range []string{"host", "version", "process", "pid", "uptime", "uptimeMillis", "uptimeEstimate", "localTime", "asserts", "connections", "mem", "repl", "storageEngine", "wiredTiger",
		"extra_info", "globalLock", "catalogStats", "transportSecurity"} {
		if after.Lookup(k).Type == 0 {
			t.Errorf("serverStatus lacks %s", k)
		}
	}
	if after.Lookup("mem", "resident").Int32() <= 0 {
		t.Errorf("mem %v", after.Lookup("mem"))
	}
	noRepl := mustRun(t, c, bson.D{{Key: "serverStatus", Value: 1}, {Key: "repl", Value: 0}, {Key: "metrics", Value: 0}})
	if noRepl.Lookup("repl").Type != 0 || noRepl.Lookup("metrics").Type != 0 || noRepl.Lookup("opcounters").Type == 0 {
		t.Errorf("section filtering: %v", noRepl)
	}
	// The secondary counts what it applied in opcountersRepl.
	sec := ms[1-p].client(t)
	waitFor(t, 20*time.Second, "opcountersRepl.insert >= 3", func() bool {
		r, err := run(sec, bson.D{{Key: "serverStatus", Value: 1}})
		return err == nil && num(r.Lookup("opcountersRepl", "insert")) >= 3
	})
	top := mustRun(t, c, bson.D{{Key: "top", Value: 1}})
	if num(top.Lookup("totals", "app.things", "insert", "count")) != 1 || num(top.Lookup("totals", "app.things", "queries", "count")) != 1 {
		t.Errorf("top %v", top.Lookup("totals", "app.things"))
	}
	diag := mustRun(t, c, bson.D{{Key: "getDiagnosticData", Value: 1}}).Lookup("data").Document()
	for _, k := range []string{"serverStatus", "replSetGetStatus", "local.oplog.rs.stats", "systemMetrics", "start", "end"} {
		if diag.Lookup(k).Type == 0 {
			t.Errorf("getDiagnosticData lacks %s", k)
		}
	}
}

// Sizes as mongod: scale divides, scale < 1 is BadValue, storage rounds to
// pages, the oplog is capped at the configured size.
func TestSizesAndScale(t *testing.T) {
	ms, p := initiated(t, 1, fastSettings, "--oplogSize", "64")
	c := ms[p].client(t)
	coll := c.Database("app").Collection("sized")
	var docs []any
	for i := range 100 {
		docs = append(docs, bson.D{{Key: "i", Value: i}, {Key: "pad", Value: strings.Repeat("x", 100)}})
	}
	if _, err := coll.InsertMany(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
	cs := mustRunDB(t, c, "app", bson.D{{Key: "collStats", Value: "sized"}})
	size, storage := num(cs.Lookup("size")), num(cs.Lookup("storageSize"))
	if num(cs.Lookup("count")) != 100 || size < 100*100 || storage < size || storage%4096 != 0 || num(cs.Lookup("avgObjSize")) != size/100 {
		t.Errorf("collStats %v", cs)
	}
	if num(cs.Lookup("nindexes")) != 1 || num(cs.Lookup("indexSizes", "_id_")) < 4096 || num(cs.Lookup("totalSize")) != storage+num(cs.Lookup("totalIndexSize")) {
		t.Errorf("indexes %v", cs)
	}
	k := mustRunDB(t, c, "app", bson.D{{Key: "collStats", Value: "sized"}, {Key: "scale", Value: 1024}})
	if num(k.Lookup("size")) != size/1024 || num(k.Lookup("storageSize")) != storage/1024 || num(k.Lookup("scaleFactor")) != 1024 || num(k.Lookup("avgObjSize")) != size/100 {
		t.Errorf("scaled collStats %v", k)
	}
	for _, cmd := range []bson.D{{{Key: "collStats", Value: "sized"}, {Key: "scale", Value: 0}}, {{Key: "dbStats", Value: 1}, {Key: "scale", Value: -1}}} {
		if ce := cmdErr(t, c, "app", cmd); ce.Code != 2 {
			t.Errorf("%v: %v", cmd, ce)
		}
	}
	ds := mustRunDB(t, c, "app", bson.D{{Key: "dbStats", Value: 1}, {Key: "scale", Value: 1024}})
	if fs := mustRunDB(t, c, "app", bson.D{{Key: "dbStats", Value: 1}, {Key: "freeStorage", Value: 1}}); fs.Lookup("totalFreeStorageSize").Type == 0 {
		t.Errorf("dbStats freeStorage: %v", fs)
	}
	if num(ds.Lookup("objects")) != 100 || num(ds.Lookup("dataSize")) != size/1024 || num(ds.Lookup("fsTotalSize")) <= 0 || num(ds.Lookup("fsUsedSize")) <= 0 {
		t.Errorf("dbStats %v", ds)
	}
	op := mustRunDB(t, c, "local", bson.D{{Key: "collStats", Value: "oplog.rs"}})
	if !op.Lookup("capped").Boolean() || num(op.Lookup("maxSize")) != 64<<20 {
		t.Errorf("oplog stats %v", op)
	}
	cur, err := coll.Aggregate(context.Background(), mongo.Pipeline{{{Key: "$collStats", Value: bson.D{{Key: "storageStats", Value: bson.D{{Key: "scale", Value: 1024}}}, {Key: "count", Value: bson.D{}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	var out []bson.Raw
	if err := cur.All(context.Background(), &out); err != nil || len(out) != 1 {
		t.Fatalf("$collStats: %v %v", out, err)
	}
	if num(out[0].Lookup("storageStats", "size")) != size/1024 || num(out[0].Lookup("count")) != 100 {
		t.Errorf("$collStats %v", out[0])
	}
	cur, err = coll.Aggregate(context.Background(), mongo.Pipeline{{{Key: "$collStats", Value: bson.D{{Key: "latencyStats", Value: bson.D{}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := cur.All(context.Background(), &out); err != nil || len(out) != 1 || num(out[0].Lookup("latencyStats", "writes", "ops")) != 1 || out[0].Lookup("storageStats").Type != 0 {
		t.Errorf("$collStats latencyStats: %v %v", out, err)
	}
	_, err = c.Database("app").Collection("none").Aggregate(context.Background(), mongo.Pipeline{{{Key: "$collStats", Value: bson.D{{Key: "storageStats", Value: bson.D{}}}}}})
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 26 {
		t.Errorf("$collStats of a missing collection: %v", err)
	}
}

func TestValidateDBHashExplainCurrentOp(t *testing.T) {
	ms, p := initiated(t, 2, fastSettings)
	c := ms[p].client(t)
	coll := c.Database("app").Collection("v")
	for i := range 5 {
		if _, err := coll.InsertOne(context.Background(), bson.D{{Key: "_id", Value: i}, {Key: "x", Value: i * 10}}); err != nil {
			t.Fatal(err)
		}
	}
	v := mustRunDB(t, c, "app", bson.D{{Key: "validate", Value: "v"}})
	if !v.Lookup("valid").Boolean() || num(v.Lookup("nrecords")) != 5 || num(v.Lookup("keysPerIndex", "_id_")) != 5 {
		t.Errorf("validate %v", v)
	}
	if ce := cmdErr(t, c, "app", bson.D{{Key: "validate", Value: "missing"}}); ce.Code != 26 {
		t.Errorf("validate missing: %v", ce)
	}
	h := mustRunDB(t, c, "app", bson.D{{Key: "dbHash", Value: 1}})
	if len(h.Lookup("collections", "v").StringValue()) != 32 || len(h.Lookup("md5").StringValue()) != 32 {
		t.Errorf("dbHash %v", h)
	}
	// the secondary's hash matches once it has applied the writes
	sec := ms[1-p].client(t)
	waitFor(t, 20*time.Second, "same dbHash on the secondary", func() bool {
		r, err := runDB(sec, "app", bson.D{{Key: "dbHash", Value: 1}})
		return err == nil && r.Lookup("md5").StringValue() == h.Lookup("md5").StringValue()
	})
	ex := mustRunDB(t, c, "app", bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "v"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 3}}}}}, {Key: "verbosity", Value: "executionStats"}})
	if st := ex.Lookup("queryPlanner", "winningPlan", "stage").StringValue(); st != "IDHACK" || num(ex.Lookup("executionStats", "nReturned")) != 1 {
		t.Errorf("explain _id: %v", ex)
	}
	ex = mustRunDB(t, c, "app", bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "v"}, {Key: "filter", Value: bson.D{{Key: "x", Value: bson.D{{Key: "$gt", Value: 15}}}}}}}})
	if st := ex.Lookup("queryPlanner", "winningPlan", "stage").StringValue(); st != "COLLSCAN" || num(ex.Lookup("executionStats", "nReturned")) != 3 ||
		num(ex.Lookup("executionStats", "totalDocsExamined")) != 5 || ex.Lookup("serverInfo", "version").StringValue() == "" {
		t.Errorf("explain collscan: %v", ex)
	}
	for name, cmd := range map[string]bson.D{
		"COUNT":  {{Key: "count", Value: "v"}, {Key: "query", Value: bson.D{{Key: "x", Value: 10}}}},
		"UPDATE": {{Key: "update", Value: "v"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "y", Value: 1}}}}}}}}},
		"DELETE": {{Key: "delete", Value: "v"}, {Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "limit", Value: 1}}}}},
	} {
		r := mustRunDB(t, c, "app", bson.D{{Key: "explain", Value: cmd}, {Key: "verbosity", Value: "queryPlanner"}})
		if st := r.Lookup("queryPlanner", "winningPlan", "stage").StringValue(); st != name {
			t.Errorf("explain %s: %v", name, r)
		}
	}
	if n, _ := coll.CountDocuments(context.Background(), bson.D{}); n != 5 {
		t.Errorf("explain of a delete deleted: %d left", n)
	}
	agg := mustRunDB(t, c, "app", bson.D{{Key: "explain", Value: bson.D{{Key: "aggregate", Value: "v"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "x", Value: 10}}}}, bson.D{{Key: "$count", Value: "n"}}}}, {Key: "cursor", Value: bson.D{}}}}})
	if agg.Lookup("stages").Type == 0 {
		t.Errorf("explain aggregate: %v", agg)
	}
	if ce := cmdErr(t, c, "app", bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "v"}}}, {Key: "verbosity", Value: "loud"}}); ce.Code != 2 {
		t.Errorf("bad verbosity: %v", ce)
	}
	// currentOp shows itself, with the fields tools read.
	cur := mustRun(t, c, bson.D{{Key: "currentOp", Value: 1}})
	vals, _ := cur.Lookup("inprog").Array().Values()
	found := false
	for _, v := range vals {
		d := v.Document()
		if _, ok := d.Lookup("command", "currentOp").AsInt64OK(); ok && d.Lookup("opid").Type != 0 && d.Lookup("active").Boolean() {
			found = true
			kill := mustRun(t, c, bson.D{{Key: "killOp", Value: 1}, {Key: "op", Value: d.Lookup("opid")}})
			if kill.Lookup("info").StringValue() != "attempting to kill op" {
				t.Errorf("killOp %v", kill)
			}
		}
	}
	if !found {
		t.Errorf("currentOp does not show itself: %v", cur)
	}
	aggCur, err := c.Database("admin").Aggregate(context.Background(), mongo.Pipeline{{{Key: "$currentOp", Value: bson.D{}}}})
	if err != nil {
		t.Fatal(err)
	}
	var ops []bson.Raw
	if err := aggCur.All(context.Background(), &ops); err != nil || len(ops) == 0 || ops[0].Lookup("opid").Type == 0 {
		t.Errorf("$currentOp: %v %v", ops, err)
	}
	if ce := cmdErr(t, c, "admin", bson.D{{Key: "killOp", Value: 1}}); ce.Code == 0 {
		t.Errorf("killOp without op: %v", ce)
	}
	hi := mustRun(t, c, bson.D{{Key: "hostInfo", Value: 1}})
	if num(hi.Lookup("system", "memSizeMB")) <= 0 || hi.Lookup("os", "type").StringValue() != "Linux" || hi.Lookup("extra", "pageSize").Type == 0 {
		t.Errorf("hostInfo %v", hi)
	}
	bi := mustRun(t, c, bson.D{{Key: "buildInfo", Value: 1}})
	for _, k := range []string{"storageEngines", "openssl", "buildEnvironment", "bits", "debug", "maxBsonObjectSize", "versionArray", "gitVersion"} {
		if bi.Lookup(k).Type == 0 {
			t.Errorf("buildInfo lacks %s", k)
		}
	}
	logs := mustRun(t, c, bson.D{{Key: "getLog", Value: "*"}})
	if !strings.Contains(logs.String(), "startupWarnings") {
		t.Errorf("getLog * %v", logs)
	}
	warnings := mustRun(t, c, bson.D{{Key: "getLog", Value: "startupWarnings"}})
	if !strings.Contains(warnings.String(), "Access control is not enabled") {
		t.Errorf("startupWarnings %v", warnings)
	}
	if ce := cmdErr(t, c, "admin", bson.D{{Key: "getLog", Value: "nope"}}); ce.Code != 96 || ce.Message != "no RamLog named: nope" {
		t.Errorf("getLog nope: %v", ce)
	}
	global := mustRun(t, c, bson.D{{Key: "getLog", Value: "global"}})
	if num(global.Lookup("totalLinesWritten")) < 5 || !strings.Contains(global.String(), "Waiting for connections") {
		t.Errorf("getLog global: %d lines", num(global.Lookup("totalLinesWritten")))
	}
}

// An unusable keyfile stops mongod after option parsing: the 20254 and
// 20575 lines, exit code 1.
func TestKeyFileRefusedAtStartup(t *testing.T) {
	kf := keyFile(t, "c2VjcmV0LWtleQ")
	if err := os.Chmod(kf, 0o644); err != nil {
		t.Fatal(err)
	}
	ip, port := freeAddr(t)
	out, err := exec.Command(simBin, "--replSet", "rs0", "--bind_ip", ip, "--port", fmt.Sprint(port), "--dbpath", t.TempDir(), "--keyFile", kf).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit %v, want 1\n%s", err, out)
	}
	for _, want := range []string{`"id":20254`, `"msg":"Read security file failed"`, `"errmsg":"permissions on ` + kf + ` are too open"`, `"codeName":"InvalidPath"`,
		`"id":20575`, `Location5579201: Unable to acquire security key[s]`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
}

// --transitionToAuth: members authenticate with the keyfile, clients need not.
func TestTransitionToAuth(t *testing.T) {
	kf := keyFile(t, "c2VjcmV0LWtleS1mb3ItdGhlLXNldA")
	ms, p := initiated(t, 2, fastSettings, "--keyFile", kf, "--transitionToAuth")
	c := ms[p].client(t)
	if _, err := c.Database("app").Collection("x").InsertOne(context.Background(), bson.D{{Key: "a", Value: 1}}); err != nil {
		t.Fatalf("unauthenticated write under transitionToAuth: %v", err)
	}
	sys := ms[p].client(t, "__system:c2VjcmV0LWtleS1mb3ItdGhlLXNldA@", "authSource=local")
	mustRun(t, sys, bson.D{{Key: "replSetGetStatus", Value: 1}})
	sec := ms[1-p].client(t).Database("app").Collection("x")
	waitFor(t, 20*time.Second, "the secondary applies the write", func() bool {
		n, err := sec.CountDocuments(context.Background(), bson.D{})
		return err == nil && n == 1
	})
}
