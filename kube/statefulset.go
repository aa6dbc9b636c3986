package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// StatefulSet runs the data-bearing members.
//
//   - Parallel pod management: under OrderedReady a member that never becomes
//     ready (lagging, or waiting for peers) blocks every higher ordinal, and the
//     set can deadlock without a quorum (MCO #909). The actor orders changes.
//   - OnDelete updates: the StatefulSet never restarts a member by itself; the
//     actor rolls them, secondaries first and the stepped-down primary last.
//   - Volume claims are retained on delete and on scale-down whatever
//     spec.storage.reclaim says: the operator deletes volumes itself, and only
//     when reclaim is Delete, after the member left the config.
func StatefulSet(m *v1alpha1.Mgors, o Options) *appsv1.StatefulSet {
	replicas := members(m)
	if o.Replicas != nil {
		replicas = *o.Replicas
	}
	claim := corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: DataVolume, Labels: Labels(m, ComponentMember)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: cloneString(m.Spec.Storage.StorageClassName),
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: storageSize(m)},
			},
		},
	}
	return statefulSet(m, m.Name, ComponentMember, replicas, m.Spec.Resources,
		[]corev1.PersistentVolumeClaim{claim})
}

// ArbiterStatefulSet runs the arbiters (spec.arbiters, 0 or 1): a vote and no
// data, so no volume claim; its dbpath is an emptyDir. It is a StatefulSet of
// its own so that scaling members never renumbers the arbiter.
//
// Its resources are spec.arbiterResources; unset, a small default, as an
// arbiter holds no data.
func ArbiterStatefulSet(m *v1alpha1.Mgors) *appsv1.StatefulSet {
	res := m.Spec.ArbiterResources
	if len(res.Requests) == 0 && len(res.Limits) == 0 {
		res = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("50m"),
				corev1.ResourceMemory: resource.MustParse("256Mi"),
			},
			Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
		}
	}
	return statefulSet(m, ArbiterName(m), ComponentArbiter, m.Spec.Arbiters, res, nil)
}

// members is spec.members, defaulted as the API server defaults it.
func members(m *v1alpha1.Mgors) int32 {
	if m.Spec.Members == 0 {
		return v1alpha1.DefaultMembers
	}
	return m.Spec.Members
}

func cloneString(p *string) *string {
	if p == nil {
		return nil
	}
	return ptr.To(*p)
}

func storageSize(m *v1alpha1.Mgors) resource.Quantity { return m.StorageSize() }

// retention keeps volumes unless the user asked for them to go with the Mgors
// (spec.storage.reclaim: Delete, invariant 4). Then the StatefulSet owns its
// claims, and garbage collection removes them after the StatefulSet, which
// goes with the Mgors: no finalizer is needed. Scaling down always keeps the
// volume of the member that left.
func retention(m *v1alpha1.Mgors) *appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy {
	p := &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
		WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
	}
	if m.Spec.Storage.Reclaim == v1alpha1.VolumeDelete {
		p.WhenDeleted = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	}
	return p
}

func statefulSet(m *v1alpha1.Mgors, name, component string, replicas int32,
	res corev1.ResourceRequirements, claims []corev1.PersistentVolumeClaim) *appsv1.StatefulSet {
	pod := podSpec(m, component, res)
	annotations := maps.Clone(m.Spec.PodAnnotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[TemplateHashAnnotation] = PodSpecHash(restartSpec(&pod)) // what needs a restart (config.go)
	podLabels := maps.Clone(m.Spec.PodLabels)
	if podLabels == nil {
		podLabels = map[string]string{}
	}
	maps.Copy(podLabels, Labels(m, component)) // ours win: the selector depends on them
	return &appsv1.StatefulSet{
		ObjectMeta: objectMeta(m, name, component),
		Spec: appsv1.StatefulSetSpec{
			Replicas:                             ptr.To(replicas),
			Selector:                             &metav1.LabelSelector{MatchLabels: SelectorLabels(m, component)},
			ServiceName:                          m.ServiceName(),
			PodManagementPolicy:                  appsv1.ParallelPodManagement,
			UpdateStrategy:                       appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
			PersistentVolumeClaimRetentionPolicy: retention(m),
			VolumeClaimTemplates:                 claims,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: annotations},
				Spec:       pod,
			},
		},
	}
}

// PodSpecHash is a short hash of a pod spec: pods whose TemplateHashAnnotation
// differs from their StatefulSet template's run an old spec.
func PodSpecHash(spec *corev1.PodSpec) string {
	b, err := json.Marshal(spec) // struct fields in order, map keys sorted: stable
	if err != nil {
		panic(fmt.Sprintf("encoding a pod spec: %v", err)) // cannot happen for a PodSpec
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// PodOutdated reports whether a pod runs an older pod spec than its
// StatefulSet's template, so the actor knows which members still need a
// restart. A pod without the annotation predates it and is outdated too.
func PodOutdated(pod *corev1.Pod, set *appsv1.StatefulSet) bool {
	return pod.Annotations[TemplateHashAnnotation] != set.Spec.Template.Annotations[TemplateHashAnnotation]
}
