package actors

import (
	"context"
	"errors"
	"fmt"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo/backup"
)

// PruneWorld is a World that prunes a schedule's backups (KubeWorld). A
// World without it fails every PruneBackup.
type PruneWorld interface {
	// PruneBackup deletes every object under the prefix of the backup a
	// names in its store, then the MgorsBackup (if its UID is still
	// a's), and says how many objects it deleted. A backup gone is done.
	PruneBackup(ctx context.Context, m *v1alpha1.Mgors, a Action) (objects int, err error)
	// PruneArchive deletes the chunks of the cluster's oplog archive in
	// spec.backup.store that end at or before a.Through, and says how many.
	PruneArchive(ctx context.Context, m *v1alpha1.Mgors, a Action) (chunks int, err error)
}

var _ PruneWorld = (*KubeWorld)(nil)

// carry carries out a, and returns what it reports besides its error: a
// PruneBackup's BackupPruned (the objects it deleted) or a PruneArchive's
// ArchivePruned (the chunks), recorded after its ActionFinished.
func carry(ctx context.Context, w World, m *v1alpha1.Mgors, a Action) ([]Event, error) {
	if a.Kind != ActPruneBackup && a.Kind != ActPruneArchive {
		return nil, w.Act(ctx, m, a)
	}
	pw, ok := w.(PruneWorld)
	if !ok || a.Backup == nil {
		return nil, errors.New("this operator's World does not prune backups")
	}
	if a.Kind == ActPruneArchive {
		n, err := pw.PruneArchive(ctx, m, a)
		if err != nil {
			return nil, err
		}
		return []Event{ArchivePruned{Backup: a.Backup.Name, Through: a.Through, Chunks: n}}, nil
	}
	n, err := pw.PruneBackup(ctx, m, a)
	if err != nil {
		return nil, err
	}
	return []Event{BackupPruned{Schedule: a.Backup.Schedule, Backup: a.Backup.Name, Objects: n}}, nil
}

// createBackup creates the MgorsBackup of a schedule's fire (ActCreateBackup).
func (w *KubeWorld) createBackup(ctx context.Context, m *v1alpha1.Mgors, a Action) error {
	if a.Backup == nil {
		return errors.New("CreateBackup names no backup")
	}
	b, err := kube.ScheduledBackup(m, a.Backup.Name, a.Backup.Schedule)
	if err != nil {
		return err
	}
	return kube.CreateBackup(ctx, w.Status.Client, w.Status.Timeout, b)
}

// PruneBackup implements PruneWorld, leaving what the cache must show
// after it, as Act does (world_expect.go).
func (w *KubeWorld) PruneBackup(ctx context.Context, m *v1alpha1.Mgors, a Action) (int, error) {
	seen := w.expected(m, a)
	n, err := w.prune(ctx, m, a)
	if err == nil {
		w.expect(m, a, seen)
	}
	return n, err
}

// prune deletes the objects under the backup's prefix (and the slash after
// it: another backup's name may begin with this one's), each call with the
// store's deadline, then the MgorsBackup.
func (w *KubeWorld) prune(ctx context.Context, m *v1alpha1.Mgors, a Action) (int, error) {
	if a.Backup == nil {
		return 0, errors.New("PruneBackup names no backup")
	}
	bs, err := w.Cache.Backups(m.Namespace, m.Name)
	if err != nil {
		return 0, fmt.Errorf("listing the cluster's backups: %w", err)
	}
	b := observedBackup(bs, a.Backup.UID)
	if b == nil {
		return 0, nil // gone already
	}
	st, err := w.backupStore(ctx, b)
	if err != nil {
		return 0, err
	}
	prefix := backup.Prefix(b) + "/"
	objs, err := st.List(ctx, prefix)
	if err != nil {
		return 0, err
	}
	for i, o := range objs {
		if err := st.Delete(ctx, o.Key); err != nil {
			return i, fmt.Errorf("deleted %d of the %d objects under %s: %w", i, len(objs), prefix, err)
		}
	}
	if err := kube.DeleteBackup(ctx, w.Status.Client, w.Status.Timeout, b.Namespace, b.Name, string(b.UID)); err != nil {
		return len(objs), fmt.Errorf("the %d objects under %s are deleted, the MgorsBackup %s is not: %w", len(objs), prefix, b.Name, err)
	}
	return len(objs), nil
}
