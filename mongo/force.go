package mongo

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/rs/zerolog"
)

// MemberEvidence is one member as an observer last saw it.
type MemberEvidence struct {
	Host                 string
	State                MemberState
	Health               float64
	Optime               OpTime
	LastHeartbeatRecv    time.Time
	LastHeartbeatMessage string
}

// MarshalZerologObject logs the evidence of one member.
func (m MemberEvidence) MarshalZerologObject(e *zerolog.Event) {
	e.Str("member", m.Host).Str("state", m.State.String()).Float64("health", m.Health).
		Uint32("optimeSecs", m.Optime.TS.T).Int64("optimeTerm", m.Optime.T)
	if !m.LastHeartbeatRecv.IsZero() {
		e.Time("lastHeartbeatRecv", m.LastHeartbeatRecv)
	}
	if m.LastHeartbeatMessage != "" {
		e.Str("lastHeartbeatMessage", m.LastHeartbeatMessage)
	}
}

// Evidence is what a MajorityLost decision was based on, recorded with it so a
// person (or the replay) sees who was missing and what the survivors had.
type Evidence struct {
	// Observer is the member whose replSetGetStatus this is.
	Observer string
	// Voters is the number of voting members in the config.
	Voters int
	// Needed is the votes a primary needs.
	Needed int
	// Up are the voting members the observer hears from, itself included.
	Up []MemberEvidence
	// Missing are the voting members it does not.
	Missing []MemberEvidence
	// Primary is the member the observer sees as PRIMARY, if any.
	Primary string
}

// MarshalZerologObject logs the evidence.
func (ev Evidence) MarshalZerologObject(e *zerolog.Event) {
	up, missing := zerolog.Arr(), zerolog.Arr()
	for _, m := range ev.Up {
		up.Object(m)
	}
	for _, m := range ev.Missing {
		missing.Object(m)
	}
	e.Str("observer", ev.Observer).Int("voters", ev.Voters).Int("needed", ev.Needed).
		Array("up", up).Array("missing", missing).Str("primary", ev.Primary)
}

// MajorityLost reports whether, as status's observer sees it, fewer voting
// members of config are up than a primary needs. A set with a primary in
// view is not lost (a primary that lost its majority steps down by itself
// within an election timeout; the next observation tells). A nil status
// proves nothing and is not a loss.
func MajorityLost(config Config, status *Status) (bool, Evidence) {
	ev := Evidence{Voters: config.Voters(), Needed: config.MajorityVoteCount()}
	if status == nil {
		return false, ev
	}
	if self := status.Self(); self != nil {
		ev.Observer = self.Name
	}
	if p := status.Primary(); p != nil {
		ev.Primary = p.Name
	}
	for _, m := range config.Members {
		if !m.Voter() {
			continue
		}
		me := MemberEvidence{Host: m.Host, State: StateUnknown}
		ms := status.Member(m.Host)
		if ms != nil {
			me.State, me.Health, me.Optime = ms.State, ms.Health, ms.Optime
			me.LastHeartbeatRecv, me.LastHeartbeatMessage = ms.LastHeartbeatRecv, ms.LastHeartbeatMessage
		}
		if ms != nil && (ms.Self || ms.Up()) {
			ev.Up = append(ev.Up, me)
		} else {
			ev.Missing = append(ev.Missing, me)
		}
	}
	return ev.Primary == "" && len(ev.Up) < ev.Needed, ev
}

// ErrNoSurvivor says no data-bearing member of the config answered, so there
// is nothing to force a config onto.
var ErrNoSurvivor = errors.New("mongo: no reachable data-bearing member to force a config onto")

// Force is a forced reconfig onto the survivors, with the data it may lose.
// It is computed only under the Automatic majority-loss policy, after the
// grace period, and recorded as an event before it is sent.
type Force struct {
	// Survivor is the reachable data-bearing member with the newest optime:
	// the forced config is sent to it (replSetReconfig force=true).
	Survivor string
	// SurvivorOptime is its last applied optime.
	SurvivorOptime OpTime
	// Config keeps the reachable members only, with the survivor an electable
	// voter; version is current + 1 (mongod raises it further by itself).
	Config Config
	// Kept and Dropped are the members' hosts in and out of the forced config.
	Kept, Dropped []string
	// BestMissing is the dropped member with the newest optime any survivor
	// saw, and BestMissingOptime that optime.
	BestMissing       string
	BestMissingOptime OpTime
	// AtRisk is true when BestMissing had writes the survivor has not: they
	// will be lost (rolled back) if it ever rejoins.
	AtRisk bool
	// GapSeconds is how far BestMissing was ahead, in oplog seconds.
	GapSeconds int64
	// Unknown is true when no survivor knows any dropped member's optime, so
	// the data at risk cannot be bounded.
	Unknown bool
}

// ForceTarget chooses what a forced reconfig after a majority loss does.
// statuses holds each reachable member's own replSetGetStatus by host;
// members without one are unreachable and are dropped from the config. It
// never changes which members hold data; it only shrinks the config to the
// survivors, so the set can elect a primary and grow back one member at a time.
func ForceTarget(config Config, statuses map[string]*Status) (Force, error) {
	return force(config, statuses, "")
}

// ErrForceRefused is wrapped by ForceOnto's refusals: the member a person
// named is not one a forced config may keep as its survivor.
var ErrForceRefused = errors.New("mongo: forced reconfig refused")

// ForceOnto is ForceTarget with the survivor a person named: it is refused
// (an error wrapping ErrForceRefused, saying why) unless host is a
// data-bearing member of config that answered with its own status and holds
// the newest optime among the reachable members.
func ForceOnto(config Config, statuses map[string]*Status, host string) (Force, error) {
	m := config.Member(host)
	switch {
	case m == nil:
		return Force{}, fmt.Errorf("%w: %s is not a member of the config", ErrForceRefused, host)
	case m.ArbiterOnly:
		return Force{}, fmt.Errorf("%w: %s is an arbiter and holds no data", ErrForceRefused, host)
	}
	reachable := false
	for h, st := range statuses {
		if st != nil && SameHost(h, host) {
			reachable = true
		}
	}
	if !reachable {
		return Force{}, fmt.Errorf("%w: %s does not answer replSetGetStatus", ErrForceRefused, host)
	}
	newest, err := force(config, statuses, "")
	if err != nil {
		return Force{}, err
	}
	own := selfOptime(statusOf(statuses, host), host)
	if own.Compare(newest.SurvivorOptime) < 0 {
		return Force{}, fmt.Errorf("%w: %s is at optime %s, %s is newer at %s", ErrForceRefused,
			host, own, newest.Survivor, newest.SurvivorOptime)
	}
	return force(config, statuses, m.Host)
}

// String prints an optime as mongod's logs do: {ts: secs:inc, t: term}.
func (o OpTime) String() string { return fmt.Sprintf("{ts: %d:%d, t: %d}", o.TS.T, o.TS.I, o.T) }

func statusOf(statuses map[string]*Status, host string) *Status {
	for h, s := range statuses {
		if s != nil && SameHost(h, host) {
			return s
		}
	}
	return nil
}

// force computes the forced config; survivor, when set, is kept as the
// survivor whatever its optime (ForceOnto checked it).
func force(config Config, statuses map[string]*Status, survivor string) (Force, error) {
	var f Force
	own := func(host string) *Status { return statusOf(statuses, host) }
	best := -1
	for i, m := range config.Members {
		st := own(m.Host)
		if st == nil {
			f.Dropped = append(f.Dropped, m.Host)
			continue
		}
		f.Kept = append(f.Kept, m.Host)
		if m.ArbiterOnly {
			continue
		}
		ot := selfOptime(st, m.Host)
		if survivor != "" {
			if SameHost(m.Host, survivor) {
				best, f.Survivor, f.SurvivorOptime = i, m.Host, ot
			}
			continue
		}
		if best < 0 || ot.Compare(f.SurvivorOptime) > 0 || (ot.Compare(f.SurvivorOptime) == 0 && m.ID < config.Members[best].ID) {
			best, f.Survivor, f.SurvivorOptime = i, m.Host, ot
		}
	}
	if best < 0 {
		return Force{}, ErrNoSurvivor
	}

	// What the survivors last heard of the dropped members.
	f.Unknown = len(f.Dropped) > 0
	for _, h := range f.Dropped {
		for _, k := range f.Kept {
			ms := own(k).Member(h)
			if ms == nil || ms.Optime.IsZero() {
				continue
			}
			f.Unknown = false
			if f.BestMissing == "" || ms.Optime.Compare(f.BestMissingOptime) > 0 {
				f.BestMissing, f.BestMissingOptime = h, ms.Optime
			}
		}
	}
	if f.BestMissing != "" && f.BestMissingOptime.Compare(f.SurvivorOptime) > 0 {
		f.AtRisk = true
		f.GapSeconds = int64(f.BestMissingOptime.TS.T) - int64(f.SurvivorOptime.TS.T)
	}

	cfg, err := ForcedConfig(config, f.Survivor, f.Kept)
	if err != nil {
		return Force{}, err
	}
	f.Config = cfg
	return f, nil
}

// ForcedConfig is the config a forced reconfig sends: config's next version
// with only the kept members, the survivor an electable voter. The Cluster
// actor computes it again when it sends a force decided earlier, so that the
// members it kept are the ones the decision recorded.
func ForcedConfig(config Config, survivor string, kept []string) (Config, error) {
	next := config.Next()
	next.Members = slices.DeleteFunc(next.Members, func(m Member) bool {
		return !slices.ContainsFunc(kept, func(h string) bool { return SameHost(h, m.Host) })
	})
	s := next.Member(survivor)
	if s == nil {
		return Config{}, fmt.Errorf("mongo: survivor %s is not a member of the config", survivor)
	}
	s.Votes, s.Hidden, s.SecondaryDelaySecs = 1, false, 0
	if s.Priority == 0 {
		s.Priority = 1
	}
	if !s.BuildIndexes {
		return Config{}, fmt.Errorf("mongo: survivor %s has buildIndexes false and cannot become primary", survivor)
	}
	for next.Voters() > MaxVotingMembers { // cannot happen with a valid config; kept for safety
		for i := len(next.Members) - 1; i >= 0; i-- {
			if m := &next.Members[i]; m.Voter() && !m.ArbiterOnly && !SameHost(m.Host, survivor) {
				m.Votes, m.Priority = 0, 0
				break
			}
		}
	}
	if err := Validate(next); err != nil {
		return Config{}, fmt.Errorf("mongo: forced config is invalid: %w", err)
	}
	return next, nil
}

// selfOptime is a member's own applied optime from its own status.
func selfOptime(st *Status, host string) OpTime {
	if s := st.Self(); s != nil {
		return s.Optime
	}
	if m := st.Member(host); m != nil {
		return m.Optime
	}
	return OpTime{}
}
