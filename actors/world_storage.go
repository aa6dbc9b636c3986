package actors

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
)

// replaceWait bounds how long a ReplaceStatefulSet waits for the garbage
// collector to orphan the old StatefulSet's pods (usually a second or two).
const replaceWait = 30 * time.Second

// claimTemplateSize is the storage the StatefulSet's data claim template asks.
func claimTemplateSize(s *appsv1.StatefulSet) resource.Quantity {
	for _, c := range s.Spec.VolumeClaimTemplates {
		if c.Name == kube.DataVolume {
			return c.Spec.Resources.Requests[corev1.ResourceStorage]
		}
	}
	return resource.Quantity{}
}

func claimSize(c *corev1.PersistentVolumeClaim, ordinal int32) ClaimSize {
	return ClaimSize{Name: c.Name, Ordinal: ordinal, Class: ptr.Deref(c.Spec.StorageClassName, ""),
		Requested: c.Spec.Resources.Requests[corev1.ResourceStorage],
		Capacity:  c.Status.Capacity[corev1.ResourceStorage]}
}

// observeExpansion reads whether the claims' StorageClass allows volume
// expansion, only while the spec asks more than the claim template. A failed
// read (the namespaced install does not watch classes) leaves it unknown:
// the API server still refuses an expansion the class does not allow.
func (w *KubeWorld) observeExpansion(m *v1alpha1.Mgors, o *Observation) {
	s := &o.Storage
	if o.Replicas < 0 || s.Template.Cmp(m.StorageSize()) >= 0 {
		return
	}
	for _, c := range sortedClaims(s.Claims) {
		if c.Class != "" {
			s.Class = c.Class
			break
		}
	}
	if s.Class == "" {
		return
	}
	classes, err := w.Cache.StorageClasses()
	if err != nil {
		return
	}
	for _, sc := range classes {
		if sc.Name == s.Class {
			s.Expandable = ptr.To(ptr.Deref(sc.AllowVolumeExpansion, false))
		}
	}
}

// actStorage carries out the storage growth's actions.
func (w *KubeWorld) actStorage(ctx context.Context, m *v1alpha1.Mgors, a Action) error {
	if a.Kind == ActExpandVolumes {
		size, err := resource.ParseQuantity(a.Size)
		if err != nil {
			return fmt.Errorf("size %q: %w", a.Size, err)
		}
		_, err = w.Applier.ExpandPVCs(ctx, m, a.Ordinals, size)
		return err
	}
	replicas := a.Replicas
	var opts kube.Options
	opts.ClusterDomain = w.ClusterDomain
	if replicas > 0 {
		opts.Replicas = &replicas
	}
	desired := kube.StatefulSet(m, opts)
	ctx, cancel := context.WithTimeout(ctx, replaceWait)
	defer cancel()
	if done, err := w.replaced(ctx, m, desired); err != nil || done {
		return err
	}
	for {
		err := w.Applier.ReplaceStatefulSet(ctx, m, desired)
		var t *kube.Terminating
		if !errors.As(err, &t) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// replaced reports whether m's StatefulSet already asks desired's claim
// size (fresh from the API server): a replace sent again because the cache
// showed the old one gone and not yet the new one is done, and the new one
// is never deleted.
func (w *KubeWorld) replaced(ctx context.Context, m *v1alpha1.Mgors, desired *appsv1.StatefulSet) (bool, error) {
	t := w.Applier.Timeout
	if t <= 0 {
		t = kube.DefaultCallTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, t)
	defer cancel()
	cur, err := w.Applier.Client.AppsV1().StatefulSets(m.Namespace).Get(ctx, desired.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	}
	want, have := claimTemplateSize(desired), claimTemplateSize(cur)
	return kube.OwnedBy(cur, m) && cur.DeletionTimestamp == nil && !want.IsZero() && have.Cmp(want) >= 0, nil
}
