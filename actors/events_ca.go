package actors

import (
	"fmt"
	"strings"

	"github.com/mgors/operator/kube"
)

// The events of a rotation of the CA the operator keeps per cluster
// (decide_ca.go, docs/design/security.md "Rotating the CA"). CAs are named
// by their fingerprint (kube.Fingerprint of the certificate's DER bytes).

// CARoll is the CA rotation in the state.
type CARoll struct {
	// Request is the value of RotateCAAnnotation being acted on, "" when no
	// rotation runs.
	Request string `json:"request,omitempty"`
	// Step is the last step whose Secrets were written (0 before the
	// first): 1 trust [old, new], 2 a certificate from new, 3 trust [new].
	Step int `json:"step,omitempty"`
	// Rolling is true while the members restart onto step Step's Secret.
	Rolling bool `json:"rolling,omitempty"`
	// Old and New are the fingerprints of the CA replaced and of its
	// successor (New "" until step 1 is written).
	Old string `json:"old,omitempty"`
	New string `json:"new,omitempty"`
}

// Rotating says whether a CA rotation is under way.
func (r CARoll) Rotating() bool { return r.Request != "" }

// CARotationStarted records a person's request (the value of
// RotateCAAnnotation) accepted: the CA Old is replaced.
type CARotationStarted struct {
	Request string `json:"request"`
	Old     string `json:"old"`
}

// CARotationStep records that the certificate Secret is in step Step's
// shape (it trusts CAs, its certificate issued by IssuedBy); the members
// restart onto it one at a time (CATrustChanged or CertificateRenewed
// changed the objects).
type CARotationStep struct {
	Request  string   `json:"request"`
	Step     int      `json:"step"`
	CAs      []string `json:"cas"`
	IssuedBy string   `json:"issuedBy"`
}

// CAStepRolled records that every member restarted onto step Step's
// Secret and is healthy again.
type CAStepRolled struct {
	Request string `json:"request"`
	Step    int    `json:"step"`
}

// CARotated records the end of a CA rotation: every member trusts New
// alone and presents a certificate it issued; Old is trusted by nobody.
type CARotated struct {
	Request string `json:"request"`
	Old     string `json:"old"`
	New     string `json:"new"`
}

// CATrustChanged records that the CAs of the CA Secret's ca.crt changed
// under running members (a CA rotation's step, or a user's issuer): the
// objects name them and the members restart onto them one at a time.
type CATrustChanged struct {
	Secret string   `json:"secret"`
	From   []string `json:"from"`
	CAs    []string `json:"cas"`
}

// ActRotateCA writes one step of a CA rotation (kube.Applier.RotateCA);
// the step is ActionStarted's Step.
const ActRotateCA ActionKind = "RotateCA"

func (CARotationStarted) Type() string { return "CARotationStarted" }
func (CARotationStep) Type() string    { return "CARotationStep" }
func (CAStepRolled) Type() string      { return "CAStepRolled" }
func (CARotated) Type() string         { return "CARotated" }
func (CATrustChanged) Type() string    { return "CATrustChanged" }

func init() {
	register(CARotationStarted{})
	register(CARotationStep{})
	register(CAStepRolled{})
	register(CARotated{})
	register(CATrustChanged{})
}

// foldCA folds the CA rotation events into the state (part of Evolve).
func foldCA(s State, e Event) State {
	r := &s.CA
	switch e := e.(type) {
	case CARotationStarted:
		*r = CARoll{Request: e.Request, Old: e.Old}
	case CARotationStep:
		r.Step, r.Rolling = e.Step, true
		if e.Step == 1 && len(e.CAs) == 2 {
			r.New = e.CAs[1]
		}
	case CAStepRolled:
		r.Rolling = false
	case CARotated:
		*r = CARoll{}
	}
	return s
}

// caAnnouncement is the Kubernetes Event of a CA event: reason, message.
func caAnnouncement(e Event) (reason, message string, ok bool) {
	switch e := e.(type) {
	case CARotationStarted:
		return e.Type(), fmt.Sprintf("CA rotation %s: CA %s is replaced in %d steps, each a rolling restart",
			e.Request, e.Old, kube.CARotationSteps), true
	case CARotationStep:
		return e.Type(), fmt.Sprintf("CA rotation %s, step %d/%d: members trust CAs [%s] and present a certificate of CA %s; they restart one at a time",
			e.Request, e.Step, kube.CARotationSteps, strings.Join(e.CAs, ", "), e.IssuedBy), true
	case CARotated:
		return e.Type(), fmt.Sprintf("CA rotation %s done: every member trusts CA %s alone (was %s)", e.Request, e.New, e.Old), true
	case CATrustChanged:
		return e.Type(), fmt.Sprintf("Secret %s trusts CAs [%s] (was [%s]): members restart onto it one at a time",
			e.Secret, strings.Join(e.CAs, ", "), strings.Join(e.From, ", ")), true
	}
	return "", "", false
}
