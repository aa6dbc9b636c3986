package sim_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// newLocalhostMember binds "localhost" and is named localhost:port in the
// config, so self-detection goes through name resolution.
func newLocalhostMember(t *testing.T, extra ...string) *member {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	m := newMemberAt(t, "localhost", port, extra...)
	m.host = fmt.Sprintf("localhost:%d", port)
	return m
}

// The sequence the operator drives, on host names and with keyFile auth.
func TestOperatorFlowWithHostNames(t *testing.T) {
	kf := keyFile(t, "b3BlcmF0b3ItZmxvdy1rZXk")
	ms := []*member{newLocalhostMember(t, "--keyFile", kf), newLocalhostMember(t, "--keyFile", kf), newLocalhostMember(t, "--keyFile", kf)}
	for _, m := range ms {
		if h := helloOf(m); h == nil {
			t.Fatalf("no hello from %s before initiate", m.host)
		}
		// The localhost exception allows replSetGetStatus, not replSetGetConfig.
		if _, err := run(m.client(t), bson.D{{Key: "replSetGetStatus", Value: 1}}); !hasCode(err, 94) {
			t.Fatalf("replSetGetStatus before initiate: want 94, got %v", err)
		}
		if _, err := run(m.client(t), bson.D{{Key: "replSetGetConfig", Value: 1}}); !hasCode(err, 13) {
			t.Fatalf("replSetGetConfig before the first user: want 13, got %v", err)
		}
	}
	mustRun(t, ms[0].client(t), bson.D{{Key: "replSetInitiate", Value: rsConfig(ms, fastSettings)}})
	t0 := time.Now()
	p := waitPrimary(t, ms, 30*time.Second)
	t.Logf("%v primary", time.Since(t0))
	mustRun(t, ms[p].client(t), bson.D{{Key: "createUser", Value: "admin"}, {Key: "pwd", Value: "pw"},
		{Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "root"}, {Key: "db", Value: "admin"}}}}})
	admin := func(m *member) []string { return []string{"admin:pw@", "authSource=admin"} }
	pc := ms[p].client(t, admin(ms[p])...)
	waitFor(t, 20*time.Second, "all members healthy in status", func() bool {
		st, err := run(pc, bson.D{{Key: "replSetGetStatus", Value: 1}})
		if err != nil {
			return false
		}
		vals, _ := st.Lookup("members").Array().Values()
		ok := 0
		for _, v := range vals {
			d := v.Document()
			h, _ := d.Lookup("health").AsFloat64OK()
			s, _ := d.Lookup("state").AsInt64OK()
			if _, err := d.LookupErr("optime"); err == nil && h == 1 && (s == 1 || s == 2) {
				ok++
			}
		}
		return ok == 3
	})
	t.Logf("%v healthy", time.Since(t0))
	// add one member, then remove it
	extra := newLocalhostMember(t, "--keyFile", kf)
	cfg := mustRun(t, pc, bson.D{{Key: "replSetGetConfig", Value: 1}}).Lookup("config").Document()
	v, _ := cfg.Lookup("version").AsInt64OK()
	vals, _ := cfg.Lookup("members").Array().Values()
	members := bson.A{}
	for _, x := range vals {
		members = append(members, x.Document())
	}
	withExtra := append(append(bson.A{}, members...), bson.D{{Key: "_id", Value: 7}, {Key: "host", Value: extra.host}})
	mustRun(t, pc, bson.D{{Key: "replSetReconfig", Value: configWith(cfg, withExtra, v+1)}, {Key: "maxTimeMS", Value: 20000}})
	waitFor(t, 20*time.Second, "added member SECONDARY", func() bool { return state(t, extra, admin(extra)...) == 2 })
	t.Logf("%v added", time.Since(t0))
	var cur bson.Raw
	waitFor(t, 20*time.Second, "follow-up reconfig", func() bool {
		cur = mustRun(t, pc, bson.D{{Key: "replSetGetConfig", Value: 1}}).Lookup("config").Document()
		cv, _ := cur.Lookup("version").AsInt64OK()
		return cv == v+2
	})
	mustRun(t, pc, bson.D{{Key: "replSetReconfig", Value: configWith(cur, members, v+3)}, {Key: "maxTimeMS", Value: 20000}})
	waitFor(t, 20*time.Second, "removed member is a ghost", func() bool {
		b, _ := helloOf(extra).Lookup("isreplicaset").BooleanOK()
		return b
	})
	t.Logf("%v removed", time.Since(t0))
	// stepDown hands over. Like the operator, ask whoever is primary now:
	// a loaded machine may have held an election since (mongod would too).
	waitFor(t, 30*time.Second, "a stepdown accepted", func() bool {
		if p = primaryOf(ms); p < 0 {
			return false
		}
		_, err := run(ms[p].client(t, admin(ms[p])...), bson.D{{Key: "replSetStepDown", Value: 30}})
		return err == nil
	})
	waitFor(t, 20*time.Second, "another primary", func() bool { np := primaryOf(ms); return np >= 0 && np != p })
	t.Logf("%v stepped down", time.Since(t0))
	// the data written by the operator's user is readable everywhere
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rc := connect(t, rsURI(ms, "admin:pw@")+"&authSource=admin")
	if _, err := rc.Database("app").Collection("c").InsertOne(ctx, bson.D{{Key: "ok", Value: true}}); err != nil {
		t.Fatal(err)
	}
}
