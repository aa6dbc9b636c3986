package kube

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// CA rotation (docs/design/security.md, "Rotating the CA"): members trust
// every CA of their ca.crt, so the CA the operator keeps per cluster is
// replaced in three writes, each followed by a rolling restart:
//  1. ca.crt holds [old, new]: every member comes to trust both;
//  2. the member certificate is issued by new (ca.crt unchanged): members
//     present it one at a time, and all of them trust it;
//  3. ca.crt holds [new]: old is trusted by nobody.
//
// The new CA waits in the issuer Secret under next.crt/next.key from step
// 1 until step 2 makes it the issuer (ca.crt/ca.key). CAs are named by the
// fingerprint of their DER bytes (Fingerprint), never shown.

// CARotationSteps is the number of Secret writes of a CA rotation.
const CARotationSteps = 3

// Keys of the issuer Secret that hold the CA a rotation brings in, between
// step 1 and step 2.
const (
	nextCAKey    = "next.crt"
	nextCAKeyKey = "next.key"
)

// CABundleAnnotation, on the copy of a Mgors the operator builds objects
// from (never on the object in the API), names the fingerprints of the CAs
// the members must trust once they changed under running members: the init
// container's environment holds them, so the pod template changes and a
// rolling restart takes the members onto the ca.crt as written.
const CABundleAnnotation = "mgors.io/ca-bundle"

// Fingerprint is a short public name of some bytes (a key, a certificate's
// DER): the first 8 hexadecimal digits of their SHA-256, for events and
// logs.
func Fingerprint(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])[:8]
}

// CAs are the certificates of a PEM bundle (a ca.crt), in order, with
// their fingerprints; blocks that are not certificates are skipped.
func CAs(bundle []byte) ([]*x509.Certificate, []string) {
	var certs []*x509.Certificate
	var fps []string
	for rest := bundle; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return certs, fps
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			continue
		}
		certs, fps = append(certs, c), append(fps, Fingerprint(b.Bytes))
	}
}

// IssuedBy is the fingerprint of the CA of bundle whose key signed the
// certificate Secret sec's leaf, "" when none did.
func IssuedBy(sec *corev1.Secret, bundle []byte) string {
	b, _ := pem.Decode(sec.Data[TLSCertKey])
	if b == nil {
		return ""
	}
	leaf, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return ""
	}
	cas, fps := CAs(bundle)
	for i, ca := range cas {
		if leaf.CheckSignatureFrom(ca) == nil {
			return fps[i]
		}
	}
	return ""
}

// CAStepShape says whether a certificate Secret whose ca.crt holds the CAs
// fps, and whose certificate was issued by issuedBy, is in the shape of CA
// rotation step (1: [old, any] issued by old, 2: [old, next] issued by
// next, 3: [next] issued by next) from old to next ("" until step 1 is
// written).
func CAStepShape(step int, fps []string, issuedBy, old, next string) bool {
	switch step {
	case 1:
		return len(fps) == 2 && fps[0] == old && fps[1] != old && (next == "" || fps[1] == next) && issuedBy == old
	case 2:
		return slices.Equal(fps, []string{old, next}) && issuedBy == next
	case 3:
		return slices.Equal(fps, []string{next}) && issuedBy == next
	}
	return false
}

// RotateCA writes step of the rotation of the CA the operator keeps for m,
// from the CA whose fingerprint is old to next ("" at step 1, where the new
// CA is generated). A certificate Secret already in the step's shape is
// left alone (a write whose result was lost); one in another shape is an
// error that names fingerprints only. Every write is a merge patch bound to
// the resourceVersion read.
func (a *Applier) RotateCA(ctx context.Context, m *v1alpha1.Mgors, clusterDomain string, step int, old, next string) error {
	if !IssuesCertificates(m) || CASecretName(m) != CertificateSecretName(m) {
		return fmt.Errorf("the CA of Secret %s is the user's: its issuer rotates it", CASecretName(m))
	}
	name := CertificateSecretName(m)
	sec, err := a.Secret(ctx, m.Namespace, name)
	if err != nil {
		return fmt.Errorf("reading the certificate Secret %s: %w", name, err)
	}
	certs, fps := CAs(sec.Data[TLSCAKey])
	by := IssuedBy(sec, sec.Data[TLSCAKey])
	if CAStepShape(step, fps, by, old, next) {
		return nil
	}
	issuer, err := a.Secret(ctx, m.Namespace, IssuerSecretName(m))
	if err != nil {
		return fmt.Errorf("reading the CA Secret %s: %w", IssuerSecretName(m), err)
	}
	switch {
	case step == 1 && slices.Equal(fps, []string{old}) && by == old:
		incoming, err := a.nextCA(ctx, m, issuer, old)
		if err != nil {
			return err
		}
		return a.patchSecretData(ctx, m.Namespace, name, sec.ResourceVersion, map[string][]byte{
			TLSCAKey: bytes.Join([][]byte{pemOf(certs[0]), incoming}, nil)})
	case step == 2 && slices.Equal(fps, []string{old, next}) && by == old:
		if issuer, err = a.promoteCA(ctx, issuer, old, next); err != nil {
			return err
		}
		fresh, err := NewCertificateSecret(m, issuer, clusterDomain, time.Now(), a.CertificateLifetime)
		if err != nil {
			return err
		}
		return a.patchSecretData(ctx, m.Namespace, name, sec.ResourceVersion, map[string][]byte{
			TLSCertKey: fresh.Data[TLSCertKey], TLSKeyKey: fresh.Data[TLSKeyKey]})
	case step == 3 && slices.Equal(fps, []string{old, next}) && by == next:
		if _, ifps := CAs(issuer.Data[TLSCAKey]); !slices.Equal(ifps, []string{next}) {
			return fmt.Errorf("the CA Secret %s issues with CA %s, not %s: step 2 of the rotation did not finish", issuer.Name, strings.Join(ifps, ","), next)
		}
		return a.patchSecretData(ctx, m.Namespace, name, sec.ResourceVersion, map[string][]byte{TLSCAKey: pemOf(certs[1])})
	}
	return fmt.Errorf("certificate Secret %s trusts CAs %s and is issued by %q: not the Secret before step %d of the CA rotation from %s to %s",
		name, strings.Join(fps, ","), by, step, old, next)
}

// nextCA is the PEM certificate of the CA a rotation from old brings in:
// the one the issuer Secret keeps under next.crt, else a new one written
// there first (bound to the Secret's resourceVersion), so a crash between
// two writes never makes a second.
func (a *Applier) nextCA(ctx context.Context, m *v1alpha1.Mgors, issuer *corev1.Secret, old string) ([]byte, error) {
	if _, fps := CAs(issuer.Data[TLSCAKey]); !slices.Equal(fps, []string{old}) {
		return nil, fmt.Errorf("the CA Secret %s issues with CA %s, not %s", issuer.Name, strings.Join(fps, ","), old)
	}
	if _, fps := CAs(issuer.Data[nextCAKey]); len(fps) == 1 && len(issuer.Data[nextCAKeyKey]) > 0 {
		return issuer.Data[nextCAKey], nil
	}
	fresh, err := NewIssuerSecret(m, time.Now())
	if err != nil {
		return nil, err
	}
	if err := a.patchSecretData(ctx, m.Namespace, issuer.Name, issuer.ResourceVersion, map[string][]byte{
		nextCAKey: fresh.Data[TLSCAKey], nextCAKeyKey: fresh.Data[caKeyKey]}); err != nil {
		return nil, err
	}
	return fresh.Data[TLSCAKey], nil
}

// promoteCA makes the CA waiting under next.crt (fingerprint next) the one
// the issuer Secret issues with; an issuer that already issues with next is
// returned as is. It returns the issuer as written.
func (a *Applier) promoteCA(ctx context.Context, issuer *corev1.Secret, old, next string) (*corev1.Secret, error) {
	_, cur := CAs(issuer.Data[TLSCAKey])
	if slices.Equal(cur, []string{next}) {
		return issuer, nil
	}
	if _, waiting := CAs(issuer.Data[nextCAKey]); !slices.Equal(cur, []string{old}) || !slices.Equal(waiting, []string{next}) {
		return nil, fmt.Errorf("the CA Secret %s issues with CA %s and keeps %s waiting: not the CA %s the rotation brings in",
			issuer.Name, strings.Join(cur, ","), strings.Join(waiting, ","), next)
	}
	out := issuer.DeepCopy()
	out.Data[TLSCAKey], out.Data[caKeyKey] = issuer.Data[nextCAKey], issuer.Data[nextCAKeyKey]
	delete(out.Data, nextCAKey)
	delete(out.Data, nextCAKeyKey)
	err := a.patchSecretData(ctx, issuer.Namespace, issuer.Name, issuer.ResourceVersion, map[string][]byte{
		TLSCAKey: out.Data[TLSCAKey], caKeyKey: out.Data[caKeyKey], nextCAKey: nil, nextCAKeyKey: nil})
	return out, err
}

// patchSecretData merges data into a Secret's data (a nil value removes
// the key), bound to resourceVersion: it fails on a concurrent change. A
// merge patch, as the operator's role may patch Secrets, not update them.
func (a *Applier) patchSecretData(ctx context.Context, namespace, name, resourceVersion string, data map[string][]byte) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": resourceVersion}, "data": data})
	if err != nil {
		return err
	}
	_, err = bounded(ctx, a, func(ctx context.Context) (*corev1.Secret, error) {
		return a.Client.CoreV1().Secrets(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	})
	return err
}

func pemOf(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}
