package actors

import (
	"fmt"
	"strings"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
)

// RotateKeyfileAnnotation is how a person asks for a new keyfile: its value
// is a request id of their choosing (a date, a ticket). The operator
// rotates once per value and removes the annotation when done.
const RotateKeyfileAnnotation = "mgors.io/rotate-keyfile"

// Keyfile rotation on a running replica set (docs/design/security.md,
// "Rotating the keyfile"). mongod reads its keyfile at start only; a
// keyfile may hold two keys, every key of it opens the member, and a
// member authenticates to others with the first, then the second. So:
//  1. A request (RotateKeyfileAnnotation with a value not handled before)
//     is accepted while the set is Healthy, no TLS step or upgrade runs and
//     the Secret holds one key (ApprovalAccepted, KeyfileRotationStarted);
//     a Secret of two keys is refused (a rotation by hand is under way), as
//     is the user's Secret (spec.auth.keyfileSecretRef: never written).
//  2. Three steps follow, each once the set is Healthy: the Secret is
//     written (RotateKeyfile: [old, new], then [new, old], then [new]);
//     once it holds the step's keys (KeyfileRotationStep) the objects name
//     the step (kube.KeyfileRotationAnnotation), so the members restart one
//     at a time through the rolling restart (decide_roll.go): secondaries
//     first, the primary after a step-down. When every member runs the
//     step's template and is healthy, the step is over (KeyfileStepRolled).
//     At each step every two members share a key, and the one each dials
//     with first or second is in the other's keyfile.
//  3. After the third step, KeyfileRotated; the annotation is removed.
//
// The state is a fold of these events: an operator restarted in the middle
// resumes at the step its log shows; a Secret write whose result was lost
// is settled from the Secret's keys (their fingerprints, never the keys).

// keyfile accepts a rotation request and writes its next step; true when
// it acted or the objects change (the observation predates them).
func (d *decider) keyfile() bool {
	k, o := d.s.Keyfile, d.in.Obs
	if !k.Rotating() {
		req := o.RotateKeyfile
		switch {
		case req == "":
			return false
		case d.s.Handled[RotateKeyfileAnnotation] == req:
			d.act(Action{Kind: ActRemoveAnnotation, Host: RotateKeyfileAnnotation}, ActionStarted{Target: RotateKeyfileAnnotation,
				Reason: fmt.Sprintf("the keyfile rotation %s=%s was handled; a new value asks for another", RotateKeyfileAnnotation, req)})
			return true
		case d.in.Mgors.Spec.Auth.KeyfileSecretRef != nil && d.in.Mgors.Spec.Auth.KeyfileSecretRef.Name != "":
			d.emit(ApprovalRefused{Annotation: RotateKeyfileAnnotation, Value: req, Reason: fmt.Sprintf(
				"spec.auth.keyfileSecretRef names the user's Secret %s, which the operator never writes: rotate it by hand "+
					"(two keys, a rolling restart, then the new key alone)", d.in.Mgors.KeyfileSecretName())})
			return false
		case d.s.Phase != v1alpha1.PhaseHealthy || !d.s.Initiated || d.s.TLS.Stepping() || d.s.CA.Rotating() || d.s.Upgrade != nil || o.KeyfileKeys == nil:
			return false // it starts once the set is Healthy and nothing else rolls
		case len(o.KeyfileKeys) != 1:
			d.emit(ApprovalRefused{Annotation: RotateKeyfileAnnotation, Value: req, Reason: fmt.Sprintf(
				"the keyfile Secret %s holds %d keys (%s): a rotation by hand is under way; finish it (one key) and ask again",
				d.in.Mgors.KeyfileSecretName(), len(o.KeyfileKeys), strings.Join(o.KeyfileKeys, ", "))})
			return false
		}
		d.emit(ApprovalAccepted{Annotation: RotateKeyfileAnnotation, Value: req})
		d.emit(KeyfileRotationStarted{Request: req, Old: o.KeyfileKeys[0]})
		k = d.s.Keyfile
	}
	if k.Rolling {
		return false // the members restart: recovering's finishKeyfile ends the step
	}
	next := k.Step + 1
	if next > kube.KeyfileRotationSteps {
		d.emit(KeyfileRotated{Request: k.Request, Old: k.Old, New: k.New})
		return false
	}
	if kube.KeyfileStepShape(next, o.KeyfileKeys, k.Old, k.New) {
		d.emit(KeyfileRotationStep{Request: k.Request, Step: next, Keys: o.KeyfileKeys})
		return true
	}
	if d.s.Phase != v1alpha1.PhaseHealthy {
		return false
	}
	name := d.in.Mgors.KeyfileSecretName()
	d.act(Action{Kind: ActRotateKeyfile, Host: name, Step: next, From: k.Old, To: k.New},
		ActionStarted{Target: name, Secret: name, Step: next, Reason: fmt.Sprintf("keyfile rotation %s, step %d/%d: the Secret takes %s",
			k.Request, next, kube.KeyfileRotationSteps, stepKeys(next, k))})
	return true
}

// stepKeys names the keys of step's keyfile, for people.
func stepKeys(step int, k KeyfileRoll) string {
	switch step {
	case 1:
		return fmt.Sprintf("[%s, a new key]", k.Old)
	case 2:
		return fmt.Sprintf("[%s, %s]", k.New, k.Old)
	}
	return fmt.Sprintf("[%s]", k.New)
}

// keyfileSettled says whether the Secret shows the step of the RotateKeyfile f.
func (d *decider) keyfileSettled(f *ActionStarted) bool {
	k := d.s.Keyfile
	return kube.KeyfileStepShape(f.Step, d.in.Obs.KeyfileKeys, k.Old, k.New)
}

// finishKeyfile ends a step once every member restarted onto its keyfile
// and is healthy; true while a step's roll is under way.
func (d *decider) finishKeyfile() bool {
	k := d.s.Keyfile
	return d.finishStep(k.Rolling, KeyfileStepRolled{Request: k.Request, Step: k.Step})
}

// keyfileUnfinished says what a keyfile rotation still waits for, "" when
// nothing (between steps the set is Healthy: the next step starts from there).
func (d *decider) keyfileUnfinished() string {
	if k := d.s.Keyfile; k.Rolling {
		return fmt.Sprintf("keyfile rotation %s, step %d/%d: members restart one at a time", k.Request, k.Step, kube.KeyfileRotationSteps)
	}
	return ""
}

// runningKeyfile names the rotation step the objects are built with (a copy
// of m, or m itself when none).
func runningKeyfile(m *v1alpha1.Mgors, s State) *v1alpha1.Mgors {
	t := s.Keyfile.Template
	if t == "" || m.Annotations[kube.KeyfileRotationAnnotation] == t {
		return m
	}
	out := m.DeepCopy()
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[kube.KeyfileRotationAnnotation] = t
	return out
}
