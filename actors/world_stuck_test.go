package actors

import (
	"context"
	"testing"
	"time"

	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/mongo"
)

// KubeWorld asks a member in initial sync for its own replSetGetStatus (the
// only place its progress and infoMessage are), and no healthy member.
func TestKubeWorldReadsATroubledMembersOwnStatus(t *testing.T) {
	newWorld, rs, mc, hosts := kubeFixture(t, "admin")
	stop := runOperator(t, testDeps(eventlog.NewMemory(), newWorld(nil)))
	waitFor(t, "Healthy", healthyIn(mc))
	stop()
	rs.HoldSync(hosts[2], true)
	m := mgors()
	world := newWorld(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	before := len(rs.Calls())
	o, err := world.Observe(ctx, m, mongo.Desired(m, "cluster.local"), AuthKeyfile)
	if err != nil {
		t.Fatal(err)
	}
	if mv := o.Members[hosts[2]]; mv.OwnState != mongo.StateStartup2 || mv.Empty || mv.Removed {
		t.Fatalf("member in initial sync: %+v", mv)
	}
	statuses := map[string]int{}
	for _, c := range rs.Calls()[before:] {
		if c.Command == "replSetGetStatus" {
			statuses[mongo.NormalizeHost(c.Host)]++
		}
	}
	if statuses[mongo.NormalizeHost(hosts[2])] == 0 || statuses[mongo.NormalizeHost(hosts[1])] != 0 {
		t.Errorf("replSetGetStatus calls by host %v: want some on the member in initial sync, none on a healthy secondary", statuses)
	}

	// A member removed from the config answers as REMOVED (its own status
	// says InvalidReplicaSetConfig).
	rs.HoldSync(hosts[2], false)
	cfg, err := rs.Config(ctx, hosts[0])
	if err != nil {
		t.Fatal(err)
	}
	cfg.Members, cfg.Version = cfg.Members[:2], cfg.Version+1
	if err := rs.Reconfig(ctx, rs.Primary(), cfg, false); err != nil {
		t.Fatal(err)
	}
	o, err = world.Observe(ctx, m, mongo.Desired(m, "cluster.local"), AuthKeyfile)
	if err != nil {
		t.Fatal(err)
	}
	if mv := o.Members[hosts[2]]; !mv.Answers || !mv.Removed || mv.Empty {
		t.Errorf("a member out of the config: %+v, want REMOVED", mv)
	}
}
