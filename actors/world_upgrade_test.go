package actors

import (
	"context"
	"testing"

	"github.com/asynkron/protoactor-go/actor"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube/api/v1alpha1"
)

// Through the KubeWorld: the status shows what the members run and the
// FCV; a spec.version below the FCV is refused with the StatefulSet left on
// the running image; one on the FCV's line reaches the StatefulSet.
func TestKubeWorldVersionChanges(t *testing.T) {
	newWorld, _, mc, _ := kubeFixture(t, "admin")
	w := newWorld(nil)
	sys := actor.NewActorSystem()
	mgr, err := sys.Root.SpawnNamed(NewManagerProps(testDeps(eventlog.NewMemory(), w)), "manager")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sys.Root.PoisonFuture(mgr).Wait() }()
	m := mgors()
	sys.Root.Send(mgr, ClusterChanged{Mgors: m})
	status := func() v1alpha1.MgorsStatus {
		cur, err := mc.Mgorses("db").Get(context.Background(), "demo", metav1.GetOptions{})
		if err != nil {
			return v1alpha1.MgorsStatus{}
		}
		return cur.Status
	}
	waitFor(t, "Healthy at 7.0.14, FCV 7.0", func() bool {
		st := status()
		return st.Phase == v1alpha1.PhaseHealthy && st.Version == "7.0.14" && st.FeatureCompatibilityVersion == "7.0"
	})
	image := func() string {
		sts, err := w.Applier.Client.AppsV1().StatefulSets("db").Get(context.Background(), "demo", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		return sts.Spec.Template.Spec.Containers[0].Image
	}
	change := func(version string) {
		m = m.DeepCopy()
		m.Spec.Version = version
		m.Generation++
		sys.Root.Send(mgr, ClusterChanged{Mgors: m})
	}
	change("6.0.19")
	waitFor(t, "VersionRefused", func() bool {
		for _, c := range status().Conditions {
			if c.Type == v1alpha1.ConditionStalled && c.Reason == "VersionRefused" {
				return true
			}
		}
		return false
	})
	if got := image(); got != "mongo:7.0.14" {
		t.Fatalf("a refused version reached the StatefulSet: %s", got)
	}
	change("7.0.12")
	waitFor(t, "7.0.12 in the StatefulSet", func() bool { return image() == "mongo:7.0.12" })
}
