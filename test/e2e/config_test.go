package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
	"github.com/mgors/operator/test/localkube/harness"
)

// spec.config on a 3-member set (docs/design/mongod-config.md): a runtime
// parameter and the oplog's size reach every member without a restart (pod
// UIDs and restart counts unchanged), then the WiredTiger cache size, a
// startup option, rolls the members one at a time; the Events, the column
// and kubectl explain say so.
func TestConfigRuntimeAndRestart(t *testing.T) {
	t.Parallel()
	env := harness.Cluster(t)
	deployOperator(t, env)
	ctx := context.Background()
	mc := mgorsClient(t, env).Mgorses(env.Namespace)
	m := sample(t, env, "mgors-3.yaml", func(m *v1alpha1.Mgors) {
		m.Name = "conf"
		m.Spec.Storage.Reclaim = v1alpha1.VolumeDelete
		m.Spec.Config = &v1alpha1.MongodConfig{WiredTigerCacheSizeGB: "0.25",
			SetParameter: map[string]v1alpha1.ParameterValue{"logLevel": "0"}}
	})
	created := time.Now()
	if _, err := mc.Create(ctx, m, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mc.Delete(context.Background(), m.Name, metav1.DeleteOptions{}) })
	waitMgors(t, env, m.Name, "Healthy", 3*time.Minute, func(x *v1alpha1.Mgors) bool {
		return x.Status.Phase == v1alpha1.PhaseHealthy && x.Status.Primary != ""
	})
	t.Logf("Healthy %s after the create", time.Since(created).Round(100*time.Millisecond))
	before := podRuns(t, env, m.Name)

	// Run time: logLevel 0 → 2 and a 1500 MB oplog.
	cur, err := mc.Get(ctx, m.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Config.SetParameter["logLevel"] = "2"
	cur.Spec.Storage.OplogSizeMB = ptr.To(int32(1500))
	if cur, err = mc.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	got := waitMgors(t, env, m.Name, "Healthy with the runtime options", 2*time.Minute, func(x *v1alpha1.Mgors) bool {
		return x.Status.ObservedGeneration == cur.Generation && x.Status.Phase == v1alpha1.PhaseHealthy
	})
	for _, ms := range got.Status.Members {
		waitMember(t, env, got, ms.Host, "logLevel 2 and a 1500 MB oplog", func(member memberReader) error {
			level, oplog := member.logLevel(), member.oplogMB()
			if level != "2" || oplog != 1500 {
				return fmt.Errorf("logLevel %s, oplog %d MB", level, oplog)
			}
			return nil
		})
	}
	t.Logf("runtime options on every member %s after the spec changed", time.Since(start).Round(100*time.Millisecond))
	if after := podRuns(t, env, m.Name); after != before {
		t.Errorf("members restarted for runtime options: before %s, after %s", before, after)
	}

	// Restart: the cache size rolls the members.
	if cur, err = mc.Get(ctx, m.Name, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	cur.Spec.Config.WiredTigerCacheSizeGB = "0.5"
	if cur, err = mc.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	waitMgors(t, env, m.Name, "Healthy after the roll", 3*time.Minute, func(x *v1alpha1.Mgors) bool {
		pods, err := env.Client.CoreV1().Pods(env.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + m.Name})
		if err != nil {
			return false
		}
		updated := 0
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && strings.Contains(strings.Join(p.Spec.Containers[0].Command, " "), "--wiredTigerCacheSizeGB 0.5") {
				updated++
			}
		}
		return x.Status.ObservedGeneration == cur.Generation && x.Status.Phase == v1alpha1.PhaseHealthy && updated == 3
	})
	t.Logf("rolled for the cache size in %s", time.Since(start).Round(100*time.Millisecond))
	// The restarted members keep the runtime options: they are on the command line.
	for _, ms := range got.Status.Members {
		waitMember(t, env, got, ms.Host, "logLevel 2 after the restart", func(member memberReader) error {
			if level := member.logLevel(); level != "2" {
				return fmt.Errorf("logLevel %s", level)
			}
			return nil
		})
	}
	describeWith(t, env, m.Name, "ConfigChanged", "applied to the running members without a restart", "ConfigApplied", "needs a restart, members roll")
	if out := mustKubectl(t, env, "", "-n", env.Namespace, "get", "mgo", m.Name, "-o", "wide"); !strings.Contains(out, "CACHE") || !strings.Contains(out, "0.5") {
		t.Errorf("kubectl get mgo -o wide shows no CACHE column of 0.5:\n%s", out)
	}
	if out := mustKubectl(t, env, "", "explain", "mgors.spec.config.setParameter"); !strings.Contains(out, "without a restart") {
		t.Errorf("kubectl explain mgors.spec.config.setParameter:\n%s", out)
	}
}

// describeWith is `kubectl describe mgors name` once it shows every one of
// wants. Kubernetes Events are written after the fact (the recorder sends
// them from a queue, and an event of the operator's next observation comes
// after the world a test waited for), so it asks again for up to a minute
// and then reports what is still missing.
func describeWith(t *testing.T, env *harness.Env, name string, wants ...string) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		desc := mustKubectl(t, env, "", "-n", env.Namespace, "describe", "mgors", name)
		var missing []string
		for _, want := range wants {
			if !strings.Contains(desc, want) {
				missing = append(missing, want)
			}
		}
		if len(missing) == 0 {
			return desc
		}
		if time.Now().After(deadline) {
			t.Errorf("kubectl describe lacks %q after a minute:\n%s", missing, desc)
			return desc
		}
		time.Sleep(time.Second)
	}
}

// memberReader reads one member's options directly, as the admin user.
type memberReader struct {
	t   *testing.T
	get func(db string, cmd bson.D) (bson.Raw, error)
}

func (r memberReader) logLevel() string {
	raw, err := r.get("admin", bson.D{{Key: "getParameter", Value: 1}, {Key: "logLevel", Value: 1}})
	if err != nil {
		return err.Error()
	}
	return mongo.ParameterText(raw.Lookup("logLevel"))
}

func (r memberReader) oplogMB() int64 {
	raw, err := r.get("local", bson.D{{Key: "collStats", Value: "oplog.rs"}})
	if err != nil {
		return -1
	}
	v := raw.Lookup("maxSize")
	if f, ok := v.AsFloat64OK(); ok {
		return int64(f) >> 20
	}
	return -1
}

// waitMember polls one member until check passes.
func waitMember(t *testing.T, env *harness.Env, m *v1alpha1.Mgors, host, what string, check func(memberReader) error) {
	t.Helper()
	c := connect(t, env, m, host)
	r := memberReader{t: t, get: func(db string, cmd bson.D) (bson.Raw, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return c.Database(db).RunCommand(ctx, cmd).Raw()
	}}
	deadline := time.Now().Add(time.Minute)
	for {
		err := check(r)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not %s: %v", host, what, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
