package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo/backup/store"
	"github.com/mgors/operator/test/localkube/harness"
)

// A schedule of spec.backup (docs/design/backup.md, "Schedules and
// retention"): a 1-member set backed up every minute into the S3 pod of
// deploy/samples/backup/s3.yaml, keeping one. Two scheduled backups end
// Succeeded, and the older is pruned: its MgorsBackup gone and no object
// left under its prefix; status.backup names the last backup and the next
// fire; kubectl describe shows BackupScheduled and BackupPruned.
func TestScheduledBackups(t *testing.T) {
	t.Parallel()
	env := harness.Cluster(t)
	deployOperator(t, env)
	ctx := context.Background()
	endpoint := startS3(t, env)

	mc := mgorsClient(t, env)
	m := sample(t, env, "mgors-3.yaml", func(m *v1alpha1.Mgors) {
		m.Name = "sched"
		m.Spec.Members = 1
		m.Spec.Storage.Reclaim = v1alpha1.VolumeDelete
		m.Spec.Backup = &v1alpha1.BackupSpec{
			Store: v1alpha1.BackupStore{Endpoint: fmt.Sprintf("s3.%s.svc:9000", env.Namespace), Bucket: "backups", Prefix: "mgors",
				TLS: ptr.To(false), CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3-creds"}},
			Schedules: []v1alpha1.BackupSchedule{{Name: "every", Schedule: "* * * * *", Keep: 1}},
		}
	})
	if _, err := mc.Mgorses(env.Namespace).Create(ctx, m, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bc := mc.MgorsBackups(env.Namespace)
	selector := labels.SelectorFromSet(labels.Set{kube.LabelCluster: m.Name, kube.LabelSchedule: "every"}).String()
	t.Cleanup(func() {
		bctx := context.Background()
		_ = mc.Mgorses(env.Namespace).Delete(bctx, m.Name, metav1.DeleteOptions{})
		// The backups outlive their cluster: they are deleted here.
		if l, err := bc.List(bctx, metav1.ListOptions{LabelSelector: selector}); err == nil {
			for _, b := range l.Items {
				_ = bc.Delete(bctx, b.Name, metav1.DeleteOptions{})
			}
		}
	})
	healthy := func(x *v1alpha1.Mgors) bool { return x.Status.Phase == v1alpha1.PhaseHealthy && x.Status.Primary != "" }
	waitMgors(t, env, m.Name, "Healthy", 4*time.Minute, healthy)
	s3, err := store.New(store.Config{Endpoint: endpoint, Bucket: "backups", AccessKey: s3Key, SecretKey: s3Secret})
	if err != nil {
		t.Fatal(err)
	}

	// Every scheduled backup seen Succeeded, by name, with its prefix.
	succeeded := map[string]string{}
	var pruned string
	deadline := time.Now().Add(4 * time.Minute)
	for pruned == "" {
		l, err := bc.List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			t.Fatal(err)
		}
		present := map[string]bool{}
		for _, b := range l.Items {
			present[b.Name] = true
			if b.Spec.Cluster != m.Name || len(b.OwnerReferences) != 0 {
				t.Fatalf("backup %s: spec.cluster %s, owners %v: want the cluster's, owned by nothing", b.Name, b.Spec.Cluster, b.OwnerReferences)
			}
			switch b.Status.Phase {
			case v1alpha1.BackupSucceeded:
				succeeded[b.Name] = b.Status.Prefix
			case v1alpha1.BackupFailed:
				t.Fatalf("backup %s failed: %s", b.Name, b.Status.Message)
			}
		}
		for name, prefix := range succeeded {
			if present[name] || len(succeeded) < 2 {
				continue
			}
			lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			objs, err := s3.List(lctx, prefix+"/")
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) > 0 {
				t.Fatalf("backup %s was pruned and %d objects stay under %s (e.g. %s)", name, len(objs), prefix, objs[0].Key)
			}
			pruned = name
		}
		if time.Now().After(deadline) {
			t.Fatalf("no two scheduled backups Succeeded and one pruned in 4 minutes: succeeded %v, present %v", succeeded, present)
		}
		time.Sleep(2 * time.Second)
	}
	t.Logf("succeeded %v; pruned %s", succeeded, pruned)

	got := waitMgors(t, env, m.Name, "status.backup", time.Minute, func(x *v1alpha1.Mgors) bool {
		b := x.Status.Backup
		return b != nil && b.LastBackup != "" && b.LastBackupTime != nil && b.NextBackupTime != nil
	})
	b := got.Status.Backup
	if _, ok := succeeded[b.LastBackup]; !ok && b.LastBackup != "" {
		if _, err := bc.Get(ctx, b.LastBackup, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			t.Fatalf("status.backup.lastBackup %s does not exist", b.LastBackup)
		}
	}
	if b.Message != "" || b.NextBackupTime.Time.Before(time.Now().Add(-time.Minute)) {
		t.Fatalf("status.backup %+v: want no message and the next fire within a minute", b)
	}
	describeWith(t, env, m.Name, "BackupScheduled", "BackupPruned")
}
