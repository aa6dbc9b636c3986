package shard

import (
	"fmt"
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func lease(identity, holder string, renewed time.Time) coordinationv1.Lease {
	l := coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: LeaseName(identity)}}
	if holder != "" {
		l.Spec.HolderIdentity = ptr.To(holder)
	}
	l.Spec.LeaseDurationSeconds = ptr.To[int32](15)
	l.Spec.RenewTime = &metav1.MicroTime{Time: renewed}
	return l
}

func TestMembership(t *testing.T) {
	leases := []coordinationv1.Lease{
		lease("c", "c", t0.Add(-time.Second)),
		lease("a", "a", t0.Add(-14*time.Second)),
		lease("b", "b", t0.Add(-15*time.Second)), // expired exactly now
		lease("d", "", t0),                       // released
		lease("e", "assigner", t0),               // taken over
		{ObjectMeta: metav1.ObjectMeta{Name: "mgors-operator"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("x")}},
		{ObjectMeta: metav1.ObjectMeta{Name: LeaseName("f")}, Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("f")}}, // never renewed
	}
	m := Membership(leases, t0)
	if want := []string{"a", "c"}; !slices.Equal(m.Live, want) {
		t.Errorf("live %v, want %v", m.Live, want)
	}
	for id, want := range map[string]State{"a": Ready, "b": Expired, "f": Expired, "d": Gone, "e": Gone, "nobody": Gone, "mgors-operator": Gone} {
		if got := m.Of(id); got != want {
			t.Errorf("state of %s: %s, want %s", id, got, want)
		}
	}
}

func uids(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("4f1c%04d-7d2e-4b0a-9c51-0242ac1200%02d", i*7919%10000, i%100)
	}
	return out
}

// TestOwnerSpreadsAndMovesLittle: every UID has one owner among the live;
// 300 UIDs over 3 replicas give each a fair share; a replica leaving moves
// only its own, a replica joining takes only from the others.
func TestOwnerSpreadsAndMovesLittle(t *testing.T) {
	three := []string{"op-0", "op-1", "op-2"}
	all := uids(300)
	count := map[string]int{}
	before := map[string]string{}
	for _, u := range all {
		o := Owner(u, three)
		if !slices.Contains(three, o) {
			t.Fatalf("owner %q of %s is not live", o, u)
		}
		before[u] = o
		count[o]++
	}
	for _, r := range three {
		if count[r] < 60 || count[r] > 140 {
			t.Errorf("%s owns %d of 300, want about 100: %v", r, count[r], count)
		}
	}
	two := []string{"op-0", "op-2"}
	for _, u := range all {
		if after := Owner(u, two); before[u] != "op-1" && after != before[u] {
			t.Errorf("%s moved from %s to %s when op-1 left", u, before[u], after)
		}
	}
	four := []string{"op-0", "op-1", "op-2", "op-3"}
	moved := 0
	for _, u := range all {
		if after := Owner(u, four); after != before[u] {
			if after != "op-3" {
				t.Errorf("%s moved from %s to %s when op-3 joined", u, before[u], after)
			}
			moved++
		}
	}
	if moved < 40 || moved > 110 {
		t.Errorf("%d of 300 moved to the fourth replica, want about 75", moved)
	}
	if got := Owner("x", nil); got != "" {
		t.Errorf("owner without replicas: %q", got)
	}
	if Owner("u", []string{"b", "a"}) != Owner("u", []string{"a", "b"}) {
		t.Error("the owner depends on the members' order")
	}
}

func TestNext(t *testing.T) {
	m := Membership([]coordinationv1.Lease{
		lease("a", "a", t0), lease("b", "b", t0),
		lease("x", "x", t0.Add(-time.Minute)), // expired
		lease("y", "", t0),                    // released
	}, t0)
	uid := "u-1"
	want := Owner(uid, []string{"a", "b"})
	other := "a"
	if want == "a" {
		other = "b"
	}
	for _, tc := range []struct {
		name     string
		owner    string
		draining bool
		members  Members
		want     Move
	}{
		{"new: assigned", "", false, m, Move{Kind: Assign, To: want}},
		{"acknowledged drain: assigned", "", true, m, Move{Kind: Assign, To: want}},
		{"in place", want, false, m, Move{}},
		{"live owner, another is wanted: drained", other, false, m, Move{Kind: Drain, From: other}},
		{"drain asked: wait for the acknowledgement", other, true, m, Move{}},
		{"expired owner: its Lease is taken over first", "x", false, m, Move{}},
		{"released owner: assigned at once", "y", false, m, Move{Kind: Assign, To: want}},
		{"unknown owner: assigned", "z", true, m, Move{Kind: Assign, To: want}},
		{"no live replica: wait", "y", false, Membership(nil, t0), Move{}},
	} {
		if got := Next(tc.owner, tc.draining, uid, tc.members); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestMustRelease(t *testing.T) {
	for _, tc := range []struct {
		labels map[string]string
		want   bool
	}{
		{map[string]string{LabelOwner: "a", LabelDrain: "true"}, true},
		{map[string]string{LabelOwner: "a"}, false},
		{map[string]string{LabelOwner: "b", LabelDrain: "true"}, false},
		{nil, false},
	} {
		if got := MustRelease(tc.labels, "a"); got != tc.want {
			t.Errorf("%v: %v, want %v", tc.labels, got, tc.want)
		}
	}
}
