package kube

import (
	"context"

	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// MinAvailable is the budget that keeps a voluntary disruption (a node drain,
// an eviction) from taking the voting majority: pods is the number of mongod
// pods (members and arbiters) and voters how many of them vote.
//
// It is pods − (voters − majority): even when each evicted pod is a voter, a
// majority of voters stays, so the set keeps its primary. When every pod votes
// this is the majority itself (2 of 3, 3 of 5). A single voter has no majority
// to protect: its budget allows the disruption rather than block every node
// drain forever.
func MinAvailable(pods, voters int32) int32 {
	if voters <= 1 {
		return 0
	}
	return max(pods-(voters-(voters/2+1)), 0)
}

// PodDisruptionBudget selects every mongod pod of the cluster (members and
// arbiters) and keeps minAvailable of them (MinAvailable; the actor chooses
// the numbers, as the set is and as it is becoming). minAvailable rather than
// maxUnavailable: it counts pods, so it needs no scale from two StatefulSets,
// and a member that is already down counts against it.
func PodDisruptionBudget(m *v1alpha1.Mgors, minAvailable int32) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: objectMeta(m, m.Name, ""),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(minAvailable)),
			Selector:     &metav1.LabelSelector{MatchLabels: ClusterSelectorLabels(m)},
			// An unready member is no vote to protect; evicting it must not block a drain.
			UnhealthyPodEvictionPolicy: ptr.To(policyv1.AlwaysAllow),
		},
	}
}

// EnsurePodDisruptionBudget creates or updates the budget: labels, selector,
// minAvailable and the unhealthy-pod eviction policy.
func (a *Applier) EnsurePodDisruptionBudget(ctx context.Context, desired *policyv1.PodDisruptionBudget) (bool, error) {
	return ensure(ctx, a, a.Client.PolicyV1().PodDisruptionBudgets(desired.Namespace), "PodDisruptionBudget", desired,
		func(cur, next *policyv1.PodDisruptionBudget) (bool, error) {
			if equality.Semantic.DeepEqual(cur.Spec.Selector, desired.Spec.Selector) &&
				equality.Semantic.DeepEqual(cur.Spec.MinAvailable, desired.Spec.MinAvailable) &&
				equality.Semantic.DeepEqual(cur.Spec.MaxUnavailable, desired.Spec.MaxUnavailable) &&
				equality.Semantic.DeepEqual(cur.Spec.UnhealthyPodEvictionPolicy, desired.Spec.UnhealthyPodEvictionPolicy) {
				return false, nil
			}
			next.Spec.Selector = desired.Spec.Selector.DeepCopy()
			next.Spec.MinAvailable = desired.Spec.MinAvailable
			next.Spec.MaxUnavailable = desired.Spec.MaxUnavailable
			next.Spec.UnhealthyPodEvictionPolicy = desired.Spec.UnhealthyPodEvictionPolicy
			return true, nil
		})
}
