package actors

import (
	"sort"
	"time"

	"github.com/mgors/operator/mongo"
)

// Health is what the metrics report of one observation: each member's state
// and replication lag, and whether a primary and a voting majority answer.
// It is derived from the Observation alone (healthOf), never from a secret.
type Health struct {
	// Members are the members of the config, by pod name.
	Members []MemberHealth
	// Primary is true when a writable primary answered.
	Primary bool
	// Voters are the config's voting members, VotersAnswering those of them
	// that answered hello, Majority how many votes an election needs.
	Voters, VotersAnswering, Majority int
	// Term is the replica-set term in the primary's (or a member's) status,
	// 0 when none was read: each election raises it.
	Term int64
	// LastBackup is the point in time (End's wall clock) the newest backup
	// this cluster's log records Succeeded restores to; zero before one.
	LastBackup time.Time
}

// lastBackup is the End wall time of the newest completed backup in s.
func lastBackup(s State) time.Time {
	var last time.Time
	for _, r := range s.Backups {
		if r.Completed != nil && r.Completed.End.Wall.After(last) {
			last = r.Completed.End.Wall
		}
	}
	return last
}

// MemberHealth is one member's line of Health.
type MemberHealth struct {
	Name string
	// State is mongod's stateStr as the primary reports it; DOWN for a member
	// that does not answer when no status was read.
	State string
	// Lag is how far the member's last applied write is behind the
	// primary's, in seconds; HasLag is false without a primary, and for
	// arbiters and members that do not answer.
	Lag    float64
	HasLag bool
}

// healthOf summarizes an observation for the metrics. Without a config (not
// initiated yet) it is empty.
func healthOf(o Observation) Health {
	var h Health
	if o.Config == nil {
		return h
	}
	if o.Status != nil {
		h.Term = o.Status.Term
	}
	var primary *MemberView
	if mv, ok := o.Members[o.Primary]; ok && o.Primary != "" {
		primary, h.Primary = &mv, true
	}
	for _, cm := range o.Config.Members {
		mv, seen := o.Members[cm.Host]
		if cm.Voter() {
			h.Voters++
			if seen && mv.Answers {
				h.VotersAnswering++
			}
		}
		name := mv.Name
		if name == "" {
			name = cm.Host
		}
		mh := MemberHealth{Name: name, State: memberState(o, mv, seen)}
		if primary != nil && seen && mv.Answers && !cm.ArbiterOnly {
			mh.Lag, mh.HasLag = lagSeconds(primary.LastWrite, mv.LastWrite), true
		}
		h.Members = append(h.Members, mh)
	}
	h.Majority = h.Voters/2 + 1
	sort.Slice(h.Members, func(i, j int) bool { return h.Members[i].Name < h.Members[j].Name })
	return h
}

// memberState is the state the primary's status gives a member; without a
// status, DOWN for a member that does not answer, else the state it reports
// of itself (UNKNOWN when it was not asked).
func memberState(o Observation, mv MemberView, seen bool) string {
	switch {
	case o.Status != nil && seen:
		return mv.State.String()
	case !seen || !mv.Answers:
		return mongo.StateDown.String()
	case mv.OwnState != 0:
		return mv.OwnState.String()
	}
	return mongo.StateUnknown.String()
}

// lagSeconds is how many seconds of writes a member's last applied optime
// trails the primary's (0 when it is level or ahead).
func lagSeconds(primary, member mongo.OpTime) float64 {
	d := int64(primary.TS.T) - int64(member.TS.T)
	if d < 0 {
		return 0
	}
	return float64(d)
}
