package actors

import (
	"fmt"
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo/backup"
)

// Backups (docs/design/backup.md). A MgorsBackup names its cluster; the
// cluster's actor takes the backups one at a time, oldest first:
//
//  1. While the cluster is not Healthy, a new backup waits (its status says
//     Pending and why).
//  2. Before its first backup as its own user, the operator grants that user
//     the built-in backup role (GrantBackupRole, on the primary).
//  3. It records BackupStarted, naming the member backup.Source chooses (a
//     healthy secondary, hidden or priority 0 first), and only then starts
//     the dump, off the mailbox, in a goroutine of its own.
//  4. The dump's result is recorded as BackupCompleted or BackupFailed; a
//     MgorsBackup deleted while it runs fails it (and cancels the dump).
//  5. A backup the log shows started, which no goroutine of this process runs
//     (the operator restarted), is settled from the store: a manifest under
//     its prefix completes it, none fails it.
//
// A backup whose status is already Succeeded or Failed is never taken again.

// backupResults records the results of the dumps that ended, and fails the
// backups that cannot end: their MgorsBackup deleted, or shown Running by
// an earlier incarnation of the cluster with no record in this log. It runs
// even while paused or acting: it changes nothing in the cluster.
func (d *decider) backupResults() {
	o := d.in.Obs
	for _, r := range d.s.Backups {
		if !r.Running() {
			continue
		}
		if res, ok := d.in.Results[r.UID]; ok {
			d.emit(res)
			continue
		}
		if o.BackupsRead && observedBackup(o.Backups, r.UID) == nil {
			d.emit(BackupFailed{Backup: r.Backup, UID: r.UID, Reason: "the MgorsBackup was deleted while it ran; the objects written stay, without a manifest"})
		}
	}
	for _, b := range o.Backups {
		if b.Status.Phase == v1alpha1.BackupRunning && d.s.backupRun(string(b.UID)) == nil {
			d.emit(BackupFailed{Backup: b.Name, UID: string(b.UID),
				Reason: "its cluster's event log has no record of it (the Mgors was re-created while it ran); create another MgorsBackup"})
		}
	}
}

// backupStart starts the next backup on a Healthy cluster with none running,
// or grants the role it needs first (then it reports true: an action).
func (d *decider) backupStart() bool {
	if d.s.Phase != v1alpha1.PhaseHealthy || runningBackup(d.s) != nil || runningRestore(d.s) != nil {
		return false
	}
	next := nextBackup(d.s, d.in.Obs.Backups)
	o := d.in.Obs
	if next == nil || o.Status == nil || o.Config == nil || o.Primary == "" {
		return false
	}
	member, err := backup.Source(o.Status, *o.Config)
	if err != nil {
		return false // no healthy member: the status says Pending
	}
	if d.s.Auth == AuthOperator && !d.s.BackupRole {
		d.act(Action{Kind: ActGrantBackupRole, Host: o.Primary}, ActionStarted{Target: o.Primary,
			Reason: fmt.Sprintf("the operator's user needs the backup role to read every database for the backup %s", next.Name)})
		return true
	}
	d.emit(BackupStarted{Backup: next.Name, UID: string(next.UID), Member: member,
		Endpoint: next.Spec.Store.Endpoint, Bucket: next.Spec.Store.Bucket, Prefix: backup.Prefix(next)})
	return false
}

// nextBackup is the oldest MgorsBackup observed that was never started and
// has not ended (the observation lists them oldest first).
func nextBackup(s State, backups []*v1alpha1.MgorsBackup) *v1alpha1.MgorsBackup {
	for _, b := range backups {
		if b.DeletionTimestamp != nil || s.backupRun(string(b.UID)) != nil {
			continue
		}
		switch b.Status.Phase {
		case "", v1alpha1.BackupPending:
			return b
		}
	}
	return nil
}

func runningBackup(s State) *BackupRun {
	for i := range s.Backups {
		if s.Backups[i].Running() {
			return &s.Backups[i]
		}
	}
	return nil
}

func observedBackup(backups []*v1alpha1.MgorsBackup, uid string) *v1alpha1.MgorsBackup {
	for _, b := range backups {
		if string(b.UID) == uid {
			return b
		}
	}
	return nil
}

// BackupStatuses are the statuses the cluster's MgorsBackups should show,
// by name, for those whose status differs from what it shows: the state's
// record of each one started, and Pending, with the reason, for each one
// waiting. A Succeeded backup the oplog archive covers (cover, at most one:
// ArchiveCoverFor) restores up to the archive's end. Pure: the status
// writer writes them.
func BackupStatuses(s State, backups []*v1alpha1.MgorsBackup, cover ...ArchiveCover) map[string]v1alpha1.MgorsBackupStatus {
	out := map[string]v1alpha1.MgorsBackupStatus{}
	waiting := runningBackup(s) != nil
	for _, b := range backups {
		var st v1alpha1.MgorsBackupStatus
		if r := s.backupRun(string(b.UID)); r != nil {
			st = backupStatus(*r, b.Generation)
		} else {
			switch b.Status.Phase {
			case "", v1alpha1.BackupPending:
				st = v1alpha1.MgorsBackupStatus{Phase: v1alpha1.BackupPending, Message: pendingReason(s, waiting), ObservedGeneration: b.Generation}
			case v1alpha1.BackupSucceeded:
				st = b.Status // ended before this log knew it: only its range may grow
			default:
				continue // ended before this log knew it: left as it is
			}
		}
		for _, c := range cover {
			coveredRange(&st, b.Spec.Store, c)
		}
		if !sameBackupStatus(b.Status, st) {
			out[b.Name] = st
		}
	}
	return out
}

func pendingReason(s State, waiting bool) string {
	switch {
	case s.Phase != v1alpha1.PhaseHealthy:
		return fmt.Sprintf("waiting for the cluster to be Healthy (it is %s)", s.Phase)
	case waiting:
		return "waiting for the backup under way to end: a cluster takes one backup at a time"
	case runningRestore(s) != nil:
		return "waiting for the restore into the cluster to end"
	default:
		return "waiting for a healthy member to read"
	}
}

// backupStatus is the status of a backup the state records.
func backupStatus(r BackupRun, generation int64) v1alpha1.MgorsBackupStatus {
	switch {
	case r.Completed != nil:
		c := r.Completed
		m := &backup.Manifest{Member: c.Member, Started: c.Started, Finished: c.Finished, Start: c.Start, End: c.End,
			Collections: make([]backup.Collection, c.Collections), Oplog: backup.Oplog{Entries: c.Entries}, Size: c.SizeBytes}
		return backup.Succeeded(m, r.Prefix, generation)
	case r.Failed != "":
		st := v1alpha1.MgorsBackupStatus{Phase: v1alpha1.BackupFailed, Message: r.Failed, Member: r.Member, Prefix: r.Prefix, ObservedGeneration: generation}
		if !r.At.IsZero() && r.Member != "" {
			st.StartTime = metaTime(r.At)
		}
		return st
	default:
		return v1alpha1.MgorsBackupStatus{Phase: v1alpha1.BackupRunning, Message: "reading " + r.Member,
			Member: r.Member, Prefix: r.Prefix, StartTime: metaTime(r.At), ObservedGeneration: generation}
	}
}

// sameBackupStatus compares two statuses as the API server stores them
// (times to the second).
func sameBackupStatus(a, b v1alpha1.MgorsBackupStatus) bool {
	trim := func(s v1alpha1.MgorsBackupStatus) v1alpha1.MgorsBackupStatus {
		for _, t := range []**metav1.Time{&s.StartTime, &s.CompletionTime} {
			if *t != nil {
				c := metaTime((*t).Time)
				*t = c
			}
		}
		for _, p := range []**v1alpha1.OplogPosition{&s.Start, &s.End} {
			if *p != nil && (*p).Time != nil {
				c := **p
				c.Time = metaTime(c.Time.Time)
				*p = &c
			}
		}
		return s
	}
	return equalStatus(trim(a), trim(b))
}

// equalStatus compares two statuses already trimmed to what the API keeps.
func equalStatus(a, b any) bool { return reflect.DeepEqual(a, b) }

// metaTime is t as the API server keeps it: UTC, to the second.
func metaTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t.UTC().Truncate(time.Second))
	return &mt
}
