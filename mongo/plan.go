package mongo

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// Kind is what a planned Step does.
type Kind string

// The kinds of Step. Every kind but Done, Wait and StepDown is one non-forced
// replSetReconfig carrying Step.Config.
const (
	// Done: the config has the desired shape; nothing to do.
	Done Kind = "Done"
	// Wait: something outside the config must happen first (a pod must answer,
	// a member must reach SECONDARY, the last config must commit); Reason says what.
	Wait Kind = "Wait"
	// StepDown: the primary must step down before the next change, which would
	// remove it or make it unelectable. No config is sent.
	StepDown Kind = "StepDown"
	// AddMember adds one member whose pod answers.
	AddMember Kind = "AddMember"
	// RemoveMember removes one member. Its pod must still exist: the caller
	// scales the StatefulSet down only after this config is committed.
	RemoveMember Kind = "RemoveMember"
	// ChangeVotes gives or takes one member's vote (one voting change).
	ChangeVotes Kind = "ChangeVotes"
	// ChangePriority changes one voting member's priority.
	ChangePriority Kind = "ChangePriority"
	// ChangeHidden hides or shows one member.
	ChangeHidden Kind = "ChangeHidden"
	// ChangeTags changes one member's tags.
	ChangeTags Kind = "ChangeTags"
	// UpdateSettings changes the settings the spec sets.
	UpdateSettings Kind = "UpdateSettings"
	// ChangeHorizons sets every member's horizons at once (horizons.go).
	ChangeHorizons Kind = "ChangeHorizons"
)

// Step is the one next move toward the desired membership.
type Step struct {
	// Kind says what the step does.
	Kind Kind
	// Host is the member the step is about (the primary for StepDown); empty
	// for Done, Wait and UpdateSettings.
	Host string
	// Config is the complete next config for a reconfig step (version =
	// current + 1, term unchanged: mongod sets it), ready to send with
	// force=false. Zero for Done, Wait and StepDown.
	Config Config
	// Reason says why, for events and people.
	Reason string
}

// Reconfig reports whether the step is a replSetReconfig of Config.
func (s Step) Reconfig() bool {
	switch s.Kind {
	case Done, Wait, StepDown:
		return false
	}
	return true
}

// Hosts is a set of member hosts, compared as mongod compares them.
type Hosts map[string]bool

// NewHosts is the set of the given hosts.
func NewHosts(hosts ...string) Hosts {
	h := Hosts{}
	for _, x := range hosts {
		h[NormalizeHost(x)] = true
	}
	return h
}

// Has reports whether host is in the set.
func (h Hosts) Has(host string) bool { return h[NormalizeHost(host)] }

// Plan returns the ONE next step from the current config toward the desired
// members and settings, or a Done step. It is pure: the caller observes
// (replSetGetConfig and replSetGetStatus from the primary, hello on each
// desired member for reachable), sends the step, waits for it to commit, and
// plans again. The rules, in the order Plan applies them:
//
//  0. Wait while the current config is not yet held by a majority of voting
//     members (mongod would answer 308; never pile a config on an uncommitted
//     one), and while status shows no primary to send a reconfig to.
//  1. Remove members that are not desired, highest _id first (the StatefulSet
//     removes the highest ordinal; a lower one goes first only when the higher
//     one cannot go yet); a member whose arbiterOnly or buildIndexes must
//     change is removed to be re-added. A pod is scaled away only after its
//     removal, and the removal of every member above it, is committed.
//  2. Add desired members whose pod answers, lowest ordinal first, the arbiter
//     last. A member that is to vote joins as a voter only when that keeps the
//     number of voters odd and at most seven (mongod then holds its vote back
//     as newlyAdded until it is SECONDARY); otherwise it joins with votes 0 and
//     priority 0 and gets its vote later.
//  3. Give and take votes, one member per step: a vote is given only to a
//     member that status shows SECONDARY; votes are given before they are taken
//     (more voters tolerate more failures) unless seven already vote. Taking a
//     vote also sets priority 0, as mongod requires.
//  4. Change hidden, priority and tags, one member and one field per step.
//  5. Change the settings the spec sets (unset settings are left alone).
//  6. Change the members' horizons, all members in one reconfig (mongod
//     requires the same horizon names on every member), once no member
//     that is not desired is left with horizons. A member joins with the
//     horizon names the config has (rule 2): without horizons when the
//     config has none, and it waits while the config has horizons and it
//     has none of its own, or other names (rule 6 renames the others first).
//
// A candidate step is taken only if its config passes Validate, changes at
// most one voting member, and keeps the primary electable; when only the
// primary stands in the way, the step is StepDown first (and only if another
// electable member is SECONDARY to take over). status may be nil (nothing is
// known about states): then no vote is given and the primary is not protected
// by a StepDown — mongod still refuses to make its primary unelectable.
func Plan(current Config, status *Status, desired []DesiredMember, reachable Hosts, settings v1alpha1.ReplicaSetSettings) Step {
	p := planner{cur: current, st: status, want: desiredByHost(desired), order: sortedDesired(desired), reachable: reachable}
	if s, ok := p.uncommitted(); ok {
		return s
	}
	if status != nil && status.Primary() == nil {
		return Step{Kind: Wait, Reason: "no member is PRIMARY: a reconfig needs one (MajorityLost tells whether one can be elected)"}
	}
	for _, gen := range []func() []Step{p.removals, p.additions, p.voteChanges, p.memberChanges, func() []Step { return p.settingsChange(settings) }, p.horizonChange} {
		for _, cand := range gen() {
			if s, ok := p.admit(cand); ok {
				return s
			}
		}
	}
	if len(p.waits) > 0 {
		return Step{Kind: Wait, Reason: strings.Join(p.waits, "; ")}
	}
	return Step{Kind: Done, Reason: "the config has the desired members and settings"}
}

type planner struct {
	cur       Config
	st        *Status
	want      map[string]DesiredMember
	order     []DesiredMember
	reachable Hosts
	waits     []string
}

func (p *planner) wait(format string, a ...any) {
	w := fmt.Sprintf(format, a...)
	if !slices.Contains(p.waits, w) {
		p.waits = append(p.waits, w)
	}
}

// uncommitted is rule 0.
func (p *planner) uncommitted() (Step, bool) {
	if p.st == nil {
		return Step{}, false
	}
	reported, have := false, 0
	for _, m := range p.cur.Members {
		ms := p.st.Member(m.Host)
		if ms == nil {
			continue
		}
		if ms.ConfigVersion != 0 {
			reported = true
		}
		if m.Voter() && ms.Up() && ms.ConfigVersion >= p.cur.Version {
			have++
		}
	}
	if !reported || have >= p.cur.MajorityVoteCount() {
		return Step{}, false
	}
	return Step{Kind: Wait, Reason: fmt.Sprintf("config version %d is held by %d of the %d voting members needed to commit it", p.cur.Version, have, p.cur.MajorityVoteCount())}, true
}

// admit checks a candidate reconfig (see Plan) and turns it into a StepDown
// when only the primary stands in the way.
func (p *planner) admit(s Step) (Step, bool) {
	if err := Validate(s.Config); err != nil {
		p.wait("%s %s must wait: %v", s.Kind, s.Host, BrokenRules(err))
		return Step{}, false
	}
	if VotingChanges(p.cur, s.Config) > 1 || ValidateTransition(p.cur, s.Config, false) != nil {
		p.wait("%s %s must wait: it would break a reconfig rule", s.Kind, s.Host)
		return Step{}, false
	}
	prim := p.st.Primary()
	if prim == nil {
		return s, true
	}
	if m := s.Config.Member(prim.Name); m != nil && m.Electable() && m.Voter() {
		return s, true
	}
	for _, m := range p.cur.Members {
		if SameHost(m.Host, prim.Name) || !m.Electable() || !m.Voter() {
			continue
		}
		if ms := p.st.Member(m.Host); ms != nil && ms.Up() && ms.State == StateSecondary {
			return Step{Kind: StepDown, Host: prim.Name, Reason: fmt.Sprintf("primary %s steps down before: %s", prim.Name, s.Reason)}, true
		}
	}
	p.wait("%s must wait: primary %s cannot step down, no electable SECONDARY to take over", s.Kind, prim.Name)
	return Step{}, false
}

func (p *planner) step(kind Kind, host string, next Config, format string, a ...any) Step {
	return Step{Kind: kind, Host: host, Config: next, Reason: fmt.Sprintf(format, a...)}
}

// removals is rule 1: only the first member in removal order is a candidate.
func (p *planner) removals() []Step {
	var gone []Member
	for _, m := range p.cur.Members {
		d, ok := p.want[NormalizeHost(m.Host)]
		if !ok || d.Arbiter != m.ArbiterOnly || !m.BuildIndexes {
			gone = append(gone, m)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	slices.SortFunc(gone, func(a, b Member) int { return b.ID - a.ID })
	var out []Step
	for _, m := range gone {
		next := p.cur.Next()
		next.Members = slices.DeleteFunc(next.Members, func(x Member) bool { return x.ID == m.ID })
		why := "it is not a desired member"
		if _, ok := p.want[NormalizeHost(m.Host)]; ok {
			why = "its arbiterOnly or buildIndexes must change, which takes a removal and a re-add"
		}
		out = append(out, p.step(RemoveMember, m.Host, next, "remove %s (_id %d): %s; scale its pod away only after this config is committed", m.Host, m.ID, why))
	}
	return out
}

// additions is rule 2.
func (p *planner) additions() []Step {
	var out []Step
	voters := p.cur.Voters()
	for _, d := range p.order {
		if p.cur.Member(d.Host) != nil {
			continue
		}
		if !p.reachable.Has(d.Host) {
			p.wait("%s does not answer yet", d.Host)
			continue
		}
		h, why, ok := p.cur.joiningHorizons(d)
		if !ok {
			p.wait("%s joins once %s", d.Host, why)
			continue
		}
		d.Horizons = h
		m := memberFor(p.freeID(d), d)
		how := "as a voter"
		switch {
		case d.Arbiter:
			how = "as an arbiter (arbiters always vote)"
		case d.Votes == 0:
			how = "without a vote, as desired"
		case voters+1 > MaxVotingMembers || (voters+1)%2 == 0:
			m.Votes, m.Priority = 0, 0
			how = fmt.Sprintf("without a vote for now (%d voters would be even or above %d)", voters+1, MaxVotingMembers)
		}
		next := p.cur.Next()
		next.Members = append(next.Members, m)
		out = append(out, p.step(AddMember, d.Host, next, "add %s (_id %d) %s", d.Host, m.ID, how))
	}
	return out
}

// freeID is the _id for a new member: its ordinal when free (the arbiter's
// the one after the highest desired ordinal), else the lowest free _id above
// every _id in use.
func (p *planner) freeID(d DesiredMember) int {
	want := int(d.Ordinal)
	if d.Arbiter {
		want = 0
		for _, o := range p.order {
			if !o.Arbiter && int(o.Ordinal) >= want {
				want = int(o.Ordinal) + 1
			}
		}
	}
	if p.cur.MemberByID(want) == nil {
		return want
	}
	hi := 0
	for _, m := range p.cur.Members {
		hi = max(hi, m.ID+1)
	}
	return hi
}

// voteChanges is rule 3.
func (p *planner) voteChanges() []Step {
	var give, take []Step
	for _, d := range p.order {
		cm := p.cur.Member(d.Host)
		if cm == nil || cm.ArbiterOnly != d.Arbiter {
			continue
		}
		switch {
		case d.Votes > 0 && !cm.Voter():
			if !d.Arbiter {
				ms := p.st.Member(d.Host)
				if ms == nil || !ms.Up() || ms.State != StateSecondary {
					state := "unknown"
					if ms != nil {
						state = ms.State.String()
					}
					p.wait("%s gets its vote once it is SECONDARY (now %s)", d.Host, state)
					continue
				}
			}
			next := p.cur.Next()
			nm := next.Member(d.Host)
			nm.Votes = 1
			if fits(*nm, d.Priority) {
				nm.Priority = d.Priority
			}
			give = append(give, p.step(ChangeVotes, d.Host, next, "give %s a vote (priority %g)", d.Host, nm.Priority))
		case d.Votes == 0 && cm.Voter():
			next := p.cur.Next()
			nm := next.Member(d.Host)
			nm.Votes, nm.Priority = 0, 0
			take = append(take, p.step(ChangeVotes, d.Host, next, "take the vote of %s (and its priority, as mongod requires)", d.Host))
		}
	}
	slices.Reverse(take) // highest ordinal first
	if p.cur.Voters() >= MaxVotingMembers {
		return append(take, give...)
	}
	return append(give, take...)
}

// fits reports whether a member may have the given priority under mongod's rules.
func fits(m Member, priority float64) bool {
	if priority == 0 {
		return true
	}
	return !m.ArbiterOnly && m.Voter() && !m.Hidden && m.SecondaryDelaySecs == 0 && m.BuildIndexes
}

// memberChanges is rule 4.
func (p *planner) memberChanges() []Step {
	var out []Step
	for _, d := range p.order {
		cm := p.cur.Member(d.Host)
		if cm == nil || cm.ArbiterOnly != d.Arbiter || d.Arbiter {
			continue
		}
		if cm.Hidden != d.Hidden {
			next := p.cur.Next()
			nm := next.Member(d.Host)
			nm.Hidden = d.Hidden
			verb := "show"
			if d.Hidden {
				nm.Priority = 0
				verb = "hide"
			}
			out = append(out, p.step(ChangeHidden, d.Host, next, "%s %s", verb, d.Host))
		}
		if cm.Priority != d.Priority && cm.Voter() == (d.Votes > 0) {
			next := p.cur.Next()
			next.Member(d.Host).Priority = d.Priority
			out = append(out, p.step(ChangePriority, d.Host, next, "set the priority of %s from %g to %g", d.Host, cm.Priority, d.Priority))
		}
		if !maps.Equal(cm.Tags, d.Tags) {
			next := p.cur.Next()
			next.Member(d.Host).Tags = maps.Clone(d.Tags)
			out = append(out, p.step(ChangeTags, d.Host, next, "set the tags of %s", d.Host))
		}
	}
	return out
}

// settingsChange is rule 5.
func (p *planner) settingsChange(spec v1alpha1.ReplicaSetSettings) []Step {
	s, changed := applySettings(p.cur.Settings, spec)
	if !changed {
		return nil
	}
	next := p.cur.Next()
	next.Settings = s
	return []Step{p.step(UpdateSettings, "", next, "apply the replica-set settings of the spec")}
}
