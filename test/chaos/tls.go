package chaos

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
)

// RotateCA is a CA rotation asked of the operator (actors.RotateCAAnnotation)
// under the workload: a fault of scenarios (test/recovery), not of the
// seeded schedule, so it is not in FaultKinds.
const RotateCA FaultKind = "rotate-ca"

// trustPeriod is how often a TLS target's trusted CAs are read again.
const trustPeriod = 2 * time.Second

// trust is what the clients of a Mgors with spec.tls verify its members
// against: the CAs of its CA Secret's ca.crt. It follows the Secret, as an
// application that re-reads the mounted ca.crt does, so a CA rotation
// (ca.crt [old, new], a certificate of new, ca.crt [new]) is seen by the
// clients as by the members: connections opened after a change verify
// against the CAs as written.
type trust struct {
	ns, secret string
	// pool is the current set of CAs, fps their fingerprints (for the log:
	// a change of trust is an event of the run).
	pool atomic.Pointer[x509.CertPool]
	fps  atomic.Pointer[[]string]
}

// newTrust reads the CAs of m's CA Secret; nil when m has no spec.tls (its
// clients connect without TLS).
func (r *run) newTrust(ctx context.Context, m *v1alpha1.Mgors) (*trust, error) {
	if m.Spec.TLS == nil {
		return nil, nil //nolint:nilnil // no TLS: no trust to follow
	}
	tr := &trust{ns: m.Namespace, secret: kube.CASecretName(m)}
	if _, err := tr.refresh(ctx, r); err != nil {
		return nil, err
	}
	return tr, nil
}

// refresh reads the CA Secret and makes its CAs the trusted ones; true when
// they changed.
func (tr *trust) refresh(ctx context.Context, r *run) (bool, error) {
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := r.kube.CoreV1().Secrets(tr.ns).Get(gctx, tr.secret, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("CA Secret %s/%s: %w", tr.ns, tr.secret, err)
	}
	certs, fps := kube.CAs(s.Data[kube.TLSCAKey])
	if len(certs) == 0 {
		return false, fmt.Errorf("CA Secret %s/%s: no certificate under %s", tr.ns, tr.secret, kube.TLSCAKey)
	}
	if old := tr.fps.Load(); old != nil && slices.Equal(*old, fps) {
		return false, nil
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	tr.pool.Store(pool)
	tr.fps.Store(&fps)
	return true, nil
}

// CAs are the fingerprints of the CAs trusted now.
func (tr *trust) CAs() []string {
	if p := tr.fps.Load(); p != nil {
		return *p
	}
	return nil
}

// follow refreshes t's trusted CAs every trustPeriod until ctx ends.
func (r *run) follow(ctx context.Context, t *target) {
	tick := time.NewTicker(trustPeriod)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		changed, err := t.trust.refresh(ctx, r)
		switch {
		case err != nil && ctx.Err() == nil:
			r.log.Warn().Err(err).Str("cluster", t.key).Msg("trusted CAs not read; keeping the previous")
		case changed:
			r.log.Info().Str("cluster", t.key).Str("cas", strings.Join(t.trust.CAs(), ",")).Msg("trusted CAs changed")
		}
	}
}

// config is the TLS configuration of every client of the target. The
// verification is VerifyConnection's, against the pool current at the
// handshake, so a client made before a rotation trusts what ca.crt holds
// when it connects: the driver clones the configuration per connection
// and names the member dialed as ServerName.
func (tr *trust) config() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// The chain and the name are verified by verify against the CAs
		// current at the handshake; the standard verification would use the
		// pool fixed when the client was made.
		InsecureSkipVerify: true, //nolint:gosec // verified in VerifyConnection
		VerifyConnection:   tr.verify,
	}
}

// verify checks a member's certificate chain against the CAs trusted now
// and its name against the host dialed.
func (tr *trust) verify(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("the member presented no certificate")
	}
	if cs.ServerName == "" {
		return errors.New("no server name to verify the member's certificate against")
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: tr.pool.Load(), Intermediates: inter,
		DNSName: cs.ServerName, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	if err != nil {
		return fmt.Errorf("member %s against the CAs %s: %w", cs.ServerName, strings.Join(tr.CAs(), ","), err)
	}
	return nil
}
