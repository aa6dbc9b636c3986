package sim_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// testPKI is a CA and the PEM files a TLS test needs: the CA, a member
// certificate (with key) valid for every test address, and a client one.
type testPKI struct {
	caFile, memberFile, clientFile string
}

// newTestPKI writes a fresh CA and its certificates into a temporary directory.
func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	leaf := func(name string, serial int64, ips []net.IP) string {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
			IPAddresses: ips, DNSNames: []string{"localhost"}, KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kb, _ := x509.MarshalECPrivateKey(key)
		f := filepath.Join(dir, name+".pem")
		data := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})...)
		if err := os.WriteFile(f, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	var ips []net.IP
	for i := 1; i <= 251; i++ { // every address freeAddr hands out
		ips = append(ips, net.IPv4(127, 0, 3, byte(i)))
	}
	p := testPKI{caFile: filepath.Join(dir, "ca.crt"), memberFile: leaf("member", 2, ips), clientFile: leaf("client", 3, nil)}
	if err := os.WriteFile(p.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// tlsClient connects to one member with the driver, options in the URI.
func tlsClient(t *testing.T, m *member, opts string) *mongo.Client {
	t.Helper()
	return connect(t, "mongodb://"+m.host+"/?directConnection=true&serverSelectionTimeoutMS=3000&"+opts)
}

// ping runs ping on c, the error is the driver's.
func ping(c *mongo.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.Database("admin").RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Err()
}

// A replica set under requireTLS with a CA: members reach each other over
// TLS (they verify each other's certificates), the driver connects with the
// CA alone (--tlsAllowConnectionsWithoutCertificates), a plain client is
// refused, and one that trusts another CA fails.
func TestTLSReplicaSetWithCA(t *testing.T) {
	p := newTestPKI(t)
	args := []string{"--tlsMode", "requireTLS", "--tlsCertificateKeyFile", p.memberFile, "--tlsCAFile", p.caFile, "--tlsAllowConnectionsWithoutCertificates"}
	ms := []*member{newMember(t, args...), newMember(t, args...), newMember(t, args...)}
	opts := "tls=true&tlsCAFile=" + p.caFile
	mustRun(t, tlsClient(t, ms[0], opts), bson.D{{Key: "replSetInitiate", Value: rsConfig(ms, fastSettings)}})
	waitFor(t, 30*time.Second, "every member PRIMARY or SECONDARY over TLS", func() bool {
		for _, m := range ms {
			r, err := run(tlsClient(t, m, opts), bson.D{{Key: "replSetGetStatus", Value: 1}})
			if err != nil {
				return false
			}
			if s, _ := r.Lookup("myState").AsInt64OK(); s != 1 && s != 2 {
				return false
			}
		}
		return true
	})
	// A majority write needs the secondaries to sync over TLS.
	rs := connect(t, "mongodb://"+ms[0].host+","+ms[1].host+","+ms[2].host+"/?replicaSet=rs0&serverSelectionTimeoutMS=5000&w=majority&"+opts)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := rs.Database("t").Collection("c").InsertOne(ctx, bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Fatalf("majority write over TLS: %v", err)
	}

	if err := ping(tlsClient(t, ms[0], "")); err == nil {
		t.Error("a plain client was served under requireTLS")
	}
	if !ms[0].logged("The server is configured to only allow SSL connections") {
		t.Error("the refused plain connection is not logged")
	}
	other := newTestPKI(t)
	if err := ping(tlsClient(t, ms[0], "tls=true&tlsCAFile="+other.caFile)); err == nil {
		t.Error("a client that trusts another CA accepted the member's certificate")
	}
	// The member's certificate names its address, so the driver's host name check passes.
	if err := ping(tlsClient(t, ms[1], opts+"&tlsCertificateKeyFile="+p.clientFile)); err != nil {
		t.Errorf("a client with a certificate: %v", err)
	}
}

// With a CA file and without --tlsAllowConnectionsWithoutCertificates,
// mongod requires a client certificate signed by the CA.
func TestTLSClientCertificateRequired(t *testing.T) {
	p := newTestPKI(t)
	m := newMember(t, "--tlsMode", "preferTLS", "--tlsCertificateKeyFile", p.memberFile, "--tlsCAFile", p.caFile)
	if err := ping(tlsClient(t, m, "tls=true&tlsCAFile="+p.caFile)); err == nil {
		t.Error("a TLS client without a certificate was served")
	}
	if !m.logged("no SSL certificate provided by peer; connection rejected") {
		t.Error("the refusal is not logged as mongod's")
	}
	if err := ping(tlsClient(t, m, "tls=true&tlsCAFile="+p.caFile+"&tlsCertificateKeyFile="+p.clientFile)); err != nil {
		t.Errorf("a client with a certificate of the CA: %v", err)
	}
	other := newTestPKI(t)
	if err := ping(tlsClient(t, m, "tls=true&tlsCAFile="+p.caFile+"&tlsCertificateKeyFile="+other.clientFile)); err == nil {
		t.Error("a client certificate of another CA was accepted")
	}
	// preferTLS still serves plain clients.
	if err := ping(tlsClient(t, m, "")); err != nil {
		t.Errorf("a plain client under preferTLS: %v", err)
	}
}

// Members whose certificates another CA signed cannot join: the
// heartbeats fail the certificate check, and the new member never becomes
// SECONDARY.
func TestTLSMemberOfAnotherCAIsNotTrusted(t *testing.T) {
	p, other := newTestPKI(t), newTestPKI(t)
	args := func(q testPKI) []string {
		return []string{"--tlsMode", "requireTLS", "--tlsCertificateKeyFile", q.memberFile, "--tlsCAFile", q.caFile, "--tlsAllowConnectionsWithoutCertificates"}
	}
	a, b := newMember(t, args(p)...), newMember(t, args(other)...)
	opts := "tls=true&tlsCAFile=" + p.caFile
	// replSetInitiate needs every member to answer a heartbeat: the one
	// whose certificate a does not trust cannot.
	if _, err := run(tlsClient(t, a, opts), bson.D{{Key: "replSetInitiate", Value: rsConfig([]*member{a, b}, fastSettings)}}); err == nil {
		t.Fatal("replSetInitiate succeeded with a member the initiator cannot verify")
	}
}

// mongosh from the images connects with --tls --tlsCAFile.
func TestMongoshTLS(t *testing.T) {
	js := mongoshJS(t)
	p := newTestPKI(t)
	m := newMember(t, "--tlsMode", "requireTLS", "--tlsCertificateKeyFile", p.memberFile, "--tlsCAFile", p.caFile, "--tlsAllowConnectionsWithoutCertificates")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "node", js, "--quiet", "--norc", "mongodb://"+m.host+"/?directConnection=true",
		"--tls", "--tlsCAFile", p.caFile, "--eval", "print(db.adminCommand({ping: 1}).ok)").CombinedOutput()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "1") {
		t.Fatalf("mongosh --tls: %v\n%s", err, out)
	}
}

// One step of spec.tls.mode, rolled one member at a time, leaves a set whose
// members all reach each other: allowTLS with preferTLS members (the
// allowTLS one dials plain, the others accept it), and preferTLS with
// requireTLS ones (all dial TLS). The operator refuses the jump from
// allowTLS to requireTLS, whose members could not talk.
func TestTLSModesOneStepApartFormASet(t *testing.T) {
	p := newTestPKI(t)
	for _, modes := range [][]string{{"allowTLS", "preferTLS", "preferTLS"}, {"preferTLS", "requireTLS", "requireTLS"}} {
		t.Run(strings.Join(modes, "+"), func(t *testing.T) {
			var ms []*member
			for _, mode := range modes {
				ms = append(ms, newMember(t, "--tlsMode", mode, "--tlsCertificateKeyFile", p.memberFile, "--tlsCAFile", p.caFile,
					"--tlsAllowConnectionsWithoutCertificates"))
			}
			opts := "tls=true&tlsCAFile=" + p.caFile
			c := tlsClient(t, ms[1], opts)
			mustRun(t, c, bson.D{{Key: "replSetInitiate", Value: rsConfig(ms, fastSettings)}})
			waitFor(t, 30*time.Second, "a primary and two secondaries", func() bool {
				r, err := run(c, bson.D{{Key: "replSetGetStatus", Value: 1}})
				if err != nil {
					return false
				}
				arr, _ := r.Lookup("members").Array().Values()
				up := 0
				for _, v := range arr {
					if s, _ := v.Document().Lookup("state").AsInt64OK(); s == 1 || s == 2 {
						up++
					}
				}
				return up == 3
			})
		})
	}
}
