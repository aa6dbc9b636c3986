package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/test/localkube/cluster"
	"github.com/mgors/operator/test/localkube/harness"
)

// Growing spec.storage.size (issue 15, item 2) expands every member's claim
// online and replaces the StatefulSet with its pods orphaned: the claims
// reach the size, no member restarts (same pod UIDs and restart counts), the
// steps are Events, and a later template change still rolls the members.
func TestStorageGrowsWithoutRestarts(t *testing.T) {
	t.Parallel()
	env := harness.Cluster(t)
	deployOperator(t, env)
	ctx := context.Background()
	m := sample(t, env, "mgors-3.yaml", func(m *v1alpha1.Mgors) {
		m.Name = "grow"
		m.Spec.Storage.Reclaim = v1alpha1.VolumeDelete
	})
	mc := mgorsClient(t, env).Mgorses(env.Namespace)
	if _, err := mc.Create(ctx, m, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mc.Delete(context.Background(), m.Name, metav1.DeleteOptions{}) })
	waitMgors(t, env, m.Name, "Healthy", 6*time.Minute, func(m *v1alpha1.Mgors) bool {
		return m.Status.Phase == v1alpha1.PhaseHealthy && m.Status.Primary != ""
	})
	before := podRuns(t, env, m.Name)

	grown := resource.MustParse("2Gi")
	var cur *v1alpha1.Mgors
	// The operator writes the object too (its status, finalizers): an
	// update conflicting with it is read and made again.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() (err error) {
		if cur, err = mc.Get(ctx, m.Name, metav1.GetOptions{}); err != nil {
			return err
		}
		cur.Spec.Storage.Size = &grown
		cur, err = mc.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitMgors(t, env, m.Name, "Healthy with 2Gi volumes", 3*time.Minute, func(x *v1alpha1.Mgors) bool {
		if x.Status.ObservedGeneration != cur.Generation || x.Status.Phase != v1alpha1.PhaseHealthy {
			return false
		}
		sts, err := env.Client.AppsV1().StatefulSets(env.Namespace).Get(ctx, m.Name, metav1.GetOptions{})
		if err != nil || len(sts.Spec.VolumeClaimTemplates) != 1 {
			return false
		}
		if q := sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]; q.Cmp(grown) != 0 {
			return false
		}
		for i := range 3 {
			pvc, err := env.Client.CoreV1().PersistentVolumeClaims(env.Namespace).Get(ctx, fmt.Sprintf("data-%s-%d", m.Name, i), metav1.GetOptions{})
			if err != nil {
				return false
			}
			if q := pvc.Status.Capacity[corev1.ResourceStorage]; q.Cmp(grown) != 0 {
				return false
			}
		}
		return true
	})
	t.Logf("volumes at 2Gi and the StatefulSet replaced %s after the spec changed", time.Since(start).Round(100*time.Millisecond))
	if after := podRuns(t, env, m.Name); after != before {
		t.Errorf("members restarted by the growth: before %s, after %s", before, after)
	}
	describeWith(t, env, m.Name, "StorageGrowing", "VolumesExpanded", "StorageGrown")
	if out := mustKubectl(t, env, "", "-n", env.Namespace, "get", "mgo", m.Name, "-o", "wide"); !strings.Contains(out, "STORAGE") || !strings.Contains(out, "2Gi") {
		t.Errorf("kubectl get mgo -o wide shows no 2Gi STORAGE column:\n%s", out)
	}
	if out := mustKubectl(t, env, "", "explain", "mgors.spec.storage.size"); !strings.Contains(out, "allowVolumeExpansion") {
		t.Errorf("kubectl explain mgors.spec.storage.size does not say the class must allow expansion:\n%s", out)
	}

	// A later template change rolls the members: the StatefulSet updates in place again.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() (err error) {
		if cur, err = mc.Get(ctx, m.Name, metav1.GetOptions{}); err != nil {
			return err
		}
		cur.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("20m")}
		cur, err = mc.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	waitMgors(t, env, m.Name, "Healthy after a rolling restart", 6*time.Minute, func(x *v1alpha1.Mgors) bool {
		pods, err := env.Client.CoreV1().Pods(env.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + m.Name})
		if err != nil {
			return false
		}
		updated := 0
		for _, p := range pods.Items {
			if q := p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; q.Cmp(resource.MustParse("20m")) == 0 && p.DeletionTimestamp == nil {
				updated++
			}
		}
		return x.Status.ObservedGeneration == cur.Generation && x.Status.Phase == v1alpha1.PhaseHealthy && updated == 3
	})
	if c := condition(waitMgors(t, env, m.Name, "read", time.Minute, func(*v1alpha1.Mgors) bool { return true }), v1alpha1.ConditionStalled); c != nil && c.Status == metav1.ConditionTrue {
		t.Errorf("Stalled after the roll: %+v", c)
	}
}

// podRuns is each member pod's UID and mongod restart count, in one string.
func podRuns(t *testing.T, env *harness.Env, name string) string {
	t.Helper()
	var out []string
	for i := range 3 {
		p, err := env.Client.CoreV1().Pods(env.Namespace).Get(context.Background(), fmt.Sprintf("%s-%d", name, i), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		restarts := int32(0)
		for _, c := range p.Status.ContainerStatuses {
			restarts += c.RestartCount
		}
		out = append(out, fmt.Sprintf("%s=%s/%d", p.Name, p.UID, restarts))
	}
	return strings.Join(out, " ")
}

// The API server refuses to grow a bound claim whose StorageClass does not
// allow volume expansion, as a real cluster's does (the
// PersistentVolumeClaimResize admission plugin): localkube's own class allows
// it, a class without allowVolumeExpansion does not.
func TestExpansionRefusedWithoutAllowVolumeExpansion(t *testing.T) {
	t.Parallel()
	env := harness.Cluster(t)
	ctx := context.Background()
	immediate := storagev1.VolumeBindingImmediate
	class := "fixed-" + env.Namespace
	if _, err := env.Client.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{Name: class}, Provisioner: cluster.Provisioner, VolumeBindingMode: &immediate,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.StorageV1().StorageClasses().Delete(context.Background(), class, metav1.DeleteOptions{})
	})
	pvcs := env.Client.CoreV1().PersistentVolumeClaims(env.Namespace)
	if _, err := pvcs.Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "fixed"},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(class),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		pvc, err := pvcs.Get(ctx, "fixed", metav1.GetOptions{})
		return err == nil && pvc.Status.Phase == corev1.ClaimBound, nil
	}); err != nil {
		t.Fatalf("the claim is not bound: %v", err)
	}
	// Controllers may still be writing the claim just bound (a Conflict):
	// grow the newest copy until the answer is something else.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := pvcs.Get(ctx, "fixed", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
		_, err = pvcs.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("growing a claim of a class without allowVolumeExpansion: %v, want Forbidden", err)
	}
	t.Logf("refused as a real API server refuses it: %v", err)
}

// The operator is SIGKILLed right after VolumesExpanded, and the StatefulSet
// is then deleted with its pods orphaned, as if the operator had died between
// the delete and the create of ReplaceStatefulSet: a restarted operator
// creates the StatefulSet with the grown claim template, the member keeps
// running (same pod, no restart), and the log records the growth once.
func TestStorageGrowthFinishedAfterACrash(t *testing.T) {
	env := harness.Cluster(t)
	installCRD(t, env)
	pauseInClusterOperator(t, env)
	ctx := context.Background()
	const name = "growcrash"
	m := sample(t, env, "mgors-dev-1.yaml", func(m *v1alpha1.Mgors) {
		m.Name = name
		m.Spec.Storage.Reclaim = v1alpha1.VolumeDelete
	})
	mc := mgorsClient(t, env).Mgorses(env.Namespace)
	created, err := mc.Create(ctx, m, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mc.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	store := t.TempDir()
	first := startHostOperator(t, env, store, "VolumesExpanded:1")
	waitMgors(t, env, name, "Healthy", 4*time.Minute, func(m *v1alpha1.Mgors) bool {
		return m.Status.Phase == v1alpha1.PhaseHealthy && m.Status.Primary != ""
	})
	pod := func() string {
		p, err := env.Client.CoreV1().Pods(env.Namespace).Get(ctx, name+"-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		restarts := int32(0)
		for _, c := range p.Status.ContainerStatuses {
			restarts += c.RestartCount
		}
		return fmt.Sprintf("%s/%d", p.UID, restarts)
	}
	before := pod()
	grown := resource.MustParse("1Gi")
	cur, err := mc.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Storage.Size = &grown
	if _, err := mc.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-first.exited:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the operator never reached VolumesExpanded\n%s", first.out)
	}
	mustKubectl(t, env, "", "-n", env.Namespace, "delete", "statefulset", name, "--cascade=orphan", "--wait=true")

	second := startHostOperator(t, env, store, "")
	waitMgors(t, env, name, "Healthy with the StatefulSet back", 3*time.Minute, func(x *v1alpha1.Mgors) bool {
		sts, err := env.Client.AppsV1().StatefulSets(env.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil || len(sts.Spec.VolumeClaimTemplates) != 1 {
			return false
		}
		q := sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]
		return q.Cmp(grown) == 0 && x.Status.Phase == v1alpha1.PhaseHealthy && x.Status.ObservedGeneration == x.Generation
	})
	second.stop()
	if after := pod(); after != before {
		t.Errorf("the member restarted: pod UID/restarts %s before, %s after", before, after)
	}
	recs, s := foldedLog(t, store, eventlog.Stream{Namespace: env.Namespace, Name: name, UID: string(created.UID)})
	grownOnce := 0
	for _, r := range recs {
		if r.Type == "StorageGrown" {
			grownOnce++
		}
	}
	if s.Storage != nil || grownOnce != 1 {
		t.Fatalf("the growth is not recorded as finished once: storage %+v, %d StorageGrown", s.Storage, grownOnce)
	}
}
