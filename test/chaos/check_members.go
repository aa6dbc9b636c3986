package chaos

import (
	"fmt"
	"sort"
)

// checkMembers judges the member samples of each cluster:
//   - split-brain (within one replicaSetId): two members PRIMARY with the same term, or with the same
//     electionId (Raft allows one leader per term; a second means two nodes
//     could acknowledge majority writes that conflict), and a member whose term
//     goes back (a term is durable: going back means state was lost);
//   - initiated-once: the replicaSetId never changes once seen (a second
//     replSetInitiate makes a new replica set on old data), and no member's
//     config (term, version) goes back.
func checkMembers(h *History, v *Verdict) {
	byCluster := map[string][]MemberSample{}
	for _, s := range h.Members {
		if s.Error == "" {
			byCluster[s.Cluster] = append(byCluster[s.Cluster], s)
		}
	}
	for _, c := range sortedKeys(byCluster) {
		samples := byCluster[c]
		sort.SliceStable(samples, func(i, j int) bool { return samples[i].At.Before(samples[j].At) })
		for _, set := range incarnations(samples) {
			splitBrain(h, v, c, set)
		}
		initiatedOnce(h, v, c, samples)
	}
}

// incarnations splits a cluster's samples (in time order) by replica set: terms
// start again at 1 in a set initiated afresh (after every volume was lost and
// a person approved it), so one primary per term holds within one replicaSetId.
// A sample without one (the config could not be read) belongs to its member's
// last known set. A changed replicaSetId is initiated-once's to judge.
func incarnations(samples []MemberSample) [][]MemberSample {
	last := map[string]string{} // member → its last replicaSetId
	var order []string
	sets := map[string][]MemberSample{}
	for _, s := range samples {
		id := s.ReplicaSetID
		if id == "" {
			id = last[s.Member]
		}
		last[s.Member] = id
		if _, ok := sets[id]; !ok {
			order = append(order, id)
		}
		sets[id] = append(sets[id], s)
	}
	out := make([][]MemberSample, 0, len(order))
	for _, id := range order {
		out = append(out, sets[id])
	}
	return out
}

func splitBrain(h *History, v *Verdict, c string, samples []MemberSample) {
	type reign struct {
		member string
		at     MemberSample
	}
	byTerm := map[int64]reign{}
	byElection := map[string]reign{}
	reported := map[string]bool{} // one violation per term or electionId
	two := func(what string, first reign, s MemberSample) {
		if reported[what] {
			return
		}
		reported[what] = true
		v.SplitBrain++
		v.add(PropertySplitBrain, 0, nil, "%s: two primaries in %s: %s at %s and %s at %s", c, what,
			first.member, at(h, first.at.At), s.Member, at(h, s.At))
	}
	term := map[string]MemberSample{} // member → its last sample with a term
	for _, s := range samples {
		if s.State == "PRIMARY" {
			if s.Term > 0 {
				if r, ok := byTerm[s.Term]; !ok {
					byTerm[s.Term] = reign{s.Member, s}
				} else if r.member != s.Member {
					two(fmt.Sprintf("term %d", s.Term), r, s)
				}
			}
			if s.ElectionID != "" {
				if r, ok := byElection[s.ElectionID]; !ok {
					byElection[s.ElectionID] = reign{s.Member, s}
				} else if r.member != s.Member {
					two("electionId "+s.ElectionID, r, s)
				}
			}
		}
		if s.Term > 0 {
			if prev, ok := term[s.Member]; ok && s.Term < prev.Term {
				v.add(PropertySplitBrain, 0, nil, "%s: %s's term went back from %d (at %s) to %d (at %s)", c, s.Member,
					prev.Term, at(h, prev.At), s.Term, at(h, s.At))
			}
			term[s.Member] = s // a term that went back is reported once, not on every later sample
		}
	}
}

// configNewer orders replica-set configs as mongod does: by term, then
// version; a config written by a forced reconfig has no term (-1 or absent)
// and is then compared by version alone.
func configNewer(a, b MemberSample) bool {
	if a.ConfigTerm > 0 && b.ConfigTerm > 0 && a.ConfigTerm != b.ConfigTerm {
		return a.ConfigTerm > b.ConfigTerm
	}
	return a.ConfigVersion > b.ConfigVersion
}

func initiatedOnce(h *History, v *Verdict, c string, samples []MemberSample) {
	var first MemberSample
	changed := map[string]bool{}
	newest := map[string]MemberSample{} // member → its newest config so far
	for _, s := range samples {
		if s.ReplicaSetID != "" {
			if first.ReplicaSetID == "" {
				first = s
			} else if s.ReplicaSetID != first.ReplicaSetID && !changed[s.ReplicaSetID] {
				changed[s.ReplicaSetID] = true
				v.add(PropertyInitiatedOnce, 0, nil, "%s: replicaSetId changed from %s (%s at %s) to %s (%s at %s)", c,
					first.ReplicaSetID, first.Member, at(h, first.At), s.ReplicaSetID, s.Member, at(h, s.At))
			}
		}
		if s.ConfigVersion == 0 {
			continue
		}
		prev, ok := newest[s.Member]
		switch {
		case !ok || configNewer(s, prev):
			newest[s.Member] = s
		case configNewer(prev, s):
			v.add(PropertyInitiatedOnce, 0, nil, "%s: %s's config went back from term %d version %d (at %s) to term %d version %d (at %s)", c,
				s.Member, prev.ConfigTerm, prev.ConfigVersion, at(h, prev.At), s.ConfigTerm, s.ConfigVersion, at(h, s.At))
			newest[s.Member] = s // report each step back once
		}
	}
}
