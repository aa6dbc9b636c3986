package actors

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo/backup"
	"github.com/mgors/operator/mongo/backup/store"
)

var _ ArchiveWorld = (*KubeWorld)(nil)

// Archive implements ArchiveWorld: a backup.Archiver on run.Member, over a
// connection of its own, into spec.backup.store (its Secret read now, kept
// nowhere else).
func (w *KubeWorld) Archive(ctx context.Context, m *v1alpha1.Mgors, run ArchiveStarted, auth Auth, progress func(backup.Position)) error {
	spec := pointInTime(m)
	if spec == nil {
		return errors.New("spec.backup.pointInTime is not enabled")
	}
	st, err := w.archiveStore(ctx, m, spec)
	if err != nil {
		return err
	}
	dc, closeDC, err := w.openMember(ctx, m, auth, run.Member)
	if err != nil {
		return err
	}
	defer closeDC()
	every := time.Duration(spec.PointInTime.ChunkSeconds) * time.Second
	if every <= 0 {
		every = time.Minute
	}
	a := backup.NewArchiver(dc, run.Member, st, run.From, backup.ArchiveOptions{Prefix: run.Prefix, ChunkEvery: every, Log: w.Mongo.Log})
	if err := a.Resume(ctx); err != nil {
		return err
	}
	progress(a.Last())
	for {
		if _, err := a.ArchiveOnce(ctx); err != nil {
			return err
		}
		progress(a.Last())
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(every):
		}
	}
}

// PruneArchive implements PruneWorld: the chunks of the cluster's archive
// in spec.backup.store ending at or before a.Through are deleted
// (backup.PruneChunks), each call with the store's deadline.
func (w *KubeWorld) PruneArchive(ctx context.Context, m *v1alpha1.Mgors, a Action) (int, error) {
	spec := pointInTime(m)
	if spec == nil {
		return 0, errors.New("spec.backup.pointInTime is not enabled")
	}
	st, err := w.archiveStore(ctx, m, spec)
	if err != nil {
		return 0, err
	}
	return backup.PruneChunks(ctx, st, backup.ArchivePrefix(spec.Store.Prefix, m.Namespace, m.Name), a.Through.Timestamp())
}

// archiveStore is the store of spec.backup, read as a MgorsBackup's in the
// Mgors's namespace.
func (w *KubeWorld) archiveStore(ctx context.Context, m *v1alpha1.Mgors, spec *v1alpha1.BackupSpec) (*store.Client, error) {
	st, err := w.backupStore(ctx, &v1alpha1.MgorsBackup{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace},
		Spec: v1alpha1.MgorsBackupSpec{Cluster: m.Name, Store: spec.Store}})
	if err != nil {
		return nil, fmt.Errorf("spec.backup.store: %w", err)
	}
	return st, nil
}
