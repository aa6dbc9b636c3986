package kube

import (
	"encoding/json"
	"runtime"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkCachedStatefulSetHeap is the live heap one cached StatefulSet of
// a cluster holds, decoded from the object the operator builds, whole
// (heap-B/whole) and as Transform leaves it in the informer (heap-B/cached).
// Measured, never asserted.
func BenchmarkCachedStatefulSetHeap(b *testing.B) {
	replicas := int32(3)
	set := StatefulSet(sample(), Options{ClusterDomain: "cluster.local", Replicas: &replicas})
	for range b.N {
		whole, cached := heldPer(b, set, func() any { return &appsv1.StatefulSet{} })
		b.ReportMetric(whole, "heap-B/whole")
		b.ReportMetric(cached, "heap-B/cached")
	}
}

// BenchmarkCachedObjectsHeap is BenchmarkCachedStatefulSetHeap for the
// other kinds Transform trims, each decoded from the object the operator
// builds with what the control plane adds that the observation reads or
// not (a member pod's status as a kubelet writes it, a bound claim, a
// budget's status), whole and cached; and a Secret read with its data,
// whole and as SecretData keeps it. Measured, never asserted.
func BenchmarkCachedObjectsHeap(b *testing.B) {
	m := sample()
	set := StatefulSet(m, Options{ClusterDomain: "cluster.local"})
	pod := &corev1.Pod{ObjectMeta: set.Spec.Template.ObjectMeta, Spec: set.Spec.Template.Spec}
	pod.Name, pod.Namespace, pod.UID, pod.ResourceVersion = m.Name+"-0", m.Namespace, "0b9e3c1e-5d0f-4f5e-9b3a-1c2d3e4f5a6b", "12345"
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: m.Name, UID: "uid-s", Controller: new(true)}}
	now := metav1.Now()
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.200.1.2", PodIPs: []corev1.PodIP{{IP: "10.200.1.2"}}, StartTime: &now,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now}}}
	for _, c := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image,
			ImageID: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", ContainerID: "localkube://" + pod.Name + "/" + c.Name,
			Ready: true, Started: new(true), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}})
	}
	claim := set.Spec.VolumeClaimTemplates[0].DeepCopy()
	claim.Name, claim.Namespace, claim.UID = DataVolume+"-"+pod.Name, m.Namespace, "9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a"
	claim.Annotations = map[string]string{"pv.kubernetes.io/bind-completed": "yes", "volume.kubernetes.io/storage-provisioner": "localkube.io/hostpath"}
	claim.Spec.VolumeName = "pvc-" + string(claim.UID)
	claim.Spec.StorageClassName = new("standard")
	claim.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, AccessModes: claim.Spec.AccessModes,
		Capacity: claim.Spec.Resources.Requests}
	pdb := PodDisruptionBudget(m, 2)
	pdb.Status = policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 3, DesiredHealthy: 2, ExpectedPods: 3, DisruptionsAllowed: 1,
		Conditions: []metav1.Condition{{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionTrue, Reason: policyv1.SufficientPodsReason, LastTransitionTime: now}}}
	key, err := GenerateKeyfile()
	if err != nil {
		b.Fatal(err)
	}
	keyfile := KeyfileSecret(m, key)
	keyfile.UID, keyfile.ResourceVersion = "1a2b3c4d-5e6f-4a1b-8c2d-3e4f5a6b7c8d", "4321"
	kinds := []struct {
		name string
		obj  any
		new  func() any
		trim func(any) any
	}{
		{"pod", pod, func() any { return &corev1.Pod{} }, nil},
		{"claim", claim, func() any { return &corev1.PersistentVolumeClaim{} }, nil},
		{"budget", pdb, func() any { return &policyv1.PodDisruptionBudget{} }, nil},
		{"secretdata", keyfile, func() any { return &corev1.Secret{} }, func(o any) any { return dataOnly(o.(*corev1.Secret)) }},
	}
	for _, k := range kinds {
		b.Run(k.name, func(b *testing.B) {
			for range b.N {
				whole, kept := heldPer(b, k.obj, k.new, k.trim)
				b.ReportMetric(whole, "heap-B/whole")
				b.ReportMetric(kept, "heap-B/cached")
			}
		})
	}
}

// heldPer is the live heap one object holds decoded from obj's JSON, whole
// and as trim (Transform when none) leaves it.
func heldPer(b *testing.B, obj any, newObj func() any, trim ...func(any) any) (whole, cached float64) {
	raw, err := json.Marshal(obj)
	if err != nil {
		b.Fatal(err)
	}
	t := func(o any) any { o, _ = Transform(o); return o }
	if len(trim) > 0 && trim[0] != nil {
		t = trim[0]
	}
	const n = 1000
	held := func(trimmed bool) float64 {
		keep := make([]any, n)
		before := liveHeap()
		for i := range keep {
			o := newObj()
			if err := json.Unmarshal(raw, o); err != nil {
				b.Fatal(err)
			}
			keep[i] = o
			if trimmed {
				keep[i] = t(o)
			}
		}
		after := liveHeap()
		runtime.KeepAlive(keep)
		return float64(after-before) / n
	}
	return held(false), held(true)
}

func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	return int64(s.HeapAlloc)
}
