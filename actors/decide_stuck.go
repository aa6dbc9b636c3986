package actors

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
)

// The rules of Decide for a member that came back empty or is stuck
// (docs/design/recovery.md, cases 2 and 3):
//
//  1. A member whose data claim was replaced (a new UID: a new volume), or
//     a member of the config that answers with an empty volume
//     (NotYetInitialized) or in initial sync (STARTUP2; a new member's first
//     sync too), is resyncing by itself: recorded
//     (MemberResyncing, with the initial sync progress once it shows), nothing
//     else is done; the other members are not touched.
//  2. A member that cannot get back by itself is recorded with the evidence
//     (MemberStuck): too stale (RECOVERING, "Could not find member to sync
//     from"), initial sync failing (its attempts used up, or mongod exited 14
//     and restarted while in initial sync), or REMOVED (its config does not
//     name it: the planner adds it again).
//  3. A member too stale or failing initial sync for stuckBound is wiped
//     (WipeMember: its claim and pod; it comes back empty and initial-syncs):
//     one member at a time, never the primary, never while another wiped
//     member is not back, never when the members left holding data would be
//     fewer than a majority of the config's voters, and once per trouble.
//  4. A recorded member that is SECONDARY (or PRIMARY) again is recorded as
//     back (MemberRecovered).

// stuckBound is how long a member must show the same stuck evidence before
// it is wiped. A member that just joined or restarted may report no sync
// source for a few heartbeats (2 s each) and an election (10 s); mongod
// itself retries a too-stale source only after a minute's denylist. 30 s is
// past the transient cases and short next to a resync, and a wipe of a
// member that is neither primary nor needed for the majority costs no
// data, only its own resync.
const stuckBound = 30 * time.Second

// The kinds of trouble a member is recorded in.
const (
	TroubleResyncing          = "Resyncing"
	TroubleTooStale           = "TooStale"
	TroubleInitialSyncFailing = "InitialSyncFailing"
	TroubleRemoved            = "Removed"
	// TroubleWiped is a member the operator wiped before any other trouble
	// was recorded (a member diverged after a forced reconfig).
	TroubleWiped = "Wiped"
)

// mongodFassertExit is mongod's exit code after a fassert (EXIT_ABRUPT), e.g.
// "The maximum number of retries have been exhausted for initial sync".
const mongodFassertExit = 14

// tooStaleMessage is the infoMessage of a member too stale to catch up.
const tooStaleMessage = "could not find member to sync from"

// Trouble is a member recorded resyncing or stuck, until it serves again.
type Trouble struct {
	Kind  string    `json:"kind"`
	Since time.Time `json:"since"`
	// Progressed is true once a record carried initial sync progress.
	Progressed bool `json:"progressed,omitempty"`
	// Wiped is true once the operator wiped the member in this trouble: it
	// is never wiped twice for one trouble.
	Wiped bool `json:"wiped,omitempty"`
}

// trouble is what one member's observation shows: its kind ("" when none)
// and the evidence in words.
func (d *decider) trouble(dm mongo.DesiredMember) (kind, evidence string) {
	o := d.in.Obs
	mv := o.Members[dm.Host]
	if dm.Arbiter || !mv.Answers {
		return "", ""
	}
	state := mv.State
	if mv.OwnState != 0 {
		state = mv.OwnState
	}
	// An empty member outside the config is a new one (a scale-up) or one
	// to be wiped after a force (decide_recovery.go): not "came back empty".
	empty := mv.Empty && o.Config != nil && o.Config.Member(dm.Host) != nil
	inSync := empty || (mv.HasConfig && state == mongo.StateStartup2)
	pod := o.Pods[dm.Name]
	switch {
	case inSync && mv.InitialSync.Exhausted():
		return TroubleInitialSyncFailing, fmt.Sprintf("%s is in initial sync and used up its attempts (%s)", dm.Name, mv.InitialSync.Progress())
	case inSync && pod.Restarts > 0 && pod.LastExitCode == mongodFassertExit:
		ev := fmt.Sprintf("%s is in initial sync again after mongod exited %d (fassert; restarts %d)", dm.Name, pod.LastExitCode, pod.Restarts)
		if p := mv.InitialSync.Progress(); p != "" {
			ev += "; " + p
		}
		return TroubleInitialSyncFailing, ev
	case empty:
		return TroubleResyncing, fmt.Sprintf("%s answers without a config and its replSetGetStatus says NotYetInitialized: its volume came back empty; mongod initial-syncs it once a heartbeat hands it the config", dm.Name)
	case inSync:
		ev := fmt.Sprintf("%s is STARTUP2 (initial sync)", dm.Name)
		if p := mv.InitialSync.Progress(); p != "" {
			ev += ": " + p
		}
		return TroubleResyncing, ev
	case mv.HasConfig && state == mongo.StateRecovering && strings.Contains(strings.ToLower(mv.InfoMessage), tooStaleMessage):
		ev := fmt.Sprintf("%s is RECOVERING with infoMessage %q, its last write %s", dm.Name, mv.InfoMessage, mv.LastWrite)
		if p := o.Members[o.Primary]; o.Primary != "" && p.Answers {
			ev += fmt.Sprintf(", the primary's %s", p.LastWrite)
		}
		return TroubleTooStale, ev + ": too stale to catch up"
	case mv.Removed:
		return TroubleRemoved, fmt.Sprintf("%s answers as REMOVED (its own config does not name it): it is added to the config again", dm.Name)
	}
	return "", ""
}

// serving reports a member back in the set: PRIMARY or SECONDARY with a config.
func serving(mv MemberView) bool {
	return mv.Answers && mv.HasConfig && (mv.State == mongo.StatePrimary || mv.State == mongo.StateSecondary)
}

// observeTroubles records each member's trouble when it starts or changes,
// and its end (rules 1, 2 and 4). A member whose data claim was replaced
// since the last view (claims: the UIDs known before it) has a new, empty
// volume: it is recorded resyncing even when its initial sync was too quick
// for any observation to see it empty or in STARTUP2. Not while the set is
// being initiated: its members' first initial syncs are no trouble.
func (d *decider) observeTroubles(claims map[string]string) {
	if !d.s.Initiated || d.s.Phase == v1alpha1.PhaseProvisioning || d.s.Phase == v1alpha1.PhaseInitiating {
		return
	}
	for _, dm := range d.in.Desired {
		mv := d.in.Obs.Members[dm.Host]
		t, known := d.s.Troubles[dm.Name]
		if old, cur := claims[dm.Name], d.in.Obs.Claims[dm.Name]; old != "" && cur != "" && old != cur && (!known || t.Kind != TroubleResyncing) {
			ev := fmt.Sprintf("the data claim of %s was replaced (uid %s, now %s): a new, empty volume; mongod initial-syncs it", dm.Name, old, cur)
			if serving(mv) {
				ev += "; it is " + mv.State.String() + " already (its initial sync ended between two observations)"
			}
			d.emit(MemberResyncing{Member: dm.Name, Host: dm.Host, Evidence: ev, Progress: mv.InitialSync.Progress()})
			t, known = d.s.Troubles[dm.Name]
		}
		if known && serving(mv) {
			d.emit(MemberRecovered{Member: dm.Name, Host: dm.Host, Trouble: t.Kind, Since: t.Since, State: mv.State.String()})
			continue
		}
		kind, evidence := d.trouble(dm)
		switch {
		case kind == "":
		case !known || t.Kind != kind:
			d.recordTrouble(dm, kind, evidence)
		case kind == TroubleResyncing && !t.Progressed && mv.InitialSync != nil:
			d.recordTrouble(dm, kind, evidence) // once more, with the progress
		}
	}
}

func (d *decider) recordTrouble(dm mongo.DesiredMember, kind, evidence string) {
	mv := d.in.Obs.Members[dm.Host]
	if kind == TroubleResyncing {
		d.emit(MemberResyncing{Member: dm.Name, Host: dm.Host, Evidence: evidence, Progress: mv.InitialSync.Progress()})
		return
	}
	d.emit(MemberStuck{Member: dm.Name, Host: dm.Host, Kind: kind, Evidence: evidence})
}

// wipeStuck wipes one member too stale or failing initial sync for
// stuckBound (rule 3).
func (d *decider) wipeStuck() bool {
	o := d.in.Obs
	if o.Config == nil || o.Primary == "" {
		return false
	}
	var names []string
	for name, t := range d.s.Troubles {
		if _, ok := d.desired(name); !ok {
			continue // scaled away: its trouble no longer matters
		}
		if t.Wiped {
			return false // one at a time: the last wiped member is not back yet
		}
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t := d.s.Troubles[name]
		if (t.Kind != TroubleTooStale && t.Kind != TroubleInitialSyncFailing) || d.in.Now.Before(t.Since.Add(stuckBound)) {
			continue
		}
		dm, ok := d.desired(name)
		if !ok {
			continue
		}
		kind, evidence := d.trouble(dm)
		if kind != t.Kind || mongo.SameHost(dm.Host, o.Primary) || o.Members[dm.Host].Primary {
			continue // the evidence is gone, or it is the primary: never wiped
		}
		holding, needed := d.votersHoldingWithout(dm.Host), o.Config.MajorityVoteCount()
		if holding < needed {
			continue // the wipe would leave fewer than a majority of voters with data
		}
		d.act(Action{Kind: ActWipeMember, Host: dm.Name}, ActionStarted{Target: dm.Name,
			Reason: fmt.Sprintf("%s (%s since %s): its data is wiped so it resyncs from the primary; %d of the %d voters needed keep their data",
				evidence, t.Kind, t.Since.UTC().Format(time.RFC3339), holding, needed)})
		return true
	}
	return false
}

// votersHoldingWithout counts the config's voting members, other than host,
// that serve (PRIMARY or SECONDARY): the members that hold the data.
func (d *decider) votersHoldingWithout(host string) int {
	return d.votersWhere(func(m mongo.Member, mv MemberView) bool {
		return !m.ArbiterOnly && !mongo.SameHost(m.Host, host) && serving(mv)
	})
}

func (d *decider) desired(name string) (mongo.DesiredMember, bool) {
	for _, dm := range d.in.Desired {
		if dm.Name == name {
			return dm, true
		}
	}
	return mongo.DesiredMember{}, false
}

// foldTrouble folds the trouble events into the state's map (a new map:
// states are values).
func foldTrouble(s State, at time.Time, e Event) State {
	set := func(name string, t Trouble) {
		out := make(map[string]Trouble, len(s.Troubles)+1)
		for k, v := range s.Troubles {
			out[k] = v
		}
		out[name] = t
		s.Troubles = out
	}
	switch e := e.(type) {
	case MemberResyncing:
		t, ok := s.Troubles[e.Member]
		if !ok || t.Kind != TroubleResyncing {
			t = Trouble{Kind: TroubleResyncing, Since: at, Wiped: t.Wiped}
		}
		t.Progressed = t.Progressed || e.Progress != ""
		set(e.Member, t)
	case MemberStuck:
		t := s.Troubles[e.Member]
		set(e.Member, Trouble{Kind: e.Kind, Since: at, Wiped: t.Wiped})
	case MemberRecovered:
		if _, ok := s.Troubles[e.Member]; ok {
			out := make(map[string]Trouble, len(s.Troubles))
			for k, v := range s.Troubles {
				if k != e.Member {
					out[k] = v
				}
			}
			if len(out) == 0 {
				out = nil
			}
			s.Troubles = out
		}
	case ActionFinished:
		if e.Action == ActWipeMember {
			t, ok := s.Troubles[e.Target]
			if !ok {
				t = Trouble{Kind: TroubleWiped, Since: at}
			}
			t.Wiped = true
			set(e.Target, t)
		}
	}
	return s
}
