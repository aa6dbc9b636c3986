package e2e

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
	"github.com/mgors/operator/test/localkube/harness"
)

// A 3-member set created at 6.0 upgraded to 7.0 by spec.version: the
// members roll one at a time, every one reports 7.0 in buildInfo, the FCV
// becomes 7.0, the set takes a w:majority write after, and every member
// holds the writes made before. A downgrade below the FCV is then refused
// with a condition, and nothing rolls.
func TestUpgrade60To70(t *testing.T) {
	t.Parallel()
	env := harness.Cluster(t)
	deployOperator(t, env)
	ctx := context.Background()
	mc := mgorsClient(t, env).Mgorses(env.Namespace)
	m := sample(t, env, "mgors-3.yaml", func(m *v1alpha1.Mgors) {
		m.Name = "up"
		m.Spec.Version = "6.0.19"
		m.Spec.Storage.Reclaim = v1alpha1.VolumeDelete
	})
	if _, err := mc.Create(ctx, m, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mc.Delete(context.Background(), m.Name, metav1.DeleteOptions{}) })
	got := waitMgors(t, env, m.Name, "Healthy at 6.0", 6*time.Minute, func(x *v1alpha1.Mgors) bool {
		return x.Status.Phase == v1alpha1.PhaseHealthy && x.Status.Primary != "" && x.Status.FeatureCompatibilityVersion == "6.0" && x.Status.Version == "6.0.19"
	})
	set := connect(t, env, got)
	items := set.Database("app").Collection("items")
	for i := range 20 {
		if _, err := items.InsertOne(ctx, bson.D{{Key: "_id", Value: i}}); err != nil {
			t.Fatal(err)
		}
	}

	cur, err := mc.Get(ctx, m.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Version = "7.0.14"
	if _, err := mc.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	start, maxAway := time.Now(), 0
	got = waitMgors(t, env, m.Name, "Healthy at 7.0 with FCV 7.0", 6*time.Minute, func(x *v1alpha1.Mgors) bool {
		if pods, err := env.Client.CoreV1().Pods(env.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + m.Name}); err == nil {
			maxAway = max(maxAway, 3-readyPods(pods.Items))
		}
		return x.Status.ObservedGeneration == x.Generation && x.Status.Phase == v1alpha1.PhaseHealthy &&
			x.Status.Version == "7.0.14" && x.Status.FeatureCompatibilityVersion == "7.0"
	})
	t.Logf("6.0.19 → 7.0.14 and FCV 7.0 in %s", time.Since(start).Round(time.Second))
	if maxAway > 1 {
		t.Errorf("the upgrade took %d members away at once", maxAway)
	}
	plain := mongo.NewClient(mongo.Options{Resolver: env.Resolver(), Timeout: 10 * time.Second})
	t.Cleanup(func() { _ = plain.Close(context.Background()) })
	for _, ms := range got.Status.Members {
		if v, err := plain.ServerVersion(ctx, ms.Host); err != nil || v != "7.0.14" {
			t.Errorf("%s: buildInfo %q %v", ms.Name, v, err)
		}
	}
	var fcv struct {
		FCV mongo.FCV `bson:"featureCompatibilityVersion"`
	}
	if err := set.Database("admin").RunCommand(ctx, bson.D{{Key: "getParameter", Value: 1}, {Key: "featureCompatibilityVersion", Value: 1}}).Decode(&fcv); err != nil || fcv.FCV.Version != "7.0" {
		t.Errorf("getParameter featureCompatibilityVersion: %+v %v", fcv, err)
	}
	if _, err := items.InsertOne(ctx, bson.D{{Key: "_id", Value: "after"}}); err != nil {
		t.Fatalf("w:majority write after the upgrade: %v", err)
	}
	for _, ms := range got.Status.Members {
		member := connect(t, env, got, ms.Host)
		deadline := time.Now().Add(time.Minute)
		for {
			n, err := member.Database("app").Collection("items").CountDocuments(ctx, bson.D{})
			if err == nil && n == 21 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s holds %d documents (%v), want 21", ms.Name, n, err)
			}
			time.Sleep(time.Second)
		}
	}
	describeWith(t, env, m.Name, "UpgradeStarted", "FCVSet", "UpgradeFinished")
	if explain := mustKubectl(t, env, "", "explain", "mgors.spec.version"); !strings.Contains(explain, "featureCompatibilityVersion") {
		t.Errorf("kubectl explain mgors.spec.version:\n%s", explain)
	}
	if wide := mustKubectl(t, env, "", "-n", env.Namespace, "get", "mgo", m.Name, "-o", "wide"); !strings.Contains(wide, "RUNNING") || !strings.Contains(wide, "7.0.14") || !strings.Contains(wide, "FCV") {
		t.Errorf("kubectl get mgo -o wide:\n%s", wide)
	}

	// Below the FCV: refused, the StatefulSet keeps 7.0.
	cur, err = mc.Get(ctx, m.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Version = "6.0.19"
	if _, err := mc.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitMgors(t, env, m.Name, "VersionRefused", 2*time.Minute, func(x *v1alpha1.Mgors) bool {
		c := condition(x, v1alpha1.ConditionStalled)
		return x.Status.ObservedGeneration == x.Generation && c != nil && c.Reason == "VersionRefused" &&
			strings.Contains(c.Message, "spec.version 6.0.19") && strings.Contains(c.Message, "featureCompatibilityVersion 7.0")
	})
	sts, err := env.Client.AppsV1().StatefulSets(env.Namespace).Get(ctx, m.Name, metav1.GetOptions{})
	if err != nil || sts.Spec.Template.Spec.Containers[0].Image != "mongo:7.0.14" {
		t.Errorf("a refused version reached the StatefulSet: %v", err)
	}
}

func readyPods(pods []corev1.Pod) int {
	n := 0
	for _, p := range pods {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
				n++
			}
		}
	}
	return n
}

// connect is a driver client as the admin user, to the set, or to one
// member directly when a host is given; writes wait for a majority.
func connect(t *testing.T, env *harness.Env, m *v1alpha1.Mgors, host ...string) *driver.Client {
	t.Helper()
	sec, err := env.Client.CoreV1().Secrets(env.Namespace).Get(context.Background(), m.AdminSecretName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uri := m.Status.ConnectionString
	if len(host) > 0 {
		uri = fmt.Sprintf("mongodb://%s/?directConnection=true&authSource=admin", host[0])
	}
	o := options.Client().ApplyURI(uri).
		SetAuth(options.Credential{AuthSource: "admin", Username: string(sec.Data[v1alpha1.AdminUsernameSecretKey]),
			Password: string(sec.Data[v1alpha1.AdminPasswordSecretKey])}).
		SetDialer(&net.Dialer{Resolver: env.Resolver(), Timeout: 3 * time.Second}).
		SetServerSelectionTimeout(20 * time.Second).SetTimeout(20 * time.Second).SetWriteConcern(writeconcern.Majority())
	c, err := driver.Connect(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c
}
