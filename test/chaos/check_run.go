package chaos

import (
	"sort"
	"time"
)

// checkFaults judges each fault and measures what it cost:
//   - fault-happened: a fault without evidence proves nothing (Percona's
//     check_pod_restarted, for every kind);
//   - healthy: every Mgors Healthy and current within Bounds.Healthy of the heal;
//   - Heal: the time from Healed to HealthyAt, per kind;
//   - WriteGap: per fault, the longest gap between acknowledged writes of each
//     cluster it could touch that overlaps its window (Start to HealthyAt, or to
//     Healed when it never became Healthy), per kind the longest of its clusters.
func checkFaults(h *History, b Bounds, v *Verdict) {
	heal := map[FaultKind][]time.Duration{}
	gaps := map[FaultKind][]time.Duration{}
	acked := ackedEnds(h)
	for _, f := range h.Faults {
		if !f.Happened {
			v.add(PropertyFaultHappened, f.ID, nil, "fault %d %s on %v at %s shows no effect (evidence: %q)", f.ID, f.Kind, f.Targets, at(h, f.Start), f.Evidence)
		}
		if !f.Healed.IsZero() {
			switch took := f.HealthyAt.Sub(f.Healed); {
			case f.HealthyAt.IsZero():
				v.add(PropertyHealthy, f.ID, nil, "fault %d %s on %v healed at %s: the clusters were not Healthy within %s", f.ID, f.Kind, f.Targets, at(h, f.Healed), b.Healthy)
			case took > b.Healthy:
				v.add(PropertyHealthy, f.ID, nil, "fault %d %s on %v healed at %s: Healthy only after %s (bound %s)", f.ID, f.Kind, f.Targets, at(h, f.Healed), took.Round(time.Millisecond), b.Healthy)
				heal[f.Kind] = append(heal[f.Kind], took)
			default:
				heal[f.Kind] = append(heal[f.Kind], max(took, 0))
			}
		}
		var longest time.Duration
		for _, g := range writeGaps(h, f, acked) {
			v.Gaps = append(v.Gaps, g)
			longest = max(longest, g.Len)
		}
		gaps[f.Kind] = append(gaps[f.Kind], longest)
	}
	for k, d := range heal {
		v.Heal[k] = percentiles(d)
	}
	for k, d := range gaps {
		v.WriteGap[k] = percentiles(d)
	}
}

// ackedEnds lists per cluster the End of every acknowledged Insert and Write, in order.
func ackedEnds(h *History) map[string][]time.Time {
	out := map[string][]time.Time{}
	for _, op := range h.Ops {
		if op.Outcome == OK && (op.Kind == Insert || op.Kind == Write) {
			out[op.Cluster] = append(out[op.Cluster], op.End)
		}
	}
	for c := range out {
		sort.Slice(out[c], func(i, j int) bool { return out[c][i].Before(out[c][j]) })
	}
	return out
}

// writeGaps gives, for each cluster fault f could touch, the longest gap between
// two acknowledged writes that overlaps f's window.
func writeGaps(h *History, f Fault, acked map[string][]time.Time) []Gap {
	from := f.Start
	to := f.HealthyAt
	if to.IsZero() {
		to = f.Healed
	}
	to = later(to, from)
	targets := []string{f.Cluster}
	if f.Cluster == "" {
		targets = clusters(h)
	}
	var out []Gap
	for _, c := range targets {
		ends := acked[c]
		points := make([]time.Time, 0, len(ends)+2)
		start := h.Started
		if start.IsZero() || (len(ends) > 0 && ends[0].Before(start)) {
			start = from
			if len(ends) > 0 && ends[0].Before(start) {
				start = ends[0]
			}
		}
		points = append(points, start)
		points = append(points, ends...)
		points = append(points, later(h.Ended, later(to, lastOf(ends))))
		best := Gap{Fault: f.ID, Kind: f.Kind, Cluster: c}
		// The first gap that may overlap ends at or after from.
		i := sort.Search(len(points), func(i int) bool { return !points[i].Before(from) })
		for i = max(i, 1); i < len(points) && !points[i-1].After(to); i++ {
			if d := points[i].Sub(points[i-1]); d > best.Len {
				best.From, best.To, best.Len = points[i-1], points[i], d
			}
		}
		if best.Len > 0 {
			out = append(out, best)
		}
	}
	return out
}

func lastOf(t []time.Time) time.Time {
	if len(t) == 0 {
		return time.Time{}
	}
	return t[len(t)-1]
}

// checkOperator judges what the operator did:
//   - replay: `mgorsctl replay --verify` passed for every cluster (the event log
//     has no gap and folds to the status);
//   - destroyed: no member PVC replaced or gone (its UID at the end is the UID
//     at the start, unless the event log recorded the member's wipe), no forced reconfig while a majority of voters answered
//     (it could drop acknowledged writes), no member pod deleted while no
//     operator held the Lease and no fault did it (nothing but the operator may
//     delete a member's pod).
func checkOperator(h *History, v *Verdict) {
	for _, f := range h.Final {
		if f.ReplayError != "" {
			v.add(PropertyReplay, 0, nil, "%s: mgorsctl replay --verify failed: %s", f.Cluster, f.ReplayError)
		}
		for _, pvc := range sortedKeys(f.PVCStart) {
			uid := f.PVCStart[pvc]
			switch end, ok := f.PVCEnd[pvc]; {
			case !ok:
				v.add(PropertyDestroyed, 0, nil, "%s: PVC %s (uid %s) is gone at the end", f.Cluster, pvc, uid)
			case end != uid && wiped(h, f.Cluster, pvc):
				// the operator recorded wiping this member (WipeMember)
			case end != uid:
				v.add(PropertyDestroyed, 0, nil, "%s: PVC %s was replaced: uid %s at the start, %s at the end", f.Cluster, pvc, uid, end)
			}
		}
	}
	for _, r := range h.Forced {
		if r.MajorityAnswered {
			v.add(PropertyDestroyed, 0, nil, "%s: a forced reconfig at %s while a majority of voters answered", r.Cluster, at(h, r.At))
		}
	}
	for _, d := range h.Deletions {
		if d.Fault == 0 && d.OperatorDown {
			v.add(PropertyDestroyed, 0, nil, "pod %s deleted at %s by no fault while no operator held the Lease", d.Pod, at(h, d.At))
		}
	}
}
