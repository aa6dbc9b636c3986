package chaos

import (
	"time"

	"github.com/mgors/operator/actors"
	"github.com/mgors/operator/kube"
)

// noteRecovery records what a recovery event means for the checker: the
// window a ForceDecided put at risk, the claim a WipeMember deleted.
func (r *run) noteRecovery(t *target, at time.Time, e any) {
	switch e := e.(type) {
	case actors.ForceDecided:
		r.rec.h.AtRisk = append(r.rec.h.AtRisk, atRiskOf(t.key, at, e))
	case actors.ActionStarted:
		if e.Action == actors.ActWipeMember {
			r.rec.h.Wiped = append(r.rec.h.Wiped, WipedMember{At: at, Cluster: t.key, PVC: kube.DataVolume + "-" + e.Target})
		}
	}
}

// atRiskOf is the window of a ForceDecided: from the survivor's optime (its
// second) to the latest of the commit point, the furthest dropped member (the
// end of its second) and when the operator saw the loss (the survivor learns
// the first two by heartbeat: writes acknowledged just before the loss can be
// past both), or to the force when the dropped members' optimes are unknown.
func atRiskOf(cluster string, forced time.Time, f actors.ForceDecided) AtRisk {
	w := AtRisk{Cluster: cluster, Forced: forced, From: time.Unix(int64(f.SurvivorOptime.Secs), 0), To: forced}
	end := max(f.CommitPoint.Secs, f.BestMissingOptime.Secs)
	if !f.Unknown && end > 0 {
		w.To = time.Unix(int64(end)+1, 0)
		if f.LossSeen.After(w.To) {
			w.To = f.LossSeen
		}
	}
	if w.To.Before(w.From) {
		w.To = w.From
	}
	return w
}

// excuseAtRisk returns h with the operations a forced reconfig recorded at
// risk taken as unknown: an acknowledged Insert or Write of the cluster that
// may have got an optime inside the window (it ended at or after From and
// began at or before To) becomes Unknown (it may or may not survive), and a
// Read in the window becomes Failed (it may have seen a discarded write, and
// proves nothing). Everything outside every window is judged as before, and
// h itself is not changed. n counts the operations excused.
func excuseAtRisk(h *History) (out *History, n int) {
	if len(h.AtRisk) == 0 {
		return h, 0
	}
	c := *h
	c.Ops = append([]Op(nil), h.Ops...)
	for i, op := range c.Ops {
		for _, w := range h.AtRisk {
			if op.Cluster != w.Cluster || op.End.Before(w.From) || op.Start.After(w.To) {
				continue
			}
			switch {
			case op.Kind == Read && op.Outcome != Failed:
				c.Ops[i].Outcome = Failed
				n++
			case op.Kind != Read && op.Outcome == OK:
				c.Ops[i].Outcome = Unknown
				n++
			}
		}
	}
	return &c, n
}

// wiped says whether the operator recorded wiping pvc of cluster.
func wiped(h *History, cluster, pvc string) bool {
	for _, w := range h.Wiped {
		if w.Cluster == cluster && w.PVC == pvc {
			return true
		}
	}
	return false
}
