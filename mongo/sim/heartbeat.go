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
		pc = n.heartbeatOnce(host, pc)
		n.mu.Lock()
		iv := n.hbInterval()
		n.mu.Unlock()
		t := time.NewTimer(iv)
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
	d := bson.D{{Key: "replSetHeartbeat", Value: n.cfg.ReplSet}, {Key: "hbv", Value: int32(1)}}
	if n.rs != nil {
		d = append(d, bson.E{Key: "configVersion", Value: int64(n.rs.Version)}, bson.E{Key: "configTerm", Value: n.rs.Term})
	} else {
		d = append(d, bson.E{Key: "configVersion", Value: int64(-2)}, bson.E{Key: "configTerm", Value: int64(-1)})
	}
	from, fromID := "", int64(-1)
	if n.rs != nil && n.self >= 0 {
		from, fromID = n.rs.Members[n.self].Host, int64(n.rs.Members[n.self].ID)
	}
	d = append(d, bson.E{Key: "from", Value: from}, bson.E{Key: "fromId", Value: fromID}, bson.E{Key: "term", Value: n.term},
		bson.E{Key: "checkEmpty", Value: checkEmpty}, bson.E{Key: "$db", Value: "admin"})
	return d
}

// heartbeatOnce sends one heartbeat (reusing pc if given) and folds the answer in.
func (n *Node) heartbeatOnce(host string, pc *peerConn) *peerConn {
	n.mu.Lock()
	req := n.heartbeatRequestLocked(false)
	timeout := n.hbTimeout()
	if n.rs != nil {
		timeout = min(timeout, max(n.electionTimeout(), time.Second))
	}
	n.mu.Unlock()
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
	n.processHeartbeatResponse(host, resp, err, time.Since(start))
	return pc
}

func (n *Node) processHeartbeatResponse(host string, resp bson.Raw, err error, rtt time.Duration) {
	var newCfg *RSConfig
	if err == nil {
		if cd, ok := resp.Lookup("config").DocumentOK(); ok {
			if c, perr := ParseRSConfig(cd, true); perr == nil && c.ID == n.cfg.ReplSet {
				n.mu.Lock()
				newer := n.rs == nil || configNewer(c.Version, c.Term, n.rs.Version, n.rs.Term)
				n.mu.Unlock()
				if newer {
					newCfg = c
				}
			}
		}
	}
	if newCfg != nil {
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
	p := n.peers[host]
	if p == nil {
		return
	}
	now := time.Now()
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
	n.mu.Lock()
	defer n.mu.Unlock()
	if term > n.term && n.rs != nil {
		n.updateTermLocked(term, "heartbeat with higher term from "+from)
	}
	if p := n.peers[from]; p != nil {
		p.lastHBRecv = time.Now()
		if cv > 0 && configNewer(int(cv), ct, p.cfgVersion, p.cfgTerm) {
			// The sender's config: a member that installed ours says so at
			// once (mongod learns it from the position update that follows).
			p.cfgVersion, p.cfgTerm = int(cv), ct
			n.notifyProgressLocked()
		}
	}
	d := bson.D{{Key: "set", Value: n.cfg.ReplSet}, {Key: "term", Value: n.term}}
	pull := false
	if n.rs == nil {
		d = append(d, bson.E{Key: "state", Value: int32(StateStartup)}, bson.E{Key: "configVersion", Value: int32(-2)},
			bson.E{Key: "configTerm", Value: int64(-1)})
		pull = from != "" && cv > 0
	} else {
		state := n.state
		d = append(d, bson.E{Key: "state", Value: int32(state)}, bson.E{Key: "configVersion", Value: int32(n.rs.Version)},
			bson.E{Key: "configTerm", Value: n.rs.Term}, bson.E{Key: "appliedOpTime", Value: n.applied.Doc()},
			bson.E{Key: "durableOpTime", Value: n.applied.Doc()}, bson.E{Key: "wallTime", Value: n.applied.Date()})
		if state == StatePrimary {
			d = append(d, bson.E{Key: "electionTime", Value: n.leaderTime})
		}
		if n.primary >= 0 {
			d = append(d, bson.E{Key: "primaryId", Value: int32(n.rs.Members[n.primary].ID)})
		}
		if src := n.syncSourceLocked(); n.state == StateSecondary && src != "" {
			d = append(d, bson.E{Key: "syncingTo", Value: src})
		}
		if cv >= 0 && configNewer(n.rs.Version, n.rs.Term, int(cv), ct) || cv < 0 {
			d = append(d, bson.E{Key: "config", Value: n.rs.Raw()})
		}
		pull = from != "" && cv > 0 && configNewer(int(cv), ct, n.rs.Version, n.rs.Term)
	}
	if checkEmpty {
		d = append(d, bson.E{Key: "hasData", Value: n.data.HasUserData() || len(n.oplog) > 0})
	}
	if pull && !n.inShutdown {
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

func (n *Node) hbStopHas(host string) (chan struct{}, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	ch, ok := n.hbStop[host]
	return ch, ok
}

// heartbeatOnceAnon heartbeats a host we do not track yet (to learn a config).
func (n *Node) heartbeatOnceAnon(host string) *peerConn {
	n.mu.Lock()
	req := n.heartbeatRequestLocked(false)
	n.mu.Unlock()
	resp, err := n.callPeer(host, req, 5*time.Second)
	if err == nil {
		n.processHeartbeatResponse(host, resp, nil, 0)
	}
	return nil
}
