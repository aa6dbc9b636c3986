package sim

import (
	"os"
	"runtime"
	"syscall"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// maxIncomingConnections is mongod's default connection limit.
const maxIncomingConnections = 838860

// cmdServerStatus answers with mongod 7.0's sections; {section: 0} leaves
// one out (repl, metrics, wiredTiger... as mongod allows), as does a
// section the simulator has nothing for.
func (c *conn) cmdServerStatus(req *Request) (bson.D, error) {
	n := c.n
	up := time.Since(n.started)
	n.connMu.Lock()
	cur, total := n.connCount, n.connTotal
	n.connMu.Unlock()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	resident := procValue("/proc/self/status", "VmRSS") / 1024
	virtual := procValue("/proc/self/status", "VmSize") / 1024
	active := int32(len(n.metrics.inProgress()))
	sections := []bson.E{
		{Key: "asserts", Value: bson.D{{Key: "regular", Value: int32(0)}, {Key: "warning", Value: int32(0)}, {Key: "msg", Value: int32(0)},
			{Key: "user", Value: int32(n.metrics.failedTotal())}, {Key: "tripwire", Value: int32(0)}, {Key: "rollovers", Value: int32(0)}}},
		{Key: "connections", Value: bson.D{{Key: "current", Value: int32(cur)}, {Key: "available", Value: int32(maxIncomingConnections - cur)},
			{Key: "totalCreated", Value: int32(total)}, {Key: "rejected", Value: int32(0)}, {Key: "active", Value: active},
			{Key: "threaded", Value: int32(cur)}, {Key: "exhaustIsMaster", Value: int32(0)}, {Key: "exhaustHello", Value: int32(0)},
			{Key: "awaitingTopologyChanges", Value: int32(0)}}},
		{Key: "transportSecurity", Value: bson.D{{Key: "1.0", Value: int64(0)}, {Key: "1.1", Value: int64(0)}, {Key: "1.2", Value: int64(0)},
			{Key: "1.3", Value: int64(0)}, {Key: "unknown", Value: int64(0)}}},
		{Key: "network", Value: bson.D{{Key: "bytesIn", Value: n.metrics.bytesIn.Load()}, {Key: "bytesOut", Value: n.metrics.bytesOut.Load()},
			{Key: "physicalBytesIn", Value: n.metrics.bytesIn.Load()}, {Key: "physicalBytesOut", Value: n.metrics.bytesOut.Load()},
			{Key: "numSlowDNSOperations", Value: int64(0)}, {Key: "numSlowSSLOperations", Value: int64(0)},
			{Key: "numRequests", Value: n.metrics.requests.Load()}, {Key: "serviceExecutors", Value: bson.D{}}}},
		{Key: "extra_info", Value: extraInfo()},
		{Key: "globalLock", Value: bson.D{{Key: "totalTime", Value: up.Microseconds()},
			{Key: "currentQueue", Value: bson.D{{Key: "total", Value: int32(0)}, {Key: "readers", Value: int32(0)}, {Key: "writers", Value: int32(0)}}},
			{Key: "activeClients", Value: bson.D{{Key: "total", Value: active}, {Key: "readers", Value: int32(0)}, {Key: "writers", Value: int32(0)}}}}},
		{Key: "catalogStats", Value: n.catalogStats()},
		{Key: "opcounters", Value: n.metrics.opcountersDoc(false)},
		{Key: "opcountersRepl", Value: n.metrics.opcountersDoc(true)},
		{Key: "mem", Value: bson.D{{Key: "bits", Value: int32(64)}, {Key: "resident", Value: int32(resident)}, {Key: "virtual", Value: int32(virtual)},
			{Key: "supported", Value: true}}},
	}
	if n.cfg.ReplSet != "" {
		n.mu.Lock()
		repl := n.helloReplFieldsLocked(true, defaultHorizon)
		repl = append(repl, bson.E{Key: "rbid", Value: n.rbid}, bson.E{Key: "userWriteBlockMode", Value: int32(1)})
		trunc := n.oplogTruncationStatusLocked()
		n.mu.Unlock()
		sections = append(sections, bson.E{Key: "repl", Value: repl}, bson.E{Key: "oplogTruncation", Value: trunc})
	}
	sections = append(sections,
		bson.E{Key: "metrics", Value: bson.D{
			{Key: "commands", Value: n.metrics.commandsDoc()},
			{Key: "document", Value: n.metrics.documentDoc()},
			{Key: "getLastError", Value: bson.D{{Key: "wtime", Value: bson.D{{Key: "num", Value: int32(0)}, {Key: "totalMillis", Value: int32(0)}}},
				{Key: "wtimeouts", Value: int64(0)}, {Key: "default", Value: bson.D{{Key: "unsatisfiable", Value: int64(0)}, {Key: "wtimeouts", Value: int64(0)}}}}},
			{Key: "operation", Value: bson.D{{Key: "scanAndOrder", Value: int64(0)}, {Key: "writeConflicts", Value: int64(0)}}},
			{Key: "cursor", Value: bson.D{{Key: "timedOut", Value: int64(0)}, {Key: "open", Value: bson.D{{Key: "total", Value: int64(n.openCursors())}}}}},
		}},
		bson.E{Key: "storageEngine", Value: bson.D{{Key: "name", Value: "wiredTiger"}, {Key: "supportsCommittedReads", Value: true},
			{Key: "oldestRequiredTimestampForCrashRecovery", Value: bson.Timestamp{}}, {Key: "supportsPendingDrops", Value: true},
			{Key: "dropPendingIdents", Value: int64(0)}, {Key: "supportsSnapshotReadConcern", Value: true}, {Key: "readOnly", Value: false},
			{Key: "persistent", Value: true}, {Key: "backupCursorOpen", Value: false}}},
		bson.E{Key: "wiredTiger", Value: bson.D{{Key: "uri", Value: "statistics:"},
			{Key: "cache", Value: bson.D{{Key: "bytes currently in the cache", Value: int64(m.HeapAlloc)},
				{Key: "maximum bytes configured", Value: int64(256 << 20)}, {Key: "tracked dirty bytes in the cache", Value: int64(0)}}},
			{Key: "concurrentTransactions", Value: bson.D{
				{Key: "write", Value: bson.D{{Key: "out", Value: int32(0)}, {Key: "available", Value: int32(128)}, {Key: "totalTickets", Value: int32(128)}}},
				{Key: "read", Value: bson.D{{Key: "out", Value: int32(0)}, {Key: "available", Value: int32(128)}, {Key: "totalTickets", Value: int32(128)}}}}}}},
	)
	d := bson.D{{Key: "host", Value: n.hostPort()}, {Key: "version", Value: n.cfg.ServerVersion},
		{Key: "process", Value: "mongod"}, {Key: "pid", Value: int64(os.Getpid())}, {Key: "uptime", Value: float64(int64(up.Seconds()))},
		{Key: "uptimeMillis", Value: up.Milliseconds()}, {Key: "uptimeEstimate", Value: int64(up.Seconds())},
		{Key: "localTime", Value: bson.NewDateTimeFromTime(time.Now())}}
	for _, s := range sections {
		if v, err := req.Body.LookupErr(s.Key); err == nil {
			if on, ok := numberOK(v); ok && on == 0 {
				continue
			}
			if b, ok := v.BooleanOK(); ok && !b {
				continue
			}
		}
		d = append(d, s)
	}
	return d, nil
}

func (n *Node) openCursors() int {
	n.cursors.Lock()
	defer n.cursors.Unlock()
	return len(n.cursors.m)
}

// extraInfo is serverStatus' extra_info on Linux, from getrusage.
func extraInfo() bson.D {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return bson.D{{Key: "note", Value: "fields vary by platform"},
		{Key: "user_time_us", Value: ru.Utime.Sec*1e6 + ru.Utime.Usec}, {Key: "system_time_us", Value: ru.Stime.Sec*1e6 + ru.Stime.Usec},
		{Key: "maximum_resident_set_kb", Value: ru.Maxrss}, {Key: "input_blocks", Value: ru.Inblock}, {Key: "output_blocks", Value: ru.Oublock},
		{Key: "page_reclaims", Value: ru.Minflt}, {Key: "page_faults", Value: ru.Majflt},
		{Key: "voluntary_context_switches", Value: ru.Nvcsw}, {Key: "involuntary_context_switches", Value: ru.Nivcsw}}
}

// catalogStats counts collections as mongod's serverStatus does: user
// collections apart from those of admin, local and config.
func (n *Node) catalogStats() bson.D {
	n.mu.Lock()
	defer n.mu.Unlock()
	var user, internal int32
	for _, db := range n.data.DBNames() {
		for range n.data.CollNames(db) {
			if db == "admin" || db == "local" || db == "config" {
				internal++
			} else {
				user++
			}
		}
	}
	return bson.D{{Key: "collections", Value: user}, {Key: "capped", Value: int32(0)}, {Key: "clustered", Value: int32(0)},
		{Key: "timeseries", Value: int32(0)}, {Key: "views", Value: int32(0)}, {Key: "internalCollections", Value: internal},
		{Key: "internalViews", Value: int32(0)}}
}
