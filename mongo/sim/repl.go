package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
)

func (n *Node) electionTimeout() time.Duration {
	if n.rs == nil {
		return 10 * time.Second
	}
	return time.Duration(n.rs.ElectionTimeoutMillis) * time.Millisecond
}

func (n *Node) hbInterval() time.Duration {
	if n.rs == nil {
		return 2 * time.Second
	}
	return time.Duration(n.rs.HeartbeatIntervalMillis) * time.Millisecond
}

func (n *Node) hbTimeout() time.Duration {
	if n.rs == nil {
		return 10 * time.Second
	}
	return time.Duration(n.rs.HeartbeatTimeoutSecs) * time.Second
}

// resetElectionTimerLocked schedules the next election check at
// electionTimeout plus a random offset of up to 15 %.
func (n *Node) resetElectionTimerLocked() {
	et := n.electionTimeout()
	off := n.electionOffset(et)
	n.electionAt = time.Now().Add(et + off)
}

func (n *Node) persistTermLocked() {
	if err := n.store.PutMeta("term", bson.D{{Key: "term", Value: n.term}, {Key: "votedTerm", Value: n.votedTerm},
		{Key: "votedFor", Value: int64(n.votedFor)}}); err != nil {
		n.logS("E", "REPL", 21000, "cannot persist term", func(e *zerolog.Event) { e.Str("err", err.Error()) })
	}
}

// updateTermLocked adopts a higher term; a primary steps down.
func (n *Node) updateTermLocked(t int64, why string) {
	if t <= n.term {
		return
	}
	n.term = t
	n.persistTermLocked()
	if n.state == StatePrimary {
		n.logI("REPL", 21402, "Stepping down from primary, because a new term has begun", func(e *zerolog.Event) { e.Int64("term", t).Str("reason", why) })
		n.stepDownLocked()
	}
	if n.primary == n.self {
		n.primary = -1
	}
	n.resetElectionTimerLocked()
}

func (n *Node) stepDownLocked() {
	n.state = StateSecondary
	n.writable = false
	n.stepping = false
	if n.primary == n.self {
		n.primary = -1
	}
	n.bumpTopologyLocked()
	n.notifyProgressLocked()
}

func (n *Node) notifyProgressLocked() {
	close(n.oplogCh)
	n.oplogCh = make(chan struct{})
}

// installConfigLocked makes cfg current; self is its index for us (-1 removed).
func (n *Node) installConfigLocked(cfg *RSConfig, persist bool, self ...int) {
	idx := n.self
	if len(self) > 0 {
		idx = self[0]
	}
	old := n.rs
	n.rs = cfg
	if persist {
		if err := n.store.PutMeta("config", cfg.Raw()); err != nil {
			n.logS("E", "REPL", 21001, "cannot persist config", func(e *zerolog.Event) { e.Str("err", err.Error()) })
		}
	}
	oldPrimaryHost := ""
	if old != nil && n.primary >= 0 && n.primary < len(old.Members) {
		oldPrimaryHost = old.Members[n.primary].Host
	}
	n.self = idx
	if idx >= 0 {
		n.logMember.Store(cfg.Members[idx].Host)
	}
	n.primary = -1
	for i, m := range cfg.Members {
		if m.Host == oldPrimaryHost {
			n.primary = i
		}
	}
	prevState := n.state
	switch {
	case idx < 0:
		if n.state != StateRemoved {
			n.state = StateRemoved
			n.writable = false
			go n.closeClientConns()
		}
		n.primary = -1
	case cfg.Members[idx].ArbiterOnly:
		n.state = StateArbiter
	case n.state == StatePrimary:
		if !cfg.Members[idx].Electable() {
			n.stepDownLocked()
		} else {
			n.primary = idx
		}
	case n.state == StateStartup || n.state == StateRemoved:
		if len(n.oplog) == 0 {
			n.state = StateStartup2
		} else {
			n.state = StateSecondary
		}
	}
	// Peers: one heartbeat loop per other member.
	want := map[string]bool{}
	for i, m := range cfg.Members {
		if i == idx {
			continue
		}
		want[m.Host] = true
		if n.peers[m.Host] == nil {
			n.peers[m.Host] = &peerState{host: m.Host, health: -1, state: StateUnknown}
		}
		if _, ok := n.hbStop[m.Host]; !ok && !n.inShutdown {
			stop := make(chan struct{})
			n.hbStop[m.Host] = stop
			n.bg.Add(1)
			go n.heartbeatLoop(m.Host, stop)
		}
	}
	for h, ch := range n.hbStop {
		if !want[h] {
			close(ch)
			delete(n.hbStop, h)
			delete(n.peers, h)
		}
	}
	n.resetElectionTimerLocked()
	n.bumpTopologyLocked()
	n.logI("REPL", 21392, "New replica set config in use", func(e *zerolog.Event) {
		e.Str("set", cfg.ID).Int("version", cfg.Version).Int64("term", cfg.Term).Str("state", stateNames[n.state]).Str("prevState", stateNames[prevState])
	})
}

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
		if n.state == StateSecondary && n.primary >= 0 {
			d = append(d, bson.E{Key: "syncingTo", Value: n.rs.Members[n.primary].Host})
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

// ------------------------------------------------------------------ ticks

func (n *Node) tickLoop() {
	defer n.bg.Done()
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	lastPersistedCommit := OpTime{}
	lastCommitSave := time.Now()
	lastSelfCheck := time.Now()
	var selfChecking atomic.Bool
	for {
		select {
		case <-n.quit:
			return
		case <-t.C:
		}
		n.mu.Lock()
		action := n.decideLocked(time.Now())
		if n.rs != nil && n.self < 0 && time.Since(lastSelfCheck) > 2*time.Second && !selfChecking.Load() {
			// Our host may not have resolved yet (a pod's DNS name); look again.
			lastSelfCheck = time.Now()
			selfChecking.Store(true)
			cfg := n.rs
			go func() {
				defer selfChecking.Store(false)
				if self, err := n.findSelf(cfg); err == nil && self >= 0 {
					n.mu.Lock()
					if n.rs == cfg && n.self < 0 {
						n.logI("REPL", 21394, "This node is in the config", func(e *zerolog.Event) { e.Str("host", cfg.Members[self].Host) })
						n.installConfigLocked(cfg, false, self)
					}
					n.mu.Unlock()
				}
			}()
		}
		if time.Since(lastCommitSave) > time.Second && lastPersistedCommit != n.commit {
			lastPersistedCommit, lastCommitSave = n.commit, time.Now()
			_ = n.store.PutMeta("commit", bson.D{{Key: "optime", Value: n.commit.Doc()}})
		}
		n.mu.Unlock()
		switch action {
		case actElect:
			n.runElection(false, "electionTimeout")
		case actElectTakeover:
			n.runElection(false, "priorityTakeover")
		case actElectNoDryRun:
			n.runElection(true, "electionTimeout")
		case actNoop:
			_, _ = n.writeOplog([]opSpec{{op: "n", ns: "", o: mustRaw(bson.D{{Key: "msg", Value: "periodic noop"}})}}, false)
		case actNewlyAdded:
			n.removeNewlyAdded()
		}
	}
}

type tickAction int

const (
	tickIdle tickAction = iota
	actElect
	actElectNoDryRun
	actElectTakeover
	actNoop
	actNewlyAdded
)

// decideLocked is the timer logic: elections, lost majority, no-ops,
// newlyAdded follow-up.
func (n *Node) decideLocked(now time.Time) tickAction {
	if n.rs == nil || n.self < 0 || n.inShutdown {
		return tickIdle
	}
	me := n.rs.Members[n.self]
	et := n.electionTimeout()
	switch n.state {
	case StatePrimary:
		if !n.writable {
			return tickIdle
		}
		up, total := 0, 0
		for i, m := range n.rs.Members {
			if !m.Voter() {
				continue
			}
			total += m.Votes
			if i == n.self {
				up += m.Votes
				continue
			}
			p := n.peers[m.Host]
			if p != nil && (now.Sub(p.lastOK) < et || now.Sub(n.leaderDate) < et) {
				up += m.Votes
			}
		}
		if up*2 <= total {
			n.logI("REPL", 21809, "Can't see a majority of the set, relinquishing primary", nil)
			n.stepDownLocked()
			n.resetElectionTimerLocked()
			return tickIdle
		}
		if len(n.oplog) > 0 && now.Sub(n.oplog[len(n.oplog)-1].Wall) > n.noopInterval() {
			return actNoop
		}
		for _, m := range n.rs.Members {
			if m.NewlyAdded {
				if p := n.peers[m.Host]; p != nil && p.health == 1 && (p.state == StateSecondary) && !n.configBusy {
					return actNewlyAdded
				}
			}
		}
	case StateSecondary:
		if !me.Electable() || now.Before(n.stepUntil) || n.configBusy {
			return tickIdle
		}
		voters := 0
		for _, m := range n.rs.Members {
			if m.Voter() {
				voters++
			}
		}
		if voters == 1 && me.Voter() {
			return actElectNoDryRun
		}
		if n.primary >= 0 && n.primary != n.self {
			pm := n.rs.Members[n.primary]
			p := n.peers[pm.Host]
			if p != nil && now.Sub(p.lastOK) < et {
				// Priority takeover: higher priority and fresh.
				if me.Priority > pm.Priority && p.term == n.term && freshFor(n.applied, p.applied) {
					if n.takeoverAt.IsZero() {
						rank := 0
						for _, m := range n.rs.Members {
							if m.Priority > me.Priority {
								rank++
							}
						}
						off := n.electionOffset(et)
						n.takeoverAt = now.Add(time.Duration(rank+1)*et + off)
						return tickIdle
					}
					if now.After(n.takeoverAt) {
						n.takeoverAt = time.Time{}
						n.logI("ELECTION", 21437, "Starting an election for a priority takeover", nil)
						return actElectTakeover
					}
					return tickIdle
				}
				n.takeoverAt = time.Time{}
				return tickIdle
			}
		}
		if now.After(n.electionAt) {
			n.resetElectionTimerLocked()
			return actElect
		}
	}
	return tickIdle
}

// ------------------------------------------------------------- elections

func (n *Node) voteRequestLocked(term int64, dry bool) bson.D {
	return bson.D{{Key: "replSetRequestVotes", Value: int32(1)}, {Key: "setName", Value: n.rs.ID}, {Key: "dryRun", Value: dry},
		{Key: "term", Value: term}, {Key: "candidateIndex", Value: int64(n.self)}, {Key: "candidateId", Value: int64(n.rs.Members[n.self].ID)},
		{Key: "configVersion", Value: int64(n.rs.Version)}, {Key: "configTerm", Value: n.rs.Term},
		{Key: "lastAppliedOpTime", Value: n.applied.Doc()}, {Key: "$db", Value: "admin"}}
}

// requestVotes asks every other voter and returns the votes granted (self
// included) as soon as need is reached or every voter has answered.
func (n *Node) requestVotes(req bson.D, voters []string, own, need int, timeout time.Duration) (int, int64) {
	type res struct {
		granted bool
		term    int64
	}
	ch := make(chan res, len(voters))
	for _, h := range voters {
		go func(h string) {
			r, err := n.callPeer(h, req, timeout)
			if err != nil {
				ch <- res{}
				return
			}
			g, _ := r.Lookup("voteGranted").BooleanOK()
			t, _ := r.Lookup("term").AsInt64OK()
			ch <- res{g, t}
		}(h)
	}
	votes, maxTerm := own, int64(0)
	for range voters {
		if votes >= need {
			break
		}
		r := <-ch
		if r.granted {
			votes++
		}
		maxTerm = max(maxTerm, r.term)
	}
	return votes, maxTerm
}

// runElection is the candidate side: dry run, then the real round in term+1.
// electionMetrics is replSetGetStatus' electionCandidateMetrics.
type electionMetrics struct {
	reason        string
	date          time.Time
	term          int64
	lastCommitted OpTime
	lastSeen      OpTime
	votesNeeded   int
	priority      float64
	timeoutMillis int64
	newTermDate   time.Time
	wMajorityDate time.Time
}

func (m *electionMetrics) doc() bson.D {
	d := bson.D{{Key: "lastElectionReason", Value: m.reason}, {Key: "lastElectionDate", Value: bson.NewDateTimeFromTime(m.date)},
		{Key: "electionTerm", Value: m.term}, {Key: "lastCommittedOpTimeAtElection", Value: m.lastCommitted.Doc()},
		{Key: "lastSeenOpTimeAtElection", Value: m.lastSeen.Doc()}, {Key: "numVotesNeeded", Value: int32(m.votesNeeded)},
		{Key: "priorityAtElection", Value: m.priority}, {Key: "electionTimeoutMillis", Value: m.timeoutMillis},
		{Key: "numCatchUpOps", Value: int64(0)}}
	if !m.newTermDate.IsZero() {
		d = append(d, bson.E{Key: "newTermStartDate", Value: bson.NewDateTimeFromTime(m.newTermDate)})
	}
	if !m.wMajorityDate.IsZero() {
		d = append(d, bson.E{Key: "wMajorityWriteAvailabilityDate", Value: bson.NewDateTimeFromTime(m.wMajorityDate)})
	}
	return d
}

// runElection is the candidate side: dry run, then the real round in term+1.
// reason is recorded as electionCandidateMetrics.lastElectionReason.
func (n *Node) runElection(skipDryRun bool, reason string) bool {
	n.mu.Lock()
	if n.rs == nil || n.self < 0 || n.state != StateSecondary || !n.rs.Members[n.self].Electable() {
		n.mu.Unlock()
		return false
	}
	var voters []string
	for i, m := range n.rs.Members {
		if i != n.self && m.Voter() {
			voters = append(voters, m.Host)
		}
	}
	_, need, _, _ := n.rs.Majorities()
	own := n.rs.Members[n.self].Votes
	timeout := min(n.hbTimeout(), max(n.electionTimeout(), time.Second))
	term := n.term
	dryReq := n.voteRequestLocked(term+1, true)
	n.mu.Unlock()
	if !skipDryRun && len(voters) > 0 {
		n.logI("ELECTION", 21435, "Conducting a dry run election to see if we could be elected", func(e *zerolog.Event) { e.Int64("currentTerm", term) })
		votes, maxTerm := n.requestVotes(dryReq, voters, own, need, timeout)
		n.mu.Lock()
		if maxTerm > n.term {
			n.updateTermLocked(maxTerm, "dry run saw a higher term")
		}
		n.mu.Unlock()
		if votes < need {
			n.logI("ELECTION", 21444, "Not running for primary, we received insufficient votes in the dry run", func(e *zerolog.Event) { e.Int("votes", votes).Int("needed", need) })
			return false
		}
	}
	n.mu.Lock()
	if n.term != term || n.state != StateSecondary {
		n.mu.Unlock()
		return false
	}
	n.term++
	term = n.term
	n.votedTerm, n.votedFor = term, n.rs.Members[n.self].ID
	n.persistTermLocked()
	req := n.voteRequestLocked(term, false)
	n.mu.Unlock()
	n.logI("ELECTION", 21438, "Conducting an election to become primary", func(e *zerolog.Event) { e.Int64("term", term) })
	votes, maxTerm := n.requestVotes(req, voters, own, need, timeout)
	n.mu.Lock()
	if maxTerm > n.term {
		n.updateTermLocked(maxTerm, "vote responses saw a higher term")
	}
	if votes < need || n.term != term || n.state != StateSecondary {
		n.mu.Unlock()
		n.logI("ELECTION", 21447, "Lost election", func(e *zerolog.Event) { e.Int("votes", votes).Int("needed", need).Int64("term", term) })
		return false
	}
	n.logI("ELECTION", 21450, "Election succeeded, assuming primary role", func(e *zerolog.Event) { e.Int64("term", term) })
	n.election = &electionMetrics{reason: reason, date: time.Now(), term: term, lastCommitted: n.commit, lastSeen: n.applied,
		votesNeeded: need, priority: n.rs.Members[n.self].Priority, timeoutMillis: n.rs.ElectionTimeoutMillis}
	n.state = StatePrimary
	n.primary = n.self
	n.writable = false
	n.leaderDate = time.Now()
	n.leaderTime = n.nextTSLocked()
	n.lastTS = n.leaderTime
	n.bumpTopologyLocked()
	// Step-up term bump of the config (spec §6.2), version unchanged.
	cfg := n.rs.Clone()
	cfg.Term = term
	n.rs = cfg
	_ = n.store.PutMeta("config", cfg.Raw())
	n.mu.Unlock()
	n.kickHeartbeats()
	_, err := n.writeOplog([]opSpec{{op: "n", o: mustRaw(bson.D{{Key: "msg", Value: "new primary"}})}}, true)
	n.mu.Lock()
	if err == nil && n.state == StatePrimary && n.term == term {
		n.writable = true
		if n.election != nil {
			n.election.newTermDate = time.Now()
		}
		n.recomputeCommitLocked()
		n.bumpTopologyLocked()
		n.logI("REPL", 21331, "Transition to primary complete; database writes are now permitted", func(e *zerolog.Event) { e.Int64("term", term) })
	}
	n.mu.Unlock()
	return true
}

// cmdReplSetRequestVotes is the voter side (spec §8.4).
func (c *conn) cmdReplSetRequestVotes(req *Request) (bson.D, error) {
	n := c.n
	c.internal.Store(true)
	b := req.Body
	set, _ := b.Lookup("setName").StringValueOK()
	dry, _ := b.Lookup("dryRun").BooleanOK()
	term, _ := b.Lookup("term").AsInt64OK()
	cid, _ := b.Lookup("candidateId").AsInt64OK()
	cv, _ := b.Lookup("configVersion").AsInt64OK()
	ct, _ := b.Lookup("configTerm").AsInt64OK()
	last := parseOpTime(b.Lookup("lastAppliedOpTime"))
	n.mu.Lock()
	defer n.mu.Unlock()
	reply := func(granted bool, reason string) (bson.D, error) {
		n.logI("ELECTION", 5972100, "Responding to vote request", func(e *zerolog.Event) {
			e.Bool("dryRun", dry).Int64("term", term).Int64("candidateId", cid).Bool("voteGranted", granted).Str("reason", reason)
		})
		return bson.D{{Key: "term", Value: n.term}, {Key: "voteGranted", Value: granted}, {Key: "reason", Value: reason}}, nil
	}
	if n.rs == nil {
		return nil, cerr(94, "no replset config has been received")
	}
	if set != n.rs.ID {
		return reply(false, fmt.Sprintf("candidate's set name (%s) differs from mine (%s)", set, n.rs.ID))
	}
	if term < n.term {
		return reply(false, fmt.Sprintf("candidate's term (%d) is lower than mine (%d)", term, n.term))
	}
	if configNewer(n.rs.Version, n.rs.Term, int(cv), ct) {
		return reply(false, fmt.Sprintf("candidate's config with {version: %d, term: %d} is older than mine with {version: %d, term: %d}", cv, ct, n.rs.Version, n.rs.Term))
	}
	if last.Less(n.applied) {
		return reply(false, fmt.Sprintf("candidate's data is staler than mine. candidate's last applied OpTime: { ts: Timestamp(%d, %d), t: %d }, my last applied OpTime: { ts: Timestamp(%d, %d), t: %d }",
			last.TS.T, last.TS.I, last.T, n.applied.TS.T, n.applied.TS.I, n.applied.T))
	}
	if dry {
		return reply(true, "")
	}
	if term > n.term {
		n.updateTermLocked(term, "vote request with higher term")
	}
	if n.votedTerm == term && n.votedFor != int(cid) {
		return reply(false, fmt.Sprintf("already voted for another candidate (%d) this term (%d)", n.votedFor, term))
	}
	n.votedTerm, n.votedFor = term, int(cid)
	n.persistTermLocked()
	n.resetElectionTimerLocked()
	return reply(true, "")
}

// ------------------------------------------------------------ commit point

// recomputeCommitLocked advances the commit point to the writeMajority-th
// highest applied optime among voting data-bearing members, if in our term.
func (n *Node) recomputeCommitLocked() {
	if n.rs == nil || n.self < 0 || n.state != StatePrimary {
		return
	}
	_, _, _, wm := n.rs.Majorities()
	var ops []OpTime
	for i, m := range n.rs.Members {
		if !m.Voter() || m.ArbiterOnly {
			continue
		}
		if i == n.self {
			ops = append(ops, n.applied)
		} else if p := n.peers[m.Host]; p != nil {
			ops = append(ops, p.applied)
		}
	}
	if len(ops) < wm || wm == 0 {
		return
	}
	sort.Slice(ops, func(i, j int) bool { return ops[j].Less(ops[i]) })
	cand := ops[wm-1]
	if cand.T == n.term && n.commit.Less(cand) {
		n.advanceCommitLocked(cand)
		if n.election != nil && n.election.term == n.term && n.election.wMajorityDate.IsZero() {
			n.election.wMajorityDate = time.Now()
		}
	}
}

// advanceCommitLocked moves the commit point and the majority-committed view.
func (n *Node) advanceCommitLocked(ot OpTime) {
	if ot.Less(n.commit) || ot == n.commit {
		return
	}
	if n.applied.Less(ot) {
		ot = n.applied
	}
	n.commit = ot
	for n.commitIdx < len(n.oplog) && !ot.Less(n.oplog[n.commitIdx].OpTime()) {
		n.committed.Apply(n.oplog[n.commitIdx])
		n.commitIdx++
	}
	n.notifyProgressLocked()
}

// membersAppliedLocked counts data-bearing members whose applied optime
// reached ot (self included).
func (n *Node) membersAppliedLocked(ot OpTime, votersOnly bool) int {
	cnt := 0
	for i, m := range n.rs.Members {
		if m.ArbiterOnly || votersOnly && !m.Voter() {
			continue
		}
		if i == n.self {
			if !n.applied.Less(ot) {
				cnt++
			}
		} else if p := n.peers[m.Host]; p != nil && !p.applied.Less(ot) {
			cnt++
		}
	}
	return cnt
}

// freshFor: our last applied optime is within 2 seconds of the primary's
// (priorityTakeoverFreshnessWindowSeconds), in the same term.
func freshFor(mine, primary OpTime) bool {
	if primary.IsZero() {
		return true
	}
	return mine.T == primary.T && int64(mine.TS.T)+2 >= int64(primary.TS.T)
}

// electionOffset is the random part of the election timer: up to
// replElectionTimeoutOffsetLimitFraction (0.15) of the election timeout.
func (n *Node) electionOffset(et time.Duration) time.Duration {
	frac := 0.15
	if v, ok := n.cfg.SetParameters["replElectionTimeoutOffsetLimitFraction"]; ok {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 {
			frac = f
		}
	}
	return time.Duration(rand.Int64N(int64(float64(et)*frac) + 1))
}

// noopInterval is periodicNoopIntervalSecs (10 s unless set).
func (n *Node) noopInterval() time.Duration {
	if v, ok := n.cfg.SetParameters["periodicNoopIntervalSecs"]; ok {
		if s, err := strconv.Atoi(v); err == nil && s > 0 {
			return time.Duration(s) * time.Second
		}
	}
	return 10 * time.Second
}
