package actors

import (
	"context"
	"errors"
	"fmt"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
)

// What the World does: the actions (Act), and the objects made before them.

// Act carries out one action; one that wrote objects leaves what the cache
// must show before the next observation (world_expect.go).
func (w *KubeWorld) Act(ctx context.Context, m *v1alpha1.Mgors, a Action) error {
	seen := w.expected(m, a)
	err := w.act(ctx, m, a)
	if err == nil {
		w.expect(m, a, seen)
	}
	return err
}

func (w *KubeWorld) act(ctx context.Context, m *v1alpha1.Mgors, a Action) error {
	switch a.Kind {
	case ActEnsureObjects:
		return w.ensureObjects(ctx, m)
	case ActScale:
		_, err := w.Applier.ScaleStatefulSet(ctx, m, m.Name, a.Replicas)
		return err
	case ActSetBudget:
		_, err := w.Applier.EnsurePodDisruptionBudget(ctx, kube.PodDisruptionBudget(m, a.MinAvailable))
		return err
	case ActDeleteArbiters:
		return w.Applier.DeleteStatefulSet(ctx, m, kube.ArbiterName(m))
	case ActRestartMember:
		return w.Applier.DeletePod(ctx, m, a.Host)
	case ActForceDeletePod:
		return w.Applier.ForceDeletePod(ctx, m, a.Host)
	case ActFencePod:
		return w.Applier.FencePod(ctx, m, a.Host, a.UID)
	case ActRemoveAnnotation:
		return kube.RemoveAnnotation(ctx, w.Status.Client, w.Status.Timeout, m, a.Host)
	case ActExpandVolumes, ActReplaceStatefulSet:
		return w.actStorage(ctx, m, a)
	case ActRotateKeyfile:
		return w.Applier.RotateKeyfile(ctx, m, a.Step, a.From, a.To)
	case ActRotateCA:
		return w.Applier.RotateCA(ctx, m, w.ClusterDomain, a.Step, a.From, a.To)
	case ActRenewCertificate: // m is Running: the spec.tls the members run
		return w.Applier.RenewCertificate(ctx, m, w.ClusterDomain, a.Credential.SecretVersion)
	case ActCreateBackup:
		return w.createBackup(ctx, m, a)
	case ActPruneBackup:
		_, err := w.prune(ctx, m, a) // the actor calls PruneBackup (carry), for the count
		return err
	case ActPruneArchive:
		_, err := w.PruneArchive(ctx, m, a) // the actor calls it itself (carry), for the count
		return err
	case ActWipeMember:
		// The claim, then the pod: the StatefulSet recreates both, the member
		// comes back empty and initial-syncs (kube.Applier.WipeMember).
		return w.Applier.WipeMember(ctx, m, a.Host)
	}
	admin, err := w.admin(ctx, m, a.Auth)
	if err != nil {
		return err
	}
	switch a.Kind {
	case ActInitiate:
		return admin.Initiate(ctx, a.Host, *a.Config)
	case ActReconfig:
		return admin.Reconfig(ctx, a.Host, *a.Config, false)
	case ActForceReconfig:
		return admin.Reconfig(ctx, a.Host, *a.Config, true)
	case ActStepDown:
		return admin.StepDown(ctx, a.Host, 60)
	case ActSetFCV: // m is Running: its version is the one every member runs
		return admin.SetFeatureCompatibilityVersion(ctx, a.Host, mongo.Line(m.Spec.Version))
	case ActCreateUser, ActCreateOperatorUser, ActUpdatePassword:
		return w.actUsers(ctx, m, admin, a)
	case ActApplyConfig:
		return actApplyConfig(ctx, admin, a)
	case ActGrantConfigRole:
		return admin.GrantConfigRole(ctx, a.Host, mongo.OperatorUser)
	case ActGrantBackupRole:
		return w.grantBackupRole(ctx, m, a)
	}
	return fmt.Errorf("unknown action %q", a.Kind)
}

func (w *KubeWorld) ensureObjects(ctx context.Context, m *v1alpha1.Mgors) error {
	o := kube.Options{ClusterDomain: w.ClusterDomain}
	// A lost keyfile (KeyfileLost) does not stop the other objects from
	// being made; it is returned last, so the action fails and says so.
	lost := w.ensureSecrets(ctx, m)
	var kl *kube.KeyfileLost
	if lost != nil && !errors.As(lost, &kl) {
		return lost
	}
	if err := w.Applier.EnsureTLS(ctx, m, w.ClusterDomain); err != nil {
		return err
	}
	if _, err := w.Applier.EnsureService(ctx, kube.HeadlessService(m)); err != nil {
		return err
	}
	if _, err := w.Applier.EnsureStatefulSet(ctx, kube.StatefulSet(m, o)); err != nil {
		return err
	}
	if m.Spec.Arbiters > 0 {
		if _, err := w.Applier.EnsureStatefulSet(ctx, kube.ArbiterStatefulSet(m)); err != nil {
			return err
		}
	}
	if err := w.ensureExternal(ctx, m); err != nil {
		return err
	}
	return lost
}
