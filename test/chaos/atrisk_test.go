package chaos

import (
	"slices"
	"testing"

	"github.com/mgors/operator/actors"
)

// A forced reconfig's recorded window excuses the acknowledged writes that may
// fall in it, and only those; a wipe the event log recorded excuses its PVC.
func TestCheckExcusesOnlyTheWritesRecordedAtRisk(t *testing.T) {
	lose := func(h *History) {
		// id 5 (25..25.1 s) acknowledged but gone; r ends at 10 although 12 was acknowledged (21..21.1 s)
		delete(h.Final[0].Present, 5)
		h.Final[0].Registers["r"] = 10
	}
	h := good()
	lose(h)
	if v := Check(h, Bounds{}); !slices.Contains(properties(v), PropertyLost) {
		t.Fatalf("no force recorded: want lost, got %v", properties(v))
	}

	h = good()
	lose(h)
	f := actors.ForceDecided{SurvivorOptime: actors.OpTime{Secs: uint32(sec(20).Unix())}, CommitPoint: actors.OpTime{Secs: uint32(sec(25).Unix())}}
	h.AtRisk = []AtRisk{atRiskOf(cA, sec(40), f)}
	if w := h.AtRisk[0]; !w.From.Equal(sec(20)) || !w.To.Equal(sec(26)) {
		t.Fatalf("window %s..%s, want 20 s..26 s", w.From, w.To)
	}
	v := Check(h, Bounds{})
	if slices.Contains(properties(v), PropertyLost) || slices.Contains(properties(v), PropertyLinearizable) {
		t.Fatalf("writes recorded at risk judged lost: %+v", v.Violations)
	}
	if v.AtRisk != 3 { // the write of 12, the read of 12, the insert of 5
		t.Errorf("excused %d operations, want 3", v.AtRisk)
	}
	if h.Ops[8].Outcome != OK {
		t.Error("Check changed the history")
	}

	// A window that ends before the lost insert leaves it lost.
	h = good()
	lose(h)
	f.CommitPoint = actors.OpTime{Secs: uint32(sec(22).Unix())}
	h.AtRisk = []AtRisk{atRiskOf(cA, sec(40), f)}
	if v := Check(h, Bounds{}); !slices.Contains(properties(v), PropertyLost) {
		t.Fatalf("an insert after the window excused: %v", properties(v))
	}
	// The loss seen after the lost insert: the window runs to it, the insert is excused.
	h = good()
	lose(h)
	f.LossSeen = sec(26)
	h.AtRisk = []AtRisk{atRiskOf(cA, sec(40), f)}
	if w := h.AtRisk[0]; !w.To.Equal(sec(26)) {
		t.Fatalf("window ends %s, want the loss seen at 26 s", w.To)
	}
	if v := Check(h, Bounds{}); slices.Contains(properties(v), PropertyLost) {
		t.Fatalf("an insert acknowledged before the loss was seen judged lost: %+v", v.Violations)
	}
	// Unknown: the window runs to the force.
	f.Unknown = true
	if w := atRiskOf(cA, sec(40), f); !w.To.Equal(sec(40)) {
		t.Errorf("unknown window ends %s, want the force", w.To)
	}

	h = good()
	h.Final[0].PVCEnd["data-a-1"] = "u9"
	h.Wiped = []WipedMember{{At: sec(30), Cluster: cA, PVC: "data-a-1"}}
	if v := Check(h, Bounds{}); !v.OK() {
		t.Fatalf("a recorded wipe judged destroyed: %+v", v.Violations)
	}
	h.Wiped[0].PVC = "data-a-0"
	if v := Check(h, Bounds{}); !slices.Contains(properties(v), PropertyDestroyed) {
		t.Fatalf("a wipe of another member excused a replaced PVC: %v", properties(v))
	}
}
