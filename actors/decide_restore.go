package actors

import (
	"fmt"
	"time"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo/backup"
)

// Restores (docs/design/backup.md). A MgorsRestore names the cluster it
// restores into; that cluster's actor takes the restores one at a time,
// oldest first, as it takes backups:
//
//  1. A restore waits, Pending with the reason, while the cluster is not
//     Healthy, while a backup or another restore of the cluster runs, and
//     while its MgorsBackup is missing or has not Succeeded yet.
//  2. It fails at once, naming the field, when its MgorsBackup Failed, or
//     spec.pointInTime is before the backup's end.
//  3. It records RestoreStarted, naming the primary, and only then restores,
//     off the mailbox, authenticated as the cluster's internal user (the
//     replay's applyOps needs more than the restore role grants).
//  4. The result is RestoreCompleted or RestoreFailed. A restore deleted
//     while it runs is cancelled and fails. One the log shows started, which
//     no goroutine of this process runs, fails: the restore that ran is gone
//     and the cluster holds part of it.

// restoreResults records the results of the restores that ended, and fails
// those that cannot end (as backupResults).
func (d *decider) restoreResults() {
	o := d.in.Obs
	for _, r := range d.s.Restores {
		if !r.Running() {
			continue
		}
		if res, ok := d.in.Results[r.UID]; ok {
			d.emit(res)
			continue
		}
		if o.RestoresRead && observedRestore(o.Restores, r.UID) == nil {
			d.emit(RestoreFailed{Restore: r.Restore, UID: r.UID, Reason: "the MgorsRestore was deleted while it ran; the cluster holds part of the restore"})
		}
	}
	for _, r := range o.Restores {
		if r.Status.Phase == v1alpha1.RestoreRunning && d.s.restoreRun(string(r.UID)) == nil {
			d.emit(RestoreFailed{Restore: r.Name, UID: string(r.UID),
				Reason: "its cluster's event log has no record of it (the Mgors was re-created while it ran); create another MgorsRestore"})
		}
	}
}

// restoreStart starts the next restore on a Healthy cluster where nothing
// else runs, or fails it when it cannot run.
func (d *decider) restoreStart() {
	if d.s.Phase != v1alpha1.PhaseHealthy || runningBackup(d.s) != nil || runningRestore(d.s) != nil || d.in.Obs.Primary == "" {
		return
	}
	r := nextRestore(d.s, d.in.Obs.Restores)
	if r == nil {
		return
	}
	b := d.in.Obs.RestoreBackups[r.Spec.Backup]
	if b == nil {
		return // Pending: the MgorsBackup may be created yet
	}
	if refused := restoreRefused(r, b); refused != "" {
		d.emit(RestoreFailed{Restore: r.Name, UID: string(r.UID), Reason: refused})
		return
	}
	if b.Status.Phase != v1alpha1.BackupSucceeded {
		return
	}
	started := RestoreStarted{Restore: r.Name, UID: string(r.UID), Backup: b.Name, Source: b.Spec.Cluster,
		Endpoint: b.Spec.Store.Endpoint, Bucket: b.Spec.Store.Bucket, Prefix: b.Status.Prefix, Member: d.in.Obs.Primary}
	if r.Spec.PointInTime != nil {
		started.PointInTime = r.Spec.PointInTime.UTC()
	}
	d.emit(started)
}

// restoreRefused says why r cannot restore b, "" when it can (or may yet).
func restoreRefused(r *v1alpha1.MgorsRestore, b *v1alpha1.MgorsBackup) string {
	switch {
	case b.Status.Phase == v1alpha1.BackupFailed:
		return fmt.Sprintf("spec.backup: the MgorsBackup %s failed (%s); name a backup that Succeeded", b.Name, b.Status.Message)
	case b.Status.Phase != v1alpha1.BackupSucceeded:
		return ""
	case b.Status.Prefix == "":
		return fmt.Sprintf("spec.backup: the MgorsBackup %s shows no prefix in its status", b.Name)
	case r.Spec.PointInTime != nil && b.Status.End != nil && b.Status.End.Time != nil &&
		r.Spec.PointInTime.Time.Before(b.Status.End.Time.Truncate(time.Second)):
		return fmt.Sprintf("spec.pointInTime %s is before the end of the backup %s (%s): name an earlier backup",
			r.Spec.PointInTime.UTC().Format(time.RFC3339), b.Name, b.Status.End.Time.UTC().Format(time.RFC3339))
	}
	return ""
}

// nextRestore is the oldest MgorsRestore observed that was never started
// and has not ended.
func nextRestore(s State, restores []*v1alpha1.MgorsRestore) *v1alpha1.MgorsRestore {
	for _, r := range restores {
		if r.DeletionTimestamp != nil || s.restoreRun(string(r.UID)) != nil {
			continue
		}
		switch r.Status.Phase {
		case "", v1alpha1.RestorePending:
			return r
		}
	}
	return nil
}

func runningRestore(s State) *RestoreRun {
	for i := range s.Restores {
		if s.Restores[i].Running() {
			return &s.Restores[i]
		}
	}
	return nil
}

func observedRestore(restores []*v1alpha1.MgorsRestore, uid string) *v1alpha1.MgorsRestore {
	for _, r := range restores {
		if string(r.UID) == uid {
			return r
		}
	}
	return nil
}

// RestoreStatuses are the statuses the cluster's MgorsRestores should show,
// by name, for those whose status differs (as BackupStatuses).
func RestoreStatuses(s State, o Observation) map[string]v1alpha1.MgorsRestoreStatus {
	out := map[string]v1alpha1.MgorsRestoreStatus{}
	for _, r := range o.Restores {
		var st v1alpha1.MgorsRestoreStatus
		if run := s.restoreRun(string(r.UID)); run != nil {
			st = restoreStatus(*run, r.Generation)
		} else {
			switch r.Status.Phase {
			case "", v1alpha1.RestorePending:
				st = v1alpha1.MgorsRestoreStatus{Phase: v1alpha1.RestorePending, Message: restorePendingReason(s, r, o.RestoreBackups[r.Spec.Backup]), ObservedGeneration: r.Generation}
			default:
				continue
			}
		}
		if !sameRestoreStatus(r.Status, st) {
			out[r.Name] = st
		}
	}
	return out
}

func restorePendingReason(s State, r *v1alpha1.MgorsRestore, b *v1alpha1.MgorsBackup) string {
	switch {
	case b == nil:
		return fmt.Sprintf("waiting for the MgorsBackup %s (spec.backup): there is none of that name in this namespace", r.Spec.Backup)
	case b.Status.Phase != v1alpha1.BackupSucceeded:
		return fmt.Sprintf("waiting for the MgorsBackup %s to succeed (it is %s)", b.Name, phaseOr(string(b.Status.Phase), "new"))
	case s.Phase != v1alpha1.PhaseHealthy:
		return fmt.Sprintf("waiting for the cluster to be Healthy (it is %s)", s.Phase)
	case runningBackup(s) != nil:
		return "waiting for the backup of the cluster under way to end"
	case runningRestore(s) != nil:
		return "waiting for the restore under way to end: a cluster takes one restore at a time"
	default:
		return "waiting for a primary"
	}
}

func phaseOr(p, otherwise string) string {
	if p == "" {
		return otherwise
	}
	return p
}

// restoreStatus is the status of a restore the state records.
func restoreStatus(r RestoreRun, generation int64) v1alpha1.MgorsRestoreStatus {
	st := v1alpha1.MgorsRestoreStatus{Member: r.Member, ObservedGeneration: generation}
	if r.Member != "" {
		st.StartTime = metaTime(r.At)
	}
	switch {
	case r.Completed != nil:
		c := r.Completed
		st.Phase, st.CompletionTime = v1alpha1.RestoreSucceeded, metaTime(c.Finished)
		st.Message = fmt.Sprintf("the backup %s restored: the data is as of %s", r.Backup, c.RestoredTo)
		st.Collections, st.Documents, st.Replayed = int32(c.Collections), c.Documents, c.Replayed
		st.RestoredTo = &v1alpha1.OplogPosition{Seconds: int64(c.RestoredTo.T), Increment: int64(c.RestoredTo.I), Term: c.RestoredTo.Term}
		if !c.RestoredTo.Wall.IsZero() {
			st.RestoredTo.Time = metaTime(c.RestoredTo.Wall)
		}
	case r.Failed != "":
		st.Phase, st.Message = v1alpha1.RestoreFailed, r.Failed
	default:
		st.Phase, st.Message = v1alpha1.RestoreRunning, "restoring the backup "+r.Backup+" into "+r.Member
	}
	return st
}

func sameRestoreStatus(a, b v1alpha1.MgorsRestoreStatus) bool {
	trim := func(s v1alpha1.MgorsRestoreStatus) v1alpha1.MgorsRestoreStatus {
		if s.StartTime != nil {
			s.StartTime = metaTime(s.StartTime.Time)
		}
		if s.CompletionTime != nil {
			s.CompletionTime = metaTime(s.CompletionTime.Time)
		}
		if s.RestoredTo != nil && s.RestoredTo.Time != nil {
			c := *s.RestoredTo
			c.Time = metaTime(c.Time.Time)
			s.RestoredTo = &c
		}
		return s
	}
	return equalStatus(trim(a), trim(b))
}

// restoreResult is the record of a restore that finished with res.
func restoreResult(run RestoreStarted, res *backup.Result, finished time.Time) RestoreCompleted {
	return RestoreCompleted{Restore: run.Restore, UID: run.UID, Collections: res.Collections, Documents: res.Documents,
		Replayed: res.Replayed, RestoredTo: res.End, Finished: finished}
}
