package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"strconv"
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

// spec.externalAccess (issue 15): a TLS replica set with NodePort access
// and the members' external DNS names given in the spec. The operator makes
// one NodePort Service per member, the config carries each member's
// horizon (name:nodePort), the status has the external connection string,
// and a client that reaches a member with the external name as TLS SNI is
// answered by hello with the external hosts (the certificate names them).
// The names do not resolve here: the test dials the member's own address
// and sends the external name as SNI, as a client outside would after DNS.
func TestExternalAccessNodePortHorizons(t *testing.T) {
	t.Parallel()
	env := harness.Cluster(t)
	deployOperator(t, env)
	ctx := context.Background()
	m := sample(t, env, "mgors-dev-1.yaml", func(m *v1alpha1.Mgors) {
		m.Name, m.Spec.Members = "ext", 2
		m.Spec.Storage.Reclaim = v1alpha1.VolumeDelete
		m.Spec.TLS = &v1alpha1.TLSSpec{Mode: "requireTLS"}
		m.Spec.ExternalAccess = &v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalNodePort,
			Members: []v1alpha1.ExternalMember{{Ordinal: 0, Host: "db-0.example.test"}, {Ordinal: 1, Host: "db-1.example.test"}}}
	})
	created := time.Now()
	if _, err := mgorsClient(t, env).Mgorses(env.Namespace).Create(ctx, m, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = mgorsClient(t, env).Mgorses(env.Namespace).Delete(context.Background(), m.Name, metav1.DeleteOptions{})
	})
	got := waitMgors(t, env, m.Name, "Healthy with external access", 3*time.Minute, func(m *v1alpha1.Mgors) bool {
		return m.Status.Phase == v1alpha1.PhaseHealthy && m.Status.Ready == "2/2" && m.Status.ExternalConnectionString != ""
	})
	t.Logf("Healthy with external access %s after the create: %s", time.Since(created).Round(time.Second), got.Status.ExternalConnectionString)
	var want []string
	for i := range 2 {
		pod := got.PodName(int32(i))
		svc, err := env.Client.CoreV1().Services(env.Namespace).Get(ctx, kube.ExternalServiceName(pod), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if svc.Spec.Type != "NodePort" || svc.Spec.Ports[0].NodePort == 0 || svc.Spec.Selector["statefulset.kubernetes.io/pod-name"] != pod {
			t.Fatalf("Service %s: %+v", svc.Name, svc.Spec)
		}
		want = append(want, net.JoinHostPort(got.ExternalHost(int32(i)), strconv.Itoa(int(svc.Spec.Ports[0].NodePort))))
	}
	if s := got.Status.ExternalConnectionString; !strings.HasPrefix(s, "mongodb://"+strings.Join(want, ",")+"/?replicaSet=ext") || !strings.Contains(s, "tls=true") {
		t.Errorf("external connection string %q, want hosts %v", s, want)
	}

	sec, err := env.Client.CoreV1().Secrets(env.Namespace).Get(ctx, kube.CertificateSecretName(got), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(sec.Data[kube.TLSCAKey]) {
		t.Fatal("the certificate Secret has no ca.crt")
	}
	// hello through the horizon: dial member 0, send its external name.
	hello := func(sni string) ([]string, error) {
		o := options.Client().SetHosts([]string{got.MemberHost(0, "cluster.local")}).SetDirect(true).
			SetServerSelectionTimeout(10 * time.Second).
			SetDialer(&net.Dialer{Resolver: env.Resolver(), Timeout: 10 * time.Second}).
			SetTLSConfig(&tls.Config{RootCAs: pool, ServerName: sni, MinVersion: tls.VersionTLS12})
		c, err := driver.Connect(o)
		if err != nil {
			return nil, err
		}
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		defer func() { _ = c.Disconnect(cctx) }()
		var r struct {
			Hosts    []string `bson:"hosts"`
			Passives []string `bson:"passives"` // a two-member set's second member has no vote
		}
		err = c.Database("admin").RunCommand(cctx, bson.D{{Key: "hello", Value: 1}}).Decode(&r)
		return append(r.Hosts, r.Passives...), err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		hosts, err := hello("db-0.example.test")
		if err == nil && strings.Join(hosts, ",") == strings.Join(want, ",") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hello through the horizon: %v %v, want %v", hosts, err, want)
		}
		time.Sleep(2 * time.Second)
	}
	if hosts, err := hello(""); err != nil || strings.Contains(strings.Join(hosts, ","), "example.test") {
		t.Errorf("hello by the internal name: %v %v, want the internal hosts", hosts, err)
	}

	// Removing spec.externalAccess removes the Services and the horizons.
	mustKubectl(t, env, "", "-n", env.Namespace, "patch", "mgors", m.Name, "--type=json",
		"-p", `[{"op":"remove","path":"/spec/externalAccess"}]`)
	waitMgors(t, env, m.Name, "Healthy without external access", 2*time.Minute, func(m *v1alpha1.Mgors) bool {
		return m.Status.Phase == v1alpha1.PhaseHealthy && m.Status.ExternalConnectionString == "" && m.Status.ObservedGeneration == m.Generation
	})
	deadline = time.Now().Add(time.Minute)
	for {
		hosts, err := hello("db-0.example.test")
		left, _ := env.Client.CoreV1().Services(env.Namespace).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelComponent + "=" + kube.ComponentExternal})
		if err == nil && !strings.Contains(strings.Join(hosts, ","), "example.test") && len(left.Items) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after removal: hello %v %v, %d external Services left", hosts, err, len(left.Items))
		}
		time.Sleep(2 * time.Second)
	}
}
