package sim

import (
	"crypto/md5"
	"encoding/hex"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// adminOnly are the commands mongod runs only against the admin database.
var adminOnly = map[string]bool{
	"replSetInitiate": true, "replSetGetStatus": true, "replSetGetConfig": true, "replSetReconfig": true,
	"replSetStepDown": true, "replSetFreeze": true, "replSetStepUp": true, "replSetHeartbeat": true, "replSetRequestVotes": true,
	"shutdown": true, "getParameter": true, "setParameter": true, "getCmdLineOpts": true, "getLog": true, "listDatabases": true,
	"currentOp": true, "killOp": true, "fsync": true, "logRotate": true, "setFeatureCompatibilityVersion": true,
	"getDiagnosticData": true, "top": true, "getDefaultRWConcern": true, "setDefaultRWConcern": true,
}

// commandHelp is listCommands' help text, by command; others get a generic one.
var commandHelp = map[string]string{
	"hello": "Check if this server is primary for a replica set\n{ hello : 1 }", "ping": "a way to check that the server is alive. responds immediately even if server is in a db lock.",
	"buildInfo": "get version #, etc.\n{ buildinfo:1 }", "serverStatus": "returns lots of administrative server statistics",
	"getParameter": "get administrative option(s)\nexample:\n{ getParameter:1, notablescan:1 }\npass a document as the value for getParameter to request options\n",
	"setParameter": "set administrative option(s)\n{ setParameter:1, <param>:<value> }\nsupported:\n",
	"listCommands": "get a list of all db commands", "currentOp": "no help defined", "top": "usage by collection, in micros ",
	"validate": "Validate contents of a namespace by scanning its data structures for correctness.\nThis is a slow operation.\n\tAdd {full: true} option to do a more thorough check.",
	"dbHash":   "no help defined", "explain": "explain database reads and writes", "setFeatureCompatibilityVersion": "Set the featureCompatibilityVersion used by this cluster.",
}

func (c *conn) cmdListCommands(*Request) (bson.D, error) {
	names := sortedKeys(commands)
	out := bson.D{}
	for _, name := range names {
		if strings.HasPrefix(name, "_sim") {
			continue
		}
		cmd := commands[name]
		help, ok := commandHelp[name]
		if !ok {
			help = "no help defined"
		}
		out = append(out, bson.E{Key: name, Value: bson.D{{Key: "apiVersions", Value: bson.A{}}, {Key: "deprecatedApiVersions", Value: bson.A{}},
			{Key: "help", Value: help}, {Key: "requiresAuth", Value: !cmd.noAuth}, {Key: "secondaryOk", Value: cmd.class != classWrite},
			{Key: "adminOnly", Value: adminOnly[name]}}})
	}
	return bson.D{{Key: "commands", Value: out}}, nil
}

func requireAdmin(req *Request, name string) *CmdError {
	if req.DB() != "admin" {
		return cerr(13, "%s may only be run against the admin database.", name)
	}
	return nil
}

func (c *conn) cmdTop(req *Request) (bson.D, error) {
	if e := requireAdmin(req, "top"); e != nil {
		return nil, e
	}
	return bson.D{{Key: "totals", Value: c.n.metrics.topDoc()}}, nil
}

// cmdValidate checks a collection: every document the store holds is
// valid BSON with an _id, which is what the simulator can vouch for.
func (c *conn) cmdValidate(req *Request) (bson.D, error) {
	coll, e := collName(req, "validate")
	if e != nil {
		return nil, e
	}
	db := req.DB()
	if !c.n.collExists(db, coll) {
		return nil, cerr(26, "Collection '%s.%s' does not exist to validate.", db, coll)
	}
	var docs []bson.Raw
	c.n.mu.Lock()
	if cl := c.n.data.Coll(db, coll, false); cl != nil {
		docs = cl.Docs()
	}
	c.n.mu.Unlock()
	invalid := 0
	for _, d := range docs {
		if d.Validate() != nil {
			invalid++
		} else if _, err := d.LookupErr("_id"); err != nil && (db != "local" || coll != "oplog.rs") {
			invalid++
		}
	}
	s := c.n.measure(db, coll)
	keys := bson.D{}
	details := bson.D{}
	for _, ix := range s.indexes {
		keys = append(keys, bson.E{Key: ix.Key, Value: int64(len(docs))})
		details = append(details, bson.E{Key: ix.Key, Value: bson.D{{Key: "valid", Value: invalid == 0}}})
	}
	errs := bson.A{}
	if invalid > 0 {
		errs = append(errs, "Detected one or more invalid documents. See logs.")
	}
	full, _ := req.Body.Lookup("full").BooleanOK()
	return bson.D{{Key: "ns", Value: db + "." + coll}, {Key: "nInvalidDocuments", Value: int64(invalid)},
		{Key: "nNonCompliantDocuments", Value: int64(0)}, {Key: "nrecords", Value: s.count},
		{Key: "nIndexes", Value: int32(len(s.indexes))}, {Key: "keysPerIndex", Value: keys}, {Key: "indexDetails", Value: details},
		{Key: "valid", Value: invalid == 0}, {Key: "repaired", Value: false}, {Key: "warnings", Value: bson.A{}}, {Key: "errors", Value: errs},
		{Key: "extraIndexEntries", Value: bson.A{}}, {Key: "missingIndexEntries", Value: bson.A{}}, {Key: "corruptRecords", Value: bson.A{}},
		{Key: "advice", Value: "A corrupt namespace has been detected. See http://dochub.mongodb.org/core/data-recovery for recovery steps."},
		{Key: "full", Value: full}}, nil
}

// dbHashed says whether dbHash covers a collection: user collections and
// the system collections mongod includes.
func dbHashed(name string) bool {
	if !strings.HasPrefix(name, "system.") {
		return true
	}
	switch name {
	case "system.users", "system.roles", "system.version", "system.js":
		return true
	}
	return false
}

// cmdDBHash hashes each collection's documents (md5, in the store's order)
// and the database as a whole, the way tests compare members.
func (c *conn) cmdDBHash(req *Request) (bson.D, error) {
	start := time.Now()
	db := req.DB()
	want := map[string]bool{}
	if a, ok := req.Body.Lookup("collections").ArrayOK(); ok {
		vals, _ := a.Values()
		for _, v := range vals {
			s, ok := v.StringValueOK()
			if !ok {
				return nil, cerr(2, "collections entries must be strings")
			}
			want[s] = true
		}
	}
	c.n.mu.Lock()
	names := c.n.data.CollNames(db)
	hashes := map[string]string{}
	for _, name := range names {
		if !dbHashed(name) || len(want) > 0 && !want[name] {
			continue
		}
		h := md5.New()
		for _, d := range c.n.data.Coll(db, name, false).Docs() {
			h.Write(d)
		}
		hashes[name] = hex.EncodeToString(h.Sum(nil))
	}
	c.n.mu.Unlock()
	all := md5.New()
	colls := bson.D{}
	for _, name := range sortedKeys(hashes) {
		all.Write([]byte(hashes[name]))
		colls = append(colls, bson.E{Key: name, Value: hashes[name]})
	}
	return bson.D{{Key: "host", Value: c.n.hostPort()}, {Key: "collections", Value: colls}, {Key: "capped", Value: bson.A{}},
		{Key: "uuids", Value: bson.D{}}, {Key: "md5", Value: hex.EncodeToString(all.Sum(nil))},
		{Key: "timeMillis", Value: int32(time.Since(start).Milliseconds())}, {Key: "fromCache", Value: bson.A{}}}, nil
}

// cmdGetDiagnosticData is what FTDC collects: serverStatus,
// replSetGetStatus, the oplog's collStats and basic system metrics.
func (c *conn) cmdGetDiagnosticData(req *Request) (bson.D, error) {
	if e := requireAdmin(req, "getDiagnosticData"); e != nil {
		return nil, e
	}
	start := time.Now()
	ss, err := c.cmdServerStatus(&Request{Body: mustRaw(bson.D{{Key: "serverStatus", Value: 1}})})
	if err != nil {
		return nil, err
	}
	data := bson.D{{Key: "start", Value: bson.NewDateTimeFromTime(start)}, {Key: "serverStatus", Value: ss}}
	if c.n.cfg.ReplSet != "" {
		if rs, err := c.cmdReplSetGetStatus(req); err == nil {
			data = append(data, bson.E{Key: "replSetGetStatus", Value: rs})
		}
		data = append(data, bson.E{Key: "local.oplog.rs.stats", Value: c.n.collStatsDoc("local", "oplog.rs", 1)})
	}
	data = append(data, bson.E{Key: "systemMetrics", Value: systemMetrics(start)},
		bson.E{Key: "end", Value: bson.NewDateTimeFromTime(time.Now())})
	return bson.D{{Key: "data", Value: data}}, nil
}

// systemMetrics are FTDC's Linux basics: CPU times (/proc/stat), memory
// (/proc/meminfo) and load.
func systemMetrics(start time.Time) bson.D {
	cpu := bson.D{{Key: "num_cpus", Value: int32(runtime.NumCPU())}}
	stat := strings.Fields(firstLine("/proc/stat"))
	for i, name := range []string{"user_ms", "nice_ms", "system_ms", "idle_ms", "iowait_ms", "irq_ms", "softirq_ms", "steal_ms"} {
		if i+1 < len(stat) {
			v := parseInt(stat[i+1])
			cpu = append(cpu, bson.E{Key: name, Value: v * 10})
		}
	}
	mem := bson.D{}
	for _, k := range []string{"MemTotal", "MemFree", "MemAvailable", "Buffers", "Cached", "SwapTotal", "SwapFree"} {
		mem = append(mem, bson.E{Key: k + "_kb", Value: procValue("/proc/meminfo", k)})
	}
	return bson.D{{Key: "start", Value: bson.NewDateTimeFromTime(start)}, {Key: "cpu", Value: cpu}, {Key: "memory", Value: mem},
		{Key: "end", Value: bson.NewDateTimeFromTime(time.Now())}}
}

func firstLine(path string) string {
	b, _ := os.ReadFile(path)
	line, _, _ := strings.Cut(string(b), "\n")
	return line
}

func parseInt(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}
