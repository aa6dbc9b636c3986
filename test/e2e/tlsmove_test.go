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
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/test/localkube/harness"
)

// TLS turned on for a running 3-member set and off again (issue 14): the
// operator steps the members none → allowTLS → preferTLS → requireTLS, one
// rolling restart each, and back as the person steps the mode down and
// removes spec.tls (refused above allowTLS). No moment takes more than one
// member away, the status' connection string follows, every step is an
// Event, and the writes made before are all there after.
func TestTLSTurnedOnAndOffForARunningSet(t *testing.T) {
	t.Parallel()
	env := harness.Cluster(t)
	deployOperator(t, env)
	ctx := context.Background()
	mc := mgorsClient(t, env).Mgorses(env.Namespace)
	m := sample(t, env, "mgors-3.yaml", func(m *v1alpha1.Mgors) {
		m.Name = "tlsmove"
		m.Spec.Storage.Reclaim = v1alpha1.VolumeDelete
	})
	if _, err := mc.Create(ctx, m, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mc.Delete(context.Background(), m.Name, metav1.DeleteOptions{}) })
	created := time.Now()
	got := waitMgors(t, env, m.Name, "Healthy without TLS", 4*time.Minute, func(x *v1alpha1.Mgors) bool {
		return x.Status.Phase == v1alpha1.PhaseHealthy && x.Status.Primary != "" && x.Status.Ready == "3/3"
	})
	t.Logf("Healthy without TLS %s after the create", time.Since(created).Round(time.Second))
	items := connect(t, env, got).Database("app").Collection("items")
	for i := range 20 {
		if _, err := items.InsertOne(ctx, bson.D{{Key: "_id", Value: i}}); err != nil {
			t.Fatal(err)
		}
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

	patch := func(p string) {
		t.Helper()
		if _, err := mc.Patch(ctx, m.Name, types.MergePatchType, []byte(p), metav1.PatchOptions{}); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	// rolled says whether the StatefulSet asks mode ("" for no TLS) and
	// every member's pod runs its template: read before the status, so a
	// Healthy read after it is the one that followed the roll.
	rolled := func(mode string) bool {
		sts, err := env.Client.AppsV1().StatefulSets(env.Namespace).Get(ctx, m.Name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		cmd := strings.Join(sts.Spec.Template.Spec.Containers[0].Command, " ")
		if mode == "" && strings.Contains(cmd, "--tlsMode") || mode != "" && !strings.Contains(cmd, "--tlsMode "+mode) {
			return false
		}
		pods, err := env.Client.CoreV1().Pods(env.Namespace).List(ctx, metav1.ListOptions{
			LabelSelector: "app.kubernetes.io/instance=" + m.Name + ",app.kubernetes.io/component=member"})
		if err != nil || len(pods.Items) != 3 {
			return false
		}
		for i := range pods.Items {
			if kube.PodOutdated(&pods.Items[i], sts) {
				return false
			}
		}
		return true
	}
	settled := func(what string, tlsOn bool, mode string) *v1alpha1.Mgors {
		t.Helper()
		start := time.Now()
		waitMgors(t, env, m.Name, what, 3*time.Minute, func(*v1alpha1.Mgors) bool { return rolled(mode) })
		x := waitMgors(t, env, m.Name, what, 3*time.Minute, func(x *v1alpha1.Mgors) bool {
			return x.Status.ObservedGeneration == x.Generation && x.Status.Phase == v1alpha1.PhaseHealthy &&
				x.Status.Ready == "3/3" && strings.Contains(x.Status.ConnectionString, "tls=true") == tlsOn
		})
		t.Logf("%s in %s", what, time.Since(start).Round(time.Second))
		return x
	}

	patch(`{"spec":{"tls":{"mode":"requireTLS"}}}`)
	got = settled("none → requireTLS", true, "requireTLS")
	if _, err := mc.Patch(ctx, m.Name, types.MergePatchType, []byte(`{"spec":{"tls":null}}`), metav1.PatchOptions{}); err == nil ||
		!strings.Contains(err.Error(), "spec.tls can be removed only when spec.tls.mode is allowTLS") {
		t.Errorf("removing spec.tls at requireTLS: %v", err)
	}
	start := time.Now()
	checkDocuments(t, env, got, true, 20)
	t.Logf("the 20 documents read over TLS in %s", time.Since(start).Round(time.Second))

	patch(`{"spec":{"tls":{"mode":"preferTLS"}}}`)
	settled("requireTLS → preferTLS", true, "preferTLS")
	patch(`{"spec":{"tls":{"mode":"allowTLS"}}}`)
	settled("preferTLS → allowTLS", true, "allowTLS")
	patch(`{"spec":{"tls":null}}`)
	got = settled("allowTLS → none", false, "")
	checkDocuments(t, env, got, false, 20)
	if _, err := items.InsertOne(ctx, bson.D{{Key: "_id", Value: "after"}}); err != nil {
		t.Fatalf("w:majority write after TLS off: %v", err)
	}

	stop()
	wg.Wait()
	if maxAway > 1 {
		t.Errorf("a TLS step took %d members away at once", maxAway)
	}
	describeWith(t, env, m.Name, "TLSStepStarted", "TLSStepFinished")
}

// checkDocuments checks, through the status' connection string (with the CA of the
// certificate Secret when it says tls=true), that the set holds n documents
// in app.items.
func checkDocuments(t *testing.T, env *harness.Env, m *v1alpha1.Mgors, withTLS bool, n int64) {
	t.Helper()
	ctx := context.Background()
	c := adminClient(t, env, m, withTLS)
	defer func() { _ = c.Disconnect(ctx) }()
	deadline := time.Now().Add(time.Minute)
	for {
		got, err := c.Database("app").Collection("items").CountDocuments(ctx, bson.D{})
		if err == nil && got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the set holds %d documents (%v), want %d", got, err, n)
		}
		time.Sleep(time.Second)
	}
}

// adminClient is a client of the status' connection string, as the admin
// user, trusting the ca.crt of the certificate Secret when withTLS; writes
// wait for a majority. The caller disconnects it.
func adminClient(t *testing.T, env *harness.Env, m *v1alpha1.Mgors, withTLS bool) *driver.Client {
	t.Helper()
	ctx := context.Background()
	sec, err := env.Client.CoreV1().Secrets(env.Namespace).Get(ctx, m.AdminSecretName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o := options.Client().ApplyURI(m.Status.ConnectionString).
		SetAuth(options.Credential{AuthSource: "admin", Username: string(sec.Data[v1alpha1.AdminUsernameSecretKey]),
			Password: string(sec.Data[v1alpha1.AdminPasswordSecretKey])}).
		SetDialer(&net.Dialer{Resolver: env.Resolver(), Timeout: 3 * time.Second}).
		SetServerSelectionTimeout(20 * time.Second).SetTimeout(20 * time.Second).SetWriteConcern(writeconcern.Majority())
	if withTLS {
		ca, err := env.Client.CoreV1().Secrets(env.Namespace).Get(ctx, kube.CertificateSecretName(m), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca.Data[kube.TLSCAKey]) {
			t.Fatal("the certificate Secret has no ca.crt")
		}
		o.SetTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
	}
	c, err := driver.Connect(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
