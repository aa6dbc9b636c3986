package actors

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
)

// clientTLS is the TLS configuration of the operator's connections to m's
// members: nil without spec.tls or while members still run without it
// (PlainClientAnnotation), else one that trusts the ca.crt of the
// cluster's CA Secret (kube.CASecretName) and checks each member's host
// name (the driver sets it per host). The operator presents no certificate:
// members allow connections without one and it logs in with SCRAM or the
// keyfile. The second result identifies the CA Secret's version, so a
// changed CA makes a new client.
func (w *KubeWorld) clientTLS(ctx context.Context, m *v1alpha1.Mgors) (*tls.Config, string, error) {
	if m.Spec.TLS == nil || m.Annotations[PlainClientAnnotation] != "" {
		return nil, "", nil // no TLS, or members still without it (decide_tls.go)
	}
	name := kube.CASecretName(m)
	sec, err := w.Cache.SecretData(ctx, m.Namespace, name)
	if err != nil {
		return nil, "", &caError{fmt.Errorf("reading the CA Secret %s: %w", name, err)}
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(sec.Data[kube.TLSCAKey]) {
		return nil, "", &caError{fmt.Errorf("the Secret %s has no PEM certificate under %q", name, kube.TLSCAKey)}
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, "tls:" + name + "@" + sec.ResourceVersion, nil
}

// caError is a CA the operator cannot read: no member can be asked, whatever
// the credentials, until the Secret is there (EnsureObjects makes the
// operator's, a user's is reported by name).
type caError struct{ err error }

func (e *caError) Error() string { return e.err.Error() }
func (e *caError) Unwrap() error { return e.err }

// observeTLSSecrets reads from the cache, through get (which counts a
// missing object), the Secrets m's members need for TLS: the certificate,
// the CA when it is another Secret, and the operator's issuing CA when it
// issues. Their metadata only: whether they are there.
func (w *KubeWorld) observeTLSSecrets(m *v1alpha1.Mgors, get func(string, error) error) error {
	if m.Spec.TLS == nil {
		return nil
	}
	names := []string{kube.CertificateSecretName(m)}
	if kube.CASecretName(m) != names[0] {
		names = append(names, kube.CASecretName(m))
	}
	if kube.IssuesCertificates(m) {
		names = append(names, kube.IssuerSecretName(m))
	}
	var errs []error
	for _, name := range names {
		_, err := w.Cache.Secret(m.Namespace, name)
		errs = append(errs, get("Secret "+name, err))
	}
	return errors.Join(errs...)
}

// observeCertificate reads the member certificate's serial and life into
// o.Certificate (decide_tls.go renews it). Its data comes through
// SecretData: one GET per resourceVersion, none while it stays the same.
func (w *KubeWorld) observeCertificate(ctx context.Context, m *v1alpha1.Mgors, o *Observation) error {
	if m.Spec.TLS == nil {
		return nil
	}
	name := kube.CertificateSecretName(m)
	if _, err := w.Cache.Secret(m.Namespace, name); err != nil {
		return nil //nolint:nilerr // missing: observeTLSSecrets counted it, EnsureObjects makes it
	}
	sec, err := w.Cache.SecretData(ctx, m.Namespace, name)
	if err != nil {
		return fmt.Errorf("reading the certificate Secret %s: %w", name, err)
	}
	ca := sec
	if caName := kube.CASecretName(m); caName != name {
		if _, err := w.Cache.Secret(m.Namespace, caName); err != nil {
			return nil //nolint:nilerr // missing: observeTLSSecrets counted it
		}
		if ca, err = w.Cache.SecretData(ctx, m.Namespace, caName); err != nil {
			return fmt.Errorf("reading the CA Secret %s: %w", caName, err)
		}
	}
	o.Certificate = certificateView(m, w.ClusterDomain, sec, ca)
	return nil
}

// certificateView is what decisions need of the certificate Secret sec and
// the CA Secret ca (the same Secret unless spec.tls.caSecretRef names
// one): its version, the certificate's serial and life, whether the
// operator issued it, the CAs trusted and the one that issued it, and the
// names of m's members it lacks (kube.MemberDNSNames: m is the spec the
// members run, as for the renewal, which issues for the same names); nil when
// tls.crt cannot be read (EnsureObjects or the user's Secret check says
// why).
func certificateView(m *v1alpha1.Mgors, clusterDomain string, sec, ca *corev1.Secret) *CertificateView {
	c, err := kube.ParseCertificate(sec)
	if err != nil {
		return nil
	}
	_, cas := kube.CAs(ca.Data[kube.TLSCAKey])
	return &CertificateView{Secret: sec.Name, Version: sec.ResourceVersion, Serial: c.Serial,
		NotBefore: c.NotBefore, NotAfter: c.NotAfter, Issued: kube.IssuesCertificates(m),
		CAs: cas, IssuedBy: kube.IssuedBy(sec, ca.Data[kube.TLSCAKey]),
		Lacks: c.Lacks(kube.MemberDNSNames(m, clusterDomain))}
}
