package sim

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
)

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
	priorPrimary  int // member id of the primary we replaced, -1 unknown
	catchUpTarget OpTime
	catchUpOps    int64
}

func (m *electionMetrics) doc() bson.D {
	d := bson.D{{Key: "lastElectionReason", Value: m.reason}, {Key: "lastElectionDate", Value: bson.NewDateTimeFromTime(m.date)},
		{Key: "electionTerm", Value: m.term}, {Key: "lastCommittedOpTimeAtElection", Value: m.lastCommitted.Doc()},
		{Key: "lastSeenOpTimeAtElection", Value: m.lastSeen.Doc()}, {Key: "numVotesNeeded", Value: int32(m.votesNeeded)},
		{Key: "priorityAtElection", Value: m.priority}, {Key: "electionTimeoutMillis", Value: m.timeoutMillis}}
	if m.priorPrimary >= 0 {
		d = append(d, bson.E{Key: "priorPrimaryMemberId", Value: int32(m.priorPrimary)})
	}
	if !m.catchUpTarget.IsZero() {
		d = append(d, bson.E{Key: "targetCatchupOpTime", Value: m.catchUpTarget.Doc()})
	}
	d = append(d, bson.E{Key: "numCatchUpOps", Value: m.catchUpOps})
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
	prior := -1
	if n.primary >= 0 && n.primary != n.self {
		prior = n.rs.Members[n.primary].ID
	}
	n.election = &electionMetrics{reason: reason, date: time.Now(), term: term, lastCommitted: n.commit, lastSeen: n.applied, priorPrimary: prior,
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
	n.catchUp(term)
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
		if !dry && n.rs != nil && n.self >= 0 {
			n.voted = &voteMetrics{granted: granted, term: term, date: time.Now(), candidate: int(cid), reason: reason,
				lastApplied: n.applied, maxApplied: n.maxAppliedInSetLocked(), priority: n.rs.Members[n.self].Priority}
		}
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

// voteMetrics is replSetGetStatus' electionParticipantMetrics: the last
// real (not dry-run) vote request this member answered.
type voteMetrics struct {
	granted        bool
	term           int64
	date           time.Time
	candidate      int
	reason         string
	lastApplied    OpTime
	maxApplied     OpTime
	priority       float64
	newTermStart   time.Time // wall time of the new term's first entry
	newTermApplied time.Time // when we applied it
}

func (m *voteMetrics) doc() bson.D {
	d := bson.D{{Key: "votedForCandidate", Value: m.granted}, {Key: "electionTerm", Value: m.term},
		{Key: "lastVoteDate", Value: bson.NewDateTimeFromTime(m.date)}, {Key: "electionCandidateMemberId", Value: int32(m.candidate)},
		{Key: "voteReason", Value: m.reason}, {Key: "lastAppliedOpTimeAtElection", Value: m.lastApplied.Doc()},
		{Key: "maxAppliedOpTimeInSet", Value: m.maxApplied.Doc()}, {Key: "priorityAtElection", Value: m.priority}}
	if !m.newTermApplied.IsZero() {
		d = append(d, bson.E{Key: "newTermStartDate", Value: bson.NewDateTimeFromTime(m.newTermStart)},
			bson.E{Key: "newTermAppliedDate", Value: bson.NewDateTimeFromTime(m.newTermApplied)})
	}
	return d
}

// noteAppliedLocked records, for electionParticipantMetrics, when we applied
// the first entry of the term we voted in.
func (n *Node) noteAppliedLocked(e OplogEntry) {
	if m := n.voted; m != nil && m.granted && e.T == m.term && m.newTermApplied.IsZero() {
		m.newTermStart, m.newTermApplied = e.Wall, time.Now()
	}
}

// maxAppliedInSetLocked is the newest applied optime we know of, ours included.
func (n *Node) maxAppliedInSetLocked() OpTime {
	best := n.applied
	for _, p := range n.peers {
		if best.Less(p.applied) {
			best = p.applied
		}
	}
	return best
}
