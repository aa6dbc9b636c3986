package actors

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
)

// externalPods are the pods that have an external Service under
// spec.externalAccess: the data members, then the arbiter (mongod requires
// horizons of every member, the arbiter's too); none without it.
func externalPods(m *v1alpha1.Mgors) []string {
	if m.Spec.ExternalAccess == nil {
		return nil
	}
	var out []string
	for i := range m.Spec.Members {
		out = append(out, m.PodName(i))
	}
	if m.Spec.Arbiters > 0 {
		out = append(out, mongo.ArbiterName(m))
	}
	return out
}

// strayExternal are the names of external Services that may exist and
// must not: those of ordinals up to mongo.MaxMembers beyond the spec's, the
// arbiter's without one, all of them without spec.externalAccess.
func strayExternal(m *v1alpha1.Mgors) []string {
	want := map[string]bool{}
	for _, p := range externalPods(m) {
		want[p] = true
	}
	var out []string
	for i := range int32(mongo.MaxMembers) {
		if !want[m.PodName(i)] {
			out = append(out, kube.ExternalServiceName(m.PodName(i)))
		}
	}
	if !want[mongo.ArbiterName(m)] {
		out = append(out, kube.ExternalServiceName(mongo.ArbiterName(m)))
	}
	return out
}

// observeExternal reads the per-member Services from the cache: the
// members' external addresses, and what is missing, outdated or left over
// (reported as missing objects, which ensureObjects makes right).
func (w *KubeWorld) observeExternal(m *v1alpha1.Mgors, o *Observation, missing *[]string) error {
	for _, name := range strayExternal(m) {
		_, err := w.Cache.Service(m.Namespace, name)
		switch {
		case err == nil:
			*missing = append(*missing, "the removal of Service "+name)
		case !apierrors.IsNotFound(err):
			return err
		}
	}
	pods := externalPods(m)
	if len(pods) == 0 {
		return nil
	}
	o.External = map[string]ExternalObserved{}
	for i, pod := range pods {
		want := kube.ExternalService(m, pod)
		svc, err := w.Cache.Service(m.Namespace, want.Name)
		switch {
		case apierrors.IsNotFound(err):
			*missing = append(*missing, "Service "+want.Name)
			svc = nil
		case err != nil:
			return err
		case kube.ExternalServiceOutdated(svc, want):
			*missing = append(*missing, "an up-to-date Service "+want.Name)
		}
		explicit, field := m.Spec.ExternalAccess.Arbiter, "spec.externalAccess.arbiter"
		if i < int(m.Spec.Members) {
			explicit, field = m.ExternalHost(int32(i)), "spec.externalAccess.members"
		}
		addr, why := kube.ExternalAddress(explicit, field, svc)
		o.External[pod] = ExternalObserved{Address: addr, Why: why}
	}
	return nil
}

// ensureExternal creates or updates the per-member Services the spec asks
// for and deletes those left over.
func (w *KubeWorld) ensureExternal(ctx context.Context, m *v1alpha1.Mgors) error {
	for _, pod := range externalPods(m) {
		if _, err := w.Applier.EnsureExternalService(ctx, kube.ExternalService(m, pod)); err != nil {
			return fmt.Errorf("the external Service of %s: %w", pod, err)
		}
	}
	for _, name := range strayExternal(m) {
		if _, err := w.Cache.Service(m.Namespace, name); apierrors.IsNotFound(err) {
			continue
		}
		if err := w.Applier.DeleteExternalService(ctx, m, name); err != nil {
			return fmt.Errorf("deleting Service %s: %w", name, err)
		}
	}
	return nil
}
