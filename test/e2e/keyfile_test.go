package e2e

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mgors/operator/actors"
	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/test/localkube/harness"
)

// The keyfile of a running 3-member set rotated on a person's request
// (issue 14): the operator writes [old, new], [new, old], [new] into the
// keyfile Secret, each followed by a rolling restart, removes the
// annotation, and the set ends Healthy on one new key with every member
// reachable; the event log holds each step, named by fingerprints.
func TestKeyfileRotatedOnARunningSet(t *testing.T) {
	t.Parallel()
	env := harness.Cluster(t)
	deployOperator(t, env)
	ctx := context.Background()
	mc := mgorsClient(t, env).Mgorses(env.Namespace)
	m := sample(t, env, "mgors-3.yaml", func(m *v1alpha1.Mgors) {
		m.Name = "keyroll"
		m.Spec.Storage.Reclaim = v1alpha1.VolumeDelete
	})
	created, err := mc.Create(ctx, m, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mc.Delete(context.Background(), m.Name, metav1.DeleteOptions{}) })
	got := waitMgors(t, env, m.Name, "Healthy", 4*time.Minute, func(x *v1alpha1.Mgors) bool {
		return x.Status.Phase == v1alpha1.PhaseHealthy && x.Status.Primary != "" && x.Status.Ready == "3/3"
	})
	items := connect(t, env, got).Database("app").Collection("items")
	for i := range 10 {
		if _, err := items.InsertOne(ctx, bson.D{{Key: "_id", Value: i}}); err != nil {
			t.Fatal(err)
		}
	}
	keys := func() []string {
		t.Helper()
		sec, err := env.Client.CoreV1().Secrets(env.Namespace).Get(ctx, m.KeyfileSecretName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		fps, err := kube.KeyfileFingerprints(sec.Data[v1alpha1.KeyfileSecretKey])
		if err != nil {
			t.Fatal(err)
		}
		return fps
	}
	old := keys()
	if len(old) != 1 {
		t.Fatalf("the keyfile Secret holds %d keys before the rotation", len(old))
	}

	// The log is followed while the rotation runs: a snapshot compacts the
	// records it folded, so one read at the end may miss the first steps.
	store := eventlog.NewKube(env.Client)
	stream := eventlog.Stream{Namespace: env.Namespace, Name: m.Name, UID: string(created.UID)}
	seen := map[int64]eventlog.Record{}
	follow := func() {
		if _, recs, err := store.Load(ctx, stream); err == nil {
			for _, r := range recs {
				seen[r.Seq] = r
			}
		}
	}
	follow()
	start := time.Now()
	if _, err := mc.Patch(ctx, m.Name, types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+actors.RotateKeyfileAnnotation+`":"e2e-1"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	got = waitMgors(t, env, m.Name, "the rotation done", 4*time.Minute, func(x *v1alpha1.Mgors) bool {
		follow()
		_, asked := x.Annotations[actors.RotateKeyfileAnnotation]
		return !asked && x.Status.Phase == v1alpha1.PhaseHealthy && x.Status.Ready == "3/3"
	})
	t.Logf("rotated in %s", time.Since(start).Round(time.Second))
	now := keys()
	if len(now) != 1 || now[0] == old[0] {
		t.Fatalf("the keyfile Secret holds keys %v after the rotation from %v", now, old)
	}

	// Every member answers, authenticated, and sees every other healthy.
	for i := range int32(3) {
		c := connect(t, env, got, got.MemberHost(i, "cluster.local"))
		r := c.Database("admin").RunCommand(ctx, bson.D{{Key: "replSetGetStatus", Value: 1}})
		raw, err := r.Raw()
		if err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
		vals, _ := raw.Lookup("members").Array().Values()
		for _, v := range vals {
			if h, _ := v.Document().Lookup("health").AsFloat64OK(); h != 1 {
				t.Fatalf("member %d sees %s", i, v.Document())
			}
		}
	}
	if n, err := items.CountDocuments(ctx, bson.D{}); err != nil || n != 10 {
		t.Fatalf("%d documents (%v), want 10", n, err)
	}

	follow()
	seqs := slices.Sorted(maps.Keys(seen))
	var steps []string
	for _, seq := range seqs {
		r := seen[seq]
		e, ok, err := actors.Decode(r)
		if !ok || err != nil {
			continue
		}
		switch e := e.(type) {
		case actors.KeyfileRotationStarted:
			steps = append(steps, "started "+e.Old)
		case actors.KeyfileRotationStep:
			steps = append(steps, "step "+strings.Join(e.Keys, ","))
		case actors.KeyfileStepRolled:
			steps = append(steps, "rolled")
		case actors.KeyfileRotated:
			steps = append(steps, "rotated "+e.Old+" "+e.New)
		}
	}
	want := []string{"started " + old[0], "step " + old[0] + "," + now[0], "rolled", "step " + now[0] + "," + old[0], "rolled",
		"step " + now[0], "rolled", "rotated " + old[0] + " " + now[0]}
	// Every step, in order; a KeyfileStepRolled may fall between two reads
	// into a snapshot (the decision tests hold the full sequence).
	i, inOrder := 0, true
	for _, s := range steps {
		for i < len(want) && want[i] != s {
			i++
		}
		if i == len(want) {
			inOrder = false
			break
		}
		i++
	}
	missed := false
	for _, w := range want {
		if w != "rolled" && !slices.Contains(steps, w) {
			missed = true
		}
	}
	if !inOrder || missed {
		t.Fatalf("the event log's keyfile steps:\n%s\nwant:\n%s", strings.Join(steps, "\n"), strings.Join(want, "\n"))
	}
	describeWith(t, env, m.Name, "KeyfileRotated")
}
