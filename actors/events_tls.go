package actors

import (
	"fmt"
	"slices"
	"time"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// The events of TLS turned on, off, or moved between modes on a running
// replica set (decide_tls.go, docs/design/security.md "Turning TLS on and
// off"). They name Secrets, never their data.

// TLSRoll is the TLS the members run, in the state: the objects are built
// with Spec (Running), and the pods not yet restarted still run Previous.
type TLSRoll struct {
	// Known is false until the first TLSRecorded (a log written before TLS
	// could change: the objects follow spec.tls as they did).
	Known bool `json:"known,omitempty"`
	// Spec is the spec.tls the objects are built with; nil: no TLS.
	Spec *v1alpha1.TLSSpec `json:"spec,omitempty"`
	// Previous is the mode the members ran before the step under way ("" for
	// no TLS); equal to Spec's mode when no step is under way.
	Previous string `json:"previous,omitempty"`
	// Serial is the members' certificate as last recorded (hexadecimal
	// serial number), "" before the first (decide_cert.go).
	Serial string `json:"serial,omitempty"`
	// Renewed is true once the certificate changed under running members:
	// the objects then name Serial (kube.CertificateSerialAnnotation), so
	// members restart onto each new one.
	Renewed bool `json:"renewed,omitempty"`
	// CAs are the fingerprints of the CAs the members trust (the CA
	// Secret's ca.crt) as last recorded; nil in a log that predates them.
	CAs []string `json:"cas,omitempty"`
	// CAChanged is true once the CAs changed under running members: the
	// objects then name CAs (kube.CABundleAnnotation), so members restart
	// onto each new ca.crt.
	CAChanged bool `json:"caChanged,omitempty"`
}

// Mode is the mode the objects are built with, "" for no TLS.
func (t TLSRoll) Mode() string { return tlsMode(t.Spec) }

// Stepping says whether members still restart into Spec's mode.
func (t TLSRoll) Stepping() bool { return t.Known && t.Previous != t.Mode() }

// ClientTLS says whether every member serves TLS, so the operator (and the
// status' connection string) uses it: both the mode the objects ask and the
// one the pods not yet restarted run have TLS. Meaningful once Known.
func (t TLSRoll) ClientTLS() bool { return t.Mode() != "" && t.Previous != "" }

// tlsMode is the --tlsMode a spec.tls asks, "" for none.
func tlsMode(t *v1alpha1.TLSSpec) string {
	switch {
	case t == nil:
		return ""
	case t.Mode == "":
		return "requireTLS"
	}
	return string(t.Mode)
}

// TLSRecorded records the spec.tls the members run, with no restart step
// of the mode: the mode at creation (or the first decision of a log that
// predates this event), or a new certificate or CA Secret name at the same
// mode (a rolling restart of the template follows, as for any template change).
type TLSRecorded struct {
	Spec *v1alpha1.TLSSpec `json:"spec,omitempty"`
}

// TLSStepStarted records one step of the members' --tlsMode, From → To (""
// is no TLS), toward Goal (spec.tls' mode): the objects take To and the
// members restart one at a time, secondaries first, the primary after a
// step-down. Spec is the spec.tls the objects are built with (nil for no TLS).
type TLSStepStarted struct {
	From string            `json:"from"`
	To   string            `json:"to"`
	Goal string            `json:"goal"`
	Spec *v1alpha1.TLSSpec `json:"spec,omitempty"`
}

// TLSStepFinished records that every member restarted into Mode and is
// healthy again: the next step may start.
type TLSStepFinished struct {
	Mode string `json:"mode"`
}

// ActRenewCertificate replaces the member certificate the operator issued
// with a new one from the same CA (kube.Applier.RenewCertificate), bound to
// the certificate Secret's resourceVersion.
const ActRenewCertificate ActionKind = "RenewCertificate"

// CertificateObserved records the members' certificate the first time it
// is seen (at creation, or when TLS is turned on): the members start with
// it. It also records the CAs of a log that predates them, with no restart.
type CertificateObserved struct {
	Secret   string    `json:"secret"`
	Serial   string    `json:"serial"`
	NotAfter time.Time `json:"notAfter"`
	CAs      []string  `json:"cas,omitempty"`
}

// CertificateRenewed records a new certificate in the certificate Secret
// (renewed by the operator, by the user's issuer, or reissued): the
// objects name its serial and the members restart onto it one at a time.
type CertificateRenewed struct {
	Secret   string    `json:"secret"`
	From     string    `json:"from"`
	Serial   string    `json:"serial"`
	NotAfter time.Time `json:"notAfter"`
	// CAs are the CAs trusted with it; a change from the recorded ones
	// rolls too.
	CAs []string `json:"cas,omitempty"`
}

func (TLSRecorded) Type() string         { return "TLSRecorded" }
func (TLSStepStarted) Type() string      { return "TLSStepStarted" }
func (TLSStepFinished) Type() string     { return "TLSStepFinished" }
func (CertificateObserved) Type() string { return "CertificateObserved" }
func (CertificateRenewed) Type() string  { return "CertificateRenewed" }

func init() {
	register(TLSRecorded{})
	register(TLSStepStarted{})
	register(TLSStepFinished{})
	register(CertificateObserved{})
	register(CertificateRenewed{})
}

// foldTLS folds the TLS events into the state (part of Evolve).
func foldTLS(s State, e Event) State {
	switch e := e.(type) {
	case TLSRecorded:
		s.TLS.Known, s.TLS.Spec, s.TLS.Previous = true, e.Spec.DeepCopy(), tlsMode(e.Spec)
	case TLSStepStarted:
		s.TLS.Known, s.TLS.Spec, s.TLS.Previous = true, e.Spec.DeepCopy(), e.From
	case TLSStepFinished:
		s.TLS.Previous = e.Mode
	case CertificateObserved:
		s.TLS.Serial, s.TLS.CAs = e.Serial, e.CAs
	case CertificateRenewed:
		if s.TLS.CAs != nil && e.CAs != nil && !slices.Equal(s.TLS.CAs, e.CAs) {
			s.TLS.CAChanged = true
		}
		s.TLS.Serial, s.TLS.Renewed = e.Serial, true
		if e.CAs != nil {
			s.TLS.CAs = e.CAs
		}
	case CATrustChanged:
		s.TLS.CAs, s.TLS.CAChanged = e.CAs, true
	}
	if s.TLS.Spec == nil {
		// TLS off: a certificate met later is a first one
		s.TLS.Serial, s.TLS.Renewed, s.TLS.CAs, s.TLS.CAChanged = "", false, nil, false
	}
	return s
}

// tlsAnnouncement is the Kubernetes Event of a TLS event: reason, message.
func tlsAnnouncement(e Event) (reason, message string, ok bool) {
	switch e := e.(type) {
	case TLSStepStarted:
		return e.Type(), fmt.Sprintf("TLS mode %s → %s (toward %s): members restart one at a time, secondaries first, the primary after a step-down",
			modeName(e.From), modeName(e.To), modeName(e.Goal)), true
	case TLSStepFinished:
		return e.Type(), fmt.Sprintf("every member runs TLS mode %s", modeName(e.Mode)), true
	case CertificateRenewed:
		return e.Type(), fmt.Sprintf("Secret %s holds a new certificate (serial %s, valid until %s; was serial %s): members restart onto it one at a time",
			e.Secret, e.Serial, e.NotAfter.UTC().Format(time.RFC3339), e.From), true
	}
	return "", "", false
}

// modeName names a mode for people: "no TLS" for "".
func modeName(mode string) string {
	if mode == "" {
		return "no TLS"
	}
	return mode
}
