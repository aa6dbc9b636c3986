package actors

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
)

// Problem reasons of the cluster's Secrets (docs/design/security.md).
const (
	// ReasonKeyfileLost: the keyfile Secret of an initiated cluster is gone;
	// a person restores it, the operator never makes a new key.
	ReasonKeyfileLost = "KeyfileLost"
	// ReasonSecretDeletionHeld: someone deleted a Secret the cluster runs
	// with; the protection finalizer keeps it until the Mgors is deleted.
	ReasonSecretDeletionHeld = "SecretDeletionHeld"
)

// subject is the copy of the Mgors the actor hands the World to observe or
// act on: at the version it accepted (Running), with the Initialized
// condition of its own state (the object it holds is refreshed on spec
// changes only, so its status may be older).
func (c *cluster) subject() *v1alpha1.Mgors {
	m := Running(c.mgors, c.state).DeepCopy()
	if c.state.Initiated {
		meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionInitialized,
			Status: metav1.ConditionTrue, Reason: "Initiated", Message: "the replica set has a config"})
	}
	return m
}

// initiated tells the World whether the replica set was initiated: the
// Initialized condition, which the actor sets from its state (subject).
func initiated(m *v1alpha1.Mgors) bool {
	return meta.IsStatusConditionTrue(m.Status.Conditions, v1alpha1.ConditionInitialized)
}

// observeSecrets reads the keyfile and credential Secrets: what to create or
// protect (missing, for ObjectsReady) and what a person must know (a keyfile
// gone, a deletion held by the finalizer). Only their metadata is read,
// from the cache; values are never looked at.
func (w *KubeWorld) observeSecrets(m *v1alpha1.Mgors) (missing []string, problems []Problem, err error) {
	for _, name := range kube.SecretNames(m) {
		s, gerr := w.Cache.Secret(m.Namespace, name)
		switch {
		case apierrors.IsNotFound(gerr):
			missing = append(missing, "Secret "+name)
			if name == m.KeyfileSecretName() && initiated(m) {
				problems = append(problems, Problem{Reason: ReasonKeyfileLost, Message: (&kube.KeyfileLost{Name: name}).Error()})
			}
		case gerr != nil:
			err = errors.Join(err, gerr)
		case s.DeletionTimestamp != nil && kube.Protected(s):
			problems = append(problems, Problem{Reason: ReasonSecretDeletionHeld, Message: fmt.Sprintf(
				"Secret %s was deleted while the cluster runs with it: the finalizer %s keeps it until the Mgors is deleted",
				name, kube.SecretFinalizer)})
		case initiated(m) && needsProtection(s, m):
			missing = append(missing, "the finalizer "+kube.SecretFinalizer+" on Secret "+name)
		}
	}
	return missing, problems, err
}

func needsProtection(s *corev1.Secret, m *v1alpha1.Mgors) bool {
	return kube.Generated(s, m) && !kube.Protected(s) && s.DeletionTimestamp == nil
}

// ensureSecrets creates the Secrets that are missing, except the keyfile of
// an initiated cluster (KeyfileLost: a new key would split the set), and
// protects those of an initiated cluster with the finalizer.
func (w *KubeWorld) ensureSecrets(ctx context.Context, m *v1alpha1.Mgors) error {
	var lost error
	if initiated(m) {
		if _, err := w.Applier.Secret(ctx, m.Namespace, m.KeyfileSecretName()); apierrors.IsNotFound(err) {
			lost = &kube.KeyfileLost{Name: m.KeyfileSecretName()}
		} else if err != nil {
			return err
		}
	} else if _, err := w.Applier.EnsureKeyfile(ctx, m); err != nil {
		return err
	}
	if _, err := w.Applier.EnsureAdminCredentials(ctx, m, AdminUsername); err != nil {
		return err
	}
	if _, err := w.Applier.EnsureOperatorCredentials(ctx, m, mongo.OperatorUser); err != nil {
		return err
	}
	if initiated(m) {
		for _, name := range kube.SecretNames(m) {
			if _, err := w.Applier.ProtectSecret(ctx, m, name); err != nil {
				return err
			}
		}
	}
	return lost
}

// Release removes the protection finalizer from the Secrets of a deleted
// Mgors, so that they go with it (reclaim Delete: the garbage collector) or
// stay as ordinary Secrets (Retain: for a Mgors re-created on the volumes).
func (w *KubeWorld) Release(ctx context.Context, m *v1alpha1.Mgors) error {
	var errs error
	for _, name := range kube.SecretNames(m) {
		if _, err := w.Applier.ReleaseSecret(ctx, m, name); err != nil {
			errs = errors.Join(errs, fmt.Errorf("releasing Secret %s: %w", name, err))
		}
	}
	return errs
}

// releaser is a World that frees the Secrets of a deleted Mgors.
type releaser interface {
	Release(ctx context.Context, m *v1alpha1.Mgors) error
}

// release frees the Secrets of the deleted Mgors off the mailbox (the actor
// stops next), bounded by the action timeout; a failure is logged, and the
// finalizer stays for a person to remove (docs/design/security.md).
func (c *cluster) release() {
	r, ok := c.deps.World.(releaser)
	if !ok {
		return
	}
	m, log, timeout := c.mgors.DeepCopy(), c.log, c.deps.ActTimeout
	if timeout <= 0 {
		timeout = 3 * kube.DefaultCallTimeout
	}
	go func() {
		defer recoverIn(log, "releasing the Secrets")
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if err := r.Release(ctx, m); err != nil {
			log.Warn().Err(err).Msg("removing the protection finalizer from the Secrets of the deleted Mgors")
			return
		}
		log.Info().Msg("Mgors deleted: its Secrets are no longer protected")
	}()
}

// observeKeyfile reads the fingerprints of the keyfile Secret's keys into
// o.KeyfileKeys (decide_keyfile.go). Its data comes through SecretData:
// one GET per resourceVersion, none while it stays the same. Unreadable,
// it stays nil: a rotation waits, and the write itself checks the Secret.
func (w *KubeWorld) observeKeyfile(ctx context.Context, m *v1alpha1.Mgors, o *Observation) {
	name := m.KeyfileSecretName()
	if _, err := w.Cache.Secret(m.Namespace, name); err != nil {
		return // missing: observeSecrets counted it
	}
	sec, err := w.Cache.SecretData(ctx, m.Namespace, name)
	if err != nil {
		return
	}
	o.KeyfileKeys, _ = kube.KeyfileFingerprints(sec.Data[v1alpha1.KeyfileSecretKey])
}
