package kube

import (
	"context"
	"errors"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// DeleteStatefulSet deletes m's StatefulSet name, and through the garbage
// collector its pods (background propagation): the arbiters' StatefulSet once
// spec.arbiters went to 0 and the arbiter left the config. The delete is
// preconditioned on the UID read, so it never removes a newer object. One
// already gone or being deleted is success; one not controlled by m is
// refused (NotOwned). Volume claims are never touched here.
func (a *Applier) DeleteStatefulSet(ctx context.Context, m *v1alpha1.Mgors, name string) error {
	return deleteControlled(ctx, a, a.Client.AppsV1().StatefulSets(m.Namespace), m, "StatefulSet", name,
		metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
}

// getDeleter is the part of a typed client deleteControlled uses.
type getDeleter[T metav1.Object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// deleteControlled deletes m's object name of kind, preconditioned on the
// UID read, so it never removes a newer object. One already gone or being
// deleted is success; one not controlled by m is refused (NotOwned).
func deleteControlled[T metav1.Object](ctx context.Context, a *Applier, c getDeleter[T], m *v1alpha1.Mgors, kind, name string, opts metav1.DeleteOptions) error {
	cctx, cancel := a.call(ctx)
	cur, err := c.Get(cctx, name, metav1.GetOptions{})
	cancel()
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	case !OwnedBy(cur, m):
		return &NotOwned{Kind: kind, Name: name}
	case cur.GetDeletionTimestamp() != nil:
		return nil
	}
	dctx, dcancel := a.call(ctx)
	defer dcancel()
	uid := cur.GetUID()
	opts.Preconditions = &metav1.Preconditions{UID: &uid}
	err = c.Delete(dctx, name, opts)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// ErrVolumesRetained is returned by DeletePVCs when spec.storage.reclaim is not
// Delete: volumes are never deleted unless the user asked for it (invariant 4).
var ErrVolumesRetained = errors.New("spec.storage.reclaim is not Delete: volumes are retained")

// DeletePVCs deletes the data claims of the given members of m. It refuses
// unless spec.storage.reclaim is Delete, and deletes only claims labelled as
// m's. A claim still used by a pod stays until the pod is gone (the API
// server's pvc-protection). Claims already gone are not an error; it returns
// the names it deleted.
func (a *Applier) DeletePVCs(ctx context.Context, m *v1alpha1.Mgors, ordinals []int32) ([]string, error) {
	if m.Spec.Storage.Reclaim != v1alpha1.VolumeDelete {
		return nil, ErrVolumesRetained
	}
	c := a.Client.CoreV1().PersistentVolumeClaims(m.Namespace)
	var deleted []string
	for _, o := range ordinals {
		name := PVCName(m, o)
		cctx, cancel := a.call(ctx)
		cur, err := c.Get(cctx, name, metav1.GetOptions{})
		cancel()
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return deleted, err
		}
		if cur.Labels[LabelCluster] != m.Name {
			return deleted, &NotOwned{Kind: "PersistentVolumeClaim", Name: name}
		}
		dctx, dcancel := a.call(ctx)
		err = c.Delete(dctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cur.UID}})
		dcancel()
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return deleted, err
		}
		deleted = append(deleted, name)
	}
	return deleted, nil
}

// DeletePod deletes one of m's pods (a member's or the arbiter's) so that
// its StatefulSet recreates it from the current template (OnDelete update
// strategy), with the pod's own grace period (deleteMemberPod). A pod already gone or recreated in the
// meantime is success: it is never deleted by mistake.
func (a *Applier) DeletePod(ctx context.Context, m *v1alpha1.Mgors, name string) error {
	return a.deleteMemberPod(ctx, m, name, "", nil)
}
