package actors

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
	"github.com/mgors/operator/mongo/backup"
)

var _ RestoreWorld = (*KubeWorld)(nil)

// observeRestores lists the MgorsRestores into the cluster from the cache,
// oldest first, and the MgorsBackups they name.
func (w *KubeWorld) observeRestores(m *v1alpha1.Mgors, o *Observation) {
	rs, err := w.Cache.Restores(m.Namespace, m.Name)
	if err != nil {
		return // RestoresRead stays false: nothing is taken for deleted
	}
	o.Restores, o.RestoresRead = make([]*v1alpha1.MgorsRestore, 0, len(rs)), true
	for _, r := range rs {
		o.Restores = append(o.Restores, r.DeepCopy())
		if _, seen := o.RestoreBackups[r.Spec.Backup]; seen {
			continue
		}
		b, err := w.Cache.Backup(m.Namespace, r.Spec.Backup)
		switch {
		case err == nil:
			if o.RestoreBackups == nil {
				o.RestoreBackups = map[string]*v1alpha1.MgorsBackup{}
			}
			o.RestoreBackups[b.Name] = b.DeepCopy()
		case !apierrors.IsNotFound(err):
			o.Restores, o.RestoresRead = nil, false // a backup unknown is not a backup missing
			return
		}
	}
}

// Restore implements RestoreWorld: the backup b into run.Member, the
// primary, connected as the cluster's internal user: the replay's applyOps
// needs what mongorestore --oplogReplay does, anyAction on anyResource,
// which no built-in role grants (the keyfile identity, which the operator
// holds already, has it); then the archive replayed up to run.PointInTime.
// The users the cluster's operator manages (managedUsers) keep the
// cluster's credentials: the backup's users of those names, and the
// window's and the archive's writes to them, are left out.
func (w *KubeWorld) Restore(ctx context.Context, m *v1alpha1.Mgors, b *v1alpha1.MgorsBackup, run RestoreStarted) Event {
	failed := func(err error) Event { return RestoreFailed{Restore: run.Restore, UID: run.UID, Reason: err.Error()} }
	st, err := w.backupStore(ctx, b)
	if err != nil {
		return failed(err)
	}
	dc, closeDC, err := w.openMember(ctx, m, AuthKeyfile, run.Member)
	if err != nil {
		return failed(err)
	}
	defer closeDC()
	us := w.readUsers(ctx, m)
	ropts := backup.RestoreOptions{Log: w.Mongo.Log, Keep: managedUsers(us.admin.User, us.operator.User)}
	var res *backup.Result
	if run.PointInTime.IsZero() {
		res, err = backup.Restore(ctx, dc, st, run.Prefix, ropts)
	} else {
		archive := backup.ArchivePrefix(b.Spec.Store.Prefix, b.Namespace, b.Spec.Cluster)
		ts, terr := backup.TimestampAt(ctx, st, run.Prefix, archive, run.PointInTime, 0)
		if terr != nil {
			return failed(fmt.Errorf("spec.pointInTime: %w", terr))
		}
		res, err = backup.RestoreTo(ctx, dc, st, run.Prefix, archive, ts, ropts)
	}
	if err != nil {
		return failed(err)
	}
	return restoreResult(run, res, time.Now())
}

// WriteRestoreStatus implements RestoreWorld.
func (w *KubeWorld) WriteRestoreStatus(ctx context.Context, r *v1alpha1.MgorsRestore, st v1alpha1.MgorsRestoreStatus) error {
	return w.Status.Restore(ctx, r, st)
}

// RestoreEvent implements RestoreWorld.
func (w *KubeWorld) RestoreEvent(r *v1alpha1.MgorsRestore, warning bool, reason, message string) {
	w.Recorder.RestoreEvent(r, warning, reason, message)
}

// managedUsers are the users a restore leaves as the cluster has them
// (backup.RestoreOptions.Keep): the admin user and the operator's own user,
// by the names their Secrets give and by the default names (a Secret not
// read, or renamed since, never lets a backup's user of such a name
// replace the cluster's).
func managedUsers(admin, operator string) []string {
	var out []string
	for _, u := range []string{admin, operator, AdminUsername, mongo.OperatorUser} {
		if id := backup.UserID("admin", u); u != "" && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}
