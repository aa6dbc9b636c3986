package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mgors/operator/actors"
	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/test/localkube/harness"
)

// The CA the operator keeps for a running 3-member requireTLS set rotated
// on a person's request (issue 14): ca.crt [old, new], a certificate of the
// new CA, ca.crt [new], each a rolling restart. No moment takes more than
// one member away; at the end every member presents a certificate that
// the new CA alone verifies, the writes made before are there, and the
// steps are Events.
func TestCARotatedOnARunningSet(t *testing.T) {
	t.Parallel()
	env := harness.Cluster(t)
	deployOperator(t, env)
	ctx := context.Background()
	mc := mgorsClient(t, env).Mgorses(env.Namespace)
	m := sample(t, env, "mgors-3.yaml", func(m *v1alpha1.Mgors) {
		m.Name = "caroll"
		m.Spec.Storage.Reclaim = v1alpha1.VolumeDelete
		m.Spec.TLS = &v1alpha1.TLSSpec{Mode: "requireTLS"}
	})
	if _, err := mc.Create(ctx, m, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mc.Delete(context.Background(), m.Name, metav1.DeleteOptions{}) })
	got := waitMgors(t, env, m.Name, "Healthy with TLS", 4*time.Minute, func(x *v1alpha1.Mgors) bool {
		return x.Status.Phase == v1alpha1.PhaseHealthy && x.Status.Primary != "" && x.Status.Ready == "3/3" &&
			strings.Contains(x.Status.ConnectionString, "tls=true")
	})
	c := adminClient(t, env, got, true)
	items := c.Database("app").Collection("items")
	for i := range 20 {
		if _, err := items.InsertOne(ctx, bson.D{{Key: "_id", Value: i}}); err != nil {
			t.Fatal(err)
		}
	}
	_ = c.Disconnect(ctx)
	cas := func() []string {
		t.Helper()
		sec, err := env.Client.CoreV1().Secrets(env.Namespace).Get(ctx, kube.CertificateSecretName(m), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, fps := kube.CAs(sec.Data[kube.TLSCAKey])
		return fps
	}
	old := cas()
	if len(old) != 1 {
		t.Fatalf("ca.crt holds %v before the rotation", old)
	}

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

	start := time.Now()
	if _, err := mc.Patch(ctx, m.Name, types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+actors.RotateCAAnnotation+`":"e2e-1"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	got = waitMgors(t, env, m.Name, "the CA rotation done", 6*time.Minute, func(x *v1alpha1.Mgors) bool {
		_, asked := x.Annotations[actors.RotateCAAnnotation]
		now := cas()
		return !asked && len(now) == 1 && now[0] != old[0] && x.Status.Phase == v1alpha1.PhaseHealthy && x.Status.Ready == "3/3"
	})
	t.Logf("CA rotated in %s", time.Since(start).Round(time.Second))
	stop()
	wg.Wait()
	if maxAway > 1 {
		t.Errorf("the rotation took %d members away at once", maxAway)
	}

	// Every member presents a certificate the new CA alone verifies.
	sec, err := env.Client.CoreV1().Secrets(env.Namespace).Get(ctx, kube.CertificateSecretName(m), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(sec.Data[kube.TLSCAKey]) {
		t.Fatal("no ca.crt after the rotation")
	}
	for i := range int32(3) {
		host, _, _ := strings.Cut(got.MemberHost(i, "cluster.local"), ":")
		deadline := time.Now().Add(time.Minute)
		for {
			err := handshake(ctx, env, host, pool)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("member %s does not present a certificate of the new CA: %v", host, err)
			}
			time.Sleep(2 * time.Second)
		}
	}
	checkDocuments(t, env, got, true, 20)
	describeWith(t, env, m.Name, "CARotationStarted", "CARotationStep", "CATrustChanged", "CARotated")
}

// handshake opens a TLS connection to a member trusting pool alone.
func handshake(ctx context.Context, env *harness.Env, host string, pool *x509.CertPool) error {
	d := tls.Dialer{NetDialer: &net.Dialer{Resolver: env.Resolver(), Timeout: 5 * time.Second},
		Config: &tls.Config{RootCAs: pool, ServerName: host, MinVersion: tls.VersionTLS12}}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := d.DialContext(cctx, "tcp", net.JoinHostPort(host, "27017"))
	if err != nil {
		return err
	}
	return conn.Close()
}
