package shard

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/rs/zerolog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/mgors/operator/kube/client"
)

// Assigner labels every Mgors with its owner. One runs at a time: the
// replica that holds the operator's leader Lease (docs/design/sharding.md).
// Each pass reads the replicas' Leases, takes over the expired ones (so that
// their replica, if only paused, can never renew and write again), and applies
// Next to every Mgors. Every write is conditional on the resourceVersion it
// read: a pass on a stale view changes nothing, the next one does.
type Assigner struct {
	Leases         coordinationv1client.LeasesGetter
	LeaseNamespace string
	Ring           string
	// Identity is this replica's: the holder a taken-over Lease gets.
	Identity string
	Mgors    client.Interface
	// Namespace limits the Mgors assigned; "" means all.
	Namespace string
	// Period spaces the passes; CallTimeout bounds each API call.
	Period, CallTimeout time.Duration
	Log                 zerolog.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// May, when set, is asked before each pass: an assigner whose own
	// replica may not write (its Lease not renewed in time) passes nothing.
	May func() error
}

// Run makes a pass every Period until ctx ends.
func (a *Assigner) Run(ctx context.Context) {
	t := time.NewTicker(a.Period)
	defer t.Stop()
	for {
		if a.May != nil && a.May() != nil {
			a.Log.Debug().Msg("this replica's Lease is not fresh: no pass")
		} else if err := a.Pass(ctx); err != nil && ctx.Err() == nil {
			a.Log.Warn().Err(err).Msg("assigning Mgors to replicas failed; retrying")
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (a *Assigner) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

func (a *Assigner) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, a.CallTimeout)
}

// Pass makes one pass: membership, take-overs, then every Mgors's next step.
func (a *Assigner) Pass(ctx context.Context) error {
	lctx, cancel := a.call(ctx)
	leases, err := a.Leases.Leases(a.LeaseNamespace).List(lctx, metav1.ListOptions{LabelSelector: LabelLease + "=" + a.Ring})
	cancel()
	if err != nil {
		return fmt.Errorf("shard: listing the replicas' Leases: %w", err)
	}
	m := Membership(leases.Items, a.now())
	for i := range leases.Items {
		l := &leases.Items[i]
		if LeaseState(l, a.now()) != Expired {
			continue
		}
		// Conditional on the resourceVersion listed: a replica that renewed
		// in between keeps its Lease.
		l.Spec.HolderIdentity = &a.Identity
		uctx, cancel := a.call(ctx)
		_, err := a.Leases.Leases(a.LeaseNamespace).Update(uctx, l, metav1.UpdateOptions{})
		cancel()
		if err != nil {
			a.Log.Warn().Err(err).Str("lease", l.Name).Msg("taking over an expired replica Lease failed")
			continue
		}
		a.Log.Info().Str("lease", l.Name).Msg("replica Lease expired: taken over; its Mgors move")
		m.state[l.Name[len(LeasePrefix):]] = Gone
	}
	mctx, cancel := a.call(ctx)
	list, err := a.Mgors.Mgorses(a.Namespace).List(mctx, metav1.ListOptions{})
	cancel()
	if err != nil {
		return fmt.Errorf("shard: listing Mgors: %w", err)
	}
	var errs []error
	for i := range list.Items {
		o := &list.Items[i]
		if o.DeletionTimestamp != nil {
			continue // its owner finishes it
		}
		_, draining := o.Labels[LabelDrain]
		mv := Next(o.Labels[LabelOwner], draining, string(o.UID), m)
		if mv.Kind == Stay {
			continue
		}
		if err := a.apply(ctx, o.Namespace, o.Name, o.ResourceVersion, mv); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		a.Log.Info().Str("cluster", o.Namespace+"/"+o.Name).Str("uid", string(o.UID)).
			Str("owner", o.Labels[LabelOwner]).Str("to", mv.To).Str("drain", mv.From).Msg("shard move")
	}
	if len(errs) > 0 {
		return fmt.Errorf("shard: %d Mgors not moved, first: %w", len(errs), errs[0])
	}
	return nil
}

// apply writes one step as a merge patch conditional on resourceVersion.
func (a *Assigner) apply(ctx context.Context, ns, name, rv string, mv Move) error {
	labels := map[string]any{}
	switch mv.Kind {
	case Assign:
		labels[LabelOwner], labels[LabelDrain] = mv.To, nil
	case Drain:
		labels[LabelDrain] = "true"
	}
	return patchLabels(ctx, a.Mgors, a.CallTimeout, ns, name, rv, labels)
}

// patchLabels sets (or, for nil, removes) labels of a Mgors with a merge
// patch carrying resourceVersion, so the API server refuses it (Conflict)
// when the object changed since it was read.
func patchLabels(ctx context.Context, mc client.Interface, timeout time.Duration, ns, name, rv string, labels map[string]any) error {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": rv, "labels": labels}})
	if err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err = mc.Mgorses(ns).Patch(pctx, name, types.MergePatchType, body, metav1.PatchOptions{})
	return err
}

// Release is the owner's side of the handshake: after the actor of the Mgors
// stopped, remove both labels, if it is still labelled as self's (and is the
// same incarnation), so that the assigner assigns it anew.
func Release(ctx context.Context, mc client.Interface, timeout time.Duration, ns, name, uid, self string) error {
	gctx, cancel := context.WithTimeout(ctx, timeout)
	o, err := mc.Mgorses(ns).Get(gctx, name, metav1.GetOptions{})
	cancel()
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("shard: reading %s/%s to release it: %w", ns, name, err)
	}
	if string(o.UID) != uid || o.Labels[LabelOwner] != self {
		return nil // gone, re-created, or no longer ours
	}
	if err := patchLabels(ctx, mc, timeout, ns, name, o.ResourceVersion, map[string]any{LabelOwner: nil, LabelDrain: nil}); err != nil {
		return fmt.Errorf("shard: releasing %s/%s: %w", ns, name, err)
	}
	return nil
}
