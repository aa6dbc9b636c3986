package cluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// certLifetime is long enough that a cluster directory kept between sessions never
// sees an expired certificate, and the CA outlives everything it signed.
const certLifetime = 5 * 365 * 24 * time.Hour

// certSpec describes one certificate signed by the cluster CA.
type certSpec struct {
	name   string // file stem under pki/
	cn     string
	orgs   []string
	server bool
	client bool
	ips    []net.IP
	dns    []string
}

// authority is the cluster CA held in memory while certificates are issued.
type authority struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// ensureCA loads pki/ca.{crt,key} or creates them. A resumed cluster must keep its
// CA: every kubeconfig and serving certificate in DIR chains to it.
func ensureCA(pkiDir string) (*authority, error) {
	crtPath, keyPath := filepath.Join(pkiDir, "ca.crt"), filepath.Join(pkiDir, "ca.key")
	if fileExists(crtPath) && fileExists(keyPath) {
		return loadCA(crtPath, keyPath)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "localkube-ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(2 * certLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	if err := writeKey(keyPath, key); err != nil {
		return nil, err
	}
	if err := writePEM(crtPath, "CERTIFICATE", der, 0o644); err != nil {
		return nil, err
	}
	return loadCA(crtPath, keyPath)
}

func loadCA(crtPath, keyPath string) (*authority, error) {
	cert, err := readCert(crtPath)
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, fmt.Errorf("%s: no PEM block", keyPath)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keyPath, err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%s: not a signing key", keyPath)
	}
	return &authority{cert: cert, key: signer}, nil
}

// ensureCert issues pki/NAME.{crt,key} unless a certificate with that name already
// exists, so that `up` on an existing DIR changes nothing.
func (ca *authority) ensureCert(pkiDir string, s certSpec) error {
	crtPath, keyPath := filepath.Join(pkiDir, s.name+".crt"), filepath.Join(pkiDir, s.name+".key")
	if fileExists(crtPath) && fileExists(keyPath) {
		return nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: s.cn, Organization: s.orgs},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(certLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		IPAddresses:  s.ips,
		DNSNames:     s.dns,
	}
	if s.server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if s.client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return fmt.Errorf("sign %s: %w", s.name, err)
	}
	if err := writeKey(keyPath, key); err != nil {
		return err
	}
	return writePEM(crtPath, "CERTIFICATE", der, 0o644)
}

// ensureServiceAccountKey creates the RSA pair the API server signs service-account
// tokens with (sa.key) and verifies them with (sa.pub).
func ensureServiceAccountKey(pkiDir string) error {
	keyPath, pubPath := filepath.Join(pkiDir, "sa.key"), filepath.Join(pkiDir, "sa.pub")
	if fileExists(keyPath) && fileExists(pubPath) {
		return nil
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	if err := writeKey(keyPath, key); err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return err
	}
	return writePEM(pubPath, "PUBLIC KEY", pub, 0o644)
}

func readCert(path string) (*x509.Certificate, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, fmt.Errorf("%s: no PEM block", path)
	}
	return x509.ParseCertificate(block.Bytes)
}

func writeKey(path string, key any) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "PRIVATE KEY", der, 0o600)
}

// writePEM writes through a temporary file so that a crash never leaves half a key.
func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return n
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil || !errors.Is(err, os.ErrNotExist)
}
