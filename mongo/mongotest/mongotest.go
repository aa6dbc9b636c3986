// Package mongotest is an in-memory replica set that implements mongo.Admin,
// for unit tests of code that drives replica sets (the cluster actors).
//
// It is deterministic and has no clock: every call settles the set at once
// (configs propagate to every member that is up, members that sync become
// SECONDARY, an election happens when there is no primary and a majority of
// voters is up). It answers with mongod's error codes for the cases the
// operator handles: initiate (23, 93, 74, 103), status and config before
// initiate (94) or after removal (93), reconfig (10107, 308, 103, 74, 104,
// version and one-voting-change checks, forced reconfig version jump, the
// newlyAdded version bump), stepdown (10107, 262), freeze (95), users
// (10107, 51003), and unreachable members. Tests steer it with Stop, Start,
// HoldSync, Write and FailNext, and read what was called with Calls.
package mongotest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mgors/operator/mongo"
)

// ReplicaSet is a fake replica set of mongod members started with
// --replSet <name>. Its methods are safe for concurrent use.
type ReplicaSet struct {
	mu      sync.Mutex
	name    string
	nodes   map[string]*node
	term    int64
	clock   uint32
	users   map[string][]mongo.Role
	calls   []Call
	fail    map[[2]string]error
	pending map[string]bool // newly added voters waiting for SECONDARY
	closed  bool
}

type node struct {
	host    string
	up      bool
	config  *mongo.Config
	state   mongo.MemberState
	optime  mongo.OpTime
	hold    bool // stays STARTUP2 (initial sync not done)
	frozen  bool // replSetFreeze or a recent stepdown
	hasData bool
}

// Call is one Admin call the fake received.
type Call struct {
	Host    string
	Command string
}

var _ mongo.Admin = (*ReplicaSet)(nil)

// New is a replica set named name whose members (not yet initiated, up and
// empty) answer at hosts.
func New(name string, hosts ...string) *ReplicaSet {
	r := &ReplicaSet{name: name, nodes: map[string]*node{}, users: map[string][]mongo.Role{}, fail: map[[2]string]error{}, pending: map[string]bool{}}
	for _, h := range hosts {
		r.AddNode(h)
	}
	return r
}

// AddNode starts a new, empty, uninitialized member (a new pod).
func (r *ReplicaSet) AddNode(host string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nodes[mongo.NormalizeHost(host)] = &node{host: mongo.NormalizeHost(host), up: true, state: mongo.StateStartup}
}

// RemoveNode deletes a member's pod and volume.
func (r *ReplicaSet) RemoveNode(host string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.nodes, mongo.NormalizeHost(host))
	r.settle()
}

// Stop takes a member down (process or pod gone, volume kept).
func (r *ReplicaSet) Stop(host string) { r.setUp(host, false) }

// Start brings a stopped member back with its volume.
func (r *ReplicaSet) Start(host string) { r.setUp(host, true) }

func (r *ReplicaSet) setUp(host string, up bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := r.nodes[mongo.NormalizeHost(host)]; n != nil {
		n.up = up
		if !up && n.state == mongo.StatePrimary {
			n.state = mongo.StateSecondary
		}
	}
	r.settle()
}

// HoldSync keeps a member in STARTUP2 (its initial sync not finished) until
// called again with false.
func (r *ReplicaSet) HoldSync(host string, hold bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := r.nodes[mongo.NormalizeHost(host)]; n != nil {
		n.hold = hold
	}
	r.settle()
}

// Write applies a write on the primary; up secondaries replicate it at once.
// It returns false when there is no primary.
func (r *ReplicaSet) Write() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.primary()
	if p == nil {
		return false
	}
	r.clock++
	p.optime = mongo.OpTime{TS: bson.Timestamp{T: r.clock, I: 1}, T: r.term}
	p.hasData = true
	r.settle()
	return true
}

// Primary is the host of the primary, or "".
func (r *ReplicaSet) Primary() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.primary(); p != nil {
		return p.host
	}
	return ""
}

// State is a member's state as it sees itself.
func (r *ReplicaSet) State(host string) mongo.MemberState {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := r.nodes[mongo.NormalizeHost(host)]; n != nil {
		return n.state
	}
	return mongo.StateUnknown
}

// Optime is a member's last applied optime.
func (r *ReplicaSet) Optime(host string) mongo.OpTime {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := r.nodes[mongo.NormalizeHost(host)]; n != nil {
		return n.optime
	}
	return mongo.OpTime{}
}

// FailNext makes the next call of command ("hello", "replSetReconfig", ...)
// to host fail with err.
func (r *ReplicaSet) FailNext(host, command string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail[[2]string{mongo.NormalizeHost(host), command}] = err
}

// Calls are the calls received so far, in order.
func (r *ReplicaSet) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// ---- errors -----------------------------------------------------------------

func serverErr(host string, code int32, name, format string, a ...any) error {
	return &mongo.ServerError{Code: code, Name: name, Message: fmt.Sprintf(format, a...), Host: host}
}

// begin records a call and returns the node, or the error the call must
// fail with: an injected one, a closed client, an expired context, or an
// unreachable member.
func (r *ReplicaSet) begin(ctx context.Context, host, command string) (*node, error) {
	host = mongo.NormalizeHost(host)
	r.calls = append(r.calls, Call{Host: host, Command: command})
	if err, ok := r.fail[[2]string{host, command}]; ok {
		delete(r.fail, [2]string{host, command})
		return nil, err
	}
	if r.closed {
		return nil, errors.New("mongotest: client closed")
	}
	if err := ctx.Err(); err != nil {
		return nil, &mongo.CallError{Host: host, Op: command, Kind: mongo.ErrTimeout, Err: err}
	}
	n := r.nodes[host]
	if n == nil || !n.up {
		return nil, &mongo.CallError{Host: host, Op: command, Kind: mongo.ErrUnreachable, Err: errors.New("connection refused")}
	}
	return n, nil
}

// ---- the set's behaviour ----------------------------------------------------

func (r *ReplicaSet) primary() *node {
	for _, n := range r.nodes {
		if n.up && n.state == mongo.StatePrimary {
			return n
		}
	}
	return nil
}

// newest is the newest config held by an up member.
func (r *ReplicaSet) newest() *mongo.Config {
	var best *mongo.Config
	for _, n := range r.sorted() {
		if n.up && n.config != nil && (best == nil || newer(*n.config, *best)) {
			best = n.config
		}
	}
	return best
}

// newer orders configs as mongod does: by term then version, or by version
// alone when either came from a forced reconfig (term -1).
func newer(a, b mongo.Config) bool {
	if a.Term == -1 || b.Term == -1 || a.Term == b.Term {
		return a.Version > b.Version
	}
	return a.Term > b.Term
}

func (r *ReplicaSet) sorted() []*node {
	out := make([]*node, 0, len(r.nodes))
	for _, n := range r.nodes {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b *node) int { return cmp.Compare(a.host, b.host) })
	return out
}

// settle brings the set to where mongod would get by itself: heartbeats carry
// the newest config to every up member, members find their state, a primary
// that cannot see a majority steps down, an electable member is elected when
// there is no primary, secondaries replicate the primary, and a newly added
// voter that reached SECONDARY loses its newlyAdded flag (version + 1).
func (r *ReplicaSet) settle() {
	for range 4 { // a few rounds reach a fixed point
		cfg := r.newest()
		if cfg == nil {
			return
		}
		for _, n := range r.sorted() {
			if !n.up {
				continue
			}
			if n.config == nil || newer(*cfg, *n.config) {
				if n.config == nil && cfg.Member(n.host) == nil {
					continue // an empty member nobody added: nobody talks to it
				}
				c := cfg.Clone()
				n.config = &c
			}
			m := n.config.Member(n.host)
			switch {
			case m == nil:
				n.state = mongo.StateRemoved
			case m.ArbiterOnly:
				n.state = mongo.StateArbiter
			case n.hold:
				n.state = mongo.StateStartup2
			case n.state != mongo.StatePrimary:
				n.state = mongo.StateSecondary
			}
		}
		for h := range r.pending {
			if n := r.nodes[h]; n == nil || n.state == mongo.StateSecondary {
				delete(r.pending, h)
				if n != nil && r.primary() != nil {
					r.bump(func(c *mongo.Config) { c.Version++ })
				}
			}
		}
		if p := r.primary(); p != nil && !r.canLead(p) {
			p.state = mongo.StateSecondary
		}
		if r.primary() == nil {
			r.elect(nil)
		}
		if p := r.primary(); p != nil {
			for _, n := range r.nodes {
				if n.up && n.state == mongo.StateSecondary && n.config != nil && n.config.Member(n.host) != nil {
					n.optime = p.optime
					n.hasData = n.hasData || p.hasData
				}
			}
		}
	}
}

// canLead reports whether n, as primary, is electable in the newest config
// and sees a majority of its voters.
func (r *ReplicaSet) canLead(n *node) bool {
	cfg := r.newest()
	m := cfg.Member(n.host)
	if m == nil || !m.Electable() || !m.Voter() {
		return false
	}
	return r.votersUp(*cfg) >= cfg.MajorityVoteCount()
}

func (r *ReplicaSet) votersUp(cfg mongo.Config) int {
	up := 0
	for _, m := range cfg.Members {
		if n := r.nodes[mongo.NormalizeHost(m.Host)]; m.Voter() && n != nil && n.up && n.config != nil && n.state != mongo.StateRemoved {
			up++
		}
	}
	return up
}

// elect makes the best electable member primary when a majority of voters is
// up: secondaries without a primary sync from the freshest member first, then
// the highest priority wins, then the lowest _id. except is not eligible
// (a member that just stepped down), unless it is the only one.
func (r *ReplicaSet) elect(except *node) {
	cfg := r.newest()
	if cfg == nil || r.votersUp(*cfg) < cfg.MajorityVoteCount() {
		return
	}
	var fresh mongo.OpTime
	for _, n := range r.nodes {
		if n.up && n.state == mongo.StateSecondary && n.optime.Compare(fresh) > 0 {
			fresh = n.optime
		}
	}
	var best *node
	var bestM mongo.Member
	for _, m := range cfg.Members {
		n := r.nodes[mongo.NormalizeHost(m.Host)]
		if n == nil || !n.up || n.state != mongo.StateSecondary || !m.Electable() || !m.Voter() || n.frozen || n == except {
			continue
		}
		if best == nil || m.Priority > bestM.Priority || (m.Priority == bestM.Priority && m.ID < bestM.ID) {
			best, bestM = n, m
		}
	}
	if best == nil {
		return
	}
	for _, n := range r.nodes {
		if n.up && n.state == mongo.StateSecondary {
			n.optime = fresh
		}
		n.frozen = false
	}
	r.term++
	r.clock++
	best.state = mongo.StatePrimary
	best.optime = mongo.OpTime{TS: bson.Timestamp{T: r.clock, I: 1}, T: r.term}
	// The new primary bumps the config term (version unchanged).
	r.bump(func(c *mongo.Config) { c.Term = r.term })
}

// bump installs a modified copy of the newest config on every up member.
func (r *ReplicaSet) bump(mod func(*mongo.Config)) {
	c := r.newest().Clone()
	mod(&c)
	r.install(c)
}

func (r *ReplicaSet) install(c mongo.Config) {
	for _, n := range r.nodes {
		if n.up && (n.config != nil || c.Member(n.host) != nil) {
			cc := c.Clone()
			n.config = &cc
		}
	}
}

// committed reports whether a majority of the voters of the primary's config
// hold it.
func (r *ReplicaSet) committed(cfg mongo.Config) bool {
	have := 0
	for _, m := range cfg.Members {
		n := r.nodes[mongo.NormalizeHost(m.Host)]
		if m.Voter() && n != nil && n.up && n.config != nil && n.config.Version == cfg.Version && n.config.Term == cfg.Term {
			have++
		}
	}
	return have >= cfg.MajorityVoteCount()
}

// ---- Admin --------------------------------------------------------------------

// Hello implements mongo.Admin.
func (r *ReplicaSet) Hello(ctx context.Context, host string) (mongo.HelloReply, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, err := r.begin(ctx, host, "hello")
	if err != nil {
		return mongo.HelloReply{}, err
	}
	h := mongo.HelloReply{MaxWireVersion: 21}
	if n.config == nil || n.state == mongo.StateRemoved {
		h.IsReplicaSet, h.Info = true, "Does not have a valid replica set config"
		return h, nil
	}
	h.SetName, h.SetVersion, h.Me = n.config.ID, n.config.Version, n.host
	for _, m := range n.config.Members {
		switch {
		case m.ArbiterOnly:
			h.Arbiters = append(h.Arbiters, m.Host)
		case m.Hidden:
		case m.Priority == 0:
			h.Passives = append(h.Passives, m.Host)
		default:
			h.Hosts = append(h.Hosts, m.Host)
		}
	}
	if p := r.primary(); p != nil {
		h.Primary = p.host
	}
	me := n.config.Member(n.host)
	h.IsWritablePrimary = n.state == mongo.StatePrimary
	h.Secondary = n.state == mongo.StateSecondary
	h.ArbiterOnly = n.state == mongo.StateArbiter
	h.Hidden = me != nil && me.Hidden
	return h, nil
}

// Ping implements mongo.Admin.
func (r *ReplicaSet) Ping(ctx context.Context, host string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, err := r.begin(ctx, host, "ping")
	return err
}

func (r *ReplicaSet) replEnabled(n *node, allowRemoved bool) error {
	if n.config == nil {
		return serverErr(n.host, mongo.CodeNotYetInitialized, "NotYetInitialized", "no replset config has been received")
	}
	if n.state == mongo.StateRemoved && !allowRemoved {
		return serverErr(n.host, mongo.CodeInvalidReplicaSetConfig, "InvalidReplicaSetConfig", "Our replica set config is invalid or we are not a member of it")
	}
	return nil
}

// Status implements mongo.Admin: the set as host sees it.
func (r *ReplicaSet) Status(ctx context.Context, host string) (*mongo.Status, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, err := r.begin(ctx, host, "replSetGetStatus")
	if err != nil {
		return nil, err
	}
	if err := r.replEnabled(n, false); err != nil {
		return nil, err
	}
	cfg := *n.config
	st := &mongo.Status{Set: cfg.ID, MyState: n.state, Term: r.term, MajorityVoteCount: cfg.MajorityVoteCount(), VotingMembersCount: cfg.Voters()}
	for _, m := range cfg.Members {
		ms := mongo.MemberStatus{ID: m.ID, Name: m.Host, State: mongo.StateDown, Health: 0, LastHeartbeatMessage: "Error connecting: Connection refused"}
		if o := r.nodes[mongo.NormalizeHost(m.Host)]; o != nil {
			ms.Optime = o.optime
			if o.config != nil {
				ms.ConfigVersion, ms.ConfigTerm = o.config.Version, o.config.Term
			}
			if o.up {
				ms.State, ms.Health, ms.LastHeartbeatMessage = o.state, 1, ""
				if o.config == nil {
					ms.State = mongo.StateStartup
				}
			}
			ms.Self = o == n
		} else {
			ms.Health, ms.State = -1, mongo.StateUnknown
		}
		if m.ArbiterOnly {
			ms.Optime = mongo.OpTime{}
		}
		ms.StateStr = ms.State.String()
		if ms.Health == 0 {
			ms.StateStr = "(not reachable/healthy)"
		}
		st.Members = append(st.Members, ms)
	}
	slices.SortFunc(st.Members, func(a, b mongo.MemberStatus) int { return a.ID - b.ID })
	return st, nil
}

// Config implements mongo.Admin.
func (r *ReplicaSet) Config(ctx context.Context, host string) (mongo.Config, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, err := r.begin(ctx, host, "replSetGetConfig")
	if err != nil {
		return mongo.Config{}, err
	}
	if err := r.replEnabled(n, true); err != nil {
		return mongo.Config{}, err
	}
	return n.config.Clone(), nil
}

// Initiate implements mongo.Admin.
func (r *ReplicaSet) Initiate(ctx context.Context, host string, config mongo.Config) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, err := r.begin(ctx, host, "replSetInitiate")
	if err != nil {
		return err
	}
	invalid := func(format string, a ...any) error {
		return serverErr(n.host, mongo.CodeInvalidReplicaSetConfig, "InvalidReplicaSetConfig", format, a...)
	}
	if n.config != nil {
		return serverErr(n.host, mongo.CodeAlreadyInitialized, "AlreadyInitialized", "already initialized")
	}
	if config.Settings != nil && config.Settings.ReplicaSetID != nil {
		return invalid("replica set configuration cannot contain 'replicaSetId' field when called from replSetInitiate")
	}
	if config.ID != r.name {
		return invalid("Rejecting initiate with a set name that differs from command line set name, initiate set name: %s, command line set name: %s", config.ID, r.name)
	}
	if err := mongo.Validate(config); err != nil {
		return invalid("%v", err)
	}
	if config.Version != 1 {
		return invalid("Configuration used to initiate a replica set must  have version 1, but found %d", config.Version)
	}
	me := config.Member(n.host)
	if me == nil {
		return invalid("No host described in new configuration with {version: 1, term: 0} for replica set %s maps to this node", r.name)
	}
	if !me.Electable() {
		return invalid("This node, %s, with _id %d is not electable under the new configuration with {version: 1, term: 0} for replica set %s", n.host, me.ID, r.name)
	}
	var failed []string
	for _, m := range config.Members {
		o := r.nodes[mongo.NormalizeHost(m.Host)]
		switch {
		case o == n:
		case o == nil || !o.up:
			failed = append(failed, m.Host+" failed with Connection refused")
		case o.config != nil:
			return serverErr(n.host, mongo.CodeNewReplicaSetConfigurationIncompatible, "NewReplicaSetConfigurationIncompatible", "Our config version of 1 is no larger than the version on %s, which is %d", m.Host, o.config.Version)
		case o.hasData:
			return serverErr(n.host, mongo.CodeCannotInitializeNodeWithData, "CannotInitializeNodeWithData", "'%s' has data already, cannot initiate set.", m.Host)
		}
	}
	if len(failed) > 0 {
		return serverErr(n.host, mongo.CodeNodeNotFound, "NodeNotFound", "replSetInitiate quorum check failed because not all proposed set members responded affirmatively: %v", failed)
	}
	c := config.Clone()
	c.Term = 0
	if c.ProtocolVersion == 0 {
		c.ProtocolVersion = 1
	}
	if c.Settings == nil {
		c.Settings = &mongo.Settings{}
	}
	id := bson.NewObjectID()
	c.Settings.ReplicaSetID = &id
	r.install(c)
	r.settle()
	return nil
}

// Reconfig implements mongo.Admin.
func (r *ReplicaSet) Reconfig(ctx context.Context, host string, config mongo.Config, force bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, err := r.begin(ctx, host, "replSetReconfig")
	if err != nil {
		return err
	}
	if err := r.replEnabled(n, true); err != nil {
		return err
	}
	incompatible := func(format string, a ...any) error {
		return serverErr(n.host, mongo.CodeNewReplicaSetConfigurationIncompatible, "NewReplicaSetConfigurationIncompatible", format, a...)
	}
	cur := *n.config
	if !force {
		if n.state != mongo.StatePrimary {
			return serverErr(n.host, mongo.CodeNotWritablePrimary, "NotWritablePrimary", "New config is rejected :: caused by :: replSetReconfig should only be run on a writable PRIMARY. Current state %s;", n.state)
		}
		if !r.committed(cur) {
			return serverErr(n.host, mongo.CodeCurrentConfigNotCommittedYet, "CurrentConfigNotCommittedYet", "Cannot run replSetReconfig because the current config: {version: %d, term: %d} is not majority committed.", cur.Version, cur.Term)
		}
	}
	if config.ID != r.name {
		return serverErr(n.host, mongo.CodeInvalidReplicaSetConfig, "InvalidReplicaSetConfig", "Rejecting reconfig where new config set name differs from command line set name")
	}
	for _, m := range config.Members {
		if _, ok := m.Extra["newlyAdded"]; ok {
			return serverErr(n.host, mongo.CodeInvalidReplicaSetConfig, "InvalidReplicaSetConfig", "Cannot provide newlyAdded field to member config during reconfig.")
		}
	}
	if err := mongo.Validate(config); err != nil {
		return incompatible("%v", err)
	}
	if err := mongo.ValidateTransition(cur, config, force); err != nil {
		return incompatible("%v", err)
	}
	next := config.Clone()
	if force {
		next.Version = max(cur.Version, config.Version) + 10000
		next.Term = -1
	} else {
		next.Term = r.term
	}
	me := next.Member(n.host)
	if me == nil {
		return serverErr(n.host, mongo.CodeNodeNotFound, "NodeNotFound", "No host described in new configuration with {version: %d, term: %d} for replica set %s maps to this node", next.Version, next.Term, r.name)
	}
	if !force {
		if !me.Electable() {
			return serverErr(n.host, mongo.CodeNodeNotElectable, "NodeNotElectable", "This node, %s, with _id %d is not electable under the new configuration", n.host, me.ID)
		}
		if up := r.votersUp(next); up < next.MajorityVoteCount() {
			return serverErr(n.host, mongo.CodeNodeNotFound, "NodeNotFound", "Quorum check failed because not enough voting nodes responded; required %d but only %d voting nodes responded", next.MajorityVoteCount(), up)
		}
	}
	for _, m := range next.Members {
		if cur.Member(m.Host) == nil && m.Voter() && !m.ArbiterOnly && !force {
			r.pending[mongo.NormalizeHost(m.Host)] = true
		}
	}
	if force {
		nc := next.Clone()
		n.config = &nc
		if n.state == mongo.StatePrimary && (!me.Electable() || !me.Voter()) {
			n.state = mongo.StateSecondary
		}
	} else {
		r.install(next)
	}
	r.settle()
	return nil
}

// StepDown implements mongo.Admin.
func (r *ReplicaSet) StepDown(ctx context.Context, host string, seconds int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, err := r.begin(ctx, host, "replSetStepDown")
	if err != nil {
		return err
	}
	if err := r.replEnabled(n, false); err != nil {
		return err
	}
	if n.state != mongo.StatePrimary {
		return serverErr(n.host, mongo.CodeNotWritablePrimary, "NotWritablePrimary", "not primary so can't step down")
	}
	caughtUp := false
	for _, m := range n.config.Members {
		o := r.nodes[mongo.NormalizeHost(m.Host)]
		if o != nil && o != n && o.up && o.state == mongo.StateSecondary && m.Electable() && m.Voter() && !o.frozen && o.optime.Compare(n.optime) >= 0 {
			caughtUp = true
		}
	}
	if !caughtUp {
		return serverErr(n.host, mongo.CodeExceededTimeLimit, "ExceededTimeLimit", "No electable secondaries caught up. Please use the replSetStepDown command with the argument {force: true} to force node to step down.")
	}
	n.state = mongo.StateSecondary
	r.elect(n)
	n.frozen = true // ineligible for the stepdown period
	r.settle()
	return nil
}

// Freeze implements mongo.Admin.
func (r *ReplicaSet) Freeze(ctx context.Context, host string, seconds int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, err := r.begin(ctx, host, "replSetFreeze")
	if err != nil {
		return err
	}
	if err := r.replEnabled(n, false); err != nil {
		return err
	}
	if n.state == mongo.StatePrimary {
		return serverErr(n.host, mongo.CodeNotSecondary, "NotSecondary", "Cannot freeze node when primary or running for election, state: Primary")
	}
	n.frozen = seconds > 0
	r.settle()
	return nil
}

// CreateUser implements mongo.Admin.
func (r *ReplicaSet) CreateUser(ctx context.Context, host, user, password string, roles []mongo.Role) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, err := r.begin(ctx, host, "createUser")
	if err != nil {
		return err
	}
	if n.state != mongo.StatePrimary {
		return serverErr(n.host, mongo.CodeNotWritablePrimary, "NotWritablePrimary", "not primary")
	}
	if _, ok := r.users[user]; ok {
		return serverErr(n.host, mongo.CodeDuplicateUser, "Location51003", "User \"%s@admin\" already exists", user)
	}
	r.users[user] = slices.Clone(roles)
	r.clock++
	n.optime = mongo.OpTime{TS: bson.Timestamp{T: r.clock, I: 1}, T: r.term}
	n.hasData = true
	r.settle()
	return nil
}

// UserExists implements mongo.Admin.
func (r *ReplicaSet) UserExists(ctx context.Context, host, user string) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, err := r.begin(ctx, host, "usersInfo")
	if err != nil {
		return false, err
	}
	if n.state != mongo.StatePrimary && n.state != mongo.StateSecondary {
		return false, serverErr(n.host, mongo.CodeNotPrimaryOrSecondary, "NotPrimaryOrSecondary", "not primary or secondary; cannot currently read from this replSet member")
	}
	_, ok := r.users[user]
	return ok, nil
}

// Roles are the roles a user was created with.
func (r *ReplicaSet) Roles(user string) []mongo.Role {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.users[user])
}

// Close implements mongo.Admin; later calls fail.
func (r *ReplicaSet) Close(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	return nil
}

// Local implements mongo.Admin: the config the member holds (also when it is
// REMOVED) and its optime when it holds data.
func (r *ReplicaSet) Local(ctx context.Context, host string) (mongo.Local, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, err := r.begin(ctx, host, "find local")
	if err != nil {
		return mongo.Local{}, err
	}
	var out mongo.Local
	if n.config != nil {
		cfg := *n.config
		out.Config = &cfg
	}
	if n.hasData {
		out.LastOplog = n.optime
	}
	return out, nil
}
