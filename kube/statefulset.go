package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
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

// EnsureStatefulSet creates the StatefulSet, or updates the fields that may
// change in place: labels, update strategy, claim retention policy and the pod
// template (which rolls no pod by itself: the strategy is OnDelete).
//
// Replicas are set on create only. Afterwards they belong to the actor through
// ScaleStatefulSet, so that a desired object built from spec.members can never
// jump the set by more than the one member the actor is adding or removing.
//
// The pod template is compared by its TemplateHashAnnotation (what we build)
// and as a derivative of the existing one (hand edits of fields we set), so
// the API server's defaults never look like a change.
func (a *Applier) EnsureStatefulSet(ctx context.Context, desired *appsv1.StatefulSet) (bool, error) {
	return ensure(ctx, a, a.Client.AppsV1().StatefulSets(desired.Namespace), "StatefulSet", desired,
		func(cur, next *appsv1.StatefulSet) (bool, error) {
			if field := immutableStatefulSetChange(cur, desired); field != "" {
				return false, &ImmutableChange{Kind: "StatefulSet", Name: desired.Name, Field: field}
			}
			diff := false
			if cur.Spec.UpdateStrategy.Type != desired.Spec.UpdateStrategy.Type {
				next.Spec.UpdateStrategy = desired.Spec.UpdateStrategy
				diff = true
			}
			if !equality.Semantic.DeepDerivative(desired.Spec.PersistentVolumeClaimRetentionPolicy, cur.Spec.PersistentVolumeClaimRetentionPolicy) {
				next.Spec.PersistentVolumeClaimRetentionPolicy = desired.Spec.PersistentVolumeClaimRetentionPolicy
				diff = true
			}
			if templateDiffers(&cur.Spec.Template, &desired.Spec.Template) {
				next.Spec.Template = *desired.Spec.Template.DeepCopy()
				diff = true
			}
			return diff, nil
		})
}

func templateDiffers(cur, desired *corev1.PodTemplateSpec) bool {
	if cur.Annotations[TemplateHashAnnotation] != desired.Annotations[TemplateHashAnnotation] {
		return true
	}
	// Labels and annotations must match exactly: a label the user removed from
	// spec.podLabels must go, and the API server adds none to a template.
	if !maps.Equal(cur.Labels, desired.Labels) || !maps.Equal(cur.Annotations, desired.Annotations) {
		return true
	}
	return !equality.Semantic.DeepDerivative(desired.Spec, cur.Spec)
}

// immutableStatefulSetChange names the first immutable field in which cur
// differs from desired, or "".
func immutableStatefulSetChange(cur, desired *appsv1.StatefulSet) string {
	switch {
	case !equality.Semantic.DeepEqual(cur.Spec.Selector, desired.Spec.Selector):
		return "spec.selector"
	case cur.Spec.ServiceName != desired.Spec.ServiceName:
		return "spec.serviceName"
	case cur.Spec.PodManagementPolicy != desired.Spec.PodManagementPolicy:
		return "spec.podManagementPolicy"
	case !claimsMatch(cur.Spec.VolumeClaimTemplates, desired.Spec.VolumeClaimTemplates):
		return "spec.volumeClaimTemplates"
	}
	return ""
}

// claimsMatch compares the claim templates by what we set: names, access
// modes, class and requested size (a grown spec.storage.size shows here).
func claimsMatch(cur, desired []corev1.PersistentVolumeClaim) bool {
	if len(cur) != len(desired) {
		return false
	}
	for i := range desired {
		d, c := desired[i], cur[i]
		if d.Name != c.Name || !equality.Semantic.DeepEqual(d.Spec.AccessModes, c.Spec.AccessModes) ||
			!ptr.Equal(d.Spec.StorageClassName, c.Spec.StorageClassName) ||
			!equality.Semantic.DeepEqual(d.Spec.Resources.Requests, c.Spec.Resources.Requests) {
			return false
		}
	}
	return true
}

// ScaleStatefulSet sets the replicas of m's StatefulSet name (members or
// arbiters). The actor calls it one member at a time, after the reconfig that
// makes the step safe. It reports whether it wrote.
func (a *Applier) ScaleStatefulSet(ctx context.Context, m *v1alpha1.Mgors, name string, replicas int32) (bool, error) {
	c := a.Client.AppsV1().StatefulSets(m.Namespace)
	changed := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		changed = false
		cur, err := bounded(ctx, a, func(ctx context.Context) (*appsv1.StatefulSet, error) {
			return c.Get(ctx, name, metav1.GetOptions{})
		})
		if err != nil {
			return err
		}
		if !OwnedBy(cur, m) {
			return &NotOwned{Kind: "StatefulSet", Name: name}
		}
		if cur.Spec.Replicas != nil && *cur.Spec.Replicas == replicas {
			return nil
		}
		next := cur.DeepCopy()
		next.Spec.Replicas = ptr.To(replicas)
		_, err = bounded(ctx, a, func(ctx context.Context) (*appsv1.StatefulSet, error) {
			return c.Update(ctx, next, metav1.UpdateOptions{})
		})
		changed = err == nil
		return err
	})
	return changed, err
}

// ReplaceStatefulSet deletes m's StatefulSet with orphan propagation, leaving
// its pods and volumes running, and creates desired in its place; the new
// StatefulSet adopts the pods by their labels. This is how an immutable field
// changes (a grown volume claim template after ExpandPVCs). The delete is
// preconditioned on the UID read, so it never removes a newer object.
//
// The garbage collector orphans the pods before the old object goes, so the
// create may find it still there: the result is then a Terminating error, and
// the actor calls again. The new StatefulSet keeps the old one's replicas when
// it still exists; desired must carry the current replicas for a later call.
func (a *Applier) ReplaceStatefulSet(ctx context.Context, m *v1alpha1.Mgors, desired *appsv1.StatefulSet) error {
	c := a.Client.AppsV1().StatefulSets(desired.Namespace)
	terminating := &Terminating{Kind: "StatefulSet", Name: desired.Name}
	cur, err := bounded(ctx, a, func(ctx context.Context) (*appsv1.StatefulSet, error) {
		return c.Get(ctx, desired.Name, metav1.GetOptions{})
	})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return err
	case !OwnedBy(cur, m):
		return &NotOwned{Kind: "StatefulSet", Name: desired.Name}
	case cur.DeletionTimestamp != nil:
		return terminating
	default:
		next := desired.DeepCopy()
		next.Spec.Replicas = cur.Spec.Replicas // replacing never scales
		desired = next
		_, err := bounded(ctx, a, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, c.Delete(ctx, desired.Name, metav1.DeleteOptions{
				PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan),
				Preconditions:     &metav1.Preconditions{UID: &cur.UID},
			})
		})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	_, err = bounded(ctx, a, func(ctx context.Context) (*appsv1.StatefulSet, error) {
		return c.Create(ctx, desired, metav1.CreateOptions{})
	})
	if apierrors.IsAlreadyExists(err) {
		return terminating
	}
	return err
}

// ExpandPVCs raises the storage request of the data claims of the given
// members to size (never lowers it). The StorageClass must allow volume
// expansion; the API server refuses the update otherwise.
func (a *Applier) ExpandPVCs(ctx context.Context, m *v1alpha1.Mgors, ordinals []int32, size resource.Quantity) (bool, error) {
	c := a.Client.CoreV1().PersistentVolumeClaims(m.Namespace)
	changed := false
	for _, o := range ordinals {
		name := PVCName(m, o)
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := bounded(ctx, a, func(ctx context.Context) (*corev1.PersistentVolumeClaim, error) {
				return c.Get(ctx, name, metav1.GetOptions{})
			})
			if err != nil {
				return err
			}
			if cur.Labels[LabelCluster] != m.Name {
				return &NotOwned{Kind: "PersistentVolumeClaim", Name: name}
			}
			if q, ok := cur.Spec.Resources.Requests[corev1.ResourceStorage]; ok && q.Cmp(size) >= 0 {
				return nil
			}
			next := cur.DeepCopy()
			if next.Spec.Resources.Requests == nil {
				next.Spec.Resources.Requests = corev1.ResourceList{}
			}
			next.Spec.Resources.Requests[corev1.ResourceStorage] = size.DeepCopy()
			if _, err := bounded(ctx, a, func(ctx context.Context) (*corev1.PersistentVolumeClaim, error) {
				return c.Update(ctx, next, metav1.UpdateOptions{})
			}); err != nil {
				return err
			}
			changed = true
			return nil
		})
		if err != nil {
			return changed, err
		}
	}
	return changed, nil
}
