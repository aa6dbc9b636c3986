package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
)

func (n *Node) requireReplSet() *CmdError {
	if n.cfg.ReplSet == "" {
		return cerr(76, "This node was not started with replication enabled.")
	}
	return nil
}

// cmdReplSetInitiate follows spec §4 step by step.
func (c *conn) cmdReplSetInitiate(req *Request) (bson.D, error) {
	n := c.n
	if n.cfg.ReplSet == "" {
		return nil, cerr(76, "This node was not started with replication enabled.")
	}
	var extra bson.D
	cfgDoc, isDoc := req.Body.Lookup("replSetInitiate").DocumentOK()
	if isDoc {
		if els, _ := cfgDoc.Elements(); len(els) == 0 {
			isDoc = false
		}
	}
	n.mu.Lock()
	if n.rs != nil {
		n.mu.Unlock()
		return nil, cerr(23, "already initialized")
	}
	if n.configBusy {
		n.mu.Unlock()
		return nil, cerr(109, "Cannot run replSetInitiate because the node is currently updating its configuration")
	}
	n.configBusy = true
	n.mu.Unlock()
	defer func() { n.mu.Lock(); n.configBusy = false; n.mu.Unlock() }()
	if !isDoc {
		me := n.defaultHost()
		members := bson.A{bson.D{{Key: "_id", Value: int32(0)}, {Key: "host", Value: me}}}
		if k := strings.IndexByte(n.cfgReplSetRaw(), '/'); k >= 0 {
			for i, s := range strings.Split(n.cfgReplSetRaw()[k+1:], ",") {
				members = append(members, bson.D{{Key: "_id", Value: int32(i + 1)}, {Key: "host", Value: s}})
			}
		}
		cfgDoc = mustRaw(bson.D{{Key: "_id", Value: n.cfg.ReplSet}, {Key: "version", Value: int32(1)}, {Key: "members", Value: members}})
		extra = bson.D{{Key: "info2", Value: "no configuration specified. Using a default configuration for the set"}, {Key: "me", Value: me}}
		n.logI("REPL", 21356, "replSetInitiate: no configuration specified. Using a default configuration for the set", nil)
	}
	if _, err := cfgDoc.LookupErr("settings", "replicaSetId"); err == nil {
		return nil, cerr(93, "replica set configuration cannot contain 'replicaSetId' field when called from replSetInitiate")
	}
	cfg, err := ParseRSConfig(cfgDoc, false)
	if err != nil {
		return nil, cerr(93, "%s", err.Error())
	}
	cfg.Term = 0
	cfg.ReplicaSetID = bson.NewObjectID()
	if cfg.ID != n.cfg.ReplSet {
		return nil, cerr(93, "Rejecting initiate with a set name that differs from command line set name, initiate set name: %s, command line set name: %s", cfg.ID, n.cfg.ReplSet)
	}
	if err := cfg.Validate(); err != nil {
		return nil, cerr(93, "%s", err.Error())
	}
	if cfg.Version != 1 {
		return nil, cerr(93, "Configuration used to initiate a replica set must  have version 1, but found %d", cfg.Version)
	}
	self, err := n.findSelf(cfg)
	if err != nil {
		return nil, cerr(93, "%s", err.Error())
	}
	if self < 0 {
		return nil, cerr(93, "No host described in new configuration with {version: 1, term: 0} for replica set %s maps to this node", cfg.ID)
	}
	if m := cfg.Members[self]; !m.Electable() {
		return nil, cerr(93, "This node, %s, with _id %d is not electable under the new configuration with {version: 1, term: 0} for replica set %s", m.Host, m.ID, cfg.ID)
	}
	// Quorum check: every other member must answer affirmatively.
	n.mu.Lock()
	hb := n.heartbeatRequestLocked(true)
	hbTimeout := time.Duration(cfg.HeartbeatTimeoutSecs) * time.Second
	n.mu.Unlock()
	type res struct {
		host string
		r    any
		err  error
	}
	var failures []string
	ch := make(chan res, len(cfg.Members))
	for i, m := range cfg.Members {
		if i == self {
			continue
		}
		go func(h string) {
			r, err := n.callPeer(h, hb, hbTimeout)
			ch <- res{h, r, err}
		}(m.Host)
	}
	for range len(cfg.Members) - 1 {
		x := <-ch
		r, _ := x.r.(bson.Raw)
		if x.err != nil {
			var ce *CmdError
			if errors.As(x.err, &ce) && ce.Code == 185 {
				return nil, cerr(103, "Our set name did not match that of %s", x.host)
			}
			failures = append(failures, fmt.Sprintf("%s failed with %s", x.host, connErrText(x.host, x.err)))
			continue
		}
		if v, _ := r.Lookup("configVersion").AsInt64OK(); v >= 1 {
			return nil, cerr(103, "Our config version of 1 is no larger than the version on %s, which is %d", x.host, v)
		}
		if hd, _ := r.Lookup("hasData").BooleanOK(); hd {
			return nil, cerr(110, "'%s' has data already, cannot initiate set.", x.host)
		}
	}
	if len(failures) > 0 {
		sort.Strings(failures)
		return nil, cerr(74, "replSetInitiate quorum check failed because not all proposed set members responded affirmatively: %s", strings.Join(failures, ", "))
	}
	n.mu.Lock()
	if n.data.HasUserData() {
		n.mu.Unlock()
		return nil, cerr(110, "'%s' has data already, cannot initiate set.", cfg.Members[self].Host)
	}
	n.state = StateStartup
	n.installConfigLocked(cfg, true, self)
	n.state = StateSecondary
	// "initiating set" entry, written as term 0 before any election.
	e := NewOplogEntry(OpTime{TS: n.nextTSLocked(), T: 0}, "n", "", mustRaw(bson.D{{Key: "msg", Value: "initiating set"}}), nil, time.Now())
	if err := n.store.AppendOplog([]OplogEntry{e}); err == nil {
		n.oplog = append(n.oplog, e)
		n.applied = e.OpTime()
	}
	n.bumpTopologyLocked()
	n.mu.Unlock()
	n.logI("REPL", 21357, "replSetInitiate config object parses ok", func(e *zerolog.Event) { e.Int("numMembers", len(cfg.Members)) })
	n.kickHeartbeats()
	return extra, nil
}

func (n *Node) cfgReplSetRaw() string {
	for i, a := range n.cfg.Argv {
		if a == "--replSet" && i+1 < len(n.cfg.Argv) {
			return n.cfg.Argv[i+1]
		}
		if strings.HasPrefix(a, "--replSet=") {
			return strings.TrimPrefix(a, "--replSet=")
		}
	}
	return n.cfg.ReplSet
}

// defaultHost is "hostname:port", what mongod puts in a default config.
func (n *Node) defaultHost() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "localhost"
	}
	if !n.cfg.BindIPAll && len(n.cfg.BindIP) > 0 && n.cfg.BindIP[0] != "0.0.0.0" {
		if isLocalhostRef(n.cfg.BindIP[0] + ":1") {
			h = n.cfg.BindIP[0]
			if h == "127.0.0.1" {
				h = "localhost"
			}
		}
	}
	return fmt.Sprintf("%s:%d", strings.ToLower(h), n.cfg.Port)
}

func (n *Node) checkStatusLocked() *CmdError {
	if n.cfg.ReplSet == "" {
		return cerr(76, "not running with --replSet")
	}
	if n.rs == nil {
		return cerr(94, "no replset config has been received")
	}
	return nil
}

// cmdReplSetGetStatus builds the status document (spec §5).
func (c *conn) cmdReplSetGetStatus(*Request) (bson.D, error) {
	n := c.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if e := n.checkStatusLocked(); e != nil {
		return nil, e
	}
	if n.self < 0 {
		return nil, cerr(93, "Our replica set config is invalid or we are not a member of it")
	}
	now := time.Now()
	voting, mv, wv, wm := n.rs.Majorities()
	syncHost, syncID := "", int32(-1)
	if n.state != StatePrimary && n.primary >= 0 && n.primary != n.self {
		syncHost, syncID = n.rs.Members[n.primary].Host, int32(n.rs.Members[n.primary].ID)
	}
	wall := bson.NewDateTimeFromTime(now)
	appliedWall := n.applied.Date()
	d := bson.D{{Key: "set", Value: n.rs.ID}, {Key: "date", Value: wall}, {Key: "myState", Value: int32(n.state)},
		{Key: "term", Value: n.term}, {Key: "syncSourceHost", Value: syncHost}, {Key: "syncSourceId", Value: syncID},
		{Key: "heartbeatIntervalMillis", Value: n.rs.HeartbeatIntervalMillis}, {Key: "majorityVoteCount", Value: int32(mv)},
		{Key: "writeMajorityCount", Value: int32(wm)}, {Key: "votingMembersCount", Value: int32(voting)},
		{Key: "writableVotingMembersCount", Value: int32(wv)},
		{Key: "optimes", Value: bson.D{{Key: "lastCommittedOpTime", Value: n.commit.Doc()}, {Key: "lastCommittedWallTime", Value: n.commit.Date()},
			{Key: "readConcernMajorityOpTime", Value: n.commit.Doc()}, {Key: "appliedOpTime", Value: n.applied.Doc()},
			{Key: "durableOpTime", Value: n.applied.Doc()}, {Key: "lastAppliedWallTime", Value: appliedWall},
			{Key: "lastDurableWallTime", Value: appliedWall}}},
	}
	if n.state == StatePrimary && n.election != nil && n.election.term == n.term {
		d = append(d, bson.E{Key: "electionCandidateMetrics", Value: n.election.doc()})
	}
	if is := n.initialSyncStatusLocked(); is != nil {
		d = append(d, bson.E{Key: "initialSyncStatus", Value: is})
	}
	members := bson.A{}
	order := make([]int, len(n.rs.Members))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return n.rs.Members[order[a]].ID < n.rs.Members[order[b]].ID })
	for _, i := range order {
		m := n.rs.Members[i]
		if i == n.self {
			md := bson.D{{Key: "_id", Value: int32(m.ID)}, {Key: "name", Value: m.Host}, {Key: "health", Value: 1.0},
				{Key: "state", Value: int32(n.state)}, {Key: "stateStr", Value: stateNames[n.state]},
				{Key: "uptime", Value: int32(time.Since(n.started).Seconds())}}
			if !m.ArbiterOnly {
				md = append(md, bson.E{Key: "optime", Value: n.applied.Doc()}, bson.E{Key: "optimeDate", Value: appliedWall},
					bson.E{Key: "lastAppliedWallTime", Value: appliedWall}, bson.E{Key: "lastDurableWallTime", Value: appliedWall})
			}
			md = append(md, bson.E{Key: "syncSourceHost", Value: syncHost}, bson.E{Key: "syncSourceId", Value: syncID},
				bson.E{Key: "infoMessage", Value: n.infoMessageLocked()})
			if n.state == StatePrimary {
				md = append(md, bson.E{Key: "electionTime", Value: n.leaderTime}, bson.E{Key: "electionDate", Value: bson.NewDateTimeFromTime(n.leaderDate)})
			}
			md = append(md, bson.E{Key: "configVersion", Value: int32(n.rs.Version)}, bson.E{Key: "configTerm", Value: int32(n.rs.Term)},
				bson.E{Key: "self", Value: true}, bson.E{Key: "lastHeartbeatMessage", Value: ""})
			members = append(members, md)
			continue
		}
		p := n.peers[m.Host]
		if p == nil {
			p = &peerState{health: -1, state: StateUnknown}
		}
		state := p.state
		stateStr := stateNames[state]
		if p.health == 0 {
			stateStr = "(not reachable/healthy)"
		}
		uptime := int32(0)
		if !p.upSince.IsZero() {
			uptime = int32(now.Sub(p.upSince).Seconds())
		}
		md := bson.D{{Key: "_id", Value: int32(m.ID)}, {Key: "name", Value: m.Host}, {Key: "health", Value: p.health},
			{Key: "state", Value: int32(state)}, {Key: "stateStr", Value: stateStr}, {Key: "uptime", Value: uptime}}
		if !m.ArbiterOnly {
			md = append(md, bson.E{Key: "optime", Value: p.applied.Doc()}, bson.E{Key: "optimeDurable", Value: p.durable.Doc()},
				bson.E{Key: "optimeDate", Value: p.applied.Date()}, bson.E{Key: "optimeDurableDate", Value: p.durable.Date()},
				bson.E{Key: "lastAppliedWallTime", Value: p.applied.Date()}, bson.E{Key: "lastDurableWallTime", Value: p.durable.Date()})
		}
		md = append(md, bson.E{Key: "lastHeartbeat", Value: bson.NewDateTimeFromTime(p.lastHB)},
			bson.E{Key: "lastHeartbeatRecv", Value: bson.NewDateTimeFromTime(p.lastHBRecv)},
			bson.E{Key: "pingMs", Value: p.pingMs}, bson.E{Key: "lastHeartbeatMessage", Value: p.msg})
		if p.authFailed {
			md = append(md, bson.E{Key: "authenticated", Value: false})
		}
		sid := int32(-1)
		for _, x := range n.rs.Members {
			if x.Host == p.syncSource {
				sid = int32(x.ID)
			}
		}
		md = append(md, bson.E{Key: "syncSourceHost", Value: p.syncSource}, bson.E{Key: "syncSourceId", Value: sid},
			bson.E{Key: "infoMessage", Value: ""})
		if state == StatePrimary && p.health == 1 {
			md = append(md, bson.E{Key: "electionTime", Value: p.electionTime}, bson.E{Key: "electionDate", Value: bson.DateTime(int64(p.electionTime.T) * 1000)})
		}
		md = append(md, bson.E{Key: "configVersion", Value: int32(p.cfgVersion)}, bson.E{Key: "configTerm", Value: int32(p.cfgTerm)})
		members = append(members, md)
	}
	d = append(d, bson.E{Key: "members", Value: members})
	return d, nil
}

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
		if n.state != StatePrimary || !n.writable {
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
		if n.state != StatePrimary || !n.writable {
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
	if !force && (n.state != StatePrimary || !n.writable) {
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
	n.kickHeartbeats()
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
	if n.state != StatePrimary || !n.writable || n.configBusy || n.rs == nil {
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
	n.kickHeartbeats()
}

// cmdReplSetStepDown (spec §6.3).
func (c *conn) cmdReplSetStepDown(req *Request) (bson.D, error) {
	n := c.n
	if e := n.requireReplSet(); e != nil {
		return nil, e
	}
	secs, _ := numberOK(req.Body.Lookup("replSetStepDown"))
	if secs == 0 {
		secs = 60
	}
	if secs < 0 {
		return nil, cerr(2, "stepdown period must be a positive integer")
	}
	force, _ := req.Body.Lookup("force").BooleanOK()
	catchUp := 10.0
	if force {
		catchUp = 0
	}
	if v, err := req.Body.LookupErr("secondaryCatchUpPeriodSecs"); err == nil {
		catchUp, _ = numberOK(v)
	}
	if secs < catchUp {
		return nil, cerr(2, "stepdown period must be longer than secondaryCatchUpPeriodSecs")
	}
	err := n.stepDown(time.Duration(secs*float64(time.Second)), time.Duration(catchUp*float64(time.Second)), force, time.Now().Add(time.Duration(catchUp*float64(time.Second))))
	if err != nil {
		return nil, err
	}
	return bson.D{}, nil
}

// stepDown waits (up to the catch-up period) for an electable secondary
// to catch up, steps down, and hands off to it.
func (n *Node) stepDown(period, catchUp time.Duration, force bool, deadline time.Time) error {
	n.mu.Lock()
	if n.state != StatePrimary {
		n.mu.Unlock()
		return cerr(10107, "not primary so can't step down")
	}
	if n.stepping {
		n.mu.Unlock()
		return cerr(117, "This node is already in the process of stepping down")
	}
	n.stepping = true
	n.bumpTopologyLocked()
	term := n.term
	n.mu.Unlock()
	target := ""
	caught := func() bool {
		if n.state != StatePrimary || n.term != term {
			return true
		}
		_, _, _, wm := n.rs.Majorities()
		if n.membersAppliedLocked(n.applied, true) < wm {
			return false
		}
		best := -1.0
		for i, m := range n.rs.Members {
			if i == n.self || !m.Electable() {
				continue
			}
			if p := n.peers[m.Host]; p != nil && p.health == 1 && p.state == StateSecondary && !p.applied.Less(n.applied) && m.Priority > best {
				best, target = m.Priority, m.Host
			}
		}
		return best >= 0
	}
	ok := n.waitFor(deadline, caught)
	n.mu.Lock()
	if n.state != StatePrimary || n.term != term {
		n.stepping = false
		n.mu.Unlock()
		return cerr(11602, "operation was interrupted because a replica set state change occurred")
	}
	if !ok && !force {
		n.stepping = false
		n.bumpTopologyLocked()
		n.mu.Unlock()
		return cerr(262, "No electable secondaries caught up as of %s. Please use the replSetStepDown command with the argument {force: true} to force node to step down.",
			time.Now().UTC().Format("2006-01-02T15:04:05.000+00:00"))
	}
	n.logI("REPL", 21343, "Starting to kill user operations", nil)
	n.stepDownLocked()
	n.stepUntil = time.Now().Add(period)
	n.mu.Unlock()
	if target != "" {
		go func() {
			_, _ = n.callPeer(target, bson.D{{Key: "replSetStepUp", Value: int32(1)}, {Key: "skipDryRun", Value: true}, {Key: "$db", Value: "admin"}}, 10*time.Second)
		}()
	}
	return nil
}

func (c *conn) cmdReplSetStepUp(req *Request) (bson.D, error) {
	n := c.n
	skip, _ := req.Body.Lookup("skipDryRun").BooleanOK()
	n.mu.Lock()
	if e := n.checkStatusLocked(); e != nil {
		n.mu.Unlock()
		return nil, e
	}
	if n.state == StatePrimary {
		n.mu.Unlock()
		return bson.D{{Key: "info", Value: "already primary"}}, nil
	}
	// A frozen member, or one in its stepdown period, is not electable,
	// even on request (mongod's StepDownPeriodActive).
	if until := n.stepUntil; time.Now().Before(until) {
		n.mu.Unlock()
		n.logI("ELECTION", 4615657, "Not starting an election for a replSetStepUp request, since we are not electable", func(e *zerolog.Event) {
			e.Str("reason", "I am still waiting for stepdown period to end at "+until.UTC().Format("2006-01-02T15:04:05.000Z07:00"))
		})
		return nil, cerr(125, "Election failed.")
	}
	n.mu.Unlock()
	reason := "stepUpRequest"
	if skip {
		reason = "stepUpRequestSkipDryRun"
	}
	if !n.runElection(skip, reason) {
		return nil, cerr(125, "Election failed.")
	}
	return bson.D{}, nil
}

// cmdReplSetFreeze (spec §6.4).
func (c *conn) cmdReplSetFreeze(req *Request) (bson.D, error) {
	n := c.n
	secs, _ := numberOK(req.Body.Lookup("replSetFreeze"))
	n.mu.Lock()
	defer n.mu.Unlock()
	if e := n.checkStatusLocked(); e != nil {
		return nil, e
	}
	if n.state == StatePrimary {
		return nil, cerr(95, "Cannot freeze node when primary or running for election, state: Primary")
	}
	if secs == 0 {
		n.stepUntil = time.Time{}
		n.resetElectionTimerLocked()
		return bson.D{{Key: "info", Value: "unfreezing"}}, nil
	}
	until := time.Now().Add(time.Duration(secs * float64(time.Second)))
	if until.After(n.stepUntil) {
		n.stepUntil = until
	}
	if secs == 1 {
		return bson.D{{Key: "warning", Value: "you really want to freeze for only 1 second?"}}, nil
	}
	return bson.D{}, nil
}
