package actors

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
)

// RotateCAAnnotation is how a person asks for a new CA for the member
// certificates the operator issues: its value is a request id of their
// choosing. The operator rotates once per value and removes the annotation
// when done.
const RotateCAAnnotation = "mgors.io/rotate-ca"

// CA rotation on a running replica set (docs/design/security.md, "Rotating
// the CA"). mongod reads its CA file and certificate at start only, trusts
// every CA of the file, and presents its certificate to the members it
// dials. So:
//  1. A request (RotateCAAnnotation with a value not handled before) is
//     accepted while the set is Healthy, nothing else rolls (no TLS step,
//     keyfile rotation or upgrade) and ca.crt holds one CA, the one that
//     issued the certificate (ApprovalAccepted, CARotationStarted). The
//     user's certificates are refused: their issuer rotates them (ca.crt
//     [old, new], a certificate from new, ca.crt [new]; the operator rolls
//     the members onto each change, decide_cert.go).
//  2. Three steps follow, each once the set is Healthy: the Secrets are
//     written (RotateCA): ca.crt [old, new]; a certificate issued by new;
//     ca.crt [new]. Each write changes the trusted CAs or the certificate,
//     which decide_cert.go records (CATrustChanged, CertificateRenewed), so
//     the members restart one at a time through the rolling restart:
//     secondaries first, the primary after a step-down. Once the Secret
//     shows the step (CARotationStep) and every member runs the template
//     and is healthy, the step is over (CAStepRolled). At every moment each
//     member trusts the CA of every certificate presented to it.
//  3. After the third step, CARotated; the annotation is removed.
//
// The state is a fold of these events: an operator restarted in the middle
// resumes at the step its log shows; a write whose result was lost is
// settled from the Secret (fingerprints of CAs, never keys).

// caRotation accepts a rotation request and writes its next step; true
// when it acted or the objects change (the observation predates them).
func (d *decider) caRotation() bool {
	r, c, m := d.s.CA, d.in.Obs.Certificate, d.in.Mgors
	if !r.Rotating() {
		req := d.in.Obs.RotateCA
		switch {
		case req == "":
			return false
		case d.s.Handled[RotateCAAnnotation] == req:
			d.act(Action{Kind: ActRemoveAnnotation, Host: RotateCAAnnotation}, ActionStarted{Target: RotateCAAnnotation,
				Reason: fmt.Sprintf("the CA rotation %s=%s was handled; a new value asks for another", RotateCAAnnotation, req)})
			return true
		case m.Spec.TLS == nil:
			d.refuseCA(req, "spec.tls is not set: the members use no CA")
			return false
		case !kube.IssuesCertificates(m) || kube.CASecretName(m) != kube.CertificateSecretName(m):
			d.refuseCA(req, fmt.Sprintf("spec.tls names the user's Secrets (%s): their issuer rotates the CA "+
				"(ca.crt [old, new], then a certificate from new, then ca.crt [new]); the operator restarts the members onto each change",
				kube.CASecretName(m)))
			return false
		case d.s.Phase != v1alpha1.PhaseHealthy || !d.s.Initiated || d.s.TLS.Stepping() || d.s.Keyfile.Rotating() ||
			d.s.Upgrade != nil || c == nil || c.Serial != d.s.TLS.Serial || !slices.Equal(c.CAs, d.s.TLS.CAs):
			return false // it starts once the set is Healthy and nothing else rolls
		case len(c.CAs) != 1 || c.IssuedBy != c.CAs[0]:
			d.refuseCA(req, fmt.Sprintf("the certificate Secret %s trusts CAs [%s] and its certificate is issued by %q: a rotation by hand is under way; finish it (one CA, which issued the certificate) and ask again",
				c.Secret, strings.Join(c.CAs, ", "), c.IssuedBy))
			return false
		}
		d.emit(ApprovalAccepted{Annotation: RotateCAAnnotation, Value: req})
		d.emit(CARotationStarted{Request: req, Old: c.CAs[0]})
		r = d.s.CA
	}
	if r.Rolling {
		return false // the members restart: recovering's finishCA ends the step
	}
	next := r.Step + 1
	if next > kube.CARotationSteps {
		d.emit(CARotated{Request: r.Request, Old: r.Old, New: r.New})
		return false
	}
	if c == nil {
		return false // the certificate Secret cannot be read: EnsureObjects says why
	}
	if kube.CAStepShape(next, c.CAs, c.IssuedBy, r.Old, r.New) {
		if c.Serial != d.s.TLS.Serial || !slices.Equal(c.CAs, d.s.TLS.CAs) {
			return false // decide_cert.go records the change first: that rolls the members
		}
		d.emit(CARotationStep{Request: r.Request, Step: next, CAs: c.CAs, IssuedBy: c.IssuedBy})
		return true
	}
	if d.s.Phase != v1alpha1.PhaseHealthy {
		return false
	}
	name := kube.CertificateSecretName(m)
	d.act(Action{Kind: ActRotateCA, Host: name, Step: next, From: r.Old, To: r.New},
		ActionStarted{Target: name, Secret: name, Step: next, Reason: fmt.Sprintf("CA rotation %s, step %d/%d: %s",
			r.Request, next, kube.CARotationSteps, caStepWords(next, r))})
	return true
}

func (d *decider) refuseCA(req, why string) {
	d.emit(ApprovalRefused{Annotation: RotateCAAnnotation, Value: req, Reason: why})
}

// caStepWords says what step writes, for people.
func caStepWords(step int, r CARoll) string {
	switch step {
	case 1:
		return fmt.Sprintf("the members trust CA %s and a new CA", r.Old)
	case 2:
		return fmt.Sprintf("the members present a certificate of CA %s", r.New)
	}
	return fmt.Sprintf("the members trust CA %s alone", r.New)
}

// caSettled says whether the certificate Secret shows the step of the
// RotateCA f.
func (d *decider) caSettled(f *ActionStarted) bool {
	r, c := d.s.CA, d.in.Obs.Certificate
	return c != nil && kube.CAStepShape(f.Step, c.CAs, c.IssuedBy, r.Old, r.New)
}

// finishCA ends a step once every member restarted onto its Secret and is
// healthy; true while a step's roll is under way.
func (d *decider) finishCA() bool {
	r := d.s.CA
	return d.finishStep(r.Rolling, CAStepRolled{Request: r.Request, Step: r.Step})
}

// caUnfinished says what a CA rotation still waits for, "" when nothing
// (between steps the set is Healthy: the next step starts from there).
func (d *decider) caUnfinished() string {
	if r := d.s.CA; r.Rolling {
		return fmt.Sprintf("CA rotation %s, step %d/%d: members restart one at a time", r.Request, r.Step, kube.CARotationSteps)
	}
	return ""
}
