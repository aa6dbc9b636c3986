package mongotest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
	"github.com/mgors/operator/mongo/mongotest"
)

const domain = "cluster.local"

func spec(members int32) *v1alpha1.Mgors {
	return &v1alpha1.Mgors{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns"}, Spec: v1alpha1.MgorsSpec{Members: members}}
}

// initiated is a fake set of n members initiated from the spec.
func initiated(t *testing.T, n int32) (*mongotest.ReplicaSet, *v1alpha1.Mgors) {
	t.Helper()
	m := spec(n)
	var hosts []string
	for i := range n {
		hosts = append(hosts, m.MemberHost(i, domain))
	}
	rs := mongotest.New("db", hosts...)
	if err := rs.Initiate(context.Background(), hosts[0], mongo.InitialConfig("db", mongo.Desired(m, domain), m.Spec.ReplicaSet)); err != nil {
		t.Fatal(err)
	}
	return rs, m
}

func TestInitiate(t *testing.T) {
	ctx := context.Background()
	m := spec(3)
	h0, h1, h2 := m.MemberHost(0, domain), m.MemberHost(1, domain), m.MemberHost(2, domain)
	rs := mongotest.New("db", h0, h1, h2)

	hello, err := rs.Hello(ctx, h0)
	if err != nil || hello.HasConfig() || !hello.IsReplicaSet {
		t.Fatalf("hello before initiate: %+v %v", hello, err)
	}
	if _, err := rs.Status(ctx, h0); !errors.Is(err, mongo.ErrNotYetInitialized) {
		t.Fatalf("status before initiate: %v", err)
	}
	good := mongo.InitialConfig("db", mongo.Desired(m, domain), m.Spec.ReplicaSet)

	bad := good.Clone()
	bad.ID = "other"
	if err := rs.Initiate(ctx, h0, bad); !errors.Is(err, mongo.ErrInvalidReplicaSetConfig) {
		t.Fatalf("wrong set name: %v", err)
	}
	bad = good.Clone()
	bad.Version = 2
	if err := rs.Initiate(ctx, h0, bad); !mongo.IsCode(err, mongo.CodeInvalidReplicaSetConfig) {
		t.Fatalf("version 2: %v", err)
	}
	rs.Stop(h2)
	if err := rs.Initiate(ctx, h0, good); !errors.Is(err, mongo.ErrNodeNotFound) {
		t.Fatalf("member down: %v", err)
	}
	rs.Start(h2)

	if err := rs.Initiate(ctx, h0, good); err != nil {
		t.Fatal(err)
	}
	if err := rs.Initiate(ctx, h1, good); !errors.Is(err, mongo.ErrAlreadyInitialized) {
		t.Fatalf("second initiate: %v", err)
	}
	if rs.Primary() != mongo.NormalizeHost(h0) {
		t.Fatalf("primary %q", rs.Primary())
	}
	st, err := rs.Status(ctx, h1)
	if err != nil || len(st.Members) != 3 || st.Primary() == nil || st.MyState != mongo.StateSecondary {
		t.Fatalf("status %+v %v", st, err)
	}
	cfg, err := rs.Config(ctx, h2)
	if err != nil || cfg.Settings == nil || cfg.Settings.ReplicaSetID == nil || cfg.Term != 1 || cfg.Version != 1 {
		t.Fatalf("config %+v %v", cfg, err)
	}
	hello, _ = rs.Hello(ctx, h0)
	if !hello.HasConfig() || !hello.IsWritablePrimary || len(hello.Hosts) != 3 {
		t.Fatalf("hello %+v", hello)
	}
}

func TestReconfigRules(t *testing.T) {
	ctx := context.Background()
	rs, m := initiated(t, 3)
	h0, h1 := m.MemberHost(0, domain), m.MemberHost(1, domain)
	cur, _ := rs.Config(ctx, h0)

	if err := rs.Reconfig(ctx, h1, cur.Next(), false); !errors.Is(err, mongo.ErrNotWritablePrimary) {
		t.Fatalf("on a secondary: %v", err)
	}
	if err := rs.Reconfig(ctx, h0, cur, false); !errors.Is(err, mongo.ErrIncompatibleConfig) {
		t.Fatalf("same version: %v", err)
	}
	two := cur.Next()
	two.Members = two.Members[:1]
	if err := rs.Reconfig(ctx, h0, two, false); !errors.Is(err, mongo.ErrIncompatibleConfig) {
		t.Fatalf("two voting changes: %v", err)
	}
	unelectable := cur.Next()
	unelectable.Members[0].Priority = 0
	if err := rs.Reconfig(ctx, h0, unelectable, false); !errors.Is(err, mongo.ErrNodeNotElectable) {
		t.Fatalf("primary unelectable: %v", err)
	}
	ok := cur.Next()
	ok.Members[1].Priority = 5
	if err := rs.Reconfig(ctx, h0, ok, false); err != nil {
		t.Fatal(err)
	}
	after, _ := rs.Config(ctx, h1)
	if after.Version != cur.Version+1 || after.Settings.ReplicaSetID == nil || *after.Settings.ReplicaSetID != *cur.Settings.ReplicaSetID {
		t.Fatalf("after %+v", after)
	}
	rs.FailNext(h0, "replSetReconfig", mongo.ErrCurrentConfigNotCommittedYet)
	if err := rs.Reconfig(ctx, h0, after.Next(), false); !errors.Is(err, mongo.ErrCurrentConfigNotCommittedYet) {
		t.Fatalf("injected: %v", err)
	}
}

func TestStepDownFreezeUsersUnreachable(t *testing.T) {
	ctx := context.Background()
	rs, m := initiated(t, 3)
	h0, h1 := m.MemberHost(0, domain), m.MemberHost(1, domain)
	if err := rs.StepDown(ctx, h1, 60); !errors.Is(err, mongo.ErrNotWritablePrimary) {
		t.Fatalf("stepdown on secondary: %v", err)
	}
	if err := rs.Freeze(ctx, h0, 30); !errors.Is(err, mongo.ErrNotSecondary) {
		t.Fatalf("freeze primary: %v", err)
	}
	if err := rs.CreateUser(ctx, h1, "admin", "pw", nil); !errors.Is(err, mongo.ErrNotWritablePrimary) {
		t.Fatalf("create on secondary: %v", err)
	}
	if err := rs.CreateUser(ctx, h0, "admin", "pw", []mongo.Role{{Role: "root", DB: "admin"}}); err != nil {
		t.Fatal(err)
	}
	if err := rs.CreateUser(ctx, h0, "admin", "pw", nil); !errors.Is(err, mongo.ErrDuplicateUser) {
		t.Fatalf("duplicate: %v", err)
	}
	if ok, err := rs.UserExists(ctx, h1, "admin"); !ok || err != nil {
		t.Fatalf("exists %v %v", ok, err)
	}
	if err := rs.StepDown(ctx, h0, 60); err != nil {
		t.Fatal(err)
	}
	if p := rs.Primary(); p == "" || p == mongo.NormalizeHost(h0) {
		t.Fatalf("primary after stepdown %q", p)
	}
	rs.Stop(h1)
	if _, err := rs.Hello(ctx, h1); !mongo.IsUnreachable(err) {
		t.Fatalf("stopped member: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := rs.Ping(cctx, h0); !errors.Is(err, mongo.ErrTimeout) {
		t.Fatalf("cancelled context: %v", err)
	}
}

// drive plans and applies steps against the fake as the cluster actor will:
// observe from the primary, send the step, scale pods after removals.
func drive(t *testing.T, rs *mongotest.ReplicaSet, desired []mongo.DesiredMember, hosts []string) []mongo.Step {
	t.Helper()
	ctx := context.Background()
	var steps []mongo.Step
	for range 60 {
		p := rs.Primary()
		if p == "" {
			t.Fatal("no primary")
		}
		cfg, err := rs.Config(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		st, err := rs.Status(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		reachable := mongo.Hosts{}
		for _, h := range hosts {
			if _, err := rs.Hello(ctx, h); err == nil {
				reachable[mongo.NormalizeHost(h)] = true
			}
		}
		s := mongo.Plan(cfg, st, desired, reachable, v1alpha1.ReplicaSetSettings{})
		switch s.Kind {
		case mongo.Done:
			return steps
		case mongo.Wait:
			t.Fatalf("wait: %s", s.Reason)
		case mongo.StepDown:
			if err := rs.StepDown(ctx, s.Host, 60); err != nil {
				t.Fatalf("%s: %v", s.Reason, err)
			}
		default:
			if err := rs.Reconfig(ctx, p, s.Config, false); err != nil {
				t.Fatalf("%s: %v", s.Reason, err)
			}
			if s.Kind == mongo.RemoveMember {
				rs.RemoveNode(s.Host) // scale down only after the removal committed
			}
		}
		steps = append(steps, s)
	}
	t.Fatal("no Done")
	return nil
}

func TestPlanAgainstFake(t *testing.T) {
	ctx := context.Background()
	rs, m := initiated(t, 3)
	all := []string{}
	for i := range int32(5) {
		all = append(all, m.MemberHost(i, domain))
	}
	// Scale to 5: the new pods start, the planner adds them.
	rs.AddNode(all[3])
	rs.AddNode(all[4])
	before, _ := rs.Config(ctx, all[0])
	steps := drive(t, rs, mongo.Desired(spec(5), domain), all)
	if len(steps) != 4 {
		t.Fatalf("3→5 took %d steps: %v", len(steps), kinds(steps))
	}
	after, _ := rs.Config(ctx, all[0])
	if after.Version != before.Version+4 || after.Voters() != 5 {
		t.Fatalf("after 3→5: version %d→%d, %d voters", before.Version, after.Version, after.Voters())
	}
	// Move the primary to the highest ordinal, then scale to 2.
	for _, h := range all[:4] {
		if h != rs.Primary() {
			if err := rs.Freeze(ctx, h, 60); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := rs.StepDown(ctx, rs.Primary(), 60); err != nil || rs.Primary() != mongo.NormalizeHost(all[4]) {
		t.Fatalf("move primary to %s: %v, primary %s", all[4], err, rs.Primary())
	}
	steps = drive(t, rs, mongo.Desired(spec(2), domain), all)
	if steps[0].Kind != mongo.StepDown {
		t.Fatalf("5→2 must step the primary down first: %v", kinds(steps))
	}
	final, _ := rs.Config(ctx, rs.Primary())
	if len(final.Members) != 2 || final.Voters() != 1 {
		t.Fatalf("final %+v", final.Members)
	}
}

// A voter added directly is newlyAdded until it is SECONDARY; mongod then
// removes the flag with a reconfig of its own: the version moves by two.
func TestNewlyAddedBump(t *testing.T) {
	ctx := context.Background()
	rs, m := initiated(t, 3)
	h0, h3 := m.MemberHost(0, domain), m.MemberHost(3, domain)
	rs.AddNode(h3)
	cur, _ := rs.Config(ctx, h0)
	next := cur.Next()
	next.Members = append(next.Members, mongo.NewMember(3, h3))
	if err := rs.Reconfig(ctx, h0, next, false); err != nil {
		t.Fatal(err)
	}
	after, _ := rs.Config(ctx, h0)
	if after.Version != cur.Version+2 || rs.State(h3) != mongo.StateSecondary {
		t.Fatalf("version %d→%d, state %s", cur.Version, after.Version, rs.State(h3))
	}
}

func kinds(steps []mongo.Step) []string {
	var out []string
	for _, s := range steps {
		out = append(out, fmt.Sprintf("%s %s", s.Kind, s.Host))
	}
	return out
}

func TestMajorityLossAndForce(t *testing.T) {
	ctx := context.Background()
	rs, m := initiated(t, 3)
	h0, h1, h2 := m.MemberHost(0, domain), m.MemberHost(1, domain), m.MemberHost(2, domain)
	rs.Write()
	rs.Stop(h2)
	rs.Write() // h0 and h1 have it, h2 does not
	rs.Stop(h0)
	if rs.Primary() != "" {
		t.Fatalf("primary without a majority: %s", rs.Primary())
	}
	cfg, _ := rs.Config(ctx, h1)
	st, err := rs.Status(ctx, h1)
	if err != nil {
		t.Fatal(err)
	}
	lost, ev := mongo.MajorityLost(cfg, st)
	if !lost || len(ev.Missing) != 2 {
		t.Fatalf("lost %v %+v", lost, ev)
	}
	if err := rs.Reconfig(ctx, h1, cfg.Next(), false); !errors.Is(err, mongo.ErrNotWritablePrimary) {
		t.Fatalf("safe reconfig without primary: %v", err)
	}
	f, err := mongo.ForceTarget(cfg, map[string]*mongo.Status{h1: st})
	if err != nil {
		t.Fatal(err)
	}
	if f.Survivor != h1 || f.AtRisk {
		t.Fatalf("force %+v", f)
	}
	if err := rs.Reconfig(ctx, f.Survivor, f.Config, true); err != nil {
		t.Fatal(err)
	}
	if rs.Primary() != mongo.NormalizeHost(h1) {
		t.Fatalf("survivor not primary: %q", rs.Primary())
	}
	after, _ := rs.Config(ctx, h1)
	if after.Version < cfg.Version+10000 || len(after.Members) != 1 {
		t.Fatalf("forced config %+v", after)
	}
	rs.Start(h0)
	if _, err := rs.Status(ctx, h0); !errors.Is(err, mongo.ErrInvalidReplicaSetConfig) {
		t.Fatalf("dropped member comes back REMOVED: %v", err)
	}
}
