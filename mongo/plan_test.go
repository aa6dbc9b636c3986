package mongo

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// world is a replica set as the planner's caller observes it, reduced to what
// the planner reads: the config, who is primary, member states, and which
// desired pods answer. It applies steps as mongod and the caller would.
type world struct {
	cfg       Config
	primary   string
	state     map[string]MemberState
	reachable Hosts
	rnd       *rand.Rand
	// justAdded members stay STARTUP2 for one observation, as a real member
	// syncs before it is SECONDARY.
	justAdded map[string]bool
}

func newWorld(c Config, primary string, rnd *rand.Rand) *world {
	w := &world{cfg: c, primary: NormalizeHost(primary), state: map[string]MemberState{}, reachable: Hosts{}, rnd: rnd, justAdded: map[string]bool{}}
	for _, m := range c.Members {
		s := StateSecondary
		if m.ArbiterOnly {
			s = StateArbiter
		}
		w.state[NormalizeHost(m.Host)] = s
	}
	w.elect()
	return w
}

func (w *world) status() *Status {
	st := &Status{Set: w.cfg.ID, Term: w.cfg.Term}
	for _, m := range w.cfg.Members {
		h := NormalizeHost(m.Host)
		s := w.state[h]
		if h == w.primary {
			s = StatePrimary
		}
		st.Members = append(st.Members, MemberStatus{ID: m.ID, Name: m.Host, Health: 1, State: s, StateStr: s.String(),
			ConfigVersion: w.cfg.Version, ConfigTerm: w.cfg.Term, Self: h == w.primary})
	}
	return st
}

// elect makes an electable voting SECONDARY primary when there is none, as
// mongod would after an election timeout.
func (w *world) elect() {
	if w.primary != "" {
		return
	}
	var cands []string
	for _, m := range w.cfg.Members {
		if m.Electable() && m.Voter() && w.state[NormalizeHost(m.Host)] == StateSecondary {
			cands = append(cands, NormalizeHost(m.Host))
		}
	}
	if len(cands) > 0 {
		w.primary = cands[w.rnd.IntN(len(cands))]
	}
}

// apply applies a step and checks the planner's invariants on it.
func (w *world) apply(t *testing.T, s Step, desired []DesiredMember) {
	t.Helper()
	switch s.Kind {
	case StepDown:
		if !SameHost(s.Host, w.primary) {
			t.Fatalf("StepDown of %s, primary is %s", s.Host, w.primary)
		}
		old := w.primary
		w.primary = ""
		w.state[old] = StateSecondary
		var cands []string
		for _, m := range w.cfg.Members {
			h := NormalizeHost(m.Host)
			if h != old && m.Electable() && m.Voter() && w.state[h] == StateSecondary {
				cands = append(cands, h)
			}
		}
		if len(cands) == 0 {
			t.Fatalf("StepDown with no electable secondary: %s", s.Reason)
		}
		w.primary = cands[w.rnd.IntN(len(cands))]
	case Done, Wait:
		t.Fatalf("apply %s", s.Kind)
	default:
		checkReconfig(t, w, s, desired)
		for _, m := range s.Config.Members {
			h := NormalizeHost(m.Host)
			if w.cfg.Member(m.Host) == nil {
				w.state[h] = StateStartup2
				if m.ArbiterOnly {
					w.state[h] = StateArbiter
				}
				w.justAdded[h] = true
			}
		}
		for _, m := range w.cfg.Members {
			if s.Config.Member(m.Host) == nil {
				delete(w.state, NormalizeHost(m.Host))
			}
		}
		w.cfg = s.Config
	}
	w.tick()
}

// tick lets members that synced become SECONDARY.
func (w *world) tick() (changed bool) {
	for h, s := range w.state {
		if s == StateStartup2 && !w.justAdded[h] {
			w.state[h] = StateSecondary
			changed = true
		}
	}
	changed = changed || len(w.justAdded) > 0
	clear(w.justAdded)
	had := w.primary
	w.elect()
	return changed || had != w.primary
}

func checkReconfig(t *testing.T, w *world, s Step, desired []DesiredMember) {
	t.Helper()
	cur, next := w.cfg, s.Config
	if err := Validate(next); err != nil {
		t.Fatalf("%s: invalid config: %v", s.Reason, err)
	}
	if next.Version != cur.Version+1 || next.Term != cur.Term || next.ID != cur.ID {
		t.Fatalf("%s: version %d→%d term %d→%d id %s→%s", s.Reason, cur.Version, next.Version, cur.Term, next.Term, cur.ID, next.ID)
	}
	if n := VotingChanges(cur, next); n > 1 {
		t.Fatalf("%s: %d voting changes", s.Reason, n)
	}
	if err := ValidateTransition(cur, next, false); err != nil {
		t.Fatalf("%s: %v", s.Reason, err)
	}
	if !maps.Equal(cur.Extra, next.Extra) {
		t.Fatalf("%s: unknown fields lost", s.Reason)
	}
	if cs := cur.Settings; cs != nil {
		ns := next.Settings
		if ns == nil || !maps.Equal(cs.Extra, ns.Extra) || (cs.ReplicaSetID != nil && (ns.ReplicaSetID == nil || *ns.ReplicaSetID != *cs.ReplicaSetID)) {
			t.Fatalf("%s: settings' unknown fields or replicaSetId lost", s.Reason)
		}
	}
	if w.primary != "" {
		if pm := next.Member(w.primary); pm == nil || !pm.Electable() || !pm.Voter() {
			t.Fatalf("%s: makes primary %s unelectable or removes it", s.Reason, w.primary)
		}
	}
	want := desiredByHost(desired)
	for _, nm := range next.Members {
		om := cur.Member(nm.Host)
		if om == nil {
			if _, ok := want[NormalizeHost(nm.Host)]; !ok || !w.reachable.Has(nm.Host) {
				t.Fatalf("%s: added %s which is not desired or does not answer", s.Reason, nm.Host)
			}
			continue
		}
		if !om.Voter() && nm.Voter() && !nm.ArbiterOnly && w.state[NormalizeHost(nm.Host)] != StateSecondary {
			t.Fatalf("%s: vote given to %s in state %s", s.Reason, nm.Host, w.state[NormalizeHost(nm.Host)])
		}
	}
	for _, om := range cur.Members {
		if next.Member(om.Host) == nil && s.Kind != RemoveMember {
			t.Fatalf("%s: %s removed by a %s step", s.Reason, om.Host, s.Kind)
		}
	}
}

// matches reports whether a config has exactly the desired members, votes,
// priorities, visibility and tags.
func matches(c Config, desired []DesiredMember) error {
	if len(c.Members) != len(desired) {
		return fmt.Errorf("%d members, want %d", len(c.Members), len(desired))
	}
	for _, d := range desired {
		m := c.Member(d.Host)
		if m == nil {
			return fmt.Errorf("%s missing", d.Host)
		}
		want := memberFor(m.ID, d)
		if m.ArbiterOnly != want.ArbiterOnly || m.Votes != want.Votes || m.Priority != want.Priority || m.Hidden != want.Hidden || !maps.Equal(m.Tags, want.Tags) {
			return fmt.Errorf("%s is %+v, want %+v", d.Host, *m, want)
		}
	}
	return nil
}

// converge plans and applies steps until Done, and returns the steps.
func converge(t *testing.T, w *world, desired []DesiredMember, settings v1alpha1.ReplicaSetSettings, bound int, onWait func() bool) []Step {
	t.Helper()
	var steps []Step
	for range bound {
		s := Plan(w.cfg, w.status(), desired, w.reachable, settings)
		switch s.Kind {
		case Done:
			if err := matches(w.cfg, desired); err != nil {
				t.Fatalf("Done but %v", err)
			}
			return steps
		case Wait:
			// Time passes: members sync, pods come up.
			if !w.tick() && (onWait == nil || !onWait()) {
				t.Fatalf("stuck waiting: %s\nconfig %+v", s.Reason, w.cfg.Members)
			}
			continue
		}
		if s.Reason == "" {
			t.Fatalf("step without a reason: %+v", s)
		}
		steps = append(steps, s)
		w.apply(t, s, desired)
	}
	t.Fatalf("no Done within %d steps; last config %+v", bound, w.cfg.Members)
	return nil
}

func hostsOf(ds []DesiredMember) Hosts {
	h := Hosts{}
	for _, d := range ds {
		h[NormalizeHost(d.Host)] = true
	}
	return h
}

// short renders steps as "Kind pod" for table tests.
func short(steps []Step) []string {
	var out []string
	for _, s := range steps {
		name, _, _ := strings.Cut(s.Host, ".")
		out = append(out, strings.TrimSpace(string(s.Kind)+" "+name))
	}
	return out
}

func TestPlanScenarios(t *testing.T) {
	const domain = "cluster.local"
	initial := func(m *v1alpha1.Mgors) Config {
		c := InitialConfig(m.ReplSetName(), Desired(m, domain), m.Spec.ReplicaSet)
		c.Settings = &Settings{ReplicaSetID: new(bson.NewObjectID())}
		c.Term = 1
		return c
	}
	tests := []struct {
		name     string
		from, to *v1alpha1.Mgors
		primary  int32
		want     []string
	}{
		{"steady", mgors(3, 0), mgors(3, 0), 0, nil},
		{"3 to 5", mgors(3, 0), mgors(5, 0), 0, []string{
			"AddMember db-3",   // 4 voters would be even: joins without a vote
			"AddMember db-4",   // same
			"ChangeVotes db-3", // 4 voters
			"ChangeVotes db-4", // 5 voters
		}},
		{"3 to 4", mgors(3, 0), mgors(4, 0), 0, []string{"AddMember db-3"}},
		{"1 to 3", mgors(1, 0), mgors(3, 0), 0, []string{"AddMember db-1", "AddMember db-2", "ChangeVotes db-1", "ChangeVotes db-2"}},
		{"5 to 3, primary last", mgors(5, 0), mgors(3, 0), 4, []string{"StepDown db-4", "RemoveMember db-4", "RemoveMember db-3"}},
		{"5 to 3", mgors(5, 0), mgors(3, 0), 0, []string{"RemoveMember db-4", "RemoveMember db-3"}},
		{"4 to 3: the non-voter leaves", mgors(4, 0), mgors(3, 0), 0, []string{"RemoveMember db-3"}},
		{"3 to 2", mgors(3, 0), mgors(2, 0), 0, []string{"RemoveMember db-2", "ChangeVotes db-1"}},
		{"add arbiter to 2", mgors(2, 0), mgors(2, 1), 0, []string{"AddMember db-arbiter-0", "ChangeVotes db-1"}},
		{"add arbiter to 3", mgors(3, 0), mgors(3, 1), 0, []string{"AddMember db-arbiter-0", "ChangeVotes db-2"}},
		{"9 to 7", mgors(9, 0), mgors(7, 0), 0, []string{"RemoveMember db-8", "RemoveMember db-7"}},
		{"7 to 9", mgors(7, 0), mgors(9, 0), 0, []string{"AddMember db-7", "AddMember db-8"}},
		{"hide primary member", mgors(3, 0), mgors(3, 0, v1alpha1.MemberOptions{Ordinal: 0, Hidden: yes(), Priority: i32(0)}), 0,
			[]string{"StepDown db-0", "ChangeHidden db-0"}},
		{"priority and tags", mgors(3, 0), mgors(3, 0, v1alpha1.MemberOptions{Ordinal: 1, Priority: i32(7), Tags: map[string]string{"dc": "a"}}), 0,
			[]string{"ChangePriority db-1", "ChangeTags db-1"}},
		{"settings", mgors(3, 0), func() *v1alpha1.Mgors {
			m := mgors(3, 0)
			m.Spec.ReplicaSet.ElectionTimeoutMillis = i32(2000)
			return m
		}(), 0, []string{"UpdateSettings"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			desired := Desired(tt.to, domain)
			w := newWorld(initial(tt.from), tt.from.MemberHost(tt.primary, domain), rand.New(rand.NewPCG(1, 2)))
			w.reachable = hostsOf(desired)
			steps := converge(t, w, desired, tt.to.Spec.ReplicaSet, 50, func() bool { return true })
			if got := short(steps); !slices.Equal(got, tt.want) {
				t.Fatalf("steps %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPlanWaits(t *testing.T) {
	const domain = "cluster.local"
	from, to := mgors(3, 0), mgors(5, 0)
	desired := Desired(to, domain)
	cur := InitialConfig("db", Desired(from, domain), v1alpha1.ReplicaSetSettings{})
	w := newWorld(cur, from.MemberHost(0, domain), rand.New(rand.NewPCG(1, 2)))

	// Pods 3 and 4 do not answer: nothing to add yet.
	s := Plan(w.cfg, w.status(), desired, NewHosts(from.MemberHost(0, domain)), v1alpha1.ReplicaSetSettings{})
	if s.Kind != Wait || !strings.Contains(s.Reason, "db-3") || !strings.Contains(s.Reason, "does not answer") {
		t.Fatalf("unreachable: %+v", s)
	}

	// db-3 added, still STARTUP2: no vote for it yet.
	w.reachable = NewHosts(to.MemberHost(3, domain))
	s = Plan(w.cfg, w.status(), desired, w.reachable, v1alpha1.ReplicaSetSettings{})
	if s.Kind != AddMember {
		t.Fatalf("add: %+v", s)
	}
	w.cfg = s.Config
	w.state[NormalizeHost(to.MemberHost(3, domain))] = StateStartup2
	s = Plan(w.cfg, w.status(), desired, w.reachable, v1alpha1.ReplicaSetSettings{})
	if s.Kind != Wait || !strings.Contains(s.Reason, "once it is SECONDARY (now STARTUP2)") {
		t.Fatalf("startup2: %+v", s)
	}
	// Without a status nothing is known of states: no vote either.
	if s = Plan(w.cfg, nil, desired, w.reachable, v1alpha1.ReplicaSetSettings{}); s.Kind != Wait {
		t.Fatalf("nil status: %+v", s)
	}

	// No primary: nobody to send a reconfig to.
	st := w.status()
	for i := range st.Members {
		if st.Members[i].State == StatePrimary {
			st.Members[i].State = StateSecondary
		}
	}
	if s = Plan(w.cfg, st, desired, w.reachable, v1alpha1.ReplicaSetSettings{}); s.Kind != Wait || !strings.Contains(s.Reason, "PRIMARY") {
		t.Fatalf("no primary: %+v", s)
	}

	// The current config is not yet on a majority of voters.
	st = w.status()
	for i := range st.Members[1:] {
		st.Members[1+i].ConfigVersion = w.cfg.Version - 1
	}
	if s = Plan(w.cfg, st, desired, w.reachable, v1alpha1.ReplicaSetSettings{}); s.Kind != Wait || !strings.Contains(s.Reason, "needed to commit") {
		t.Fatalf("uncommitted: %+v", s)
	}
}

func TestPlanPrimaryCannotStepDown(t *testing.T) {
	// The only electable member is primary and must become non-electable, and
	// nobody else can take over yet: wait rather than send a config mongod
	// would refuse.
	c := cfg(m(0, "a:1"), m(1, "b:1", prio(0)), m(2, "c:1", prio(0)))
	st := &Status{Members: []MemberStatus{
		{ID: 0, Name: "a:1", Health: 1, State: StatePrimary, Self: true, ConfigVersion: 1},
		{ID: 1, Name: "b:1", Health: 1, State: StateSecondary, ConfigVersion: 1},
		{ID: 2, Name: "c:1", Health: 1, State: StateSecondary, ConfigVersion: 1},
	}}
	desired := []DesiredMember{
		{Ordinal: 0, Host: "a:1", Votes: 1, Priority: 0},
		{Ordinal: 1, Host: "b:1", Votes: 1, Priority: 1},
		{Ordinal: 2, Host: "c:1", Votes: 1, Priority: 0},
	}
	s := Plan(c, st, desired, NewHosts("a:1", "b:1", "c:1"), v1alpha1.ReplicaSetSettings{})
	if s.Kind != ChangePriority || s.Host != "b:1" {
		t.Fatalf("first make b electable, got %+v", s)
	}
}

// randomConfig is a valid config over hosts drawn from pool, with random
// votes, priorities, visibility, tags, _ids and unknown fields.
func randomConfig(rnd *rand.Rand, pool []string, arbiterHost string) Config {
	for {
		n := 1 + rnd.IntN(9)
		hosts := slices.Clone(pool)
		rnd.Shuffle(len(hosts), func(i, j int) { hosts[i], hosts[j] = hosts[j], hosts[i] })
		ids := rnd.Perm(60)
		c := Config{ID: "db", Version: int64(1 + rnd.IntN(100)), Term: int64(rnd.IntN(5)), ProtocolVersion: 1,
			Settings: &Settings{ReplicaSetID: new(bson.NewObjectID()), Extra: bson.M{"futureSetting": int32(1)}},
			Extra:    bson.M{"configsvr": false}}
		for i := range min(n, len(hosts)) {
			mem := NewMember(ids[i], hosts[i])
			if hosts[i] == arbiterHost {
				mem.ArbiterOnly, mem.Priority = true, 0
			} else {
				switch rnd.IntN(6) {
				case 0:
					mem.Votes, mem.Priority = 0, 0
				case 1:
					mem.Priority = 0
				case 2:
					mem.Priority, mem.Hidden = 0, true
				case 3:
					mem.Priority = float64(rnd.IntN(5))
				}
				if rnd.IntN(4) == 0 {
					mem.Tags = map[string]string{"zone": fmt.Sprint(rnd.IntN(2))}
				}
			}
			c.Members = append(c.Members, mem)
		}
		if Validate(c) == nil {
			return c
		}
	}
}

// randomSpec is a Mgors spec the API server would accept.
func randomSpec(rnd *rand.Rand) *v1alpha1.Mgors {
	n := int32(1 + rnd.IntN(9))
	var arb int32
	if n >= 2 && rnd.IntN(3) == 0 {
		arb = 1
	}
	m := mgors(n, arb)
	for o := range n {
		if rnd.IntN(3) != 0 {
			continue
		}
		opt := v1alpha1.MemberOptions{Ordinal: o}
		switch rnd.IntN(5) {
		case 0:
			opt.Hidden, opt.Priority = yes(), i32(0)
		case 1:
			opt.Votes, opt.Priority = i32(0), i32(0)
		case 2:
			opt.Votes = i32(1)
		case 3:
			opt.Priority = i32(int32(rnd.IntN(4)))
		}
		if rnd.IntN(3) == 0 {
			opt.Tags = map[string]string{"zone": fmt.Sprint(rnd.IntN(2))}
		}
		m.Spec.MemberOptions = append(m.Spec.MemberOptions, opt)
	}
	// The API server's rule: the options leave at least one member electable.
	if len(m.Spec.MemberOptions) == int(n) && !slices.ContainsFunc(m.Spec.MemberOptions, func(o v1alpha1.MemberOptions) bool {
		return o.Priority == nil || *o.Priority > 0
	}) {
		return randomSpec(rnd)
	}
	if rnd.IntN(4) == 0 {
		m.Spec.ReplicaSet.HeartbeatIntervalMillis = i32(int32(500 + rnd.IntN(2000)))
	}
	return m
}

// TestPlanConverges checks the planner's invariants over many random
// current/desired pairs: every step's config is valid, changes at most one
// voting member, keeps the primary electable, adds only answering desired
// members, gives votes only to SECONDARY members, and repeated planning
// reaches Done with exactly the desired config within a bound.
func TestPlanConverges(t *testing.T) {
	const domain = "cluster.local"
	probe := mgors(1, 0)
	var pool []string
	for i := range int32(12) {
		pool = append(pool, probe.MemberHost(i, domain))
	}
	arbiterHost := ArbiterHost(probe, domain)
	pool = append(pool, arbiterHost, "old-0.elsewhere.svc:27017", "10.0.0.7:27017")

	rnd := rand.New(rand.NewPCG(7, 11))
	longest := 0
	for i := range 3000 {
		spec := randomSpec(rnd)
		desired := Desired(spec, domain)
		if err := Validate(InitialConfig("db", desired, spec.Spec.ReplicaSet)); err != nil {
			t.Fatalf("case %d: desired config invalid: %v\n%+v", i, err, spec.Spec)
		}
		start := randomConfig(rnd, pool, arbiterHost)
		var primary string
		for _, mem := range start.Members {
			if mem.Electable() && mem.Voter() {
				primary = mem.Host
				break
			}
		}
		w := newWorld(start, primary, rand.New(rand.NewPCG(uint64(i), 3)))
		// Pods answer one by one, in random order, as the caller scales up.
		pending := slices.Collect(maps.Keys(hostsOf(desired)))
		slices.Sort(pending)
		rnd.Shuffle(len(pending), func(a, b int) { pending[a], pending[b] = pending[b], pending[a] })
		for range rnd.IntN(len(pending) + 1) {
			w.reachable[pending[0]] = true
			pending = pending[1:]
		}
		bound := 3*len(start.Members) + 7*len(desired) + 2
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			steps := converge(t, w, desired, spec.Spec.ReplicaSet, bound+len(pending), func() bool {
				if len(pending) == 0 {
					return false
				}
				w.reachable[pending[0]] = true
				pending = pending[1:]
				return true
			})
			longest = max(longest, len(steps))
		})
		if t.Failed() {
			t.Logf("start %+v\ndesired %s", start.Members, votesOf(desired))
			return
		}
	}
	t.Logf("longest plan: %d steps", longest)
}
