package actors

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
)

// The members' certificate (docs/design/security.md, "Renewal"):
//  1. The first certificate seen is recorded (CertificateObserved): the
//     members start with it.
//  2. A certificate the operator issued is renewed, from the same CA, once
//     it is within a third of its life of expiry (kube.RenewalDue), or once
//     it lacks a name the members are reached by (kube.Certificate.Lacks: an
//     external host added to spec.externalAccess.members, a certificate of
//     an older operator), while the set is Healthy and no TLS step runs
//     (RenewCertificate, bound to the Secret's resourceVersion; the new
//     certificate names the spec's names).
//  3. A certificate Secret that holds another certificate than recorded
//     (renewed by the operator, by the user's issuer such as cert-manager,
//     or reissued after a deletion) is recorded (CertificateRenewed, an
//     Event); the objects then name its serial, so the pod template changes
//     and the members restart onto it one at a time through the rolling
//     restart. Members trust the CA, not the certificate: old and new work
//     together during the roll.
//  4. The CAs of the CA Secret's ca.crt are recorded with the certificate;
//     when they change under running members (a CA rotation's step,
//     decide_ca.go, or the user's issuer) the change is recorded
//     (CATrustChanged, an Event) and the objects name them
//     (kube.CABundleAnnotation): the members restart onto the new ca.crt
//     one at a time. A log that predates the CAs records them with no
//     restart (CertificateObserved).

// CertificateView is the members' certificate as observed: never its key.
type CertificateView struct {
	// Secret is the certificate Secret, Version its resourceVersion.
	Secret, Version string
	// Serial is the certificate's serial number, in hexadecimal.
	Serial              string
	NotBefore, NotAfter time.Time
	// Issued is true when the operator issued it (and renews it).
	Issued bool
	// CAs are the fingerprints of the CAs of the CA Secret's ca.crt, in
	// order (kube.CAs); IssuedBy is the one whose key signed the
	// certificate, "" when none of them did.
	CAs      []string
	IssuedBy string
	// Lacks are the names the members are reached by that the certificate
	// does not cover (kube.Certificate.Lacks), in kube.MemberDNSNames' order.
	Lacks []string
}

// certificate records the members' certificate and renews the one the
// operator issued when due; true when it acted or the objects change.
func (d *decider) certificate() bool {
	c, t := d.in.Obs.Certificate, d.s.TLS
	if c == nil || !t.Known || t.Spec == nil {
		return false
	}
	switch {
	case t.Serial == "" || (t.CAs == nil && c.CAs != nil && c.Serial == t.Serial):
		d.emit(CertificateObserved{Secret: c.Secret, Serial: c.Serial, NotAfter: c.NotAfter, CAs: c.CAs})
		return false
	case c.Serial != t.Serial:
		d.emit(CertificateRenewed{Secret: c.Secret, From: t.Serial, Serial: c.Serial, NotAfter: c.NotAfter, CAs: c.CAs})
		return true // the observation predates the objects that name it
	case c.CAs != nil && !slices.Equal(c.CAs, t.CAs):
		d.emit(CATrustChanged{Secret: kube.CASecretName(d.in.Mgors), From: t.CAs, CAs: c.CAs})
		return true
	case !c.Issued || d.s.Phase != v1alpha1.PhaseHealthy || t.Stepping() || d.s.CA.Rotating():
		return false
	}
	reason := fmt.Sprintf("the members' certificate (serial %s) expires at %s: renewed in the last third of its life",
		c.Serial, c.NotAfter.UTC().Format(time.RFC3339))
	switch {
	case len(c.Lacks) > 0:
		reason = fmt.Sprintf("the members' certificate (serial %s) does not name %s: reissued with every name the members are reached by",
			c.Serial, strings.Join(c.Lacks, ", "))
	case !kube.RenewalDue(kube.Certificate{Serial: c.Serial, NotBefore: c.NotBefore, NotAfter: c.NotAfter}, d.in.Now):
		return false
	}
	d.act(Action{Kind: ActRenewCertificate, Credential: Credential{Secret: c.Secret, SecretVersion: c.Version}},
		ActionStarted{Target: c.Secret, Secret: c.Secret, SecretVersion: c.Version, Reason: reason})
	return true
}
