package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"maps"
	"math/big"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/test/localkube/harness"
)

// The member certificate of a running 3-member TLS set renewed by the
// operator (issue 14, docs/design/security.md "Renewal"). The operator runs
// with the production lifetime of a year, so the test puts into the
// certificate Secret a certificate of the operator's own CA that is already
// in the last third of its life (as an old one would be): the operator
// records it (CertificateRenewed), finds it due, renews it itself (a new
// serial, valid a year) and the members restart onto the renewed one one at
// a time: at the end each serves it in its TLS handshake, the set is
// Healthy, no moment took more than one member away, the writes made before
// are all there, and kubectl describe shows CertificateRenewed.
func TestCertificateRenewedOnARunningSet(t *testing.T) {
	t.Parallel()
	env := harness.Cluster(t)
	deployOperator(t, env)
	ctx := context.Background()
	mc := mgorsClient(t, env).Mgorses(env.Namespace)
	m := sample(t, env, "mgors-3.yaml", func(m *v1alpha1.Mgors) {
		m.Name = "renew"
		m.Spec.Storage.Reclaim = v1alpha1.VolumeDelete
		m.Spec.TLS = &v1alpha1.TLSSpec{Mode: "requireTLS"}
	})
	begin := time.Now()
	if _, err := mc.Create(ctx, m, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mc.Delete(context.Background(), m.Name, metav1.DeleteOptions{}) })
	got := waitMgors(t, env, m.Name, "Healthy with TLS", 4*time.Minute, func(x *v1alpha1.Mgors) bool {
		return x.Status.Phase == v1alpha1.PhaseHealthy && x.Status.Primary != "" && x.Status.Ready == "3/3"
	})
	t.Logf("Healthy with TLS %s after the create", time.Since(begin).Round(time.Second))

	certSecret := kube.CertificateSecretName(got)
	first := secretCertificate(t, env, certSecret)
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(getSecretData(t, env, certSecret)[kube.TLSCAKey]) {
		t.Fatal("the certificate Secret has no ca.crt")
	}
	c := tlsClient(t, env, got, pool)
	items := c.Database("app").Collection("items")
	for i := range 20 {
		if _, err := items.InsertOne(ctx, bson.D{{Key: "_id", Value: i}}); err != nil {
			t.Fatal(err)
		}
	}
	// Every member serves the certificate the operator issued first.
	served := func() []string {
		out := make([]string, 3)
		for i := range int32(3) {
			out[i] = servedSerial(env, got.MemberHost(i, "cluster.local"), pool)
		}
		return out
	}
	// (Healthy is the operator's view from inside the cluster; the host's
	// first handshakes may take a moment longer.)
	all := func(s []string, serial string) bool { return s[0] == serial && s[1] == serial && s[2] == serial }
	for deadline := time.Now().Add(time.Minute); !all(served(), first.Serial); {
		if time.Now().After(deadline) {
			t.Fatalf("members serve %v, the Secret holds serial %s", served(), first.Serial)
		}
		time.Sleep(time.Second)
	}

	// Watch the pods: never more than one member away.
	var mu sync.Mutex
	maxAway := 0
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for wctx.Err() == nil {
			if pods, err := env.Client.CoreV1().Pods(env.Namespace).List(wctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + m.Name}); err == nil {
				mu.Lock()
				maxAway = max(maxAway, 3-readyPods(pods.Items))
				mu.Unlock()
			}
			time.Sleep(500 * time.Millisecond)
		}
	})
	defer func() { stop(); wg.Wait() }()

	// An old certificate from the operator's own CA: 2h30m of life, 30m
	// left, so within the last third (kube.RenewalDue).
	start := time.Now()
	aging := agingCertificate(t, env, got, start.Add(-2*time.Hour), start.Add(30*time.Minute))
	patch, err := json.Marshal(map[string]any{"data": map[string][]byte{kube.TLSCertKey: aging.cert, kube.TLSKeyKey: aging.key}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Client.CoreV1().Secrets(env.Namespace).Patch(ctx, certSecret, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Logf("the Secret %s holds serial %s (valid until %s) instead of %s", certSecret, aging.serial,
		aging.notAfter.UTC().Format(time.RFC3339), first.Serial)

	// The operator renews it: another serial, valid about a year.
	var renewed kube.Certificate
	waitMgors(t, env, m.Name, "the certificate renewed", 3*time.Minute, func(*v1alpha1.Mgors) bool {
		renewed = secretCertificate(t, env, certSecret)
		return renewed.Serial != aging.serial && renewed.Serial != first.Serial
	})
	if life := time.Until(renewed.NotAfter); life < 364*24*time.Hour || life > 366*24*time.Hour {
		t.Errorf("the renewed certificate (serial %s) expires at %s: in %s, want about a year", renewed.Serial, renewed.NotAfter, life)
	}
	t.Logf("renewed by the operator %s after the old one was put in: serial %s, valid until %s", time.Since(start).Round(time.Second),
		renewed.Serial, renewed.NotAfter.UTC().Format(time.RFC3339))

	// The members restart onto it, one at a time, and the set is Healthy.
	seen := map[string]bool{}
	got = waitMgors(t, env, m.Name, "every member serving the renewed certificate", 3*time.Minute, func(x *v1alpha1.Mgors) bool {
		s := served()
		for _, serial := range s {
			if !strings.HasPrefix(serial, "error: ") { // a member restarting
				seen[serial] = true
			}
		}
		return all(s, renewed.Serial) && x.Status.Phase == v1alpha1.PhaseHealthy && x.Status.Ready == "3/3"
	})
	t.Logf("every member serves serial %s, Healthy, %s after the old certificate was put in (serials seen served while rolling: %v)",
		renewed.Serial, time.Since(start).Round(time.Second), slices.Sorted(maps.Keys(seen)))
	if now := secretCertificate(t, env, certSecret); now.Serial != renewed.Serial {
		t.Errorf("the Secret holds serial %s after the roll, want %s (renewed twice?)", now.Serial, renewed.Serial)
	}
	stop()
	wg.Wait()
	if maxAway > 1 {
		t.Errorf("the renewal's roll took %d members away at once", maxAway)
	}
	checkDocuments(t, env, got, true, 20)
	desc := describeWith(t, env, m.Name, "CertificateRenewed", renewed.Serial)
	if strings.Contains(desc, "PRIVATE KEY") {
		t.Error("kubectl describe shows a private key")
	}
	t.Logf("renewal test done in %s (%s of it after Healthy)", time.Since(begin).Round(time.Second), time.Since(start).Round(time.Second))
}

// getSecretData is the data of a Secret of the test's namespace.
func getSecretData(t *testing.T, env *harness.Env, name string) map[string][]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sec, err := env.Client.CoreV1().Secrets(env.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return sec.Data
}

// secretCertificate is the certificate of a certificate Secret (no key).
func secretCertificate(t *testing.T, env *harness.Env, name string) kube.Certificate {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sec, err := env.Client.CoreV1().Secrets(env.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := kube.ParseCertificate(sec)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// issued is a certificate the test signed: PEM certificate and key.
type issued struct {
	cert, key []byte
	serial    string
	notAfter  time.Time
}

// agingCertificate signs, with the CA the operator keeps for m (its
// IssuerSecretName), a member certificate valid from notBefore to notAfter
// for the names the operator's own certificate has.
func agingCertificate(t *testing.T, env *harness.Env, m *v1alpha1.Mgors, notBefore, notAfter time.Time) issued {
	t.Helper()
	data := getSecretData(t, env, kube.IssuerSecretName(m))
	cb, _ := pem.Decode(data[kube.TLSCAKey])
	kb, _ := pem.Decode(data["ca.key"])
	if cb == nil || kb == nil {
		t.Fatalf("the CA Secret %s holds no PEM ca.crt and ca.key", kube.IssuerSecretName(m))
	}
	ca, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	caKey, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: m.ServiceName() + "." + m.Namespace, Organization: []string{"mgors"}},
		NotBefore: notBefore, NotAfter: notAfter,
		DNSNames:    kube.MemberDNSNames(m, "cluster.local"),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return issued{cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		key: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), serial: serial.Text(16), notAfter: notAfter}
}

// servedSerial is the serial (hexadecimal, as kube.Certificate has it) of
// the certificate a member presents in a TLS handshake that verifies it
// against pool and its host name; the error's text when none.
func servedSerial(env *harness.Env, hostPort string, pool *x509.CertPool) string {
	host, _, _ := strings.Cut(hostPort, ":")
	d := &net.Dialer{Resolver: env.Resolver(), Timeout: 3 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", hostPort, &tls.Config{RootCAs: pool, ServerName: host, MinVersion: tls.VersionTLS12})
	if err != nil {
		return "error: " + err.Error()
	}
	defer func() { _ = conn.Close() }()
	certs := conn.ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return "error: no certificate"
	}
	return certs[0].SerialNumber.Text(16)
}

// tlsClient is a driver client of the set through its connection string,
// as the admin user, trusting pool; writes wait for a majority.
func tlsClient(t *testing.T, env *harness.Env, m *v1alpha1.Mgors, pool *x509.CertPool) *driver.Client {
	t.Helper()
	admin := getSecretData(t, env, m.AdminSecretName())
	o := options.Client().ApplyURI(m.Status.ConnectionString).
		SetAuth(options.Credential{AuthSource: "admin", Username: string(admin[v1alpha1.AdminUsernameSecretKey]),
			Password: string(admin[v1alpha1.AdminPasswordSecretKey])}).
		SetDialer(&net.Dialer{Resolver: env.Resolver(), Timeout: 3 * time.Second}).
		SetTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}).
		SetServerSelectionTimeout(20 * time.Second).SetTimeout(20 * time.Second).SetWriteConcern(writeconcern.Majority())
	c, err := driver.Connect(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c
}
