package sim

import (
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// kickHeartbeats asks every heartbeat loop to send one now.
func (n *Node) kickHeartbeats() {
	n.mu.Lock()
	hosts := make([]string, 0, len(n.peers))
	for h := range n.peers {
		hosts = append(hosts, h)
	}
	n.mu.Unlock()
	for _, h := range hosts {
		go n.heartbeatOnce(h, nil)
	}
}

func (n *Node) heartbeatLoop(host string, stop chan struct{}) {
	defer n.bg.Done()
	var pc *peerConn
	defer func() { pc.close() }()
	for {
		var r hbResult
		pc, r = n.sendHeartbeat(host, pc)
		n.foldHeartbeatSoon(r)
		t := time.NewTimer(hbInterval(n.replState().rs))
		select {
		case <-stop:
			t.Stop()
			return
		case <-n.quit:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

func (n *Node) heartbeatRequestLocked(checkEmpty bool) bson.D {
	return n.heartbeatRequest(n.viewLocked(), checkEmpty)
}

// heartbeatRequest builds a heartbeat from a view (replview.go), so the
// heartbeat loop never waits for n.mu to send one.
func (n *Node) heartbeatRequest(v *replView, checkEmpty bool) bson.D {
	d := bson.D{{Key: "replSetHeartbeat", Value: n.cfg.ReplSet}, {Key: "hbv", Value: int32(1)}}
	if v.rs != nil {
		d = append(d, bson.E{Key: "configVersion", Value: int64(v.rs.Version)}, bson.E{Key: "configTerm", Value: v.rs.Term})
	} else {
		d = append(d, bson.E{Key: "configVersion", Value: int64(-2)}, bson.E{Key: "configTerm", Value: int64(-1)})
	}
	from, fromID := "", int64(-1)
	if v.rs != nil && v.self >= 0 {
		from, fromID = v.rs.Members[v.self].Host, int64(v.rs.Members[v.self].ID)
	}
	d = append(d, bson.E{Key: "from", Value: from}, bson.E{Key: "fromId", Value: fromID}, bson.E{Key: "term", Value: v.term},
		bson.E{Key: "checkEmpty", Value: checkEmpty}, bson.E{Key: "$db", Value: "admin"})
	return d
}

// hbResult is one heartbeat's outcome, to be folded into our state.
type hbResult struct {
	host string
	resp bson.Raw
	err  error
	rtt  time.Duration
	at   time.Time // when the answer (or the failure) came
	seq  uint64    // order of the outcomes: an older one is never folded after a newer one
}

// heartbeatOnce sends one heartbeat (reusing pc if given) and folds the
// answer in before it returns (catch-up reads what the members answered).
func (n *Node) heartbeatOnce(host string, pc *peerConn) *peerConn {
	pc, r := n.sendHeartbeat(host, pc)
	n.processHeartbeatResponse(r)
	return pc
}

// sendHeartbeat sends one heartbeat (reusing pc if given) without n.mu.
func (n *Node) sendHeartbeat(host string, pc *peerConn) (*peerConn, hbResult) {
	v := n.replState()
	req := n.heartbeatRequest(v, false)
	timeout := hbTimeout(v.rs)
	if v.rs != nil {
		timeout = min(timeout, max(electionTimeout(v.rs), time.Second))
	}
	start := time.Now()
	var resp bson.Raw
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		if pc == nil {
			pc, err = n.dialPeer(host, timeout)
			if err != nil {
				pc = nil
				continue
			}
		}
		resp, err = pc.run(req, time.Now().Add(timeout))
		if err == nil {
			break
		}
		var ce *CmdError
		if errors.As(err, &ce) {
			break
		}
		pc.close()
		pc = nil
	}
	return pc, hbResult{host: host, resp: resp, err: err, rtt: time.Since(start), at: time.Now(), seq: n.hbSeq.Add(1)}
}

// foldHeartbeatSoon folds a heartbeat's outcome in without waiting for
// n.mu: at once when the lock is free, else on a goroutine of its own, so
// the heartbeat loop keeps its interval while a write holds the lock.
func (n *Node) foldHeartbeatSoon(r hbResult) {
	if n.heartbeatConfig(r) == nil && n.mu.TryLock() {
		n.foldHeartbeatLocked(r)
		n.mu.Unlock()
		return
	}
	go n.processHeartbeatResponse(r)
}

// heartbeatConfig is the newer config a heartbeat answer carries, if any.
func (n *Node) heartbeatConfig(r hbResult) *RSConfig {
	if r.err != nil {
		return nil
	}
	cd, ok := r.resp.Lookup("config").DocumentOK()
	if !ok {
		return nil
	}
	c, perr := ParseRSConfig(cd, true)
	if perr != nil || c.ID != n.cfg.ReplSet {
		return nil
	}
	if rs := n.replState().rs; rs != nil && !configNewer(c.Version, c.Term, rs.Version, rs.Term) {
		return nil
	}
	return c
}

// processHeartbeatResponse installs a newer config the answer carries,
// then folds the answer in.
func (n *Node) processHeartbeatResponse(r hbResult) {
	if newCfg := n.heartbeatConfig(r); newCfg != nil {
		self, ferr := n.findSelf(newCfg)
		if ferr != nil {
			self = -1
		}
		n.mu.Lock()
		if n.rs == nil || configNewer(newCfg.Version, newCfg.Term, n.rs.Version, n.rs.Term) {
			n.installConfigLocked(newCfg, true, self)
		}
		n.mu.Unlock()
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.foldHeartbeatLocked(r)
}

// foldHeartbeatLocked records what a heartbeat told us about its member
// and what follows from it (a higher term, who is primary).
func (n *Node) foldHeartbeatLocked(r hbResult) {
	host, resp, err, rtt := r.host, r.resp, r.err, r.rtt
	p := n.peers[host]
	if p == nil || r.seq <= p.foldedSeq {
		return
	}
	p.foldedSeq = r.seq
	now := r.at
	p.lastHB = now
	if err != nil {
		var ce *CmdError
		p.authFailed = errors.As(err, &ce) && ce.Code == 18
		p.health, p.state, p.msg = 0, StateDown, connErrText(host, err)
		if n.rs != nil && n.primary >= 0 && n.primary < len(n.rs.Members) && n.rs.Members[n.primary].Host == host {
			n.primary = -1 // the primary is down: no primary known until an election
			n.bumpTopologyLocked()
		}
		if p.authFailed {
			p.state = StateUnknown
		}
		p.upSince = time.Time{}
		return
	}
	p.authFailed = false
	if p.health != 1 {
		p.upSince = now
	}
	p.health, p.msg, p.everResponded = 1, "", true
	p.lastOK = now
	p.pingMs = rtt.Milliseconds()
	st, _ := resp.Lookup("state").AsInt64OK()
	p.state = int(st)
	p.term, _ = resp.Lookup("term").AsInt64OK()
	v, _ := resp.Lookup("configVersion").AsInt64OK()
	p.cfgVersion = int(v)
	p.cfgTerm, _ = resp.Lookup("configTerm").AsInt64OK()
	if ap := parseOpTime(resp.Lookup("appliedOpTime")); p.applied.Less(ap) {
		p.applied = ap
	}
	p.durable = p.applied
	p.syncSource, _ = resp.Lookup("syncingTo").StringValueOK()
	if t, i, ok := resp.Lookup("electionTime").TimestampOK(); ok {
		p.electionTime = bson.Timestamp{T: t, I: i}
	}
	if p.term > n.term {
		n.updateTermLocked(p.term, "heartbeat response with higher term from "+host)
	}
	if n.rs == nil {
		return
	}
	idx := -1
	for i, m := range n.rs.Members {
		if m.Host == host {
			idx = i
		}
	}
	if p.state == StatePrimary && p.term >= n.term && idx >= 0 {
		if n.state == StatePrimary && n.self != idx {
			// Two primaries in the same term cannot happen; the lower term steps down above.
			return
		}
		if n.primary != idx {
			n.primary = idx
			n.bumpTopologyLocked()
		}
		n.resetElectionTimerLocked()
	} else if n.primary == idx && idx >= 0 && p.state != StatePrimary {
		n.primary = -1
		n.bumpTopologyLocked()
	}
	if n.state == StatePrimary {
		n.recomputeCommitLocked()
	}
}

// cmdReplSetHeartbeat answers another member's heartbeat.
func (c *conn) cmdReplSetHeartbeat(req *Request) (bson.D, error) {
	n := c.n
	if n.cfg.ReplSet == "" {
		return nil, cerr(76, "not running with --replSet")
	}
	c.internal.Store(true)
	b := req.Body
	set, _ := b.Lookup("replSetHeartbeat").StringValueOK()
	if set != n.cfg.ReplSet {
		return nil, cerr(185, "Our set name of %s does not match name %s reported by remote node", n.cfg.ReplSet, set)
	}
	from, _ := b.Lookup("from").StringValueOK()
	term, _ := b.Lookup("term").AsInt64OK()
	cv, _ := b.Lookup("configVersion").AsInt64OK()
	ct, _ := b.Lookup("configTerm").AsInt64OK()
	checkEmpty, _ := b.Lookup("checkEmpty").BooleanOK()
	// Answered from the replication view (replview.go), never waiting for
	// n.mu, which writes hold while they apply. Only a higher term, which
	// must be adopted before the answer carries it, takes the lock.
	v := n.replState()
	if term > v.term && v.rs != nil {
		n.mu.Lock()
		n.updateTermLocked(term, "heartbeat with higher term from "+from)
		n.mu.Unlock()
		v = n.replState()
	}
	n.noteHeartbeatFrom(from, time.Now(), int(cv), ct)
	d := bson.D{{Key: "set", Value: n.cfg.ReplSet}, {Key: "term", Value: v.term}}
	pull := false
	if v.rs == nil {
		d = append(d, bson.E{Key: "state", Value: int32(StateStartup)}, bson.E{Key: "configVersion", Value: int32(-2)},
			bson.E{Key: "configTerm", Value: int64(-1)})
		pull = from != "" && cv > 0
	} else {
		d = append(d, bson.E{Key: "state", Value: int32(v.state)}, bson.E{Key: "configVersion", Value: int32(v.rs.Version)},
			bson.E{Key: "configTerm", Value: v.rs.Term}, bson.E{Key: "appliedOpTime", Value: v.applied.Doc()},
			bson.E{Key: "durableOpTime", Value: v.applied.Doc()}, bson.E{Key: "wallTime", Value: v.applied.Date()})
		if v.state == StatePrimary {
			d = append(d, bson.E{Key: "electionTime", Value: v.leaderTime})
		}
		if v.primary >= 0 && v.primary < len(v.rs.Members) {
			d = append(d, bson.E{Key: "primaryId", Value: int32(v.rs.Members[v.primary].ID)})
		}
		if v.state == StateSecondary && v.syncSource != "" {
			d = append(d, bson.E{Key: "syncingTo", Value: v.syncSource})
		}
		if cv >= 0 && configNewer(v.rs.Version, v.rs.Term, int(cv), ct) || cv < 0 {
			d = append(d, bson.E{Key: "config", Value: v.rs.Raw()})
		}
		pull = from != "" && cv > 0 && configNewer(int(cv), ct, v.rs.Version, v.rs.Term)
	}
	if checkEmpty {
		d = append(d, bson.E{Key: "hasData", Value: v.hasData})
	}
	if pull && !v.inShutdown {
		// The sender has a newer config: fetch it from them, as mongod does.
		go func() {
			if _, ok := n.hbStopHas(from); !ok {
				pc := n.heartbeatOnceAnon(from)
				pc.close()
			} else {
				n.heartbeatOnce(from, nil).close()
			}
		}()
	}
	return d, nil
}

// noteHeartbeatFrom records that a member heartbeated us (and the config
// it has) without waiting for n.mu: at once when the lock is free, else on
// a goroutine of its own.
func (n *Node) noteHeartbeatFrom(from string, at time.Time, cv int, ct int64) {
	note := func() {
		p := n.peers[from]
		if p == nil {
			return
		}
		if at.After(p.lastHBRecv) {
			p.lastHBRecv = at
		}
		if cv > 0 && configNewer(cv, ct, p.cfgVersion, p.cfgTerm) {
			// The sender's config: a member that installed ours says so at
			// once (mongod learns it from the position update that follows).
			p.cfgVersion, p.cfgTerm = cv, ct
			n.notifyProgressLocked()
		}
	}
	if n.mu.TryLock() {
		note()
		n.mu.Unlock()
		return
	}
	go func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		note()
	}()
}

func (n *Node) hbStopHas(host string) (chan struct{}, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	ch, ok := n.hbStop[host]
	return ch, ok
}

// heartbeatOnceAnon heartbeats a host we do not track yet (to learn a config).
func (n *Node) heartbeatOnceAnon(host string) *peerConn {
	req := n.heartbeatRequest(n.replState(), false)
	resp, err := n.callPeer(host, req, 5*time.Second)
	if err == nil {
		n.processHeartbeatResponse(hbResult{host: host, resp: resp, at: time.Now(), seq: n.hbSeq.Add(1)})
	}
	return nil
}
