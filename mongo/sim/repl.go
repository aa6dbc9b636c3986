package sim

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
)

func (n *Node) electionTimeout() time.Duration { return electionTimeout(n.rs) }
func (n *Node) hbInterval() time.Duration      { return hbInterval(n.rs) }
func (n *Node) hbTimeout() time.Duration       { return hbTimeout(n.rs) }

// electionTimeout, hbInterval and hbTimeout are a config's settings, or
// mongod's defaults without one.
func electionTimeout(rs *RSConfig) time.Duration {
	if rs == nil {
		return 10 * time.Second
	}
	return time.Duration(rs.ElectionTimeoutMillis) * time.Millisecond
}

func hbInterval(rs *RSConfig) time.Duration {
	if rs == nil {
		return 2 * time.Second
	}
	return time.Duration(rs.HeartbeatIntervalMillis) * time.Millisecond
}

func hbTimeout(rs *RSConfig) time.Duration {
	if rs == nil {
		return 10 * time.Second
	}
	return time.Duration(rs.HeartbeatTimeoutSecs) * time.Second
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

// canAcceptWritesLocked is mongod's canAcceptNonLocalWrites: a primary that
// has drained and is not stepping down. From the moment a stepdown starts no
// write is accepted; if the stepdown fails, writes are accepted again.
func (n *Node) canAcceptWritesLocked() bool {
	return n.state == StatePrimary && n.writable && !n.stepping && !n.inShutdown
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
	if !n.inShutdown {
		// As mongod restarts heartbeats on every config change: all members
		// hear of it now (and pull it), not at the next heartbeat interval.
		go n.kickHeartbeats()
	}
	n.logI("REPL", 21392, "New replica set config in use", func(e *zerolog.Event) {
		e.Str("set", cfg.ID).Int("version", cfg.Version).Int64("term", cfg.Term).Str("state", stateNames[n.state]).Str("prevState", stateNames[prevState])
	})
}

// forgetSelfAnswersLocked drops every isSelf answer about cfg's hosts
// before a member not in its config looks for itself again. Pods recreated
// at once swap addresses, and a name still resolving to its pod's old
// address (DNS TTL) answers wrongly either way: "not me" when the address
// now belongs to another member, and "me" when it now belongs to us. A
// stale "me" about another member's name makes two hosts map to this node,
// an error that would leave the member REMOVED for good.
func (n *Node) forgetSelfAnswersLocked(cfg *RSConfig) {
	for _, m := range cfg.Members {
		delete(n.isSelfMemo, m.Host)
	}
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
			// Our host may not have resolved yet (a pod's DNS name); look again,
			// as mongod retries isSelf on every heartbeat.
			lastSelfCheck = time.Now()
			selfChecking.Store(true)
			cfg := n.rs
			n.forgetSelfAnswersLocked(cfg)
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
		saveCommit := time.Since(lastCommitSave) > time.Second && lastPersistedCommit != n.commit
		if saveCommit {
			lastPersistedCommit, lastCommitSave = n.commit, time.Now()
		}
		n.mu.Unlock()
		if saveCommit {
			// outside the lock: hello and heartbeats never wait for an fsync
			_ = n.store.PutMeta("commit", bson.D{{Key: "optime", Value: lastPersistedCommit.Doc()}})
		}
		switch action {
		case actElect:
			n.runElection(false, "electionTimeout")
		case actElectTakeover:
			n.runElection(false, "priorityTakeover")
		case actElectCatchUpTakeover:
			n.runElection(false, "catchupTakeover")
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
	actElectCatchUpTakeover
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
		if n.stepping {
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
				if act, ok := n.catchUpTakeoverLocked(now, p); ok {
					return act
				}
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
						n.logI("ELECTION", 4615660, "Starting an election for a priority takeover", nil)
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

// noopInterval is periodicNoopIntervalSecs (10 s unless set).
func (n *Node) noopInterval() time.Duration {
	if v, ok := n.cfg.SetParameters["periodicNoopIntervalSecs"]; ok {
		if s, err := strconv.Atoi(v); err == nil && s > 0 {
			return time.Duration(s) * time.Second
		}
	}
	return 10 * time.Second
}

// catchUpTakeoverLocked decides mongod's catch-up takeover: the primary p is
// still catching up (nothing written in its term yet) and we are ahead of
// it; after catchUpTakeoverDelayMillis (-1: never) we run for election. ok
// is false when no catch-up takeover is pending.
func (n *Node) catchUpTakeoverLocked(now time.Time, p *peerState) (tickAction, bool) {
	delay := n.rs.CatchUpTakeoverDelayMillis
	if delay < 0 || p.state != StatePrimary || p.term != n.term || p.applied.T >= p.term || !p.applied.Less(n.applied) {
		n.catchUpAt = time.Time{}
		return tickIdle, false
	}
	if n.catchUpAt.IsZero() {
		n.catchUpAt = now.Add(time.Duration(delay) * time.Millisecond)
		return tickIdle, true
	}
	if now.Before(n.catchUpAt) {
		return tickIdle, true
	}
	n.catchUpAt = time.Time{}
	n.logI("ELECTION", 4615662, "Starting an election for a catchup takeover", nil)
	return actElectCatchUpTakeover, true
}
