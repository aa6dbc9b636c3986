package mongo

import (
	"fmt"
	"maps"
	"slices"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// DesiredMember is one member the spec asks for, with the votes, priority and
// visibility Mgors wants it to end with in the config.
type DesiredMember struct {
	// Ordinal is the member's StatefulSet ordinal (the arbiter's is in its own
	// StatefulSet, so 0).
	Ordinal int32
	// Name is the member's pod name.
	Name string
	// Host is the member's stable DNS host:port, never a pod IP.
	Host string
	// Arbiter is true for the arbiter: a vote, no data.
	Arbiter bool
	// Votes is 0 or 1.
	Votes int
	// Priority is 0 (never primary) to 1000.
	Priority float64
	// Hidden members are invisible to clients.
	Hidden bool
	// Tags are the member's replica-set tags.
	Tags map[string]string
	// Horizons are the member's split-horizon addresses, {name: "host:port"}
	// (spec.externalAccess); nil for none. Desired leaves them nil: the
	// actor fills them in from the observed external addresses.
	Horizons map[string]string
}

// ArbiterName is the arbiter's pod name, "<name>-arbiter-0": a StatefulSet of
// its own, so it never takes a data member's ordinal.
func ArbiterName(m *v1alpha1.Mgors) string { return m.Name + "-arbiter-0" }

// ArbiterHost is the arbiter's stable DNS host:port under the members' service.
func ArbiterHost(m *v1alpha1.Mgors, clusterDomain string) string {
	return fmt.Sprintf("%s.%s.%s.svc.%s:%d", ArbiterName(m), m.ServiceName(), m.Namespace, clusterDomain, v1alpha1.MongoPort)
}

// Desired is the membership the spec asks for: data members by ordinal, then
// the arbiter if any. Votes follow these rules, in this order:
//
//  1. memberOptions[].votes, when given, win;
//  2. the arbiter always votes (mongod requires it);
//  3. other members vote by default;
//  4. at most seven members vote: beyond that, default voters lose their vote
//     from the highest ordinal down (then explicit ones, as mongod would refuse
//     the config otherwise);
//  5. when the spec did not fix every vote, the number of voters is kept odd
//     by taking the vote of the highest-ordinal default voter, as an even
//     number of voters tolerates no more failures than one fewer and makes
//     ties possible (Percona's SetVotes does the same).
//
// A member that does not vote gets priority 0, and a hidden member priority
// 0, as mongod requires. Rules 4 and 5 never take the vote of the last
// electable member.
func Desired(m *v1alpha1.Mgors, clusterDomain string) []DesiredMember {
	n := m.Spec.Members
	if n == 0 {
		n = v1alpha1.DefaultMembers
	}
	out := make([]DesiredMember, 0, n+1)
	explicit := make([]bool, 0, n+1)
	for i := int32(0); i < n; i++ {
		o := m.Options(i)
		d := DesiredMember{Ordinal: i, Name: m.PodName(i), Host: m.MemberHost(i, clusterDomain), Votes: 1, Priority: 1}
		if o.Votes != nil {
			d.Votes = int(*o.Votes)
		}
		if o.Hidden != nil {
			d.Hidden = *o.Hidden
		}
		if o.Priority != nil {
			d.Priority = float64(*o.Priority)
		}
		if d.Hidden || d.Votes == 0 {
			d.Priority = 0
		}
		d.Tags = maps.Clone(o.Tags)
		out = append(out, d)
		explicit = append(explicit, o.Votes != nil)
	}
	if m.Spec.Arbiters > 0 {
		out = append(out, DesiredMember{Name: ArbiterName(m), Host: ArbiterHost(m, clusterDomain), Arbiter: true, Votes: 1})
		explicit = append(explicit, true)
	}

	voters := func() int {
		v := 0
		for _, d := range out {
			v += d.Votes
		}
		return v
	}
	electable := func() int {
		e := 0
		for _, d := range out {
			if !d.Arbiter && d.Votes == 1 && d.Priority > 0 {
				e++
			}
		}
		return e
	}
	// drop takes the vote of the highest-ordinal voter among those allowed,
	// never the arbiter's and never the last electable member's.
	drop := func(allowExplicit bool) bool {
		for i := len(out) - 1; i >= 0; i-- {
			d := &out[i]
			if d.Arbiter || d.Votes == 0 || (explicit[i] && !allowExplicit) {
				continue
			}
			if d.Priority > 0 && electable() == 1 {
				continue
			}
			d.Votes, d.Priority = 0, 0
			return true
		}
		return false
	}
	for voters() > MaxVotingMembers {
		if !drop(false) && !drop(true) {
			break
		}
	}
	if voters()%2 == 0 && voters() > 0 {
		drop(false)
	}
	return out
}

// InitialConfig is the config for replSetInitiate: version 1, data members with
// _id = ordinal, the arbiter's _id after them, and settings only where the spec
// set them (mongod fills in its defaults).
func InitialConfig(name string, desired []DesiredMember, settings v1alpha1.ReplicaSetSettings) Config {
	c := Config{ID: name, Version: 1, ProtocolVersion: 1}
	next := 0
	for _, d := range desired {
		if !d.Arbiter && int(d.Ordinal) >= next {
			next = int(d.Ordinal) + 1
		}
	}
	for _, d := range desired {
		id := int(d.Ordinal)
		if d.Arbiter {
			id = next
			next++
		}
		c.Members = append(c.Members, memberFor(id, d))
	}
	if s, _ := applySettings(nil, settings); s != nil {
		c.Settings = s
	}
	return c
}

// memberFor is the config member for a desired member with its final votes,
// priority, visibility and tags.
func memberFor(id int, d DesiredMember) Member {
	m := NewMember(id, d.Host)
	m.ArbiterOnly = d.Arbiter
	m.Votes = d.Votes
	m.Priority = d.Priority
	m.Hidden = d.Hidden
	if d.Arbiter {
		m.Votes, m.Priority, m.Hidden = 1, 0, false
	} else if len(d.Tags) > 0 {
		m.Tags = maps.Clone(d.Tags)
	}
	m.setHorizons(d.Horizons)
	return m
}

// applySettings returns cur with the settings the spec set (nil fields keep
// what cur has: unset in the spec means "mongod's business", not "reset"),
// and whether anything changed. cur is not modified.
func applySettings(cur *Settings, spec v1alpha1.ReplicaSetSettings) (*Settings, bool) {
	var s Settings
	if cur != nil {
		s = *cur
		s.Extra = maps.Clone(cur.Extra)
	}
	changed := false
	setInt := func(dst **int64, v *int32) {
		if v == nil {
			return
		}
		if *dst == nil || **dst != int64(*v) {
			x := int64(*v)
			*dst = &x
			changed = true
		}
	}
	setInt(&s.ElectionTimeoutMillis, spec.ElectionTimeoutMillis)
	setInt(&s.HeartbeatIntervalMillis, spec.HeartbeatIntervalMillis)
	setInt(&s.HeartbeatTimeoutSecs, spec.HeartbeatTimeoutSecs)
	setInt(&s.CatchUpTimeoutMillis, spec.CatchUpTimeoutMillis)
	if v := spec.ChainingAllowed; v != nil && (s.ChainingAllowed == nil || *s.ChainingAllowed != *v) {
		b := *v
		s.ChainingAllowed = &b
		changed = true
	}
	if cur == nil && !changed {
		return nil, false
	}
	return &s, changed
}

// desiredByHost indexes desired members by normalised host.
func desiredByHost(desired []DesiredMember) map[string]DesiredMember {
	out := make(map[string]DesiredMember, len(desired))
	for _, d := range desired {
		out[NormalizeHost(d.Host)] = d
	}
	return out
}

// sortedDesired is desired in the order members are added: data members by
// ordinal, the arbiter last.
func sortedDesired(desired []DesiredMember) []DesiredMember {
	out := slices.Clone(desired)
	slices.SortStableFunc(out, func(a, b DesiredMember) int {
		if a.Arbiter != b.Arbiter {
			if a.Arbiter {
				return 1
			}
			return -1
		}
		return int(a.Ordinal) - int(b.Ordinal)
	})
	return out
}
