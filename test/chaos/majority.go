package chaos

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// majorityGrace is the recovery.gracePeriod of the default run's 3-member
// cluster, the target of the majority-loss fault. It is longer than any other
// fault keeps two members away (a node held down until NotReady, about 50 s,
// and its pods' restart), so that only the majority-loss fault makes the
// operator force.
const majorityGrace = 90 * time.Second

// majorityLossHold bounds the freeze: the loss seen (about 25 s), the grace
// period, the force and an election, with room for a slow machine.
const majorityLossHold = majorityGrace + 3*time.Minute

// majorityLoss freezes (SIGSTOP, every node cordoned: Freeze) the primary and
// one secondary of a cluster of three data members under the Automatic
// majority-loss policy, so that one voter of three answers; holds them until
// the third is seen PRIMARY (the operator fenced the two and forced the config
// onto it after the grace period), at most s.Hold; then thaws them (they come
// back REMOVED and are re-added, or wiped when they hold writes past the
// survivor's). Evidence: the survivor seen primary.
func (r *run) majorityLoss(ctx context.Context, f *Fault, t *target, s Step) error {
	if err := r.automatic(ctx, t); err != nil {
		return err
	}
	primary, err := r.member(ctx, t, RolePrimary)
	if err != nil {
		return err
	}
	var others []string
	for _, h := range t.hosts {
		if !t.arbiter[h] && h != primary {
			others = append(others, h)
		}
	}
	if len(others) != 2 {
		return fmt.Errorf("%s: the majority-loss fault needs three data members and no arbiter, found %d besides the primary", t.key, len(others))
	}
	frozen, survivor := []string{primary, others[0]}, others[1]
	f.Targets = frozen
	var pods []string
	for _, h := range frozen {
		pods = append(pods, podOf(h)) // the operator, not the fault, deletes them (fencing)
	}
	f.Start = time.Now()
	held, evidence, err := Freeze(ctx, r.kube, r.faults, t.ns, pods)
	if err != nil {
		return err
	}
	defer func() {
		// Thaw even when ctx ended: a frozen member must not outlive the run.
		rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ev, _ := held.Thaw(rctx)
		evidence = append(evidence, ev...)
		f.Healed = time.Now()
		f.Evidence = strings.Join(evidence, "; ")
	}()
	f.Happened = until(ctx, s.Hold, func() bool {
		for _, m := range r.members.of(t) {
			if m.Member == survivor && m.Error == "" && m.State == "PRIMARY" && m.At.After(f.Start) {
				return true
			}
		}
		return false
	})
	evidence = append(evidence, fmt.Sprintf("survivor %s seen PRIMARY after %s: %t", survivor,
		time.Since(f.Start).Round(time.Second), f.Happened))
	return nil
}

// automatic checks that t is under the Automatic majority-loss policy.
func (r *run) automatic(ctx context.Context, t *target) error {
	gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	m, err := r.mgors.Mgorses(t.ns).Get(gctx, t.name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if m.Spec.Recovery.MajorityLoss != v1alpha1.RecoveryAutomatic {
		return fmt.Errorf("%s: the majority-loss fault needs spec.recovery.majorityLoss %s, the cluster has %q",
			t.key, v1alpha1.RecoveryAutomatic, m.Spec.Recovery.MajorityLoss)
	}
	return nil
}
