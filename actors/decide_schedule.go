package actors

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
)

// Scheduled backups and their retention (spec.backup.schedules,
// docs/design/backup.md "Schedules and retention"). Once the phase's rule
// decided no action, and not while paused, in any phase:
//
//  1. Each schedule's newest fire at or before now, after the last one
//     recorded (or the Mgors's creation), is taken: BackupScheduled is
//     recorded, then the MgorsBackup <cluster>-<schedule>-<YYYYMMDDHHMM> is
//     created (ActCreateBackup). Missed fires (the operator down for a day)
//     take only the newest one, never a burst; a fire whose backup exists
//     already is not taken again.
//  2. A create that failed or was interrupted is made again while its fire
//     is the schedule's last.
//  3. Beyond keep newest Succeeded backups of a schedule (by its label),
//     the older Succeeded or Failed ones are pruned one at a time, oldest
//     first (ActPruneBackup): their objects, then the MgorsBackup. Never a
//     running or pending one, never one without the schedule label.
//
// A create or prune that fails waits scheduleRetry before the next one. A
// cron expression that does not parse is told once per spec generation
// (ScheduleInvalid, and status.backup.message); the other schedules run.

// scheduleRetry is how long a failed create or prune waits.
const scheduleRetry = 5 * time.Minute

// defaultKeep is the CRD's default of spec.backup.schedules[].keep.
const defaultKeep = 7

// parseSchedule parses a five-field cron expression, read in UTC.
func parseSchedule(expr string) (cron.Schedule, error) {
	return cron.ParseStandard(expr)
}

// scheduleErrors are the expressions of m's schedules that do not parse,
// each naming its field.
func scheduleErrors(m *v1alpha1.Mgors) []string {
	if m.Spec.Backup == nil {
		return nil
	}
	var out []string
	for i, sc := range m.Spec.Backup.Schedules {
		if _, err := parseSchedule(sc.Schedule); err != nil {
			out = append(out, fmt.Sprintf("spec.backup.schedules[%d].schedule %q: %v", i, sc.Schedule, err))
		}
	}
	return out
}

// fireWindows are how far back lastFire looks, widening: a frequent
// schedule is found in the first window, in a step or two.
var fireWindows = []time.Duration{time.Minute, time.Hour, 24 * time.Hour, 32 * 24 * time.Hour, 367 * 24 * time.Hour, 5 * 366 * 24 * time.Hour}

// lastFire is the newest fire of sc in (after, now], zero when none.
func lastFire(sc cron.Schedule, after, now time.Time) time.Time {
	after, now = after.UTC(), now.UTC()
	for _, back := range fireWindows {
		from := now.Add(-back)
		if from.Before(after) {
			from = after
		}
		var last time.Time
		for t := sc.Next(from); !t.IsZero() && !t.After(now); t = sc.Next(t) {
			last = t
		}
		if !last.IsZero() || !from.After(after) {
			return last
		}
	}
	return time.Time{}
}

// NextBackupTime is the earliest fire of m's schedules after now, zero
// when none (no schedules, or none that parses).
func NextBackupTime(m *v1alpha1.Mgors, now time.Time) time.Time {
	if m.Spec.Backup == nil {
		return time.Time{}
	}
	var next time.Time
	for _, sc := range m.Spec.Backup.Schedules {
		cs, err := parseSchedule(sc.Schedule)
		if err != nil {
			continue
		}
		if t := cs.Next(now.UTC()); !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next
}

// schedules is the rule above; it runs last in Decide.
func (d *decider) schedules() {
	m := d.in.Mgors
	if m.Spec.Backup == nil {
		return
	}
	if errs := scheduleErrors(m); len(errs) > 0 && d.s.Schedules.Reported != m.Generation {
		d.emit(ScheduleInvalid{Generation: m.Generation, Errors: errs})
	}
	if d.out.Action != nil || d.in.Now.Before(d.s.Schedules.FailedAt.Add(scheduleRetry)) {
		return
	}
	if !d.scheduleBackup() && !d.pruneBackup() {
		d.pruneArchive()
	}
}

// scheduleBackup takes a schedule's due fire, or makes again the create of
// its last one that is not known done.
func (d *decider) scheduleBackup() bool {
	m, o := d.in.Mgors, d.in.Obs
	for _, sc := range m.Spec.Backup.Schedules {
		cs, err := parseSchedule(sc.Schedule)
		if err != nil {
			continue
		}
		fire := d.s.Schedules.Fires[sc.Name]
		after := fire.At
		if created := m.CreationTimestamp.Time; created.After(after) {
			after = created
		}
		create := ScheduledBackup{Schedule: sc.Name}
		var reason string
		if at := lastFire(cs, after, d.in.Now); !at.IsZero() {
			create.Name = kube.ScheduledBackupName(m.Name, sc.Name, at)
			if observedName(o.Backups, create.Name) != nil {
				continue // taken before this log (a Mgors re-created)
			}
			d.emit(BackupScheduled{Schedule: sc.Name, Backup: create.Name, At: at})
			reason = fmt.Sprintf("schedule %s (%s) fired at %s", sc.Name, sc.Schedule, at.Format(time.RFC3339))
		} else {
			if fire.Backup == "" || fire.Created || observedName(o.Backups, fire.Backup) != nil {
				continue
			}
			create.Name = fire.Backup
			reason = fmt.Sprintf("schedule %s fired at %s; its backup is not created yet", sc.Name, fire.At.UTC().Format(time.RFC3339))
		}
		d.act(Action{Kind: ActCreateBackup, Backup: &create}, ActionStarted{Target: create.Name, Reason: reason})
		return true
	}
	return false
}

// pruneBackup prunes the oldest backup beyond a schedule's keep.
func (d *decider) pruneBackup() bool {
	m, o := d.in.Mgors, d.in.Obs
	if !o.BackupsRead {
		return false
	}
	for _, sc := range m.Spec.Backup.Schedules {
		keep := int(sc.Keep)
		if keep <= 0 {
			keep = defaultKeep
		}
		if b := pruneCandidate(d.s, o.Backups, m.Name, sc.Name, keep); b != nil {
			d.act(Action{Kind: ActPruneBackup, Backup: &ScheduledBackup{Name: b.Name, Schedule: sc.Name, UID: string(b.UID)}},
				ActionStarted{Target: b.Name, UID: string(b.UID),
					Reason: fmt.Sprintf("schedule %s keeps the %d newest Succeeded backups", sc.Name, keep)})
			return true
		}
	}
	return false
}

// pruneCandidate is the oldest Succeeded or Failed backup of schedule
// older than its keep newest Succeeded ones (backups oldest first), nil
// when none.
func pruneCandidate(s State, backups []*v1alpha1.MgorsBackup, cluster, schedule string, keep int) *v1alpha1.MgorsBackup {
	kept := 0
	var victim *v1alpha1.MgorsBackup
	for i := len(backups) - 1; i >= 0; i-- {
		b := backups[i]
		if b.Labels[kube.LabelSchedule] != schedule || b.Labels[kube.LabelCluster] != cluster || b.DeletionTimestamp != nil {
			continue
		}
		phase := backupPhase(s, b)
		if kept < keep {
			if phase == v1alpha1.BackupSucceeded {
				kept++
			}
			continue
		}
		if phase == v1alpha1.BackupSucceeded || phase == v1alpha1.BackupFailed {
			victim = b
		}
	}
	return victim
}

// backupPhase is b's phase as the state records it, else as its status
// shows it (one ended before this log knew it).
func backupPhase(s State, b *v1alpha1.MgorsBackup) v1alpha1.BackupPhase {
	r := s.backupRun(string(b.UID))
	switch {
	case r == nil:
		return b.Status.Phase
	case r.Completed != nil:
		return v1alpha1.BackupSucceeded
	case r.Failed != "":
		return v1alpha1.BackupFailed
	}
	return v1alpha1.BackupRunning
}

// scheduleSettled says whether the create or prune in flight took effect.
func (d *decider) scheduleSettled(f *ActionStarted) bool {
	o := d.in.Obs
	if f.Action == ActCreateBackup {
		return observedName(o.Backups, f.Target) != nil
	}
	return o.BackupsRead && observedBackup(o.Backups, f.UID) == nil
}

func observedName(backups []*v1alpha1.MgorsBackup, name string) *v1alpha1.MgorsBackup {
	for _, b := range backups {
		if b.Name == name {
			return b
		}
	}
	return nil
}

// BackupSummary is the cluster's status.backup: the next scheduled fire
// after the observation, the newest Succeeded backup of the cluster (any,
// scheduled or not) and the point in time it restores to, and what stops
// a schedule. Nil without spec.backup and without a Succeeded backup.
func BackupSummary(s State, o Observation, m *v1alpha1.Mgors) *v1alpha1.BackupStatus {
	var st v1alpha1.BackupStatus
	now := o.At
	if now.IsZero() {
		now = s.At
	}
	if next := NextBackupTime(m, now); !next.IsZero() {
		st.NextBackupTime = metaTime(next)
	}
	var last time.Time
	for _, b := range o.Backups {
		end, ok := succeededAt(s, b)
		if ok && (st.LastBackup == "" || !end.Before(last)) {
			st.LastBackup, last = b.Name, end
		}
	}
	if st.LastBackup != "" && !last.IsZero() {
		st.LastBackupTime = metaTime(last)
	}
	if errs := scheduleErrors(m); len(errs) > 0 {
		st.Message = strings.Join(errs, "; ") + "; the other schedules run"
	}
	if m.Spec.Backup == nil && st.LastBackup == "" {
		return nil
	}
	return &st
}

// succeededAt is the point in time b restores to, when it Succeeded: its
// End as the state records it, else as its status shows it.
func succeededAt(s State, b *v1alpha1.MgorsBackup) (time.Time, bool) {
	if r := s.backupRun(string(b.UID)); r != nil {
		if r.Completed == nil {
			return time.Time{}, false
		}
		return r.Completed.End.Wall, true
	}
	if b.Status.Phase != v1alpha1.BackupSucceeded {
		return time.Time{}, false
	}
	switch {
	case b.Status.End != nil && b.Status.End.Time != nil:
		return b.Status.End.Time.Time, true
	case b.Status.CompletionTime != nil:
		return b.Status.CompletionTime.Time, true
	}
	return time.Time{}, true
}
