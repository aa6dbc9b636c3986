package sim

import (
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
)

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
			if p := n.peers[m.Host]; p != nil && p.health == 1 && p.state == StateSecondary && p.has(n.applied) && m.Priority > best {
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
