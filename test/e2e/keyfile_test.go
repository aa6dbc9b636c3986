package e2e

import (
	"context"
	"fmt"
	"maps"
	"math"
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
	// lost are the records a snapshot folded before a read saw them.
	lost := map[int64]bool{}
	follow := func() {
		snap, recs, err := store.Load(ctx, stream)
		if err != nil {
			return
		}
		if snap != nil {
			for seq := int64(1); seq <= snap.Seq; seq++ {
				if _, ok := seen[seq]; !ok {
					lost[seq] = true
				}
			}
		}
		for _, r := range recs {
			seen[r.Seq] = r
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
	var steps []keyfileStep
	for _, seq := range slices.Sorted(maps.Keys(seen)) {
		e, ok, err := actors.Decode(seen[seq])
		if !ok || err != nil {
			continue
		}
		switch e := e.(type) {
		case actors.KeyfileRotationStarted:
			steps = append(steps, keyfileStep{seq, "started " + e.Old})
		case actors.KeyfileRotationStep:
			steps = append(steps, keyfileStep{seq, "step " + strings.Join(e.Keys, ",")})
		case actors.KeyfileStepRolled:
			steps = append(steps, keyfileStep{seq, "rolled"})
		case actors.KeyfileRotated:
			steps = append(steps, keyfileStep{seq, "rotated " + e.Old + " " + e.New})
		}
	}
	want := []string{"started " + old[0], "step " + old[0] + "," + now[0], "rolled", "step " + now[0] + "," + old[0], "rolled",
		"step " + now[0], "rolled", "rotated " + old[0] + " " + now[0]}
	if err := keyfileStepsInOrder(steps, want, lost); err != nil {
		var got []string
		for _, s := range steps {
			got = append(got, fmt.Sprintf("%d %s", s.seq, s.text))
		}
		t.Fatalf("the event log's keyfile steps: %v\n%s\nwant:\n%s\nfolded into a snapshot before a read: %v",
			err, strings.Join(got, "\n"), strings.Join(want, "\n"), slices.Sorted(maps.Keys(lost)))
	}
	describeWith(t, env, m.Name, "KeyfileRotated")
}

// keyfileStep is a keyfile record of the event log, by sequence number.
type keyfileStep struct {
	seq  int64
	text string
}

// keyfileStepsInOrder checks that the steps seen are want's, in order.
// A step of want may be missing only where a record between the steps
// seen around it was folded into a snapshot before the test read it
// (lost): a snapshot compacts the records it folds. A "rolled" may be
// missing anyway, as before: its record may fall between two reads.
func keyfileStepsInOrder(steps []keyfileStep, want []string, lost map[int64]bool) error {
	// match each step seen to the next entry of want it equals
	at := make([]int64, len(want)) // the seq matched to each want, 0 none
	i := 0
	for _, s := range steps {
		for i < len(want) && want[i] != s.text {
			i++
		}
		if i == len(want) {
			return fmt.Errorf("%q (seq %d) out of order", s.text, s.seq)
		}
		at[i] = s.seq
		i++
	}
	for j, w := range want {
		if at[j] != 0 || w == "rolled" {
			continue
		}
		before, after := int64(0), int64(math.MaxInt64)
		for k := j - 1; k >= 0; k-- {
			if at[k] != 0 {
				before = at[k]
				break
			}
		}
		for k := j + 1; k < len(want); k++ {
			if at[k] != 0 {
				after = at[k]
				break
			}
		}
		folded := false
		for seq := range lost {
			folded = folded || before < seq && seq < after
		}
		if !folded {
			return fmt.Errorf("%q missing, and no record between seq %d and %d was folded before a read", w, before, after)
		}
	}
	return nil
}
