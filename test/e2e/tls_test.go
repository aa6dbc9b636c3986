package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/test/localkube/harness"
)

// A replica set created with spec.tls (issue 14): the operator issues the
// cluster's CA and the members' certificate, the members require TLS and
// reach each other over it, the operator connects with the CA and brings the
// set to Healthy, the status' connection string says tls=true. A driver
// without TLS is refused; with the CA of the certificate Secret it verifies
// the member's name and logs in.
func TestTLSClusterIsHealthyAndRefusesPlainClients(t *testing.T) {
	t.Parallel()
	env := harness.Cluster(t)
	deployOperator(t, env)
	ctx := context.Background()
	m := sample(t, env, "mgors-dev-1.yaml", func(m *v1alpha1.Mgors) {
		m.Name, m.Spec.Members = "tls", 2
		m.Spec.Storage.Reclaim = v1alpha1.VolumeDelete
		m.Spec.TLS = &v1alpha1.TLSSpec{Mode: "requireTLS"}
	})
	created := time.Now()
	if _, err := mgorsClient(t, env).Mgorses(env.Namespace).Create(ctx, m, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = mgorsClient(t, env).Mgorses(env.Namespace).Delete(context.Background(), m.Name, metav1.DeleteOptions{})
	})
	healthy := waitMgors(t, env, m.Name, "Healthy with TLS", 4*time.Minute, func(m *v1alpha1.Mgors) bool {
		return m.Status.Phase == v1alpha1.PhaseHealthy && m.Status.Primary != "" && m.Status.Ready == "2/2"
	})
	t.Logf("Healthy with TLS %s after the create", time.Since(created).Round(time.Second))
	if !strings.HasSuffix(healthy.Status.ConnectionString, "&tls=true") {
		t.Errorf("connection string %q", healthy.Status.ConnectionString)
	}
	sts := mustKubectl(t, env, "", "-n", env.Namespace, "get", "statefulset", m.Name, "-o", "jsonpath={.spec.template.spec.containers[0].command}")
	if !strings.Contains(sts, "requireTLS") {
		t.Errorf("members do not run requireTLS: %s", sts)
	}
	sec, err := env.Client.CoreV1().Secrets(env.Namespace).Get(ctx, kube.CertificateSecretName(healthy), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(sec.Data[kube.TLSCAKey]) {
		t.Fatal("the certificate Secret has no ca.crt")
	}
	admin, err := env.Client.CoreV1().Secrets(env.Namespace).Get(ctx, healthy.AdminSecretName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	host := healthy.MemberHost(0, "cluster.local")
	connect := func(tc *tls.Config, auth bool) error {
		o := options.Client().SetHosts([]string{host}).SetDirect(true).SetServerSelectionTimeout(10 * time.Second).
			SetDialer(&net.Dialer{Resolver: env.Resolver(), Timeout: 10 * time.Second})
		if tc != nil {
			o.SetTLSConfig(tc)
		}
		if auth {
			o.SetAuth(options.Credential{Username: string(admin.Data[v1alpha1.AdminUsernameSecretKey]),
				Password: string(admin.Data[v1alpha1.AdminPasswordSecretKey]), AuthSource: "admin"})
		}
		c, err := driver.Connect(o)
		if err != nil {
			return err
		}
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		defer func() { _ = c.Disconnect(cctx) }()
		cmd := "ping"
		if auth {
			cmd = "replSetGetStatus"
		}
		return c.Database("admin").RunCommand(cctx, bson.D{{Key: cmd, Value: 1}}).Err()
	}
	// Healthy is the operator's view from inside the cluster; the test's
	// first connection from the host may take a moment longer.
	deadline := time.Now().Add(2 * time.Minute)
	for err := connect(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, true); err != nil; err = connect(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, true) {
		if time.Now().After(deadline) {
			t.Fatalf("a TLS client with the cluster's CA: %v", err)
		}
		t.Logf("not yet: %v", err)
		time.Sleep(2 * time.Second)
	}
	if err := connect(nil, false); err == nil {
		t.Error("a plain client was served by a requireTLS member")
	}
	if err := connect(&tls.Config{MinVersion: tls.VersionTLS12}, false); err == nil {
		t.Error("a TLS client that does not trust the cluster's CA accepted the member's certificate")
	}
	desc := mustKubectl(t, env, "", "-n", env.Namespace, "describe", "mgors", m.Name)
	if strings.Contains(desc, "PRIVATE KEY") {
		t.Error("kubectl describe shows a private key")
	}
}
