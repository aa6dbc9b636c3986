package sim_test

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readconcern"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

func initiated(t *testing.T, n int, settings bson.D, extra ...string) ([]*member, int) {
	t.Helper()
	var ms []*member
	for range n {
		ms = append(ms, newMember(t, extra...))
	}
	mustRun(t, ms[0].client(t), bson.D{{Key: "replSetInitiate", Value: rsConfig(ms, settings)}})
	p := waitPrimary(t, ms, 30*time.Second)
	// every member reaches PRIMARY or SECONDARY
	for _, m := range ms {
		waitFor(t, 20*time.Second, "member "+m.host+" up", func() bool { s := state(t, m); return s == 1 || s == 2 })
	}
	return ms, p
}

func countOn(t *testing.T, m *member, filter bson.D) int64 {
	c := m.shortClient()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	defer func() { _ = c.Disconnect(ctx) }()
	n, err := c.Database("test").Collection("c", options.Collection().SetReadPreference(readpref.PrimaryPreferred())).CountDocuments(ctx, filter)
	if err != nil {
		return -1
	}
	return n
}

func TestFailoverKeepsMajorityWritesAndRollsBackTheRest(t *testing.T) {
	// A longer election timeout leaves the isolated primary writable long
	// enough for the w:1 write, even on a loaded machine.
	settings := bson.D{{Key: "electionTimeoutMillis", Value: 4000}, {Key: "heartbeatIntervalMillis", Value: 200}}
	ms, p := initiated(t, 3, settings)
	client := connect(t, rsURI(ms, ""))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	maj := client.Database("test").Collection("c", options.Collection().SetWriteConcern(writeconcern.Majority()))
	for i := range 20 {
		if _, err := maj.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "kind", Value: "majority"}}); err != nil {
			t.Fatal(err)
		}
	}
	// Cut the primary off from both secondaries, then write w:1 to it: acknowledged, never majority.
	var secs []*member
	for i, m := range ms {
		if i != p {
			secs = append(secs, m)
		}
	}
	old := ms[p]
	for _, s := range secs {
		s.kill()
	}
	direct := old.client(t)
	w1 := direct.Database("test").Collection("c", options.Collection().SetWriteConcern(writeconcern.W1()))
	if _, err := w1.InsertOne(ctx, bson.D{{Key: "_id", Value: "lost"}, {Key: "kind", Value: "w1"}}); err != nil {
		t.Fatalf("w:1 write on the isolated primary: %v", err)
	}
	old.kill()
	for _, s := range secs {
		s.start()
	}
	np := waitPrimary(t, secs, 30*time.Second)
	newPrimary := secs[np]
	if n := countOn(t, newPrimary, bson.D{{Key: "kind", Value: "majority"}}); n != 20 {
		t.Fatalf("new primary has %d of 20 majority writes", n)
	}
	nc := newPrimary.client(t)
	if _, err := nc.Database("test").Collection("c", options.Collection().SetWriteConcern(writeconcern.Majority())).
		InsertOne(ctx, bson.D{{Key: "_id", Value: "after"}}); err != nil {
		t.Fatal(err)
	}
	// The old primary comes back on its dbpath: it rolls back "lost" and follows.
	old.start()
	waitFor(t, 30*time.Second, "old primary back as SECONDARY with the new history", func() bool {
		return state(t, old) == 2 && countOn(t, old, bson.D{{Key: "_id", Value: "after"}}) == 1
	})
	if n := countOn(t, old, bson.D{{Key: "_id", Value: "lost"}}); n != 0 {
		t.Fatalf("the w:1 write that never reached a majority was not rolled back (%d)", n)
	}
	if n := countOn(t, old, bson.D{{Key: "kind", Value: "majority"}}); n != 20 {
		t.Fatalf("old primary lost majority writes: %d", n)
	}
}

func TestSigkillPrimaryElectsNewOneAndKeepsMajorityWrites(t *testing.T) {
	ms, p := initiated(t, 3, fastSettings)
	client := connect(t, rsURI(ms, ""))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	maj := client.Database("test").Collection("c", options.Collection().SetWriteConcern(writeconcern.Majority()))
	for i := range 50 {
		if _, err := maj.InsertOne(ctx, bson.D{{Key: "_id", Value: i}}); err != nil {
			t.Fatal(err)
		}
	}
	ms[p].kill()
	rest := append(append([]*member{}, ms[:p]...), ms[p+1:]...)
	np := waitPrimary(t, rest, 30*time.Second)
	rc := rest[np].client(t)
	coll := rc.Database("test").Collection("c", options.Collection().SetReadConcern(readconcern.Majority()))
	waitFor(t, 10*time.Second, "majority read of all writes", func() bool {
		n, err := coll.CountDocuments(ctx, bson.D{})
		return err == nil && n == 50
	})
	// The driver's replica-set client fails over too.
	if _, err := maj.InsertOne(ctx, bson.D{{Key: "_id", Value: "post-failover"}}); err != nil {
		t.Fatal(err)
	}
	// Range query, sort, limit, projection on the new primary.
	cur, err := rc.Database("test").Collection("c").Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: 10}, {Key: "$lt", Value: 20}}}},
		options.Find().SetSort(bson.D{{Key: "_id", Value: -1}}).SetLimit(3).SetProjection(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.M
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	if len(docs) != 3 || fmt.Sprint(docs[0]["_id"]) != "19" || fmt.Sprint(docs[2]["_id"]) != "17" {
		t.Fatalf("range/sort/limit: %v", docs)
	}
}

func TestReconfigAddRemoveAndForce(t *testing.T) {
	ms, p := initiated(t, 3, fastSettings)
	pc := ms[p].client(t)
	getCfg := func(c *mongo.Client) bson.Raw {
		return mustRun(t, c, bson.D{{Key: "replSetGetConfig", Value: 1}}).Lookup("config").Document()
	}
	cfg := getCfg(pc)
	v1, _ := cfg.Lookup("version").AsInt64OK()
	// rs.add
	d := newMember(t)
	members := bson.A{}
	vals, _ := cfg.Lookup("members").Array().Values()
	for _, v := range vals {
		members = append(members, v.Document())
	}
	withD := append(append(bson.A{}, members...), bson.D{{Key: "_id", Value: 3}, {Key: "host", Value: d.host}})
	mustRun(t, pc, bson.D{{Key: "replSetReconfig", Value: configWith(cfg, withD, v1+1)}})
	waitFor(t, 20*time.Second, "added member SECONDARY", func() bool { return state(t, d) == 2 })
	waitFor(t, 20*time.Second, "newlyAdded follow-up reconfig (version+2)", func() bool {
		v, _ := getCfg(pc).Lookup("version").AsInt64OK()
		return v == v1+2
	})
	// two voting changes at once are refused
	e1, e2 := newMember(t), newMember(t)
	two := append(append(bson.A{}, withD...), bson.D{{Key: "_id", Value: 4}, {Key: "host", Value: e1.host}}, bson.D{{Key: "_id", Value: 5}, {Key: "host", Value: e2.host}})
	if _, err := run(pc, bson.D{{Key: "replSetReconfig", Value: configWith(cfg, two, v1+3)}}); !hasCode(err, 103) {
		t.Fatalf("two voting changes: want 103, got %v", err)
	}
	// rs.remove
	mustRun(t, pc, bson.D{{Key: "replSetReconfig", Value: configWith(cfg, members, v1+3)}})
	waitFor(t, 20*time.Second, "removed member REMOVED", func() bool {
		h := helloOf(d)
		b, _ := h.Lookup("isreplicaset").BooleanOK()
		return b
	})
	if _, err := run(d.client(t), bson.D{{Key: "replSetGetStatus", Value: 1}}); !hasCode(err, 93) {
		t.Fatalf("status on removed member: want 93, got %v", err)
	}
	// Force reconfig on a minority: kill two members, keep one, force it alone.
	var keep *member
	for i, m := range ms {
		if i != p && keep == nil {
			keep = m
			continue
		}
		m.kill()
	}
	kc := keep.client(t)
	kcfg := getCfg(kc)
	var self bson.Raw
	kv, _ := kcfg.Lookup("members").Array().Values()
	for _, v := range kv {
		if h, _ := v.Document().Lookup("host").StringValueOK(); h == keep.host {
			self = v.Document()
		}
	}
	if _, err := run(kc, bson.D{{Key: "replSetReconfig", Value: configWith(kcfg, bson.A{self}, 1)}}); !hasCode(err, 10107) {
		t.Fatalf("non-force reconfig on secondary: want 10107, got %v", err)
	}
	mustRun(t, kc, bson.D{{Key: "replSetReconfig", Value: configWith(kcfg, bson.A{self}, 1)}, {Key: "force", Value: true}})
	waitFor(t, 20*time.Second, "forced single member becomes primary", func() bool { return state(t, keep) == 1 })
	nv, _ := getCfg(kc).Lookup("version").AsInt64OK()
	if nv < v1+10000 {
		t.Fatalf("force reconfig version %d did not jump by 10000 from %d", nv, v1)
	}
}

// configWith copies cfg with other members and version.
func configWith(cfg bson.Raw, members bson.A, version int64) bson.D {
	var d bson.D
	_ = bson.Unmarshal(cfg, &d)
	for i := range d {
		switch d[i].Key {
		case "members":
			d[i].Value = members
		case "version":
			d[i].Value = version
		}
	}
	return d
}

func TestStepDownHandoffFreezeAndShutdown(t *testing.T) {
	ms, p := initiated(t, 3, fastSettings)
	pc := ms[p].client(t)
	if _, err := run(pc, bson.D{{Key: "replSetFreeze", Value: 30}}); !hasCode(err, 95) {
		t.Fatalf("freeze on primary: want 95, got %v", err)
	}
	if _, err := run(pc, bson.D{{Key: "replSetStepDown", Value: 5}, {Key: "secondaryCatchUpPeriodSecs", Value: 10}}); !hasCode(err, 2) {
		t.Fatalf("stepdown shorter than catch-up: want 2, got %v", err)
	}
	mustRun(t, pc, bson.D{{Key: "replSetStepDown", Value: 60}})
	others := append(append([]*member{}, ms[:p]...), ms[p+1:]...)
	np := waitPrimary(t, others, 20*time.Second)
	if s := state(t, ms[p]); s != 2 {
		t.Fatalf("stepped-down member state %d", s)
	}
	st := mustRun(t, others[np].client(t), bson.D{{Key: "replSetGetStatus", Value: 1}})
	// Normally the handoff (stepUpRequestSkipDryRun); a loaded machine may
	// instead see an ordinary election, which is also mongod's behaviour.
	if r, _ := st.Lookup("electionCandidateMetrics", "lastElectionReason").StringValueOK(); r == "" {
		t.Fatalf("no electionCandidateMetrics on the new primary: %v", st)
	} else {
		t.Logf("new primary elected by %s", r)
	}
	if _, err := run(pc, bson.D{{Key: "replSetStepDown", Value: 60}}); !hasCode(err, 10107) {
		t.Fatalf("stepdown on secondary: want 10107, got %v", err)
	}
	// shutdown closes the connection without a reply and the process exits.
	sc := others[np].client(t)
	if _, err := run(sc, bson.D{{Key: "shutdown", Value: 1}, {Key: "force", Value: true}}); err == nil {
		t.Fatal("shutdown replied ok")
	}
	select {
	case <-others[np].done:
	case <-time.After(20 * time.Second):
		t.Fatal("process did not exit after shutdown")
	}
	others[np].cmd = nil
	waitPrimary(t, ms, 30*time.Second)
}

func TestPriorityTakeover(t *testing.T) {
	ms, p := initiated(t, 3, fastSettings)
	pc := ms[p].client(t)
	cfg := mustRun(t, pc, bson.D{{Key: "replSetGetConfig", Value: 1}}).Lookup("config").Document()
	v, _ := cfg.Lookup("version").AsInt64OK()
	want := (p + 1) % 3
	vals, _ := cfg.Lookup("members").Array().Values()
	members := bson.A{}
	for i, x := range vals {
		var d bson.D
		_ = bson.Unmarshal(x.Document(), &d)
		if i == want {
			for j := range d {
				if d[j].Key == "priority" {
					d[j].Value = 5.0
				}
			}
		}
		members = append(members, d)
	}
	mustRun(t, pc, bson.D{{Key: "replSetReconfig", Value: configWith(cfg, members, v+1)}})
	waitFor(t, 30*time.Second, "higher-priority member takes over", func() bool { return primaryOf(ms) == want })
}

// Writes keep flowing through the driver while the primary is SIGKILLed:
// every write the driver acknowledged with w:majority is there afterwards.
func TestAcknowledgedMajorityWritesSurviveKillUnderLoad(t *testing.T) {
	ms, p := initiated(t, 3, fastSettings)
	client := connect(t, rsURI(ms, ""))
	coll := client.Database("test").Collection("load", options.Collection().SetWriteConcern(writeconcern.Majority()))
	var mu sync.Mutex
	var acked []int
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}})
			cancel()
			if err == nil {
				mu.Lock()
				acked = append(acked, i)
				mu.Unlock()
			}
		}
	}()
	ackedCount := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	waitFor(t, 20*time.Second, "writes before the kill", func() bool { return ackedCount() >= 30 })
	ms[p].kill()
	before := ackedCount()
	waitFor(t, 30*time.Second, "writes after the failover", func() bool { return ackedCount() >= before+30 })
	close(stop)
	<-done
	rest := append(append([]*member{}, ms[:p]...), ms[p+1:]...)
	np := waitPrimary(t, rest, 20*time.Second)
	rc := rest[np].client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cur, err := rc.Database("test").Collection("load", options.Collection().SetReadConcern(readconcern.Majority())).Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var docs []bson.M
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, d := range docs {
		have[fmt.Sprint(d["_id"])] = true
	}
	mu.Lock()
	defer mu.Unlock()
	for _, id := range acked {
		if !have[fmt.Sprint(id)] {
			t.Fatalf("acknowledged w:majority write %d missing after failover (%d acked, %d present)", id, len(acked), len(docs))
		}
	}
}

func TestArbiterVotesAndAnswersAsArbiter(t *testing.T) {
	ms := []*member{newMember(t), newMember(t), newMember(t)}
	cfg := bson.D{{Key: "_id", Value: "rs0"}, {Key: "members", Value: bson.A{
		bson.D{{Key: "_id", Value: 0}, {Key: "host", Value: ms[0].host}},
		bson.D{{Key: "_id", Value: 1}, {Key: "host", Value: ms[1].host}},
		bson.D{{Key: "_id", Value: 2}, {Key: "host", Value: ms[2].host}, {Key: "arbiterOnly", Value: true}},
	}}, {Key: "settings", Value: fastSettings}}
	mustRun(t, ms[0].client(t), bson.D{{Key: "replSetInitiate", Value: cfg}})
	p := waitPrimary(t, ms[:2], 30*time.Second)
	waitFor(t, 20*time.Second, "arbiter state", func() bool { return state(t, ms[2]) == 7 })
	h := helloOf(ms[2])
	if b, _ := h.Lookup("arbiterOnly").BooleanOK(); !b {
		t.Fatalf("arbiter hello: %v", h)
	}
	if a, _ := helloOf(ms[p]).Lookup("arbiters").Array().Values(); len(a) != 1 {
		t.Fatalf("primary hello lacks arbiters")
	}
	waitFor(t, 20*time.Second, "other data member SECONDARY", func() bool { return state(t, ms[1-p]) == 2 })
	ms[p].kill()
	waitFor(t, 30*time.Second, "secondary elected with the arbiter's vote", func() bool { return primaryOf(ms[1-p:2-p]) == 0 })
}

// A primary frozen with SIGSTOP (as if partitioned away) is replaced; when
// it resumes it learns the higher term, steps down and follows.
func TestFrozenPrimaryStepsDownWhenItResumes(t *testing.T) {
	ms, p := initiated(t, 3, fastSettings)
	old := ms[p]
	if err := old.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	t.Cleanup(func() {
		if !resumed && old.cmd != nil {
			_ = old.cmd.Process.Signal(syscall.SIGCONT)
		}
	})
	rest := append(append([]*member{}, ms[:p]...), ms[p+1:]...)
	start := time.Now()
	np := waitPrimary(t, rest, 30*time.Second)
	t.Logf("new primary after %v", time.Since(start))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := rest[np].client(t).Database("test").Collection("c", options.Collection().SetWriteConcern(writeconcern.Majority())).
		InsertOne(ctx, bson.D{{Key: "_id", Value: "while-frozen"}}); err != nil {
		t.Fatal(err)
	}
	if err := old.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed = true
	t.Logf("resumed after %v", time.Since(start))
	waitFor(t, 30*time.Second, "resumed old primary is SECONDARY with the new write", func() bool {
		return state(t, old) == 2 && countOn(t, old, bson.D{{Key: "_id", Value: "while-frozen"}}) == 1
	})
	t.Logf("followed after %v", time.Since(start))
	if p2 := primaryOf(ms); p2 < 0 || ms[p2] == old {
		t.Fatalf("primary after resume: %d", p2)
	}
}

// With both secondaries frozen, a w:majority write times out with
// writeConcernError 64, a majority read does not see it, a local read does.
func TestWriteConcernTimeoutAndMajorityReads(t *testing.T) {
	settings := bson.D{{Key: "electionTimeoutMillis", Value: 3000}, {Key: "heartbeatIntervalMillis", Value: 200}}
	ms, p := initiated(t, 3, settings)
	pc := ms[p].client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := pc.Database("test").Collection("c", options.Collection().SetWriteConcern(&writeconcern.WriteConcern{W: 5})).
		InsertOne(ctx, bson.D{{Key: "_id", Value: 1}})
	if !hasCode(err, 100) {
		t.Fatalf("w:5 on 3 members: want writeConcernError 100, got %v", err)
	}
	// Start from a steady set: a majority write has gone through since the
	// election, so the secondaries are past the step-up's config change.
	if _, err := pc.Database("test").Collection("c", options.Collection().SetWriteConcern(writeconcern.Majority())).
		InsertOne(ctx, bson.D{{Key: "_id", Value: 0}}); err != nil {
		t.Fatalf("w:majority with every member up: %v", err)
	}
	for i, m := range ms {
		if i != p {
			if err := m.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if m.cmd != nil {
					_ = m.cmd.Process.Signal(syscall.SIGCONT)
				}
			})
		}
	}
	db := pc.Database("test")
	// The v2 driver has no wtimeout option; send it as mongosh would.
	err = db.RunCommand(ctx, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 2}}}},
		{Key: "writeConcern", Value: bson.D{{Key: "w", Value: "majority"}, {Key: "wtimeout", Value: 300}}}}).Err()
	if !hasCode(err, 64) {
		t.Fatalf("want writeConcernError 64, got %v", err)
	}
	local, err := db.Collection("c").CountDocuments(ctx, bson.D{{Key: "_id", Value: 2}})
	if err != nil || local != 1 {
		t.Fatalf("local read: %d %v", local, err)
	}
	maj, err := db.Collection("c", options.Collection().SetReadConcern(readconcern.Majority())).CountDocuments(ctx, bson.D{{Key: "_id", Value: 2}})
	if err != nil || maj != 0 {
		t.Fatalf("majority read saw an uncommitted write: %d %v", maj, err)
	}
}
