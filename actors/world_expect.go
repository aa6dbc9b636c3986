package actors

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	ktypes "k8s.io/apimachinery/pkg/types"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
)

// The observation reads the informer caches, which show a write a moment
// after the API server took it. So that no decision is made on a cache that
// does not yet show the World's own last write (a restarted pod still
// Ready, a scaled StatefulSet at its old size), an action that writes
// objects leaves an expectation, as Kubernetes' own controllers do: what the
// cache must show once it saw the write. The next observation of the
// cluster waits up to ownWriteWait for it, else fails (and is retried on the
// next tick); after ownWriteExpiry the expectation is dropped, as someone
// else may have changed the object since and the cache would never show it.
const (
	ownWriteWait   = 2 * time.Second
	ownWriteExpiry = 30 * time.Second
)

// expectation is what the cache must show after an action of the World.
type expectation struct {
	what  string
	until time.Time
	seen  func(kube.Reader) bool
}

// expected is what the cache must show once it saw a, in a form nobody
// else's later change can falsify (deleted, or replaced, is as good as
// deleting). Nil for an action that writes no object (a MongoDB command,
// the Mgors' own annotation, which the actor handles), and for
// EnsureObjects: a cache that does not show what it made yet asks for it
// again, which writes nothing (the Applier reads each object fresh before
// it writes). It reads the cache before the action runs, for the UIDs of
// what the action replaces.
func (w *KubeWorld) expected(m *v1alpha1.Mgors, a Action) func(kube.Reader) bool {
	ns := m.Namespace
	switch a.Kind {
	case ActScale:
		var before ktypes.UID
		if s, err := w.Cache.StatefulSet(ns, m.Name); err == nil {
			before = s.UID
		}
		return func(r kube.Reader) bool {
			s, err := r.StatefulSet(ns, m.Name)
			return apierrors.IsNotFound(err) || (err == nil && (s.UID != before ||
				(s.Spec.Replicas != nil && *s.Spec.Replicas == a.Replicas)))
		}
	case ActSetBudget:
		return func(r kube.Reader) bool {
			p, err := r.PodDisruptionBudget(ns, m.Name)
			return err == nil && p.Spec.MinAvailable != nil && p.Spec.MinAvailable.IntVal == a.MinAvailable
		}
	case ActDeleteArbiters:
		return func(r kube.Reader) bool {
			s, err := r.StatefulSet(ns, kube.ArbiterName(m))
			return apierrors.IsNotFound(err) || (err == nil && s.DeletionTimestamp != nil)
		}
	case ActRestartMember, ActForceDeletePod, ActFencePod:
		return podGone(w.Cache, m, a.Host)
	case ActWipeMember:
		podDone, claimDone := podGone(w.Cache, m, a.Host), claimGone(w.Cache, m, kube.DataVolume+"-"+a.Host)
		return func(r kube.Reader) bool { return claimDone(r) && podDone(r) }
	case ActReplaceStatefulSet:
		var before ktypes.UID
		if s, err := w.Cache.StatefulSet(ns, m.Name); err == nil {
			before = s.UID
		}
		return func(r kube.Reader) bool {
			s, err := r.StatefulSet(ns, m.Name)
			return err == nil && s.UID != before
		}
	case ActCreateBackup:
		return func(r kube.Reader) bool {
			bs, err := r.Backups(ns, m.Name)
			return err == nil && observedName(bs, a.Backup.Name) != nil
		}
	case ActPruneBackup:
		return func(r kube.Reader) bool {
			bs, err := r.Backups(ns, m.Name)
			return err == nil && observedBackup(bs, a.Backup.UID) == nil
		}
	case ActExpandVolumes:
		size, err := resource.ParseQuantity(a.Size)
		if err != nil {
			return nil
		}
		return func(r kube.Reader) bool {
			claims, err := r.Claims(ns, selector(m))
			if err != nil {
				return false
			}
			for _, ord := range a.Ordinals {
				for _, c := range claims {
					q := c.Spec.Resources.Requests[corev1.ResourceStorage]
					if c.Name == kube.DataVolume+"-"+m.PodName(ord) && c.DeletionTimestamp == nil && q.Cmp(size) < 0 {
						return false
					}
				}
			}
			return true
		}
	}
	return nil
}

func selector(m *v1alpha1.Mgors) labels.Selector {
	return labels.SelectorFromSet(kube.ClusterSelectorLabels(m))
}

// podGone is a pod of m that the cache shows deleted, being deleted, or
// replaced (another UID than the cache shows now, before the action).
func podGone(before kube.Reader, m *v1alpha1.Mgors, name string) func(kube.Reader) bool {
	var uid ktypes.UID
	if p, err := before.Pods(m.Namespace, selector(m)); err == nil {
		for _, pod := range p {
			if pod.Name == name {
				uid = pod.UID
			}
		}
	}
	return func(r kube.Reader) bool {
		pods, err := r.Pods(m.Namespace, selector(m))
		if err != nil {
			return false
		}
		for _, p := range pods {
			if p.Name == name {
				return p.DeletionTimestamp != nil || p.UID != uid
			}
		}
		return true
	}
}

// claimGone is podGone for a claim.
func claimGone(before kube.Reader, m *v1alpha1.Mgors, name string) func(kube.Reader) bool {
	var uid ktypes.UID
	if c, err := before.Claims(m.Namespace, selector(m)); err == nil {
		for _, claim := range c {
			if claim.Name == name {
				uid = claim.UID
			}
		}
	}
	return func(r kube.Reader) bool {
		claims, err := r.Claims(m.Namespace, selector(m))
		if err != nil {
			return false
		}
		for _, c := range claims {
			if c.Name == name {
				return c.DeletionTimestamp != nil || c.UID != uid
			}
		}
		return true
	}
}

// expect records what the cache must show after a of m succeeded.
func (w *KubeWorld) expect(m *v1alpha1.Mgors, a Action, seen func(kube.Reader) bool) {
	if seen == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.expectations == nil {
		w.expectations = map[ktypes.UID]expectation{}
	}
	w.expectations[m.UID] = expectation{what: string(a.Kind) + " " + a.Host, until: time.Now().Add(ownWriteExpiry), seen: seen}
}

// awaitOwnWrite waits until the cache shows the World's last write to m
// (bounded by ownWriteWait and ctx); an error when it does not yet.
func (w *KubeWorld) awaitOwnWrite(ctx context.Context, m *v1alpha1.Mgors) error {
	w.mu.Lock()
	e, ok := w.expectations[m.UID]
	w.mu.Unlock()
	if !ok {
		return nil
	}
	done := func() {
		w.mu.Lock()
		delete(w.expectations, m.UID)
		w.mu.Unlock()
	}
	if time.Now().After(e.until) {
		done()
		return nil
	}
	wait := time.NewTimer(ownWriteWait)
	defer wait.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !e.seen(w.Cache) {
		select {
		case <-tick.C:
		case <-wait.C:
			return fmt.Errorf("the informer caches do not show the operator's own %s yet", e.what)
		case <-ctx.Done():
			return fmt.Errorf("waiting for the informer caches to show the operator's own %s: %w", e.what, ctx.Err())
		}
	}
	done()
	return nil
}
