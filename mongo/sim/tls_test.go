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
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// serverPEM writes a self-signed certificate and its key in one PEM file,
// as --tlsCertificateKeyFile takes them.
func serverPEM(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mongod-sim"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "server.pem")
	data := append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})...)
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// pingWith pings m over a fresh direct connection, plain or TLS.
func pingWith(m *member, useTLS bool) error {
	uri := "mongodb://" + m.host + "/?directConnection=true&serverSelectionTimeoutMS=3000&connectTimeoutMS=3000"
	if useTLS {
		uri += "&tls=true&tlsInsecure=true"
	}
	c, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	defer func() { _ = c.Disconnect(ctx) }()
	return c.Database("admin").RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Err()
}

// Each --tlsMode serves the clients mongod serves on one port (requireTLS:
// TLS only; preferTLS and allowTLS: TLS and plain), and a 3-member set forms
// with members dialling each other as mongod does (TLS under preferTLS and
// requireTLS, plain under allowTLS).
func TestTLSModes(t *testing.T) {
	pemFile := serverPEM(t)
	for _, mode := range []string{"allowTLS", "preferTLS", "requireTLS"} {
		t.Run(mode, func(t *testing.T) {
			var ms []*member
			for range 3 {
				ms = append(ms, newMember(t, "--tlsMode", mode, "--tlsCertificateKeyFile", pemFile))
			}
			if err := pingWith(ms[0], true); err != nil {
				t.Fatalf("TLS client: %v", err)
			}
			err := pingWith(ms[0], false)
			if mode == "requireTLS" && err == nil {
				t.Fatal("plain client served under requireTLS")
			}
			if mode != "requireTLS" && err != nil {
				t.Fatalf("plain client under %s: %v", mode, err)
			}
			c := ms[0].client(t, "", "tls=true", "tlsInsecure=true")
			mustRun(t, c, bson.D{{Key: "replSetInitiate", Value: rsConfig(ms, fastSettings)}})
			waitFor(t, 60*time.Second, "a primary and two secondaries", func() bool {
				r, err := run(c, bson.D{{Key: "replSetGetStatus", Value: 1}})
				if err != nil {
					return false
				}
				arr, _ := r.Lookup("members").Array().Values()
				primaries, secondaries := 0, 0
				for _, v := range arr {
					switch s, _ := v.Document().Lookup("state").AsInt64OK(); s {
					case 1:
						primaries++
					case 2:
						secondaries++
					}
				}
				return primaries == 1 && secondaries == 2
			})
			if mode == "requireTLS" {
				if !ms[0].logged("The server is configured to only allow SSL connections") {
					t.Error("the refused plain connection was not logged as mongod logs it")
				}
			}
		})
	}
}
