package sim_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestInitiateErrors(t *testing.T) {
	a, b := newMember(t), newMember(t)
	other := newMember(t)
	other.kill()
	other.extra = []string{"--replSet", "other"} // later flag wins
	other.start()
	ghostIP, ghostPort := freeAddr(t)
	ac := a.client(t)
	cfg := func(hosts ...string) bson.D {
		arr := bson.A{}
		for i, h := range hosts {
			arr = append(arr, bson.D{{Key: "_id", Value: i}, {Key: "host", Value: h}})
		}
		return bson.D{{Key: "_id", Value: "rs0"}, {Key: "members", Value: arr}}
	}
	cases := []struct {
		name string
		cfg  any
		code int32
		msg  string
	}{
		{"wrong set name", bson.D{{Key: "_id", Value: "nope"}, {Key: "members", Value: bson.A{bson.D{{Key: "_id", Value: 0}, {Key: "host", Value: a.host}}}}}, 93, "differs from command line set name"},
		{"self missing", cfg(b.host), 93, "maps to this node"},
		{"unreachable member", cfg(a.host, net.JoinHostPort(ghostIP, strconv.Itoa(ghostPort))), 74, "quorum check failed because not all proposed set members responded affirmatively"},
		{"other set", cfg(a.host, other.host), 103, "Our set name did not match that of " + other.host},
		{"version 2", append(cfg(a.host), bson.E{Key: "version", Value: 2}), 93, "must  have version 1"},
	}
	for _, c := range cases {
		_, err := run(ac, bson.D{{Key: "replSetInitiate", Value: c.cfg}})
		if !hasCode(err, c.code) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: want %d %q, got %v", c.name, c.code, c.msg, err)
		}
	}
	// A member that already holds a config refuses to be initiated into another set.
	mustRun(t, b.client(t), bson.D{{Key: "replSetInitiate", Value: cfg(b.host)}})
	if _, err := run(ac, bson.D{{Key: "replSetInitiate", Value: cfg(a.host, b.host)}}); !hasCode(err, 103) {
		t.Errorf("member with config: want 103, got %v", err)
	}
}

func TestTLSRequired(t *testing.T) {
	dir := t.TempDir()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sim"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 3, 1)}, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	pemFile := filepath.Join(dir, "server.pem")
	data := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})...)
	if err := os.WriteFile(pemFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	m := newMember(t, "--tlsMode", "requireTLS", "--tlsCertificateKeyFile", pemFile)
	c := m.client(t, "", "tls=true", "tlsInsecure=true")
	mustRun(t, c, bson.D{{Key: "ping", Value: 1}})
}
