package sim

import (
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// serverMetrics are the counters serverStatus and top report, counted for
// real as requests are served and oplog entries applied.
type serverMetrics struct {
	bytesIn, bytesOut, requests atomic.Int64
	nextOpID                    atomic.Int32

	mu             sync.Mutex
	opcounters     map[string]int64 // insert, query, update, delete, getmore, command
	opcountersRepl map[string]int64
	commands       map[string]*[2]int64            // total, failed
	top            map[string]map[string]*[2]int64 // ns → category → time µs, count
	inprog         map[int32]*operation
	killed         map[int32]bool
}

// operation is a command in progress, as currentOp shows it.
type operation struct {
	opid    int32
	name    string
	ns      string
	command bson.Raw
	client  string
	connID  int64
	start   time.Time
}

func newServerMetrics() *serverMetrics {
	return &serverMetrics{opcounters: map[string]int64{}, opcountersRepl: map[string]int64{}, commands: map[string]*[2]int64{},
		top: map[string]map[string]*[2]int64{}, inprog: map[int32]*operation{}, killed: map[int32]bool{}}
}

var opcounterNames = []string{"insert", "query", "update", "delete", "getmore", "command"}

// statements is how many documents or statements a write carries (in the
// body or as a kind-1 sequence), which is what mongod's opcounters count.
func statements(req *Request, field string) int64 {
	if seq, ok := req.Seqs[field]; ok {
		return int64(len(seq))
	}
	if a, ok := req.Body.Lookup(field).ArrayOK(); ok {
		vals, _ := a.Values()
		return int64(len(vals))
	}
	return 0
}

// begin records a request about to run and returns its operation.
func (m *serverMetrics) begin(c *conn, req *Request, name string, known bool) *operation {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch name {
	case "insert":
		m.opcounters["insert"] += statements(req, "documents")
	case "update":
		m.opcounters["update"] += statements(req, "updates")
	case "delete":
		m.opcounters["delete"] += statements(req, "deletes")
	case "find":
		m.opcounters["query"]++
	case "getMore":
		m.opcounters["getmore"]++
	default:
		m.opcounters["command"]++
	}
	op := &operation{opid: m.nextOpID.Add(1), name: name, command: req.Body, client: c.nc.RemoteAddr().String(), connID: c.id, start: time.Now()}
	if coll, ok := req.Body.Lookup(name).StringValueOK(); ok && coll != "" {
		op.ns = req.DB() + "." + coll
	} else {
		op.ns = req.DB() + ".$cmd"
	}
	m.inprog[op.opid] = op
	return op
}

// end records how a request finished: metrics.commands and top.
func (m *serverMetrics) end(op *operation, known, failed bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.inprog, op.opid)
	delete(m.killed, op.opid)
	key := op.name
	if !known {
		key = "<UNKNOWN>"
	}
	cc := m.commands[key]
	if cc == nil {
		cc = &[2]int64{}
		m.commands[key] = cc
	}
	cc[0]++
	if failed {
		cc[1]++
	}
	if strings.HasSuffix(op.ns, ".$cmd") || !known {
		return
	}
	cats := m.top[op.ns]
	if cats == nil {
		cats = map[string]*[2]int64{}
		m.top[op.ns] = cats
	}
	us := time.Since(op.start).Microseconds()
	add := func(cat string) {
		t := cats[cat]
		if t == nil {
			t = &[2]int64{}
			cats[cat] = t
		}
		t[0] += us
		t[1]++
	}
	add("total")
	switch op.name {
	case "find", "count", "distinct", "aggregate":
		add("readLock")
		add("queries")
	case "getMore":
		add("readLock")
		add("getmore")
	case "insert":
		add("writeLock")
		add("insert")
	case "update", "findAndModify", "findandmodify":
		add("writeLock")
		add("update")
	case "delete":
		add("writeLock")
		add("remove")
	default:
		add("writeLock")
		add("commands")
	}
}

// applied counts an oplog entry a secondary applied (opcountersRepl).
func (m *serverMetrics) applied(e OplogEntry) {
	name := map[string]string{"i": "insert", "u": "update", "d": "delete", "c": "command"}[e.Op]
	if name == "" {
		return
	}
	m.mu.Lock()
	m.opcountersRepl[name]++
	m.mu.Unlock()
}

func (m *serverMetrics) opcountersDoc(repl bool) bson.D {
	m.mu.Lock()
	defer m.mu.Unlock()
	src := m.opcounters
	if repl {
		src = m.opcountersRepl
	}
	d := bson.D{}
	for _, k := range opcounterNames {
		d = append(d, bson.E{Key: k, Value: src[k]})
	}
	return d
}

func (m *serverMetrics) commandsDoc() bson.D {
	m.mu.Lock()
	defer m.mu.Unlock()
	names := make([]string, 0, len(m.commands))
	for k := range m.commands {
		names = append(names, k)
	}
	sort.Strings(names)
	d := bson.D{}
	for _, k := range names {
		d = append(d, bson.E{Key: k, Value: bson.D{{Key: "failed", Value: m.commands[k][1]}, {Key: "total", Value: m.commands[k][0]}}})
	}
	return d
}

var topCategories = []string{"total", "readLock", "writeLock", "queries", "getmore", "insert", "update", "remove", "commands"}

func (m *serverMetrics) topDoc() bson.D {
	m.mu.Lock()
	defer m.mu.Unlock()
	nss := make([]string, 0, len(m.top))
	for ns := range m.top {
		nss = append(nss, ns)
	}
	sort.Strings(nss)
	totals := bson.D{{Key: "note", Value: "all times in microseconds"}}
	for _, ns := range nss {
		entry := bson.D{}
		for _, cat := range topCategories {
			t := m.top[ns][cat]
			if t == nil {
				t = &[2]int64{}
			}
			entry = append(entry, bson.E{Key: cat, Value: bson.D{{Key: "time", Value: t[0]}, {Key: "count", Value: t[1]}}})
		}
		totals = append(totals, bson.E{Key: ns, Value: entry})
	}
	return totals
}

// inProgress lists the operations running now, as currentOp reports them.
func (m *serverMetrics) inProgress() []*operation {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*operation, 0, len(m.inprog))
	for _, op := range m.inprog {
		out = append(out, op)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].opid < out[j].opid })
	return out
}

// kill marks an operation killed; it reports whether one was running.
func (m *serverMetrics) kill(opid int32) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.inprog[opid]; !ok {
		return false
	}
	m.killed[opid] = true
	return true
}

// failedTotal is how many commands failed (serverStatus asserts.user).
func (m *serverMetrics) failedTotal() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var t int64
	for _, c := range m.commands {
		t += c[1]
	}
	return t
}

// returnedDocs counts the documents a cursor reply hands out.
func (m *serverMetrics) returnedDocs(reply bson.D) {
	for _, e := range reply {
		if e.Key != "cursor" {
			continue
		}
		cur, _ := e.Value.(bson.D)
		for _, f := range cur {
			if f.Key == "firstBatch" || f.Key == "nextBatch" {
				if docs, ok := f.Value.(bson.A); ok {
					m.mu.Lock()
					m.opcounters["returned"] += int64(len(docs))
					m.mu.Unlock()
				}
			}
		}
	}
}

func (m *serverMetrics) documentDoc() bson.D {
	m.mu.Lock()
	defer m.mu.Unlock()
	return bson.D{{Key: "deleted", Value: m.opcounters["delete"]}, {Key: "inserted", Value: m.opcounters["insert"]},
		{Key: "returned", Value: m.opcounters["returned"]}, {Key: "updated", Value: m.opcounters["update"]}}
}

// latencyDoc is $collStats' latencyStats for a namespace: total
// microseconds and operations of its reads, writes and commands.
func (m *serverMetrics) latencyDoc(ns string) bson.D {
	m.mu.Lock()
	defer m.mu.Unlock()
	sum := func(cats ...string) bson.D {
		var us, ops int64
		for _, c := range cats {
			if t := m.top[ns][c]; t != nil {
				us += t[0]
				ops += t[1]
			}
		}
		return bson.D{{Key: "latency", Value: us}, {Key: "ops", Value: ops}}
	}
	return bson.D{{Key: "reads", Value: sum("queries", "getmore")}, {Key: "writes", Value: sum("insert", "update", "remove")},
		{Key: "commands", Value: sum("commands")}, {Key: "transactions", Value: bson.D{{Key: "latency", Value: int64(0)}, {Key: "ops", Value: int64(0)}}}}
}
