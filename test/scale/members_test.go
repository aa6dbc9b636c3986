package scale

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/mongo"
)

func readFile(path string) ([]byte, error) { return os.ReadFile(path) }

func TestMembersRouteByHostAndCount(t *testing.T) {
	s := NewMembers()
	a, b := newMgors("db", 0, 1), newMgors("db", 1, 3)
	s.Add(a, clusterDomain)
	s.Add(b, clusterDomain)
	admin := s.Admin()
	ctx := context.Background()
	hostA, hostB := a.MemberHost(0, clusterDomain), b.MemberHost(2, clusterDomain)
	for _, h := range []string{hostA, hostB} {
		if _, err := admin.Hello(ctx, h); err != nil {
			t.Errorf("hello %s: %v", h, err)
		}
	}
	cfg := mongo.InitialConfig(a.ReplSetName(), mongo.Desired(a, clusterDomain), a.Spec.ReplicaSet)
	if err := admin.Initiate(ctx, hostA, cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Config(ctx, hostB); err == nil {
		t.Error("initiating cluster a initiated cluster b")
	}
	if _, err := admin.Hello(ctx, "rs-9999-0.rs-9999.db.svc.cluster.local"); err == nil {
		t.Error("an unknown host answered")
	}
	if got := s.Commands(); got != 5 {
		t.Errorf("commands = %d, want 5", got)
	}
	if len(s.set(hostA).Calls()) == 0 {
		t.Fatal("the fake recorded nothing")
	}
	s.ForgetCalls()
	if n := len(s.set(hostA).Calls()); n != 0 {
		t.Errorf("%d calls left after ForgetCalls", n)
	}
}

func TestProbeFirstAppendAfter(t *testing.T) {
	p := &Probe{Store: eventlog.NewMemory()}
	s := eventlog.Stream{Namespace: "db", Name: "rs-0000", UID: "u"}
	ctx := context.Background()
	rec := func(seq int64) eventlog.Record {
		return eventlog.Record{Seq: seq, Cluster: s.Key(), UID: s.UID, Type: "Test"}
	}
	future := p.Expect("db/rs-0000", time.Now().Add(time.Hour))
	if err := p.Append(ctx, s, rec(1)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-future:
		t.Fatal("an append before the fault counted")
	default:
	}
	now := p.Expect("db/rs-0000", time.Now())
	if err := p.Append(ctx, s, rec(2)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-now:
	default:
		t.Fatal("the append after the fault did not count")
	}
	p.Cancel("db/rs-0000")
}
