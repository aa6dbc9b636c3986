package shard

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/mgors/operator/kube/api/v1alpha1"
	mgorsfake "github.com/mgors/operator/kube/client/fake"
)

type rig struct {
	kc      *fake.Clientset
	mc      *mgorsfake.Clientset
	keepers map[string]*Keeper
	a       *Assigner
}

func newRig(t *testing.T, n int) *rig {
	r := &rig{kc: mgorsfake.Versioned(fake.NewClientset(), "leases"), mc: mgorsfake.NewClientset(), keepers: map[string]*Keeper{}}
	for i := range n {
		m := &v1alpha1.Mgors{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: fmt.Sprintf("rs-%02d", i), UID: types.UID(fmt.Sprintf("uid-%02d-%d", i, i*7919))}}
		if _, err := r.mc.Mgorses("db").Create(context.Background(), m, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	r.a = &Assigner{Leases: r.kc.CoordinationV1(), LeaseNamespace: "mgors-system", Ring: "mgors-operator", Identity: "assigner",
		Mgors: r.mc, Period: time.Second, CallTimeout: 5 * time.Second, Log: zerolog.Nop()}
	return r
}

func (r *rig) join(t *testing.T, id string) *Keeper {
	k := &Keeper{Leases: r.kc.CoordinationV1(), Namespace: "mgors-system", Ring: "mgors-operator", Identity: id,
		Duration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second, CallTimeout: 5 * time.Second, Log: zerolog.Nop()}
	if err := k.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.keepers[id] = k
	return k
}

func (r *rig) pass(t *testing.T) {
	t.Helper()
	if err := r.a.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// owners maps each Mgors to its owner label, "" when unassigned, and says
// which are asked to drain.
func (r *rig) owners(t *testing.T) (map[string]string, map[string]bool) {
	list, err := r.mc.Mgorses("db").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owner, drain := map[string]string{}, map[string]bool{}
	for _, o := range list.Items {
		owner[string(o.UID)] = o.Labels[LabelOwner]
		_, drain[string(o.UID)] = o.Labels[LabelDrain]
	}
	return owner, drain
}

func count(owner map[string]string) map[string]int {
	c := map[string]int{}
	for _, o := range owner {
		c[o]++
	}
	return c
}

// TestAssignerHandshake walks the mechanism with fake API clients: 30 Mgors
// over three replicas, a fourth joins (drain, acknowledgement, assignment),
// one expires (taken over, moved in the same pass, its keeper lost).
func TestAssignerHandshake(t *testing.T) {
	r := newRig(t, 30)
	for _, id := range []string{"r1", "r2", "r3"} {
		r.join(t, id)
	}
	r.pass(t)
	owner, _ := r.owners(t)
	c := count(owner)
	if c[""] != 0 || c["r1"] == 0 || c["r2"] == 0 || c["r3"] == 0 {
		t.Fatalf("after the first pass: %v, want all 30 spread over r1..r3", c)
	}

	// A fourth replica joins: the Mgors it should own are drained, not moved.
	r.join(t, "r4")
	r.pass(t)
	after, drain := r.owners(t)
	drained := 0
	for uid, d := range drain {
		if after[uid] != owner[uid] {
			t.Fatalf("%s moved from a live owner %s to %s without a drain", uid, owner[uid], after[uid])
		}
		if d {
			drained++
			if want := Owner(uid, []string{"r1", "r2", "r3", "r4"}); want != "r4" {
				t.Errorf("%s drained, but its owner should be %s", uid, want)
			}
		}
	}
	if drained == 0 {
		t.Fatal("nothing drained to the fourth replica")
	}
	r.pass(t) // waiting for the acknowledgement: nothing changes
	if again, _ := r.owners(t); count(again)["r4"] != 0 {
		t.Fatal("assigned to r4 before the old owners acknowledged")
	}
	// The owners acknowledge (their actors stopped): both labels go.
	for uid, d := range drain {
		if d {
			name := nameOf(t, r, uid)
			if err := Release(context.Background(), r.mc, 5*time.Second, "db", name, uid, after[uid]); err != nil {
				t.Fatal(err)
			}
		}
	}
	r.pass(t)
	owner, drain = r.owners(t)
	for uid, o := range owner {
		if want := Owner(uid, []string{"r1", "r2", "r3", "r4"}); o != want || drain[uid] {
			t.Errorf("%s: owner %q drain %v, want %q", uid, o, drain[uid], want)
		}
	}

	// r2 stops renewing: once its Lease expired the assigner takes it over and
	// moves its Mgors at once; r2 can never renew again.
	ctx := context.Background()
	l, err := r.kc.CoordinationV1().Leases("mgors-system").Get(ctx, LeaseName("r2"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Add(-16 * time.Second)}
	if _, err := r.kc.CoordinationV1().Leases("mgors-system").Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.pass(t)
	owner, _ = r.owners(t)
	for uid, o := range owner {
		if want := Owner(uid, []string{"r1", "r3", "r4"}); o != want {
			t.Errorf("%s: owner %q after r2 expired, want %q", uid, o, want)
		}
	}
	if err := r.keepers["r2"].renew(ctx); !errors.Is(err, ErrLost) {
		t.Fatalf("r2 renewing after the take-over: %v, want ErrLost", err)
	}
	if err := r.keepers["r2"].Check(); !errors.Is(err, ErrLost) {
		t.Fatalf("r2 may still write: %v", err)
	}
	if err := r.keepers["r1"].renew(ctx); err != nil {
		t.Fatalf("r1 renewing: %v", err)
	}
}

func nameOf(t *testing.T, r *rig, uid string) string {
	list, err := r.mc.Mgorses("db").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range list.Items {
		if string(o.UID) == uid {
			return o.Name
		}
	}
	t.Fatalf("no Mgors with uid %s", uid)
	return ""
}

// TestKeeper: no writes before the Lease is held or after it is released;
// a release empties the holder, so the assigner moves the Mgors at once.
func TestKeeper(t *testing.T) {
	r := newRig(t, 0)
	k := &Keeper{Leases: r.kc.CoordinationV1(), Namespace: "mgors-system", Ring: "mgors-operator", Identity: "r1",
		Duration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second, CallTimeout: 5 * time.Second, Log: zerolog.Nop()}
	if k.Check() == nil {
		t.Fatal("may write before holding the Lease")
	}
	if err := k.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := k.Check(); err != nil {
		t.Fatalf("may not write while holding the Lease: %v", err)
	}
	if err := k.renew(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := k.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if k.Check() == nil {
		t.Fatal("may write after the release")
	}
	l, err := r.kc.CoordinationV1().Leases("mgors-system").Get(context.Background(), LeaseName("r1"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st := LeaseState(l, time.Now()); st != Gone {
		t.Fatalf("released Lease reads %s, want gone", st)
	}
	if l.Labels[LabelLease] != "mgors-operator" {
		t.Fatalf("Lease labels %v", l.Labels)
	}
}
