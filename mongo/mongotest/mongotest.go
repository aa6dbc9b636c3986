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
	users   map[string]user
	calls   []Call
	fail    map[[2]string]error
	pending map[string]bool // newly added voters waiting for SECONDARY
	closed  bool
	// versions are the members' binary versions (DefaultVersion when not
	// set), fcv the set's featureCompatibilityVersion (version.go).
	versions map[string]string
	fcv      string
	// params and oplogMB are each member's server parameters and oplog
	// size (params.go).
	params  map[string]map[string]string
	oplogMB map[string]int64
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
	r := &ReplicaSet{name: name, nodes: map[string]*node{}, users: map[string]user{}, fail: map[[2]string]error{}, pending: map[string]bool{}}
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

// ForgetCalls drops the calls recorded so far: a long run that never reads
// them (the scale benchmark, test/scale) keeps its memory flat.
func (r *ReplicaSet) ForgetCalls() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = nil
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
