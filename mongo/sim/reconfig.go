package sim

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// cmdReplSetGetConfig (spec §6.1).
func (c *conn) cmdReplSetGetConfig(req *Request) (bson.D, error) {
	n := c.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if e := n.checkStatusLocked(); e != nil {
		return nil, e
	}
	incl, _ := req.Body.Lookup("$_internalIncludeNewlyAdded").BooleanOK()
	d := bson.D{{Key: "config", Value: n.rs.Doc(incl)}}
	if cs, ok := req.Body.Lookup("commitmentStatus").BooleanOK(); ok && cs {
		if !n.canAcceptWritesLocked() {
			return nil, cerr(10107, "commitmentStatus is only supported on primary.")
		}
		d = append(d, bson.E{Key: "commitmentStatus", Value: n.configCommittedLocked()})
	}
	return d, nil
}

// configCommittedLocked: a majority of voters hold our (version, term).
func (n *Node) configCommittedLocked() bool {
	_, need, _, _ := n.rs.Majorities()
	have := 0
	for i, m := range n.rs.Members {
		if !m.Voter() {
			continue
		}
		if i == n.self {
			have++
			continue
		}
		if p := n.peers[m.Host]; p != nil && p.health == 1 && p.cfgVersion == n.rs.Version && p.cfgTerm == n.rs.Term {
			have++
		}
	}
	return have >= need
}

// cmdReplSetReconfig (spec §6.2), normal and force.
func (c *conn) cmdReplSetReconfig(req *Request) (bson.D, error) {
	n := c.n
	force, _ := req.Body.Lookup("force").BooleanOK()
	maxTime, hasMax := req.Body.Lookup("maxTimeMS").AsInt64OK()
	deadline := time.Now().Add(5 * time.Minute)
	if hasMax && maxTime > 0 {
		deadline = time.Now().Add(time.Duration(maxTime) * time.Millisecond)
	}
	n.mu.Lock()
	if e := n.checkStatusLocked(); e != nil {
		n.mu.Unlock()
		return nil, e
	}
	n.mu.Unlock()
	doc, ok := req.Body.Lookup("replSetReconfig").DocumentOK()
	if !ok {
		return nil, cerr(2, "no configuration specified")
	}
	if !force {
		n.mu.Lock()
		if !n.canAcceptWritesLocked() {
			st := stateNames[n.state]
			n.mu.Unlock()
			return nil, cerr(10107, "New config is rejected :: caused by :: replSetReconfig should only be run on a writable PRIMARY. Current state %s;", st)
		}
		n.mu.Unlock()
		okc := n.waitFor(deadline, func() bool {
			return n.rs != nil && n.configCommittedLocked() && (n.rs.Term == -1 || !n.commit.Less(n.firstOpOfTermLocked()))
		})
		if !okc {
			n.mu.Lock()
			v, t := n.rs.Version, n.rs.Term
			n.mu.Unlock()
			return nil, cerr(308, "Cannot run replSetReconfig because the current config: {version: %d, term: %d} is not majority committed.", v, t)
		}
	}
	n.mu.Lock()
	if n.configBusy {
		n.mu.Unlock()
		return nil, cerr(109, "Cannot run replSetReconfig because the node is currently updating its configuration")
	}
	if !force && (!n.canAcceptWritesLocked()) {
		st := stateNames[n.state]
		n.mu.Unlock()
		return nil, cerr(10107, "Safe reconfig is only allowed on a writable PRIMARY. Current state is %s", st)
	}
	n.configBusy = true
	old := n.rs
	term := n.term
	oldSelfHost := ""
	if n.self >= 0 {
		oldSelfHost = old.Members[n.self].Host
	}
	n.mu.Unlock()
	defer func() { n.mu.Lock(); n.configBusy = false; n.mu.Unlock() }()
	cfg, err := ParseRSConfig(doc, false)
	if err != nil {
		return nil, cerr(93, "%s", err.Error())
	}
	if cfg.ID != n.cfg.ReplSet {
		return nil, cerr(93, "Rejecting reconfig where new config set name differs from command line set name, new config set name: %s, command line set name: %s", cfg.ID, n.cfg.ReplSet)
	}
	if cfg.ReplicaSetID.IsZero() {
		cfg.ReplicaSetID = old.ReplicaSetID
	} else if cfg.ReplicaSetID != old.ReplicaSetID {
		return nil, cerr(103, "New and old configurations differ in replica set ID; old was %s, and new is %s", old.ReplicaSetID.Hex(), cfg.ReplicaSetID.Hex())
	}
	if force {
		cfg.Term = -1
		cfg.Version = max(old.Version, cfg.Version) + 10000 + rand.IntN(100000)
	} else {
		cfg.Term = term
		oldIDs := map[int]Member{}
		for _, m := range old.Members {
			oldIDs[m.ID] = m
		}
		for i := range cfg.Members {
			m := &cfg.Members[i]
			if om, had := oldIDs[m.ID]; had {
				m.NewlyAdded = om.NewlyAdded && m.Votes > 0
			} else if m.Votes > 0 && !m.ArbiterOnly {
				m.NewlyAdded = true
			}
		}
		if !configNewer(cfg.Version, cfg.Term, old.Version, old.Term) {
			return nil, cerr(103, "New replica set configuration version and term must be greater than old, but {version: %d, term: %d} is not greater than {version: %d, term: %d} for replica set %s",
				cfg.Version, cfg.Term, old.Version, old.Term, cfg.ID)
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, cerr(103, "%s", err.Error())
	}
	if e := validateReconfigChange(old, cfg, force); e != nil {
		return nil, e
	}
	self := -1
	for i, m := range cfg.Members {
		if m.Host == oldSelfHost && oldSelfHost != "" {
			self = i
		}
	}
	if self < 0 {
		self, err = n.findSelf(cfg)
		if err != nil {
			return nil, cerr(103, "%s", err.Error())
		}
	}
	if self < 0 {
		return nil, cerr(74, "No host described in new configuration with {version: %d, term: %d} for replica set %s maps to this node", cfg.Version, cfg.Term, cfg.ID)
	}
	if !force {
		if m := cfg.Members[self]; !m.Electable() {
			return nil, cerr(104, "This node, %s, with _id %d is not electable under the new configuration with {version: %d, term: %d} for replica set %s", m.Host, m.ID, cfg.Version, cfg.Term, cfg.ID)
		}
		if e := n.reconfigQuorumCheck(cfg, self); e != nil {
			return nil, e
		}
	}
	n.mu.Lock()
	if !force && (n.state != StatePrimary || n.term != term) {
		n.mu.Unlock()
		return nil, cerr(10107, "Safe reconfig is only allowed on a writable PRIMARY. Current state is %s", stateNames[n.state])
	}
	n.installConfigLocked(cfg, true, self)
	if !force {
		_, _ = n.writeOplogLocked([]opSpec{{op: "n", o: mustRaw(bson.D{{Key: "msg", Value: "Reconfig set"}, {Key: "version", Value: int32(cfg.Version)}})}}, false)
	}
	n.mu.Unlock()
	n.logI("REPL", 21353, "replSetReconfig config object parses ok", func(e *zerolog.Event) { e.Int("version", cfg.Version).Bool("force", force) })
	if !force {
		if !n.waitFor(deadline, func() bool { return n.rs == cfg && n.configCommittedLocked() || n.rs != cfg }) {
			return nil, cerr(50, "Reconfig finished but failed to propagate to a majority :: caused by :: operation exceeded time limit")
		}
	}
	return bson.D{}, nil
}

// firstOpOfTermLocked is the optime of our first entry in the current term.
func (n *Node) firstOpOfTermLocked() OpTime {
	for i := len(n.oplog) - 1; i >= 0; i-- {
		if n.oplog[i].T < n.term {
			if i+1 < len(n.oplog) {
				return n.oplog[i+1].OpTime()
			}
			break
		}
		if i == 0 {
			return n.oplog[0].OpTime()
		}
	}
	return OpTime{}
}

// validateReconfigChange holds the rules between old and new configs.
func validateReconfigChange(old, cfg *RSConfig, force bool) *CmdError {
	oldByID := map[int]Member{}
	for _, m := range old.Members {
		oldByID[m.ID] = m
	}
	for _, m := range cfg.Members {
		for _, om := range old.Members {
			if om.Host == m.Host && om.ID != m.ID {
				return cerr(103, "New and old configurations both have members with host of %s but in the new configuration the _id field is %d and in the old configuration it is %d for replica set %s", m.Host, m.ID, om.ID, cfg.ID)
			}
		}
		if om, ok := oldByID[m.ID]; ok {
			if om.ArbiterOnly != m.ArbiterOnly {
				return cerr(103, "New and old configurations differ in the setting of the arbiterOnly field for member %s; to make this change, remove then re-add the member", m.Host)
			}
			if om.BuildIndexes != m.BuildIndexes {
				return cerr(103, "New and old configurations differ in the setting of the buildIndexes field for member %s; to make this change, remove then re-add the member", m.Host)
			}
		}
	}
	if force {
		return nil
	}
	oldV, newV := map[int]bool{}, map[int]bool{}
	for _, m := range old.Members {
		if m.Votes > 0 {
			oldV[m.ID] = true
		}
	}
	for _, m := range cfg.Members {
		if m.Votes > 0 {
			newV[m.ID] = true
		}
	}
	diff := 0
	for id := range oldV {
		if !newV[id] {
			diff++
		}
	}
	for id := range newV {
		if !oldV[id] {
			diff++
		}
	}
	if diff > 1 {
		return cerr(103, "Non force replica set reconfig can only add or remove at most 1 voting member.")
	}
	return nil
}

// reconfigQuorumCheck needs a majority of voters (self included) to answer.
func (n *Node) reconfigQuorumCheck(cfg *RSConfig, self int) *CmdError {
	n.mu.Lock()
	hb := n.heartbeatRequestLocked(false)
	n.mu.Unlock()
	timeout := time.Duration(cfg.HeartbeatTimeoutSecs) * time.Second
	type res struct {
		m   Member
		r   bson.Raw
		err error
	}
	ch := make(chan res, len(cfg.Members))
	cnt := 0
	for i, m := range cfg.Members {
		if i == self {
			continue
		}
		cnt++
		go func(m Member) {
			r, err := n.callPeer(m.Host, hb, timeout)
			ch <- res{m, r, err}
		}(m)
	}
	_, need, _, _ := cfg.Majorities()
	okVoters := []string{cfg.Members[self].Host}
	votes := 1
	var failed []string
	for range cnt {
		x := <-ch
		if x.err != nil {
			failed = append(failed, fmt.Sprintf("%s failed with %s", x.m.Host, connErrText(x.m.Host, x.err)))
			continue
		}
		if v, _ := x.r.Lookup("configVersion").AsInt64OK(); int(v) >= cfg.Version {
			t, _ := x.r.Lookup("configTerm").AsInt64OK()
			if !configNewer(cfg.Version, cfg.Term, int(v), t) {
				return cerr(103, "Our config version of %d is no larger than the version on %s, which is %d", cfg.Version, x.m.Host, v)
			}
		}
		if x.m.Voter() || x.m.NewlyAdded {
			okVoters = append(okVoters, x.m.Host)
			if x.m.Voter() {
				votes++
			}
		}
	}
	if votes < need {
		sort.Strings(failed)
		return cerr(74, "Quorum check failed because not enough voting nodes responded; required %d but only the following %d voting nodes responded: %s; the following nodes did not respond affirmatively: %s",
			need, len(okVoters), strings.Join(okVoters, ", "), strings.Join(failed, ", "))
	}
	return nil
}

// removeNewlyAdded is the primary's automatic follow-up reconfig once a
// newly added member is SECONDARY (version+1).
func (n *Node) removeNewlyAdded() {
	n.mu.Lock()
	if !n.canAcceptWritesLocked() || n.configBusy || n.rs == nil {
		n.mu.Unlock()
		return
	}
	cfg := n.rs.Clone()
	changed := false
	for i := range cfg.Members {
		m := &cfg.Members[i]
		if m.NewlyAdded {
			if p := n.peers[m.Host]; p != nil && p.health == 1 && p.state == StateSecondary {
				m.NewlyAdded = false
				changed = true
			}
		}
	}
	if !changed {
		n.mu.Unlock()
		return
	}
	cfg.Version++
	cfg.Term = n.term
	n.installConfigLocked(cfg, true, n.self)
	_, _ = n.writeOplogLocked([]opSpec{{op: "n", o: mustRaw(bson.D{{Key: "msg", Value: "Reconfig set"}, {Key: "version", Value: int32(cfg.Version)}})}}, false)
	n.mu.Unlock()
	n.logI("REPL", 4634400, "Removed newlyAdded field from member configs", func(e *zerolog.Event) { e.Int("version", cfg.Version) })
}
