package actors

import (
	"fmt"
	"sort"
	"strings"
)

// StorageGrowth is a growth of spec.storage.size under way, or refused.
type StorageGrowth struct {
	// From is the claim template's size when it began, To the spec's.
	From string `json:"from,omitempty"`
	To   string `json:"to"`
	// Expanded is true once every claim reported the capacity To.
	Expanded bool `json:"expanded,omitempty"`
	// Replicas is the StatefulSet's replicas the replace was decided with: a
	// replace cut between its delete and its create recreates that many.
	Replicas int32 `json:"replicas,omitempty"`
	// Refused is true when the StorageClass does not allow expansion.
	Refused bool   `json:"refused,omitempty"`
	Class   string `json:"class,omitempty"`
}

// foldStorage is Evolve for the storage growth's events.
func foldStorage(s State, e Event) State {
	switch e := e.(type) {
	case StorageGrowing:
		s.Storage = &StorageGrowth{From: e.From, To: e.To}
	case StorageGrowthRefused:
		s.Storage = &StorageGrowth{To: e.Size, Refused: true, Class: e.Class}
	case VolumesExpanded:
		if s.Storage != nil {
			g := *s.Storage
			g.Expanded = true
			s.Storage = &g
		}
	case ActionStarted:
		if e.Action == ActReplaceStatefulSet && s.Storage != nil {
			g := *s.Storage
			g.Replicas = e.Replicas
			s.Storage = &g
		}
	case StorageGrown:
		s.Storage = nil
	}
	return s
}

// storage grows the members' volumes when spec.storage.size grew, and is the
// only way the member StatefulSet's claim template changes (the API server
// refuses it in place, kube.ImmutableChange):
//
//  1. StorageGrowing, then ExpandVolumes raises every data claim's request
//     (the StorageClass must allow expansion, else StorageGrowthRefused and
//     nothing changes);
//  2. it waits until the claim of every member (ordinal below the
//     StatefulSet's replicas) reports the size as its status.capacity (the
//     resizer's part), then VolumesExpanded; the request of a claim kept
//     from a member scaled away grows too, and its volume when a pod
//     mounts it again;
//  3. ReplaceStatefulSet deletes the StatefulSet with orphan propagation and
//     creates it with the grown claim template; the pods keep running and
//     are adopted, no member restarts;
//  4. StorageGrown once the StatefulSet's template asks the size.
//
// Each step is read back from the world, so an operator killed between two
// steps finishes the growth: a StatefulSet deleted and not yet created again
// is created (with the replicas recorded) before EnsureObjects could create
// it from the spec. It runs before the phase's rules; while claims are still
// growing it holds only an EnsureObjects (which would meet the old claim
// template), so healing goes on.
func (d *decider) storage() bool {
	o, m, g := d.in.Obs.Storage, d.in.Mgors, d.s.Storage
	if !d.s.Initiated || d.s.MajorityLost != nil {
		return false
	}
	want := m.StorageSize()
	if d.in.Obs.Replicas < 0 {
		if g == nil || !g.Expanded {
			return false // not ours to create: EnsureObjects does
		}
		d.replace(g.Replicas, "the StatefulSet was deleted to be replaced and is not created again yet")
		return true
	}
	if o.Deleting {
		return g != nil && g.Expanded // the replace waits for the garbage collector
	}
	if o.Template.Cmp(want) >= 0 {
		if g != nil {
			d.emit(StorageGrown{Size: o.Template.String(), StatefulSet: m.Name})
		}
		return false
	}
	if o.Claims == nil || o.Template.IsZero() {
		return false // not listed or not read: never decide blind
	}
	names := claimNames(o.Claims)
	if o.Expandable != nil && !*o.Expandable {
		if g == nil || !g.Refused || g.To != want.String() || g.Class != o.Class {
			d.emit(StorageGrowthRefused{Size: want.String(), Class: o.Class, Reason: refusal(want.String(), o.Class)})
		}
		return false
	}
	if g == nil || g.Refused || g.To != want.String() {
		d.emit(StorageGrowing{From: o.Template.String(), To: want.String(), Claims: names})
	}
	var small []int32
	var smallNames []string
	for _, c := range sortedClaims(o.Claims) {
		if c.Requested.Cmp(want) < 0 {
			small = append(small, c.Ordinal)
			smallNames = append(smallNames, c.Name)
		}
	}
	if len(small) > 0 {
		d.act(Action{Kind: ActExpandVolumes, Ordinals: small, Size: want.String()}, ActionStarted{
			Target: strings.Join(smallNames, ","),
			Reason: fmt.Sprintf("spec.storage.size grew from %s to %s", o.Template.String(), want.String())})
		return true
	}
	// Only the members' claims are waited for: one of an ordinal scaled away
	// (kept, whenScaled: Retain) is mounted by no pod, and a resizer that
	// grows the file system on the node leaves its capacity as it was
	// (FileSystemResizePending) until a pod mounts it again.
	var mounted []string
	for _, c := range sortedClaims(o.Claims) {
		if c.Ordinal >= d.in.Obs.Replicas {
			continue
		}
		if c.Capacity.Cmp(want) < 0 {
			return !d.in.Obs.ObjectsReady // the resizer's part
		}
		mounted = append(mounted, c.Name)
	}
	if !d.s.Storage.Expanded {
		d.emit(VolumesExpanded{Size: want.String(), Claims: mounted})
	}
	d.replace(d.in.Obs.Replicas, fmt.Sprintf("every claim has %s: the claim template follows", want.String()))
	return true
}

// refusal is the words of a refused growth, for its event and the Stalled
// condition.
func refusal(size, class string) string {
	return fmt.Sprintf("spec.storage.size %s cannot be applied: StorageClass %q does not allow volume expansion (allowVolumeExpansion is not true); the volumes keep their size and nothing is deleted",
		size, class)
}

func (d *decider) replace(replicas int32, reason string) {
	d.act(Action{Kind: ActReplaceStatefulSet, Host: d.in.Mgors.Name, Replicas: replicas},
		ActionStarted{Target: d.in.Mgors.Name, Replicas: replicas, Reason: reason})
}

// storageSettled tells from the world whether a storage action cut by a
// crash took effect.
func (d *decider) storageSettled(f *ActionStarted) bool {
	o, want := d.in.Obs.Storage, d.in.Mgors.StorageSize()
	switch f.Action {
	case ActExpandVolumes:
		for _, name := range strings.Split(f.Target, ",") {
			c, ok := claimByName(o.Claims, name)
			if !ok || c.Requested.Cmp(want) < 0 {
				return false
			}
		}
		return true
	case ActReplaceStatefulSet:
		return d.in.Obs.Replicas >= 0 && !o.Deleting && o.Template.Cmp(want) >= 0
	}
	return false
}

// storageUnfinished says why the volumes are not the spec's size ("" when
// they are, or when the growth was refused: a Stalled condition says so, and
// the set itself is healthy).
func (d *decider) storageUnfinished() string {
	o, want := d.in.Obs.Storage, d.in.Mgors.StorageSize()
	if d.in.Obs.Replicas < 0 || o.Claims == nil || o.Template.IsZero() || o.Template.Cmp(want) >= 0 ||
		(o.Expandable != nil && !*o.Expandable) {
		return ""
	}
	return fmt.Sprintf("spec.storage.size is %s, the StatefulSet's claim template %s: growing the volumes", want.String(), o.Template.String())
}

func sortedClaims(cs map[string]ClaimSize) []ClaimSize {
	out := make([]ClaimSize, 0, len(cs))
	for _, c := range cs {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Ordinal < out[j].Ordinal })
	return out
}

func claimNames(cs map[string]ClaimSize) []string {
	var out []string
	for _, c := range sortedClaims(cs) {
		out = append(out, c.Name)
	}
	return out
}

func claimByName(cs map[string]ClaimSize, name string) (ClaimSize, bool) {
	for _, c := range cs {
		if c.Name == name {
			return c, true
		}
	}
	return ClaimSize{}, false
}
