package actors

import (
	"strings"
	"testing"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// A rotation shows in status.rotations with its step, and keeps the
// Progressing condition true while the set is Healthy between two steps;
// when it ends neither remains.
func TestStatusShowsTheRotationUnderWay(t *testing.T) {
	w, s := newCAWorld(t, true)
	w.ask("r1")
	var seen []string
	for range 300 {
		st := StatusFor(s, w.obs, w.m, "memory", "cluster.local")
		if len(st.Rotations) > 0 {
			r := st.Rotations[0]
			if r.Kind != "CA" || r.Request != "r1" || r.Message == "" {
				t.Fatalf("rotation %+v", r)
			}
			if len(seen) == 0 || seen[len(seen)-1] != r.Step {
				seen = append(seen, r.Step)
			}
			for _, c := range st.Conditions {
				if c.Type == v1alpha1.ConditionProgressing && c.Status != "True" {
					t.Fatalf("Progressing %s during the rotation (%s): %s", c.Status, s.Phase, c.Message)
				}
			}
		}
		var more bool
		if s, more = w.step(t, s); !more {
			break
		}
	}
	if got := strings.Join(seen, " "); got != "0/3 1/3 2/3 3/3" {
		t.Fatalf("steps shown: %s", got)
	}
	if st := StatusFor(s, w.obs, w.m, "memory", "cluster.local"); len(st.Rotations) != 0 {
		t.Fatalf("after the rotation: %+v", st.Rotations)
	}
}
