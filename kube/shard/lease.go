package shard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// ErrLost means this replica's Lease was taken over (its holder is no longer
// this replica): its Mgors have moved or are moving, and it must never write
// again. The process ends; a fresh start joins as a new member.
var ErrLost = errors.New("shard: this replica's Lease was taken over")

// Keeper keeps this replica's Lease: it takes it at start, renews it every
// RetryPeriod, and releases it at a clean shutdown. Check tells the actors
// whether they may still write: only while the last successful renewal began
// less than RenewDeadline ago, well inside the Duration after which the
// assigner may take the Lease over (the margin covers clock skew between this
// replica and the assigner, and a renewal's latency).
type Keeper struct {
	Leases    coordinationv1client.LeasesGetter
	Namespace string
	// Ring is the value of LabelLease on the Lease.
	Ring     string
	Identity string
	// Duration is the Lease's duration; RenewDeadline < Duration bounds how
	// long this replica writes without a renewal; RetryPeriod spaces renewals.
	Duration, RenewDeadline, RetryPeriod time.Duration
	// CallTimeout bounds each API call.
	CallTimeout time.Duration
	Log         zerolog.Logger

	mu       sync.Mutex
	lock     *resourcelock.LeaseLock
	renewed  time.Time // when the last successful renewal began (monotonic)
	acquired time.Time
	lost     bool
}

// Check returns nil while this replica may write.
func (k *Keeper) Check() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	switch {
	case k.lost:
		return ErrLost
	case k.renewed.IsZero():
		return errors.New("shard: the Lease is not held yet")
	}
	if age := time.Since(k.renewed); age >= k.RenewDeadline {
		return fmt.Errorf("shard: the Lease was last renewed %s ago (deadline %s)", age.Round(time.Millisecond), k.RenewDeadline)
	}
	return nil
}

func (k *Keeper) record(now time.Time, holder string) resourcelock.LeaderElectionRecord {
	return resourcelock.LeaderElectionRecord{
		HolderIdentity: holder, LeaseDurationSeconds: int(k.Duration / time.Second),
		AcquireTime: metav1.NewTime(now), RenewTime: metav1.NewTime(now),
	}
}

// Acquire creates the Lease, or takes it (whoever held it: a replica of the
// same identity that died, the assigner after a take-over, or nobody after a
// release). Only a fresh process acquires; a running one renews.
func (k *Keeper) Acquire(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.lock = &resourcelock.LeaseLock{
		LeaseMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: LeaseName(k.Identity)},
		Client:    k.Leases, LockConfig: resourcelock.ResourceLockConfig{Identity: k.Identity},
		Labels: map[string]string{LabelLease: k.Ring},
	}
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, k.CallTimeout)
	defer cancel()
	_, _, err := k.lock.Get(cctx)
	switch {
	case apierrors.IsNotFound(err):
		err = k.lock.Create(cctx, k.record(start, k.Identity))
	case err == nil:
		err = k.lock.Update(cctx, k.record(start, k.Identity))
	}
	if err != nil {
		return fmt.Errorf("shard: taking the Lease %s: %w", LeaseName(k.Identity), err)
	}
	k.renewed, k.acquired = start, start
	return nil
}

// Run renews the Lease until ctx ends (nil) or the Lease is lost (ErrLost).
// A failed renewal is retried; Check refuses writes once RenewDeadline passed.
func (k *Keeper) Run(ctx context.Context) error {
	t := time.NewTicker(k.RetryPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := k.renew(ctx); errors.Is(err, ErrLost) {
			return err
		} else if err != nil {
			k.Log.Warn().Err(err).Msg("renewing this replica's Lease failed; retrying")
		}
	}
}

func (k *Keeper) renew(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.lost {
		return ErrLost
	}
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, k.CallTimeout)
	defer cancel()
	r := k.record(start, k.Identity)
	r.AcquireTime = metav1.NewTime(k.acquired)
	err := k.lock.Update(cctx, r) // conditional on the resourceVersion we last wrote
	if err == nil {
		k.renewed = start
		return nil
	}
	if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		return err
	}
	// Someone else wrote our Lease: the assigner took it over, or (deleted)
	// it is gone. Either way this replica is no longer a member.
	rec, _, gerr := k.lock.Get(cctx)
	if gerr == nil && rec.HolderIdentity == k.Identity {
		return err // written by no one but us (a retried request): renew next time
	}
	k.lost = true
	return ErrLost
}

// Release gives the Lease up (holder emptied): the assigner moves this
// replica's Mgors at once. Call it only after the actors stopped.
func (k *Keeper) Release(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.lost || k.lock == nil {
		return nil
	}
	k.lost = true // nothing is written after a release
	cctx, cancel := context.WithTimeout(ctx, k.CallTimeout)
	defer cancel()
	if err := k.lock.Update(cctx, k.record(time.Now(), "")); err != nil {
		return fmt.Errorf("shard: releasing the Lease: %w", err)
	}
	return nil
}
