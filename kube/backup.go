package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/kube/client"
)

// The MgorsBackups a schedule of spec.backup takes (docs/design/backup.md,
// "Schedules and retention").

// scheduleTimeLayout is the fire time in a scheduled backup's name (UTC, to
// the minute: a cron schedule fires at most once a minute).
const scheduleTimeLayout = "200601021504"

// maxNameLength is the longest scheduled backup name: a DNS label.
const maxNameLength = 63

// ScheduledBackupName is the name of the MgorsBackup that schedule of
// cluster takes at at: <cluster>-<schedule>-<YYYYMMDDHHMM> (UTC). When that
// is longer than a DNS label, the cluster part is cut and ends in five hex
// digits of the SHA-256 of the whole cluster name, so that two clusters
// whose names share a long beginning never take the same name.
func ScheduledBackupName(cluster, schedule string, at time.Time) string {
	suffix := "-" + schedule + "-" + at.UTC().Format(scheduleTimeLayout)
	room := maxNameLength - len(suffix)
	if len(cluster) <= room {
		return cluster + suffix
	}
	sum := sha256.Sum256([]byte(cluster))
	hash := hex.EncodeToString(sum[:])[:5]
	head := strings.TrimRight(cluster[:max(room-len(hash)-1, 0)], "-")
	return head + "-" + hash + suffix
}

// ScheduledBackup is the MgorsBackup schedule of m takes under name: into
// spec.backup.store, labelled with the cluster and the schedule. It is not
// owned by m: a backup outlives its cluster (deleting the Mgors deletes no
// backup; the operator prunes only a schedule's backups beyond its keep).
func ScheduledBackup(m *v1alpha1.Mgors, name, schedule string) (*v1alpha1.MgorsBackup, error) {
	if m.Spec.Backup == nil {
		return nil, errors.New("spec.backup was removed")
	}
	return &v1alpha1.MgorsBackup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: m.Namespace,
			Labels: map[string]string{LabelCluster: m.Name, LabelSchedule: schedule, LabelManagedBy: ManagedBy}},
		Spec: v1alpha1.MgorsBackupSpec{Cluster: m.Name, Store: *m.Spec.Backup.Store.DeepCopy()},
	}, nil
}

// CreateBackup creates b. One that exists already under its name is
// success when it is the same cluster's backup of the same schedule (the
// create was made before, its result lost); any other is an error.
func CreateBackup(ctx context.Context, c client.Interface, timeout time.Duration, b *v1alpha1.MgorsBackup) error {
	if timeout <= 0 {
		timeout = DefaultCallTimeout
	}
	api := c.MgorsBackups(b.Namespace)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := api.Create(cctx, b, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	gctx, gcancel := context.WithTimeout(ctx, timeout)
	defer gcancel()
	cur, err := api.Get(gctx, b.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("MgorsBackup %s exists and cannot be read: %w", b.Name, err)
	}
	if cur.Spec.Cluster != b.Spec.Cluster || cur.Labels[LabelSchedule] != b.Labels[LabelSchedule] {
		return fmt.Errorf("a MgorsBackup named %s exists and is not cluster %s's backup of schedule %s", b.Name, b.Spec.Cluster, b.Labels[LabelSchedule])
	}
	return nil
}

// DeleteBackup deletes the MgorsBackup name of namespace if its UID is uid;
// one gone, or another object under the name, is no error.
func DeleteBackup(ctx context.Context, c client.Interface, timeout time.Duration, namespace, name, uid string) error {
	if timeout <= 0 {
		timeout = DefaultCallTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	u := ktypes.UID(uid)
	err := c.MgorsBackups(namespace).Delete(cctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &u}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or the name holds another backup now
	}
	return err
}
