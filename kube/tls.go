package kube

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// Keys of the TLS Secrets: the layout cert-manager writes
// (kubernetes.io/tls plus ca.crt), and the issuing CA's key.
const (
	TLSCertKey = corev1.TLSCertKey
	TLSKeyKey  = corev1.TLSPrivateKeyKey
	TLSCAKey   = "ca.crt"
	caKeyKey   = "ca.key"
)

// Lifetimes of what the operator issues: the member certificate lives a
// year unless Applier.CertificateLifetime says otherwise, and is renewed a
// third of its life before it expires (RenewalDue).
const (
	caValidity   = 10 * 365 * 24 * time.Hour
	certValidity = 365 * 24 * time.Hour
	// clockSkew backdates NotBefore so a member whose clock is a little
	// behind accepts a certificate issued just now.
	clockSkew = time.Hour
)

// IssuesCertificates says whether the operator issues m's member
// certificate: TLS is on and spec.tls.certificateSecretRef names none.
func IssuesCertificates(m *v1alpha1.Mgors) bool {
	return m.Spec.TLS != nil && (m.Spec.TLS.CertificateSecretRef == nil || m.Spec.TLS.CertificateSecretRef.Name == "")
}

// CertificateSecretName is the Secret holding the members' certificate
// (tls.crt, tls.key, ca.crt): the user's, or "<name>-tls" when the operator
// issues it.
func CertificateSecretName(m *v1alpha1.Mgors) string {
	if !IssuesCertificates(m) && m.Spec.TLS != nil {
		return m.Spec.TLS.CertificateSecretRef.Name
	}
	return m.Name + "-tls"
}

// CASecretName is the Secret whose ca.crt members and clients trust:
// spec.tls.caSecretRef, else the certificate Secret.
func CASecretName(m *v1alpha1.Mgors) string {
	if t := m.Spec.TLS; t != nil && t.CASecretRef != nil && t.CASecretRef.Name != "" {
		return t.CASecretRef.Name
	}
	return CertificateSecretName(m)
}

// IssuerSecretName is the Secret of the CA the operator keeps for m (ca.crt
// and ca.key) when it issues the certificates.
func IssuerSecretName(m *v1alpha1.Mgors) string { return m.Name + "-ca" }

// MemberDNSNames are the names a member or arbiter of m is reached by, in
// each form the cluster's DNS answers (pod.service.ns.svc.domain,
// pod.service.ns.svc, pod.service.ns, pod.service), for every member and
// arbiter of the spec, and the same forms with a wildcard for the pod so a
// member added later is covered by the same certificate; and the external
// DNS names spec.externalAccess.members gives (a load balancer's host name
// is not known when the certificate is issued: name it there to have it in
// the certificate).
func MemberDNSNames(m *v1alpha1.Mgors, clusterDomain string) []string {
	if clusterDomain == "" {
		clusterDomain = defaultDomain
	}
	svc := m.ServiceName()
	suffixes := []string{
		fmt.Sprintf("%s.%s.svc.%s", svc, m.Namespace, clusterDomain),
		fmt.Sprintf("%s.%s.svc", svc, m.Namespace),
		fmt.Sprintf("%s.%s", svc, m.Namespace),
		svc,
	}
	var pods []string
	for i := range members(m) {
		pods = append(pods, m.PodName(i))
	}
	for i := range m.Spec.Arbiters {
		pods = append(pods, fmt.Sprintf("%s-%d", ArbiterName(m), i))
	}
	pods = append(pods, "*")
	var names []string
	for _, p := range pods {
		for _, s := range suffixes {
			names = append(names, p+"."+s)
		}
	}
	names = append(names, ExternalHosts(m)...) // spec.externalAccess.members: clients send them as SNI
	return append(names, "localhost")
}

// NewIssuerSecret is a fresh per-cluster CA (ECDSA P-256, self-signed) in a
// Secret: ca.crt and ca.key. It lives as long as the Mgors.
func NewIssuerSecret(m *v1alpha1.Mgors, now time.Time) (*corev1.Secret, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the CA key: %w", err)
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: "mgors " + m.Namespace + "/" + m.Name + " CA"},
		NotBefore: now.Add(-clockSkew), NotAfter: now.Add(caValidity),
		IsCA: true, BasicConstraintsValid: true, MaxPathLenZero: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("signing the CA: %w", err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &corev1.Secret{
		ObjectMeta: objectMeta(m, IssuerSecretName(m), ""),
		Type:       corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			TLSCAKey: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			caKeyKey: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}),
		},
	}, nil
}

// NewCertificateSecret is the members' certificate signed by the CA in
// issuer (a Secret of NewIssuerSecret): a kubernetes.io/tls Secret with
// tls.crt, tls.key and ca.crt, valid for MemberDNSNames, for server and
// client authentication (members present it to each other).
// lifetime 0 is a year.
func NewCertificateSecret(m *v1alpha1.Mgors, issuer *corev1.Secret, clusterDomain string, now time.Time, lifetime time.Duration) (*corev1.Secret, error) {
	if lifetime <= 0 {
		lifetime = certValidity
	}
	ca, caKey, err := parseIssuer(issuer)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the member key: %w", err)
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: m.ServiceName() + "." + m.Namespace, Organization: []string{"mgors"}},
		NotBefore: now.Add(-min(clockSkew, lifetime/10)), NotAfter: now.Add(lifetime),
		DNSNames:    MemberDNSNames(m, clusterDomain),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("signing the member certificate: %w", err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &corev1.Secret{
		ObjectMeta: objectMeta(m, CertificateSecretName(m), ""),
		Type:       corev1.SecretTypeTLS,
		Data: map[string][]byte{
			TLSCertKey: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			TLSKeyKey:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}),
			TLSCAKey:   issuer.Data[TLSCAKey],
		},
	}, nil
}

func parseIssuer(issuer *corev1.Secret) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	cb, _ := pem.Decode(issuer.Data[TLSCAKey])
	kb, _ := pem.Decode(issuer.Data[caKeyKey])
	if cb == nil || kb == nil {
		return nil, nil, fmt.Errorf("the CA Secret %s holds no PEM certificate and key", issuer.Name)
	}
	ca, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("the CA Secret %s: %w", issuer.Name, err)
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, errors.New("the CA Secret " + issuer.Name + " holds no usable EC key")
	}
	return ca, key, nil
}

func serialNumber() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("generating a serial number: %w", err)
	}
	return n, nil
}

// EnsureTLS makes sure the Secrets m's members read for TLS exist: when the
// operator issues the certificate, its CA Secret and the certificate Secret
// are created if missing (an existing one is kept, as every Secret); a
// user's Secrets must hold tls.crt, tls.key and ca.crt (in the CA Secret
// when caSecretRef names one), else the result is a MissingSecretKey.
func (a *Applier) EnsureTLS(ctx context.Context, m *v1alpha1.Mgors, clusterDomain string) error {
	if m.Spec.TLS == nil {
		return nil
	}
	if !IssuesCertificates(m) {
		if CASecretName(m) != CertificateSecretName(m) {
			if _, err := a.ensureSecret(ctx, m.Namespace, CASecretName(m), userSecret(CASecretName(m)), []string{TLSCAKey}); err != nil {
				return err
			}
			_, err := a.ensureSecret(ctx, m.Namespace, CertificateSecretName(m), userSecret(CertificateSecretName(m)), []string{TLSCertKey, TLSKeyKey})
			return err
		}
		_, err := a.ensureSecret(ctx, m.Namespace, CertificateSecretName(m), userSecret(CertificateSecretName(m)), []string{TLSCertKey, TLSKeyKey, TLSCAKey})
		return err
	}
	now := time.Now()
	if _, err := a.ensureSecret(ctx, m.Namespace, IssuerSecretName(m), func() (*corev1.Secret, error) {
		return NewIssuerSecret(m, now)
	}, []string{TLSCAKey, caKeyKey}); err != nil {
		return err
	}
	_, err := a.ensureSecret(ctx, m.Namespace, CertificateSecretName(m), func() (*corev1.Secret, error) {
		issuer, err := a.Secret(ctx, m.Namespace, IssuerSecretName(m))
		if err != nil {
			return nil, fmt.Errorf("reading the CA Secret %s: %w", IssuerSecretName(m), err)
		}
		return NewCertificateSecret(m, issuer, clusterDomain, now, a.CertificateLifetime)
	}, []string{TLSCertKey, TLSKeyKey, TLSCAKey})
	return err
}

// userSecret is the build of a Secret the spec names: the operator makes
// none in a user's name, and says which one is missing.
func userSecret(name string) func() (*corev1.Secret, error) {
	return func() (*corev1.Secret, error) {
		return nil, fmt.Errorf("secret %s named in spec.tls does not exist", name)
	}
}

// Certificate is what the operator knows of a member certificate: no key.
type Certificate struct {
	Serial              string
	NotBefore, NotAfter time.Time
	// DNSNames are the names it is valid for (Lacks).
	DNSNames []string
}

// ParseCertificate reads the leaf certificate of a certificate Secret's
// tls.crt.
func ParseCertificate(sec *corev1.Secret) (Certificate, error) {
	b, _ := pem.Decode(sec.Data[TLSCertKey])
	if b == nil {
		return Certificate{}, fmt.Errorf("the Secret %s has no PEM certificate under %q", sec.Name, TLSCertKey)
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return Certificate{}, fmt.Errorf("the Secret %s: %w", sec.Name, err)
	}
	return Certificate{Serial: c.SerialNumber.Text(16), NotBefore: c.NotBefore, NotAfter: c.NotAfter, DNSNames: c.DNSNames}, nil
}

// Lacks are the names of names that the certificate does not cover, in
// their order: a name is covered as TLS clients check it (x509's
// VerifyHostname, so a member added later is covered by the wildcard), and
// a wildcard name only by itself.
func (c Certificate) Lacks(names []string) []string {
	leaf := &x509.Certificate{DNSNames: c.DNSNames}
	var lacks []string
	for _, n := range names {
		if strings.HasPrefix(n, "*.") {
			if !slices.Contains(c.DNSNames, n) {
				lacks = append(lacks, n)
			}
		} else if leaf.VerifyHostname(n) != nil {
			lacks = append(lacks, n)
		}
	}
	return lacks
}

// RenewalDue says whether a certificate is within a third of its lifetime
// of expiry at now: renewed early enough that a renewal failing for a while,
// or a rolling restart, never lets members run an expired one.
func RenewalDue(c Certificate, now time.Time) bool {
	life := c.NotAfter.Sub(c.NotBefore)
	return !now.Before(c.NotAfter.Add(-life / 3))
}

// RenewCertificate replaces the member certificate the operator issued for
// m with a new one from the same CA (a new key, the names of today's spec):
// a merge patch of the certificate Secret's data bound to resourceVersion,
// so it fails on a concurrent change instead of renewing twice. Members
// trust the same CA, so old and new certificates work together while they
// restart.
func (a *Applier) RenewCertificate(ctx context.Context, m *v1alpha1.Mgors, clusterDomain, resourceVersion string) error {
	if !IssuesCertificates(m) {
		return fmt.Errorf("the certificate Secret %s is the user's: its issuer renews it", CertificateSecretName(m))
	}
	issuer, err := a.Secret(ctx, m.Namespace, IssuerSecretName(m))
	if err != nil {
		return fmt.Errorf("reading the CA Secret %s: %w", IssuerSecretName(m), err)
	}
	fresh, err := NewCertificateSecret(m, issuer, clusterDomain, time.Now(), a.CertificateLifetime)
	if err != nil {
		return err
	}
	return a.patchSecretData(ctx, m.Namespace, CertificateSecretName(m), resourceVersion, fresh.Data)
}

// CertificateSerialAnnotation, on the copy of a Mgors the operator builds
// objects from (never on the object in the API), names the serial of the
// member certificate the members must run once it was renewed or reissued:
// the init container's environment holds it, so the pod template changes
// and a rolling restart takes the members onto the new certificate (the
// init container copies it at start; mongod reads it then).
const CertificateSerialAnnotation = "mgors.io/certificate-serial"

func certificateEnv(m *v1alpha1.Mgors) []corev1.EnvVar {
	if m.Spec.TLS == nil {
		return nil
	}
	var env []corev1.EnvVar
	if serial := m.Annotations[CertificateSerialAnnotation]; serial != "" {
		env = append(env, corev1.EnvVar{Name: "MGORS_CERTIFICATE_SERIAL", Value: serial})
	}
	if cas := m.Annotations[CABundleAnnotation]; cas != "" {
		env = append(env, corev1.EnvVar{Name: "MGORS_CA_BUNDLE", Value: cas})
	}
	return env
}
