package sim

import (
	"sort"
	"time"
)

// ------------------------------------------------------------ commit point

// recomputeCommitLocked advances the commit point to the writeMajority-th
// highest applied optime among voting data-bearing members, if in our term.
//
// Only a member's optime of our own term counts. An optime of a higher term
// compares greater than all of ours (terms order first) yet proves nothing:
// that member follows a newer primary and its oplog diverged from ours, so
// counting it acknowledged w:majority writes that only this primary had.
// That happened when a member that had adopted a newer term still reported
// its progress to the deposed primary through the oplog fetch, which carried
// no term (TestWriteConcernTimeoutAndMajorityReads under load: a w:majority
// write acknowledged with both secondaries frozen). The fetch now carries the
// fetcher's term, and a primary seeing a higher one steps down (sync.go).
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
		} else if p := n.peers[m.Host]; p != nil && p.applied.T == n.term {
			ops = append(ops, p.applied)
		} else {
			ops = append(ops, OpTime{})
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

// has reports whether the member has ot in its oplog: same term (a higher
// term means its history diverged from ours after ot) and at least as far.
func (p *peerState) has(ot OpTime) bool {
	return p.applied.T == ot.T && !p.applied.Less(ot)
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
		} else if p := n.peers[m.Host]; p != nil && p.has(ot) {
			cnt++
		}
	}
	return cnt
}

// freshFor: our last applied optime is within 2 seconds of the primary's
