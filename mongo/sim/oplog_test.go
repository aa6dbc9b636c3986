package sim_test

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// fillOplog inserts n documents of ~10 KB each with w:majority, ids from..from+n.
func fillOplog(t *testing.T, client *mongo.Client, from, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	coll := client.Database("test").Collection("c", options.Collection().SetWriteConcern(writeconcern.Majority()))
	pad := strings.Repeat("x", 10<<10)
	for i := from; i < from+n; i += 10 {
		var docs []any
		for j := i; j < i+10 && j < from+n; j++ {
			docs = append(docs, bson.D{{Key: "_id", Value: j}, {Key: "pad", Value: pad}})
		}
		if _, err := coll.InsertMany(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
}

// oplogStats is collStats of local.oplog.rs and its first entry's ts.
func oplogStats(t *testing.T, m *member) (stats bson.Raw, first bson.Timestamp) {
	t.Helper()
	c := m.shortClient()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	defer func() { _ = c.Disconnect(ctx) }()
	local := c.Database("local")
	stats, err := local.RunCommand(ctx, bson.D{{Key: "collStats", Value: "oplog.rs"}}, options.RunCmd().SetReadPreference(readpref.PrimaryPreferred())).Raw()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := local.Collection("oplog.rs", options.Collection().SetReadPreference(readpref.PrimaryPreferred())).
		FindOne(ctx, bson.D{}, options.FindOne().SetSort(bson.D{{Key: "$natural", Value: 1}})).Raw()
	if err != nil {
		t.Fatal(err)
	}
	tt, i, _ := raw.Lookup("ts").TimestampOK()
	return stats, bson.Timestamp{T: tt, I: i}
}

// naturalTimestamps reads local.oplog.rs in $natural order, and checks
// that $natural -1 starts with the newest.
func naturalTimestamps(t *testing.T, m *member) []bson.Timestamp {
	t.Helper()
	c := m.shortClient()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	defer func() { _ = c.Disconnect(ctx) }()
	oplog := c.Database("local").Collection("oplog.rs", options.Collection().SetReadPreference(readpref.PrimaryPreferred()))
	cur, err := oplog.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "$natural", Value: 1}}).SetProjection(bson.D{{Key: "ts", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	var out []bson.Timestamp
	for cur.Next(ctx) {
		tt, i, _ := cur.Current.Lookup("ts").TimestampOK()
		out = append(out, bson.Timestamp{T: tt, I: i})
	}
	last, err := oplog.FindOne(ctx, bson.D{}, options.FindOne().SetSort(bson.D{{Key: "$natural", Value: -1}})).Raw()
	if err != nil || len(out) == 0 {
		t.Fatalf("oplog read: %v, %d entries", err, len(out))
	}
	tt, i, _ := last.Lookup("ts").TimestampOK()
	if lt := (bson.Timestamp{T: tt, I: i}); lt.T < out[len(out)-1].T || lt.T == out[len(out)-1].T && lt.I < out[len(out)-1].I {
		t.Errorf("$natural -1 gives %v, older than the last of $natural 1, %v", lt, out[len(out)-1])
	}
	return out
}

func TestOplogBoundedCheckpointSurvivesKill(t *testing.T) {
	ms, _ := initiated(t, 3, fastSettings, "--oplogSize", "1")
	client := connect(t, rsURI(ms, ""))
	_, firstBefore := oplogStats(t, ms[0])
	fillOplog(t, client, 0, 300) // ~3 MB of entries through a 1 MB oplog
	for _, m := range ms {
		// Truncation follows the commit point, which a secondary learns a round trip later.
		waitFor(t, 20*time.Second, "oplog of "+m.host+" within its size", func() bool {
			stats, _ := oplogStats(t, m)
			size, _ := stats.Lookup("size").AsInt64OK()
			return size <= 1<<20+200<<10
		})
		stats, first := oplogStats(t, m)
		if capped, _ := stats.Lookup("capped").BooleanOK(); !capped {
			t.Errorf("%s: oplog not capped: %v", m.host, stats)
		}
		if max, _ := stats.Lookup("maxSize").AsInt64OK(); max != 1<<20 {
			t.Errorf("%s: maxSize %d, want 1 MB", m.host, max)
		}
		if first.T < firstBefore.T || first.T == firstBefore.T && first.I <= firstBefore.I {
			t.Errorf("%s: oldest entry %v not truncated (was %v)", m.host, first, firstBefore)
		}
		// Readers see the capped collection: $natural order, count as collStats says.
		ts := naturalTimestamps(t, m)
		if count, _ := stats.Lookup("count").AsInt64OK(); len(ts) < int(count) || ts[0] != first {
			t.Errorf("%s: find returns %d entries from %v; collStats count %d, first %v", m.host, len(ts), ts[0], count, first)
		}
		for i := 1; i < len(ts); i++ {
			if ts[i].T < ts[i-1].T || ts[i].T == ts[i-1].T && ts[i].I <= ts[i-1].I {
				t.Fatalf("%s: $natural order broken at %d: %v then %v", m.host, i, ts[i-1], ts[i])
			}
		}
	}
	ss := mustRun(t, ms[0].client(t), bson.D{{Key: "serverStatus", Value: 1}})
	if n, _ := ss.Lookup("oplogTruncation", "truncateCount").AsInt64OK(); n == 0 {
		t.Errorf("serverStatus.oplogTruncation: %v", ss.Lookup("oplogTruncation"))
	}
	// kill -9 everyone; start-up loads the checkpoint and replays the rest.
	for _, m := range ms {
		m.kill()
	}
	for _, m := range ms {
		m.start()
	}
	waitPrimary(t, ms, 30*time.Second)
	for _, m := range ms {
		waitFor(t, 30*time.Second, "every acknowledged document on "+m.host, func() bool { return countOn(t, m, bson.D{}) == 300 })
	}
	fillOplog(t, connect(t, rsURI(ms, "")), 300, 10)
	for _, m := range ms {
		waitFor(t, 30*time.Second, "new writes on "+m.host, func() bool { return countOn(t, m, bson.D{}) == 310 })
	}
}

func TestReplSetResizeOplog(t *testing.T) {
	ms, p := initiated(t, 1, fastSettings, "--oplogSize", "1")
	c := ms[p].client(t)
	for _, tc := range []struct {
		cmd  bson.D
		code int32
	}{
		{bson.D{{Key: "replSetResizeOplog", Value: 1}, {Key: "size", Value: 900.0}}, 51024},
		{bson.D{{Key: "replSetResizeOplog", Value: 1}, {Key: "size", Value: float64(1 << 31)}}, 51024},
		{bson.D{{Key: "replSetResizeOplog", Value: 1}, {Key: "minRetentionHours", Value: -1.0}}, 51024},
		{bson.D{{Key: "replSetResizeOplog", Value: 1}, {Key: "size", Value: "big"}}, 14},
		{bson.D{{Key: "replSetResizeOplog", Value: 1}, {Key: "size", Value: 1000}}, 14}, // an int: mongod wants a double
	} {
		if _, err := run(c, tc.cmd); !hasCode(err, tc.code) {
			t.Errorf("%v: %v, want code %d", tc.cmd, err, tc.code)
		}
	}
	// Minimum retention keeps entries past the size.
	mustRun(t, c, bson.D{{Key: "replSetResizeOplog", Value: 1}, {Key: "minRetentionHours", Value: 1.0}})
	_, first := oplogStats(t, ms[p])
	fillOplog(t, connect(t, rsURI(ms, "")), 0, 200)
	stats, first2 := oplogStats(t, ms[p])
	if size, _ := stats.Lookup("size").AsInt64OK(); size < 3<<19 || first2 != first {
		t.Errorf("minRetentionHours did not keep the oplog: size %d, first %v then %v", size, first, first2)
	}
	// A new size is persisted and wins over --oplogSize at the next start.
	mustRun(t, c, bson.D{{Key: "replSetResizeOplog", Value: 1}}) // nothing to change: accepted
	mustRun(t, c, bson.D{{Key: "replSetResizeOplog", Value: 1}, {Key: "size", Value: 990.0}})
	ms[p].kill()
	ms[p].start()
	waitPrimary(t, ms, 30*time.Second)
	stats, _ = oplogStats(t, ms[p])
	if max, _ := stats.Lookup("maxSize").AsInt64OK(); max != 990<<20 {
		t.Errorf("maxSize after restart %d, want 990 MB", max)
	}
	if !ms[p].logged("replSetResizeOplog success") {
		t.Error("no replSetResizeOplog log line")
	}
}

// A member added after the oplog lost the beginning of history clones the
// documents, then applies the oplog, then becomes SECONDARY.
func TestInitialSyncClonesPastTruncatedOplog(t *testing.T) {
	ms, p := initiated(t, 2, fastSettings, "--oplogSize", "1")
	client := connect(t, rsURI(ms, ""))
	fillOplog(t, client, 0, 300)
	nm := newMember(t, "--oplogSize", "1")
	cfg := mustRun(t, ms[p].client(t), bson.D{{Key: "replSetGetConfig", Value: 1}}).Lookup("config").Document()
	var conf bson.D
	if err := bson.Unmarshal(cfg, &conf); err != nil {
		t.Fatal(err)
	}
	for i, e := range conf {
		switch e.Key {
		case "version":
			v, _ := cfg.Lookup("version").AsInt64OK()
			conf[i].Value = v + 1
		case "members":
			arr := e.Value.(bson.A)
			conf[i].Value = append(arr, bson.D{{Key: "_id", Value: 5}, {Key: "host", Value: nm.host}})
		}
	}
	mustRun(t, ms[p].client(t), bson.D{{Key: "replSetReconfig", Value: conf}})
	// initialSyncStatus is reported while in STARTUP2 (mongod 4.2.1+);
	// the clone is quick, so a sighting is checked but not required.
	seen := false
	waitFor(t, 60*time.Second, "new member SECONDARY", func() bool {
		c := nm.shortClient()
		defer func() { _ = c.Disconnect(context.Background()) }()
		r, err := run(c, bson.D{{Key: "replSetGetStatus", Value: 1}})
		if err != nil {
			return false
		}
		if is, ok := r.Lookup("initialSyncStatus").DocumentOK(); ok {
			seen = true
			if v, _ := is.Lookup("maxFailedInitialSyncAttempts").AsInt64OK(); v != 10 {
				t.Errorf("initialSyncStatus: %v", is)
			}
		}
		s, _ := r.Lookup("myState").AsInt64OK()
		return s == 2
	})
	t.Logf("initialSyncStatus seen while in STARTUP2: %v", seen)
	if got := countOn(t, nm, bson.D{}); got != 300 {
		t.Errorf("new member has %d documents, want 300", got)
	}
	for _, want := range []string{"Starting initial sync attempt", "Finished cloning data. Beginning oplog replay", "Initial sync done"} {
		if !nm.logged(want) {
			t.Errorf("log lacks %q", want)
		}
	}
	fillOplog(t, client, 300, 10)
	waitFor(t, 30*time.Second, "new writes on the new member", func() bool { return countOn(t, nm, bson.D{}) == 310 })
}

// A secondary frozen while the others write past the oplog's size cannot
// catch up: RECOVERING with mongod's "too stale" messages, until it is
// wiped and resynced by initial sync.
func TestTooStaleMemberRecoversByResync(t *testing.T) {
	ms, p := initiated(t, 3, fastSettings, "--oplogSize", "1")
	stale := ms[(p+1)%3]
	if err := stale.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	client := connect(t, rsURI(ms, ""))
	fillOplog(t, client, 0, 300)
	if err := stale.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the stale member RECOVERING, too stale", func() bool {
		c := stale.shortClient()
		defer func() { _ = c.Disconnect(context.Background()) }()
		r, err := run(c, bson.D{{Key: "replSetGetStatus", Value: 1}})
		if err != nil {
			return false
		}
		if s, _ := r.Lookup("myState").AsInt64OK(); s != 3 {
			return false
		}
		members, _ := r.Lookup("members").Array().Values()
		for _, v := range members {
			m := v.Document()
			if self, _ := m.Lookup("self").BooleanOK(); self {
				msg, _ := m.Lookup("infoMessage").StringValueOK()
				return msg == "Could not find member to sync from"
			}
		}
		return false
	})
	if !stale.logged("Too stale to catch up. Entering maintenance mode", "We are too stale to use candidate as a sync source") {
		t.Error("log lacks mongod's too-stale messages")
	}
	// It stays RECOVERING: nothing brings the missing entries back.
	time.Sleep(2 * time.Second)
	if s := state(t, stale); s != 3 {
		t.Fatalf("stale member left RECOVERING on its own: state %d", s)
	}
	// Resync: wipe the dbpath and start again.
	stale.kill()
	stale.dbpath = t.TempDir()
	stale.start()
	waitFor(t, 60*time.Second, "the resynced member SECONDARY", func() bool { return state(t, stale) == 2 })
	if got := countOn(t, stale, bson.D{}); got != 300 {
		t.Errorf("resynced member has %d documents, want 300", got)
	}
}

// The oplog grows past its size rather than lose entries the commit point
// still needs: with the only other data-bearing member of a PSA set frozen,
// nothing is majority committed, so nothing is truncated and the member
// catches up when it resumes.
func TestOplogKeepsEntriesAboveCommitPoint(t *testing.T) {
	ms := []*member{newMember(t, "--oplogSize", "1"), newMember(t, "--oplogSize", "1"), newMember(t)}
	cfg := bson.D{{Key: "_id", Value: "rs0"}, {Key: "members", Value: bson.A{
		bson.D{{Key: "_id", Value: 0}, {Key: "host", Value: ms[0].host}, {Key: "priority", Value: 2}},
		bson.D{{Key: "_id", Value: 1}, {Key: "host", Value: ms[1].host}},
		bson.D{{Key: "_id", Value: 2}, {Key: "host", Value: ms[2].host}, {Key: "arbiterOnly", Value: true}},
	}}, {Key: "settings", Value: fastSettings}}
	mustRun(t, ms[0].client(t), bson.D{{Key: "replSetInitiate", Value: cfg}})
	waitFor(t, 30*time.Second, "member 0 primary", func() bool { return primaryOf(ms[:1]) == 0 })
	waitFor(t, 20*time.Second, "member 1 SECONDARY", func() bool { return state(t, ms[1]) == 2 })
	_, first := oplogStats(t, ms[0])
	if err := ms[1].cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	coll := ms[0].client(t).Database("test").Collection("c", options.Collection().SetWriteConcern(writeconcern.W1()))
	pad := strings.Repeat("x", 10<<10)
	for i := range 200 {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "pad", Value: pad}}); err != nil {
			t.Fatal(err)
		}
	}
	stats, first2 := oplogStats(t, ms[0])
	if size, _ := stats.Lookup("size").AsInt64OK(); size < 3<<19 || first2 != first {
		t.Errorf("oplog truncated above the commit point: size %d, first %v then %v", size, first, first2)
	}
	if err := ms[1].cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the resumed member caught up", func() bool { return countOn(t, ms[1], bson.D{}) == 200 })
	// Once the commit point moves, the next write truncates.
	waitFor(t, 30*time.Second, "oplog back under its size", func() bool {
		if _, err := coll.InsertOne(ctx, bson.D{}); err != nil {
			t.Fatal(err)
		}
		stats, _ := oplogStats(t, ms[0])
		size, _ := stats.Lookup("size").AsInt64OK()
		return size <= 1<<20
	})
}

// Rollback after truncation rebuilds from the checkpoint: the old primary's
// w:1 write goes, every majority write stays.
func TestRollbackAfterTruncationUsesCheckpoint(t *testing.T) {
	settings := bson.D{{Key: "electionTimeoutMillis", Value: 4000}, {Key: "heartbeatIntervalMillis", Value: 200}}
	ms, p := initiated(t, 3, settings, "--oplogSize", "1")
	fillOplog(t, connect(t, rsURI(ms, "")), 0, 300)
	old := ms[p]
	var secs []*member
	for i, m := range ms {
		if i != p {
			secs = append(secs, m)
			m.kill()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w1 := old.client(t).Database("test").Collection("c", options.Collection().SetWriteConcern(writeconcern.W1()))
	if _, err := w1.InsertOne(ctx, bson.D{{Key: "_id", Value: "lost"}}); err != nil {
		t.Fatalf("w:1 write on the isolated primary: %v", err)
	}
	old.kill()
	for _, s := range secs {
		s.start()
	}
	np := secs[waitPrimary(t, secs, 30*time.Second)]
	if _, err := np.client(t).Database("test").Collection("c", options.Collection().SetWriteConcern(writeconcern.Majority())).
		InsertOne(ctx, bson.D{{Key: "_id", Value: "after"}}); err != nil {
		t.Fatal(err)
	}
	old.start()
	waitFor(t, 30*time.Second, "old primary rolled back and SECONDARY", func() bool {
		return state(t, old) == 2 && countOn(t, old, bson.D{{Key: "_id", Value: "after"}}) == 1
	})
	if n := countOn(t, old, bson.D{{Key: "_id", Value: "lost"}}); n != 0 {
		t.Errorf("w:1 write not rolled back")
	}
	if n := countOn(t, old, bson.D{}); n != 301 {
		t.Errorf("old primary has %d documents, want 301", n)
	}
	if !old.logged("Rollback summary") {
		t.Error("no rollback")
	}
}
