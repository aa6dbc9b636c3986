package actors

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// sizedDemo is demo(3) with spec.storage.size set.
func sizedDemo(size string) *v1alpha1.Mgors {
	m := demo(3)
	q := resource.MustParse(size)
	m.Spec.Storage.Size = &q
	return m
}

// sized gives the world's StatefulSet a claim template of size and every
// member a claim with that request and capacity, in a class that allows
// expansion.
func (w *world) sized(size string) *world {
	q := resource.MustParse(size)
	w.obs.Storage = StorageView{Template: q, Claims: map[string]ClaimSize{}, Class: "standard", Expandable: ptr.To(true)}
	for _, dm := range w.desired {
		if !dm.Arbiter {
			w.obs.Storage.Claims[dm.Name] = ClaimSize{Name: "data-" + dm.Name, Ordinal: dm.Ordinal, Class: "standard", Requested: q, Capacity: q}
		}
	}
	return w
}

func (w *world) grow(size string) {
	q := resource.MustParse(size)
	w.m = w.m.DeepCopy()
	w.m.Spec.Storage.Size = &q
	w.m.Generation++
}

// claims sets every claim's request and capacity.
func (w *world) claims(requested, capacity string) {
	for k, c := range w.obs.Storage.Claims {
		c.Requested, c.Capacity = resource.MustParse(requested), resource.MustParse(capacity)
		w.obs.Storage.Claims[k] = c
	}
}

// A grown spec.storage.size expands every claim, waits for their capacity,
// then replaces the StatefulSet, and restarts no member.
func TestStorageGrowthExpandsWaitsThenReplaces(t *testing.T) {
	w := newWorld(sizedDemo("1Gi")).initiated().sized("1Gi")
	s := healthyState(t, w)
	w.grow("2Gi")

	d := Decide(s, w.in())
	s = run(s, d)
	if !has(d, "StorageGrowing") || d.Action == nil || d.Action.Kind != ActExpandVolumes {
		t.Fatalf("want StorageGrowing and ExpandVolumes, got %v %+v", types(d), d.Action)
	}
	if !slices.Equal(d.Action.Ordinals, []int32{0, 1, 2}) || d.Action.Size != "2Gi" {
		t.Fatalf("expand %v to %s, want [0 1 2] to 2Gi", d.Action.Ordinals, d.Action.Size)
	}
	s = run(s, Decision{Events: Conclude(*d.Action, nil)})

	// Requested, not yet resized: nothing to do but wait; not Healthy.
	w.claims("2Gi", "1Gi")
	for range 3 {
		d = Decide(s, w.in())
		s = run(s, d)
		if d.Action != nil {
			t.Fatalf("acted while the volumes grow: %+v", d.Action)
		}
	}
	if s.Phase != v1alpha1.PhaseRecovering || !strings.Contains(s.PhaseReason, "spec.storage.size") {
		t.Fatalf("phase %s (%s), want Recovering while the volumes grow", s.Phase, s.PhaseReason)
	}

	w.claims("2Gi", "2Gi")
	d = Decide(s, w.in())
	s = run(s, d)
	if !has(d, "VolumesExpanded") || d.Action == nil || d.Action.Kind != ActReplaceStatefulSet || d.Action.Replicas != 3 {
		t.Fatalf("want VolumesExpanded and ReplaceStatefulSet of 3 replicas, got %v %+v", types(d), d.Action)
	}
	s = run(s, Decision{Events: Conclude(*d.Action, nil)})

	w.obs.Storage.Template = resource.MustParse("2Gi")
	var acts []ActionKind
	for range 4 {
		d = Decide(s, w.in())
		s = run(s, d)
		if d.Action != nil {
			acts = append(acts, d.Action.Kind)
			s = run(s, Decision{Events: Conclude(*d.Action, nil)})
		}
	}
	if s.Phase != v1alpha1.PhaseHealthy || s.Storage != nil {
		t.Fatalf("phase %s, storage %+v: want Healthy and the growth over", s.Phase, s.Storage)
	}
	if slices.Contains(acts, ActRestartMember) || slices.Contains(acts, ActStepDown) {
		t.Fatalf("a member was restarted: %v", acts)
	}
}

// Killed after the StatefulSet was deleted and before it was created again,
// the operator creates it (with the replicas it decided) and nothing else.
func TestStorageReplaceCutByACrashIsFinished(t *testing.T) {
	w := newWorld(sizedDemo("1Gi")).initiated().sized("1Gi")
	s := healthyState(t, w)
	w.grow("2Gi")
	w.claims("2Gi", "2Gi")
	for range 3 {
		d := Decide(s, w.in())
		s = run(s, d)
		if d.Action != nil && d.Action.Kind == ActReplaceStatefulSet {
			break
		}
		if d.Action != nil {
			s = run(s, Decision{Events: Conclude(*d.Action, nil)})
		}
	}
	if s.InFlight == nil || s.InFlight.Action != ActReplaceStatefulSet {
		t.Fatalf("no replace in flight: %+v", s.InFlight)
	}
	// The crash: the StatefulSet is gone, nothing runs the observation's members.
	w.obs.Replicas, w.obs.ObjectsReady, w.obs.Storage.Template = -1, false, resource.Quantity{}
	d := Decide(s, w.in())
	s = run(s, d)
	if !has(d, "ActionFailed") {
		t.Fatalf("the interrupted replace is not settled as failed: %v", types(d))
	}
	in := w.in()
	in.Now = t0.Add(backoff(s.Failures) + 1)
	d = Decide(s, in)
	if d.Action == nil || d.Action.Kind != ActReplaceStatefulSet || d.Action.Replicas != 3 {
		t.Fatalf("want the StatefulSet created again with 3 replicas, got %v %+v", types(d), d.Action)
	}
}

// An expansion in flight when the operator stopped is settled from the claims.
func TestStorageExpandSettledFromTheWorld(t *testing.T) {
	w := newWorld(sizedDemo("1Gi")).initiated().sized("1Gi")
	s := healthyState(t, w)
	w.grow("2Gi")
	d := Decide(s, w.in())
	s = run(s, d)
	w.claims("2Gi", "1Gi")
	d = Decide(s, w.in())
	if !has(d, "ActionFinished") || has(d, "ActionFailed") {
		t.Fatalf("the requests show the expansion: want ActionFinished, got %v", types(d))
	}
}

// A class without expansion: refused once, a Stalled condition naming
// spec.storage.size, no action, and the set stays Healthy.
func TestStorageGrowthRefusedWithoutExpansion(t *testing.T) {
	w := newWorld(sizedDemo("1Gi")).initiated().sized("1Gi")
	s := healthyState(t, w)
	w.grow("2Gi")
	w.obs.Storage.Expandable = ptr.To(false)
	d := Decide(s, w.in())
	s = run(s, d)
	if !has(d, "StorageGrowthRefused") || d.Action != nil {
		t.Fatalf("want StorageGrowthRefused and no action, got %v %+v", types(d), d.Action)
	}
	if d = Decide(s, w.in()); len(d.Events) != 0 || d.Action != nil {
		t.Fatalf("refused again: %v %+v", types(d), d.Action)
	}
	if s.Phase != v1alpha1.PhaseHealthy {
		t.Fatalf("phase %s, want Healthy", s.Phase)
	}
	st := StatusFor(s, w.obs, w.m, "memory", "cluster.local")
	var found bool
	for _, c := range st.Conditions {
		if c.Type == v1alpha1.ConditionStalled {
			found = c.Reason == "VolumeExpansionNotAllowed" && strings.Contains(c.Message, "spec.storage.size 2Gi")
		}
	}
	if !found {
		t.Fatalf("no Stalled condition naming spec.storage.size: %+v", st.Conditions)
	}
}

// The claim of a member scaled away stays (whenScaled: Retain) and no pod
// mounts it: its request grows with the others, but a resizer that grows the
// file system on the node never raises its capacity. The growth waits for
// the members' claims only, or it would wait for ever.
func TestStorageGrowthDoesNotWaitForRetainedClaims(t *testing.T) {
	w := newWorld(sizedDemo("1Gi")).initiated().sized("1Gi")
	one := resource.MustParse("1Gi")
	for _, ord := range []int32{3, 4} {
		name := "demo-" + string('0'+ord)
		w.obs.Storage.Claims[name] = ClaimSize{Name: "data-" + name, Ordinal: ord, Class: "standard", Requested: one, Capacity: one}
	}
	s := healthyState(t, w)
	w.grow("2Gi")

	d := Decide(s, w.in())
	s = run(s, d)
	if d.Action == nil || d.Action.Kind != ActExpandVolumes || !slices.Equal(d.Action.Ordinals, []int32{0, 1, 2, 3, 4}) {
		t.Fatalf("want every claim expanded, the retained ones too: %v %+v", types(d), d.Action)
	}
	s = run(s, Decision{Events: Conclude(*d.Action, nil)})

	// The members' volumes grew; the retained ones are FileSystemResizePending.
	w.claims("2Gi", "2Gi")
	for _, name := range []string{"demo-3", "demo-4"} {
		c := w.obs.Storage.Claims[name]
		c.Capacity = one
		w.obs.Storage.Claims[name] = c
	}
	d = Decide(s, w.in())
	if !has(d, "VolumesExpanded") || d.Action == nil || d.Action.Kind != ActReplaceStatefulSet {
		t.Fatalf("want VolumesExpanded and ReplaceStatefulSet, got %v %+v", types(d), d.Action)
	}
}
