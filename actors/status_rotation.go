package actors

import (
	"fmt"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
)

// rotations are the rotations under way in s, for status.rotations: a TLS
// mode step, a keyfile rotation, a CA rotation, each with its step and
// what it waits for.
func rotations(s State) []v1alpha1.RotationStatus {
	var out []v1alpha1.RotationStatus
	if t := s.TLS; t.Stepping() {
		out = append(out, v1alpha1.RotationStatus{Kind: "TLSMode", Step: modeName(t.Previous) + " → " + modeName(t.Mode()),
			Message: "members restart one at a time into the mode"})
	}
	if k := s.Keyfile; k.Rotating() {
		out = append(out, v1alpha1.RotationStatus{Kind: "Keyfile", Request: k.Request,
			Step:    fmt.Sprintf("%d/%d", k.Step, kube.KeyfileRotationSteps),
			Message: stepMessage(k.Step, k.Rolling, kube.KeyfileRotationSteps, fmt.Sprintf("key %s is replaced", k.Old))})
	}
	if r := s.CA; r.Rotating() {
		out = append(out, v1alpha1.RotationStatus{Kind: "CA", Request: r.Request,
			Step:    fmt.Sprintf("%d/%d", r.Step, kube.CARotationSteps),
			Message: stepMessage(r.Step, r.Rolling, kube.CARotationSteps, fmt.Sprintf("CA %s is replaced", r.Old))})
	}
	return out
}

// stepMessage says where a rotation of steps steps stands.
func stepMessage(step int, rolling bool, steps int, what string) string {
	switch {
	case rolling:
		return fmt.Sprintf("%s: step %d written, members restart one at a time", what, step)
	case step == steps:
		return what + ": every step rolled, finishing"
	}
	return fmt.Sprintf("%s: step %d is written once the set is Healthy", what, step+1)
}
