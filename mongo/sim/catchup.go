package sim

import (
	"sync"
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// catchUp is a new primary's catch-up phase, before it drains and takes
// writes (mongod's CatchupState): it heartbeats every member at once, takes
// the newest applied optime among the answers as its target, and fetches
// from the member that has it until it reaches the target, for at most
// settings.catchUpTimeoutMillis (-1: no limit, 0: no catch-up). So w:1
// writes that a reachable member has are kept instead of rolled back.
func (n *Node) catchUp(term int64) {
	n.logI("REPL", 21359, "Entering primary catch-up mode", nil)
	defer n.logI("REPL", 21363, "Exited primary catch-up mode", nil)
	n.mu.Lock()
	members := len(n.rs.Members)
	timeout := n.rs.CatchUpTimeoutMillis
	hosts := make([]string, 0, len(n.peers))
	for h := range n.peers {
		hosts = append(hosts, h)
	}
	n.mu.Unlock()
	if members == 1 {
		n.logI("REPL", 6015304, "Skipping primary catchup since we are the only node in the replica set.", nil)
		return
	}
	// Restart heartbeats: announces the election and collects the members' optimes.
	var wg sync.WaitGroup
	for _, h := range hosts {
		wg.Add(1)
		go func(h string) { defer wg.Done(); n.heartbeatOnce(h, nil).close() }(h)
	}
	if timeout == 0 {
		go wg.Wait()
		n.logI("REPL", 21360, "Skipping primary catchup since the catchup timeout is 0", nil)
		return
	}
	wg.Wait()
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(time.Duration(timeout) * time.Millisecond)
	}
	n.mu.Lock()
	target, src := n.applied, ""
	for h, p := range n.peers {
		if p.health == 1 && target.Less(p.applied) {
			target, src = p.applied, h
		}
	}
	if src == "" {
		n.logI("REPL", 21364, "Caught up to the latest optime known via heartbeats after becoming primary", func(e *zerolog.Event) {
			e.Dict("targetOpTime", opTimeLog(target)).Dict("myLastApplied", opTimeLog(n.applied))
		})
		n.mu.Unlock()
		return
	}
	if n.election != nil && n.election.term == term {
		n.election.catchUpTarget = target
	}
	me := n.rs.Members[n.self].Host
	n.mu.Unlock()
	n.logI("REPL", 21365, "Heartbeats updated catchup target optime", func(e *zerolog.Event) { e.Dict("targetOpTime", opTimeLog(target)).Str("syncSource", src) })
	var pc *peerConn
	defer func() { pc.close() }()
	for {
		n.mu.Lock()
		if n.state != StatePrimary || n.term != term {
			n.mu.Unlock()
			return
		}
		after := n.applied
		n.mu.Unlock()
		if !after.Less(target) {
			n.logI("REPL", 21368, "Caught up to the latest known optime successfully after becoming primary", func(e *zerolog.Event) {
				e.Dict("targetOpTime", opTimeLog(target)).Dict("myLastApplied", opTimeLog(after))
			})
			return
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			n.logI("REPL", 21361, "Catchup timed out after becoming primary", nil)
			return
		}
		if pc == nil {
			var err error
			if pc, err = n.dialPeer(src, time.Second); err != nil {
				pc = nil
				time.Sleep(100 * time.Millisecond)
				continue
			}
		}
		wait := 500 * time.Millisecond
		if !deadline.IsZero() {
			wait = max(min(wait, time.Until(deadline)), time.Millisecond)
		}
		r, err := pc.run(bson.D{{Key: "_simOplogFetch", Value: int32(1)}, {Key: "after", Value: after.Doc()},
			{Key: "applied", Value: after.Doc()}, {Key: "from", Value: me}, {Key: "term", Value: term},
			{Key: "maxWaitMS", Value: wait.Milliseconds()}, {Key: "$db", Value: "admin"}}, time.Now().Add(wait+5*time.Second))
		if err != nil {
			pc.close()
			pc = nil
			time.Sleep(100 * time.Millisecond)
			// A target member that went down no longer holds the target:
			// retarget on the members heartbeats still reach.
			n.mu.Lock()
			if p := n.peers[src]; p == nil || p.health == 0 {
				target, src = n.applied, ""
				for h, p := range n.peers {
					if p.health == 1 && target.Less(p.applied) {
						target, src = p.applied, h
					}
				}
			}
			n.mu.Unlock()
			if src == "" {
				n.logI("REPL", 21364, "Caught up to the latest optime known via heartbeats after becoming primary", nil)
				return
			}
			continue
		}
		if div, _ := r.Lookup("diverged").BooleanOK(); div {
			// The member does not have our last entry: nothing to catch up from it.
			n.logI("REPL", 21361, "Catchup timed out after becoming primary", func(e *zerolog.Event) { e.Str("reason", "sync source diverged") })
			return
		}
		n.applyCatchUp(r, term)
	}
}

// applyCatchUp appends fetched entries while we are a primary in catch-up.
func (n *Node) applyCatchUp(r bson.Raw, term int64) {
	entries, ok := batchEntries(r)
	if !ok {
		return
	}
	n.mu.Lock()
	if n.state != StatePrimary || n.term != term || n.writable {
		n.mu.Unlock()
		return
	}
	fresh := n.appendAppliedLocked(entries)
	if len(fresh) == 0 {
		n.mu.Unlock()
		return
	}
	if n.election != nil && n.election.term == term {
		n.election.catchUpOps += int64(len(fresh))
	}
	seq := n.appendSeq
	n.mu.Unlock()
	// durable before the catch-up fetches after them
	_ = n.waitDurable(seq)
}

// opTimeLog is an optime as a log attribute, { ts, t } as mongod prints it.
func opTimeLog(o OpTime) *zerolog.Event {
	return zerolog.Dict().Uint32("ts", o.TS.T).Uint32("i", o.TS.I).Int64("t", o.T)
}
