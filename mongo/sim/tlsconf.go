package sim

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
)

// errHandshake is a failed TLS handshake of an accepted connection.
var errHandshake = errors.New("SSLHandshakeFailed")

// errNoPeerCert is mongod's refusal of a TLS client without a certificate
// when a CA file is set and connections without certificates are not allowed.
var errNoPeerCert = fmt.Errorf("%w: no SSL certificate provided by peer; connection rejected", errHandshake)

// tlsSettings are a member's TLS configurations, built once from its
// options: what it serves, and what it presents and trusts when it dials
// another member.
type tlsSettings struct {
	server *tls.Config
	cert   tls.Certificate
	// cas is the --tlsCAFile pool; nil without one.
	cas *x509.CertPool
}

// newTLSSettings reads --tlsCertificateKeyFile (certificate and key in one
// PEM) and --tlsCAFile. As mongod: with a CA file, clients must present a
// certificate signed by it unless --tlsAllowConnectionsWithoutCertificates
// (then a certificate, if given, is still verified);
// --tlsAllowInvalidCertificates verifies none.
func newTLSSettings(cfg Config) (*tlsSettings, error) {
	cert, err := tls.LoadX509KeyPair(cfg.TLSCertKeyFile, cfg.TLSCertKeyFile)
	if err != nil {
		return nil, &OptionError{fmt.Sprintf("cannot read certificate file: %s %v", cfg.TLSCertKeyFile, err)}
	}
	s := &tlsSettings{cert: cert}
	s.server = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if cfg.TLSCAFile != "" {
		pem, err := os.ReadFile(cfg.TLSCAFile)
		if err != nil {
			return nil, &OptionError{fmt.Sprintf("cannot read certificate authority file: %s %v", cfg.TLSCAFile, err)}
		}
		s.cas = x509.NewCertPool()
		if !s.cas.AppendCertsFromPEM(pem) {
			return nil, &OptionError{fmt.Sprintf("cannot read certificate authority file: %s: no certificate in it", cfg.TLSCAFile)}
		}
		s.server.ClientCAs = s.cas
		switch {
		case cfg.TLSAllowInvalidCerts:
			s.server.ClientAuth = tls.RequestClientCert
		case cfg.TLSAllowNoCert:
			s.server.ClientAuth = tls.VerifyClientCertIfGiven
		default:
			s.server.ClientAuth = tls.RequireAndVerifyClientCert
		}
	}
	return s, nil
}

// client is the configuration a member dials another member with (host is
// "name:port"): it presents its own certificate and verifies the peer's
// against the CA file and the host name, unless told not to; without a CA
// file the peer is not verified (the simulator has no system store).
func (s *tlsSettings) client(cfg Config, host string) *tls.Config {
	name, _, err := net.SplitHostPort(host)
	if err != nil {
		name = host
	}
	c := &tls.Config{Certificates: []tls.Certificate{s.cert}, RootCAs: s.cas, ServerName: name, MinVersion: tls.VersionTLS12}
	switch {
	case s.cas == nil || cfg.TLSAllowInvalidCerts:
		c.InsecureSkipVerify = true //nolint:gosec // mongod's --tlsAllowInvalidCertificates
	case cfg.TLSAllowInvalidHostnames:
		// The chain is still verified, only the name is not.
		c.InsecureSkipVerify = true //nolint:gosec // verified below, without the host name
		cas := s.cas
		c.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			return verifyChain(raw, cas)
		}
	}
	return c
}

// verifyChain checks that raw (the peer's certificates, leaf first) chains
// to one of cas, whatever names the leaf holds.
func verifyChain(raw [][]byte, cas *x509.CertPool) error {
	if len(raw) == 0 {
		return errors.New("no certificate from the peer")
	}
	certs := make([]*x509.Certificate, 0, len(raw))
	for _, r := range raw {
		c, err := x509.ParseCertificate(r)
		if err != nil {
			return err
		}
		certs = append(certs, c)
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{Roots: cas, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	return err
}
