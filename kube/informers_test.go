package kube

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/mgors/operator/kube/api/v1alpha1"
	mfake "github.com/mgors/operator/kube/client/fake"
)

func TestTransformKeepsWhatTheOperatorReads(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "db-0", ManagedFields: managed, Labels: map[string]string{LabelCluster: "db"},
			Annotations: map[string]string{TemplateHashAnnotation: "h1", lastApplied: "{}"}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "mongod", Args: []string{"--replSet"}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "mongod", RestartCount: 2, Image: "mongo:7", ContainerID: "sim://1",
				State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 14}}}}},
	}
	got, _ := Transform(pod)
	p := got.(*corev1.Pod)
	if p.ManagedFields != nil || p.Annotations[lastApplied] != "" || p.Annotations[TemplateHashAnnotation] != "h1" ||
		p.Labels[LabelCluster] != "db" || p.Spec.NodeName != "n1" || len(p.Spec.Containers) != 0 || p.Status.PodIP != "" ||
		p.Status.Phase != corev1.PodRunning || len(p.Status.Conditions) != 1 || p.Status.ContainerStatuses[0].RestartCount != 2 {
		t.Errorf("pod %+v", p)
	}
	if c := p.Status.ContainerStatuses[0]; c.Name != "mongod" || c.Image != "" || c.ContainerID != "" ||
		c.State.Waiting.Reason != "CrashLoopBackOff" || c.LastTerminationState.Terminated.ExitCode != 14 {
		t.Errorf("container status %+v", c)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db-keyfile", ResourceVersion: "7", Finalizers: []string{SecretFinalizer},
		Annotations: map[string]string{lastApplied: `{"data":{"keyfile":"c2VjcmV0"}}`}},
		Data: map[string][]byte{"keyfile": []byte("secret")}, StringData: map[string]string{"k": "v"}}
	got, _ = Transform(sec)
	s := got.(*corev1.Secret)
	if s.Data != nil || s.StringData != nil || s.Annotations != nil || s.ResourceVersion != "7" || !Protected(s) {
		t.Errorf("secret %+v: no value may stay in the cache", s)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "a"}},
		Status: corev1.NodeStatus{Images: []corev1.ContainerImage{{Names: []string{"mongo"}}}, Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse}, {Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	got, _ = Transform(node)
	n := got.(*corev1.Node)
	if n.Name != "n1" || n.Labels != nil || n.Status.Images != nil || len(n.Status.Conditions) != 1 || !readiness(n).Ready {
		t.Errorf("node %+v", n)
	}
	set := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", ManagedFields: managed},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3),
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{TemplateHashAnnotation: "h1"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "mongod", Args: []string{"--replSet"}}}}},
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType},
			ServiceName:                          "db",
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{ObjectMeta: metav1.ObjectMeta{Name: DataVolume, Labels: map[string]string{"a": "b"}},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}}},
		Status: appsv1.StatefulSetStatus{Replicas: 3, UpdateRevision: "db-1"}}
	got, _ = Transform(set)
	st := got.(*appsv1.StatefulSet)
	if st.ManagedFields != nil || *st.Spec.Replicas != 3 || st.Spec.Template.Annotations[TemplateHashAnnotation] != "h1" ||
		len(st.Spec.Template.Spec.Containers) != 0 || len(st.Spec.VolumeClaimTemplates) != 1 || st.Status.Replicas != 3 ||
		st.Spec.PersistentVolumeClaimRetentionPolicy == nil || st.Spec.ServiceName != "" || st.Status.UpdateRevision != "" {
		t.Errorf("statefulset %+v", st)
	}
	if c := st.Spec.VolumeClaimTemplates[0]; c.Name != DataVolume || c.Labels != nil || c.Spec.AccessModes != nil ||
		c.Spec.Resources.Requests.Storage().String() != "1Gi" {
		t.Errorf("claim template %+v", c)
	}
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-db-0", Labels: map[string]string{LabelCluster: "db"}},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("fast"), VolumeName: "pv-1",
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}}}
	got, _ = Transform(claim)
	c := got.(*corev1.PersistentVolumeClaim)
	if c.Labels[LabelCluster] != "db" || *c.Spec.StorageClassName != "fast" || c.Spec.VolumeName != "pv-1" || c.Spec.AccessModes != nil ||
		c.Spec.Resources.Requests.Storage().String() != "1Gi" || c.Status.Phase != corev1.ClaimBound || c.Status.AccessModes != nil ||
		c.Status.Capacity.Storage().String() != "2Gi" {
		t.Errorf("claim %+v", c)
	}
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec:   policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(2)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 1, CurrentHealthy: 3}}
	got, _ = Transform(pdb)
	b := got.(*policyv1.PodDisruptionBudget)
	if b.Name != "db" || b.Spec.MinAvailable.IntVal != 2 || b.Spec.Selector != nil || b.Status.CurrentHealthy != 0 {
		t.Errorf("budget %+v", b)
	}
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/x", Obj: pod}
	if got, err := Transform(tomb); err != nil || got != any(tomb) {
		t.Errorf("a tombstone became %v, %v", got, err)
	}
}

// Informers answer only once synced, select the objects the operator made,
// keep no Secret value in the informer, and read a Secret's data once per
// resourceVersion.
func TestInformers(t *testing.T) {
	m := sample()
	owned := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-0", Namespace: "ns", Labels: Labels(m, ComponentMember)}}
	stranger := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-9", Namespace: "ns", Labels: ClusterSelectorLabels(m)}}
	users := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "users", Namespace: "ns", ResourceVersion: "1",
		Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"note": "b"}},
		Data: map[string][]byte{"password": []byte("one")}}
	neighbour := sample(func(m *v1alpha1.Mgors) { m.Name = "other" })
	next := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "other-0", Namespace: "ns", Labels: Labels(neighbour, ComponentMember)}}
	kc := fake.NewClientset(owned, stranger, users, next)
	gets := 0
	kc.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		gets++
		return false, nil, nil
	})
	inf := NewInformers(kc, mfake.NewClientset(), InformerOptions{})
	if _, err := inf.Secret("ns", "users"); !errors.Is(err, ErrNotSynced) {
		t.Fatalf("a read before the sync: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); inf.Shutdown() }()
	inf.Start(ctx)
	if err := inf.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	pods, err := inf.Pods("ns", labels.SelectorFromSet(ClusterSelectorLabels(neighbour)))
	if err != nil || len(pods) != 1 || pods[0].Name != "other-0" {
		t.Fatalf("pods of the cluster other: %v, %v", pods, err)
	}
	if all, err := inf.Pods("ns", labels.SelectorFromSet(map[string]string{LabelName: AppName})); err != nil || len(all) != 2 {
		t.Fatalf("pods without a cluster in the selector: %v, %v", all, err)
	}
	pods, err = inf.Pods("ns", labels.SelectorFromSet(ClusterSelectorLabels(m)))
	if err != nil || len(pods) != 1 || pods[0].Name != "db-0" {
		t.Fatalf("pods %v, %v: only the operator's (managed-by) are watched", pods, err)
	}
	if s, err := inf.Secret("ns", "users"); err != nil || s.Data != nil {
		t.Fatalf("secret %v, %v", s, err)
	}
	for range 3 {
		s, err := inf.SecretData(ctx, "ns", "users")
		if err != nil || string(s.Data["password"]) != "one" {
			t.Fatalf("data %v, %v", s, err)
		}
		if s.Name != "users" || s.Namespace != "ns" || s.ResourceVersion == "" || s.Labels != nil || s.Annotations != nil {
			t.Fatalf("kept of the Secret: %+v (only its name, namespace, UID, resourceVersion and data)", s.ObjectMeta)
		}
	}
	if gets != 1 || inf.SecretValueReads() != 1 {
		t.Fatalf("%d GETs (%d counted) for one resourceVersion", gets, inf.SecretValueReads())
	}
	changed := users.DeepCopy()
	changed.ResourceVersion, changed.Data["password"] = "2", []byte("two")
	if _, err := kc.CoreV1().Secrets("ns").Update(ctx, changed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if s, _ := inf.Secret("ns", "users"); s != nil && s.ResourceVersion == "2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the cache never saw the changed Secret")
		}
	}
	if s, err := inf.SecretData(ctx, "ns", "users"); err != nil || string(s.Data["password"]) != "two" || gets != 2 {
		t.Fatalf("after a change: %v, %v, %d GETs", s, err, gets)
	}
	if _, err := inf.SecretData(ctx, "ns", "gone"); !apierrors.IsNotFound(err) || gets != 2 {
		t.Fatalf("a Secret the cache lacks: %v, %d GETs", err, gets)
	}
	// The cache lags a write the GET already saw (it shows 1, the API 7):
	// the copy read is the newer, and is kept until the cache moves.
	late := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: "ns", ResourceVersion: "7"},
		Data: map[string][]byte{"password": []byte("seven")}}
	kc.PrependReactor("get", "secrets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.GetAction).GetName() == "late" {
			gets++ // this reactor answers before the counting one
			return true, late.DeepCopy(), nil
		}
		return false, nil, nil
	})
	if _, err := kc.CoreV1().Secrets("ns").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: "ns", ResourceVersion: "1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if s, _ := inf.Secret("ns", "late"); s != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the cache never saw the new Secret")
		}
	}
	for range 3 {
		if s, err := inf.SecretData(ctx, "ns", "late"); err != nil || string(s.Data["password"]) != "seven" {
			t.Fatalf("behind a lagging cache: %v, %v", s, err)
		}
	}
	if gets != 3 {
		t.Fatalf("%d GETs: one for the Secret behind a lagging cache, none after", gets)
	}
	if _, err := inf.Node("n1"); !errors.Is(err, ErrNotWatched) {
		t.Errorf("node without ClusterScoped: %v", err)
	}
	if _, err := inf.StorageClasses(); !errors.Is(err, ErrNotWatched) {
		t.Errorf("storage classes without ClusterScoped: %v", err)
	}
}

func backupOf(ns, name, cluster string, created time.Time) *v1alpha1.MgorsBackup {
	return &v1alpha1.MgorsBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(created),
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec: v1alpha1.MgorsBackupSpec{Cluster: cluster}}
}

func backupNames(bs []*v1alpha1.MgorsBackup) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.Namespace+"/"+b.Name)
	}
	return out
}

// Backups are a cluster's MgorsBackups of its namespace, oldest first (by
// creationTimestamp, then name), from the cache once synced.
func TestInformersBackups(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mc := mfake.NewClientset(
		backupOf("ns", "late", "db", t0.Add(time.Hour)),
		backupOf("ns", "b", "db", t0),
		backupOf("ns", "a", "db", t0),
		backupOf("ns", "other", "db2", t0),
		backupOf("elsewhere", "same-cluster-name", "db", t0),
	)
	inf := NewInformers(fake.NewClientset(), mc, InformerOptions{})
	if _, err := inf.Backups("ns", "db"); !errors.Is(err, ErrNotSynced) {
		t.Fatalf("a read before the sync: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); inf.Shutdown() }()
	inf.Start(ctx)
	if err := inf.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := inf.Backups("ns", "db")
	if want := []string{"ns/a", "ns/b", "ns/late"}; err != nil || !slices.Equal(backupNames(got), want) {
		t.Fatalf("backups %v, %v; want %v", backupNames(got), err, want)
	}
	if got[0].ManagedFields != nil {
		t.Errorf("the cache keeps managedFields: not transformed")
	}
	if got, err := inf.Backups("ns", "none"); err != nil || len(got) != 0 {
		t.Fatalf("a cluster without backups: %v, %v", got, err)
	}
	if inf.BackupInformer() == nil {
		t.Fatal("no BackupInformer")
	}

	early := backupOf("ns", "z-early", "db", t0.Add(-time.Hour))
	if _, err := mc.MgorsBackups("ns").Create(ctx, early, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := mc.MgorsBackups("ns").Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"ns/z-early", "ns/a", "ns/late"}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		got, err := inf.Backups("ns", "db")
		if err == nil && slices.Equal(backupNames(got), want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("backups %v, %v; want %v", backupNames(got), err, want)
		}
	}
}

// The namespaced informers see one namespace's backups only.
func TestInformersBackupsOfOneNamespace(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mc := mfake.NewClientset(backupOf("ns", "a", "db", t0), backupOf("elsewhere", "b", "db", t0))
	inf := NewInformers(fake.NewClientset(), mc, InformerOptions{Namespace: "ns"})
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); inf.Shutdown() }()
	inf.Start(ctx)
	if err := inf.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(inf.BackupInformer().GetStore().List()); n != 1 {
		t.Fatalf("the cache holds %d backups, want the namespace's 1", n)
	}
}

func restoreOf(ns, name, cluster, backup string, created time.Time) *v1alpha1.MgorsRestore {
	return &v1alpha1.MgorsRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(created),
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec: v1alpha1.MgorsRestoreSpec{Cluster: cluster, Backup: backup}}
}

func restoreNames(rs []*v1alpha1.MgorsRestore) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Namespace+"/"+r.Name)
	}
	return out
}

// Restores are a cluster's MgorsRestores of its namespace, oldest first (by
// creationTimestamp, then name), from the cache once synced; Backup is one
// MgorsBackup by name.
func TestInformersRestores(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mc := mfake.NewClientset(
		restoreOf("ns", "late", "db", "b1", t0.Add(time.Hour)),
		restoreOf("ns", "b", "db", "b1", t0),
		restoreOf("ns", "a", "db", "b1", t0),
		restoreOf("ns", "other", "db2", "b1", t0),
		restoreOf("elsewhere", "same-cluster-name", "db", "b1", t0),
		backupOf("ns", "b1", "db", t0),
	)
	inf := NewInformers(fake.NewClientset(), mc, InformerOptions{})
	if _, err := inf.Restores("ns", "db"); !errors.Is(err, ErrNotSynced) {
		t.Fatalf("a read before the sync: %v", err)
	}
	if _, err := inf.Backup("ns", "b1"); !errors.Is(err, ErrNotSynced) {
		t.Fatalf("a backup read before the sync: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); inf.Shutdown() }()
	inf.Start(ctx)
	if err := inf.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := inf.Restores("ns", "db")
	if want := []string{"ns/a", "ns/b", "ns/late"}; err != nil || !slices.Equal(restoreNames(got), want) {
		t.Fatalf("restores %v, %v; want %v", restoreNames(got), err, want)
	}
	if got[0].ManagedFields != nil {
		t.Errorf("the cache keeps managedFields: not transformed")
	}
	if got, err := inf.Restores("ns", "none"); err != nil || len(got) != 0 {
		t.Fatalf("a cluster without restores: %v, %v", got, err)
	}
	if inf.RestoreInformer() == nil {
		t.Fatal("no RestoreInformer")
	}
	if b, err := inf.Backup("ns", "b1"); err != nil || b.Name != "b1" || b.Spec.Cluster != "db" {
		t.Fatalf("backup b1: %+v, %v", b, err)
	}
	_, err = inf.Backup("ns", "missing")
	var status apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &status) ||
		status.Status().Details.Group != v1alpha1.GroupName || status.Status().Details.Kind != v1alpha1.BackupResource {
		t.Fatalf("a missing backup: %v", err)
	}
	if _, err := inf.Backup("elsewhere", "b1"); !apierrors.IsNotFound(err) {
		t.Fatalf("a backup of another namespace: %v", err)
	}

	early := restoreOf("ns", "z-early", "db", "b1", t0.Add(-time.Hour))
	if _, err := mc.MgorsRestores("ns").Create(ctx, early, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := mc.MgorsRestores("ns").Delete(ctx, "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"ns/z-early", "ns/a", "ns/late"}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		got, err := inf.Restores("ns", "db")
		if err == nil && slices.Equal(restoreNames(got), want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("restores %v, %v; want %v", restoreNames(got), err, want)
		}
	}
}

// The namespaced informers see one namespace's restores only.
func TestInformersRestoresOfOneNamespace(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mc := mfake.NewClientset(restoreOf("ns", "a", "db", "b1", t0), restoreOf("elsewhere", "b", "db", "b1", t0))
	inf := NewInformers(fake.NewClientset(), mc, InformerOptions{Namespace: "ns"})
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); inf.Shutdown() }()
	inf.Start(ctx)
	if err := inf.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(inf.RestoreInformer().GetStore().List()); n != 1 {
		t.Fatalf("the cache holds %d restores, want the namespace's 1", n)
	}
}
