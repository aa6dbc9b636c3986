package actors

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo/backup"
)

// The oplog archive (spec.backup.pointInTime; docs/design/backup.md). The
// cluster's actor keeps one archive goroutine running (archive.go):
//
//  1. It starts once a MgorsBackup of the cluster Succeeded into
//     spec.backup.store, from the newest such backup's Start (the goroutine
//     then continues after the store's newest chunk when that is later), on
//     the member backup.Source chooses, after the operator's user was
//     granted the backup role (GrantBackupRole). ArchiveStarted is recorded
//     first.
//  2. A run that ends on a read error starts again after a back-off (10 s,
//     doubling, up to 5 minutes), on the member Source chooses then.
//  3. A run that ends because the archive cannot continue (ErrWindowLost,
//     ErrDiverged) records ArchiveStopped; the archive starts again only
//     from a backup whose Start is after the archive's end.
//  4. While it runs, the chunks that end at or before the End of the oldest
//     backup kept are deleted (PruneArchive, ArchivePruned), each time that
//     End moves (pruneArchive).
//
// The goroutine's progress is not recorded: the actor puts it in the
// observation (Observation.Archive), for Decide and StatusFor.

// ArchiveProgress is the archive goroutine of this process as the actor
// last saw it (archive.go); the zero value is none.
type ArchiveProgress struct {
	// Able says whether the World archives (ArchiveWorld).
	Able bool
	// Running says whether a goroutine runs.
	Running bool
	// Store is the store the last run wrote to (storeKey).
	Store string
	// From is the last run's start (its ArchiveStarted.From), Last the
	// newest entry archived (zero until the run read the store).
	From, Last backup.Position
	// Failures are the runs in a row that ended on a read error, the
	// last at EndedAt with Error.
	Failures int
	EndedAt  time.Time
	Error    string
	// Lost is why the archive cannot continue (ErrWindowLost, ErrDiverged),
	// until ArchiveStopped records it.
	Lost string
}

// archiveBackoff is how long the actor waits before starting the archive
// again after n failed runs in a row: 10 s, 20 s, 40 s, ... up to 5 minutes.
func archiveBackoff(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	return min(10*time.Second<<min(n-1, 5), 5*time.Minute)
}

// pointInTime is spec.backup when it asks for the archive, nil otherwise.
func pointInTime(m *v1alpha1.Mgors) *v1alpha1.BackupSpec {
	if b := m.Spec.Backup; b != nil && b.PointInTime != nil && b.PointInTime.Enabled {
		return b
	}
	return nil
}

// storeKey names a store as the archive sees it: endpoint, bucket, prefix.
func storeKey(st v1alpha1.BackupStore) string {
	return st.Endpoint + "/" + st.Bucket + "/" + st.Prefix
}

// archiveBase is a Succeeded backup the archive can start from or cover.
type archiveBase struct {
	Name       string
	Start, End backup.Position
}

// succeededInto are the cluster's backups that Succeeded into st, by their
// End, oldest first: the state's record when it has one, else the
// MgorsBackup's status.
func succeededInto(s State, backups []*v1alpha1.MgorsBackup, st v1alpha1.BackupStore) []archiveBase {
	var out []archiveBase
	for _, b := range backups {
		if storeKey(b.Spec.Store) != storeKey(st) {
			continue
		}
		if r := s.backupRun(string(b.UID)); r != nil {
			if r.Completed != nil {
				out = append(out, archiveBase{Name: b.Name, Start: r.Completed.Start, End: r.Completed.End})
			}
			continue
		}
		if b.Status.Phase == v1alpha1.BackupSucceeded && b.Status.Start != nil && b.Status.End != nil {
			out = append(out, archiveBase{Name: b.Name, Start: fromStatus(*b.Status.Start), End: fromStatus(*b.Status.End)})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return posAfter(out[j].End, out[i].End) })
	return out
}

func fromStatus(p v1alpha1.OplogPosition) backup.Position {
	pos := backup.Position{T: uint32(p.Seconds), I: uint32(p.Increment), Term: p.Term}
	if p.Time != nil {
		pos.Wall = p.Time.UTC()
	}
	return pos
}

// posAfter says whether a's timestamp is after b's.
func posAfter(a, b backup.Position) bool { return a.T > b.T || (a.T == b.T && a.I > b.I) }

// archiveResults records the archive's stop (it runs even while paused).
func (d *decider) archiveResults() {
	p := d.in.Obs.Archive
	if p.Lost != "" && d.s.Archive != nil && d.s.Archive.Stopped == nil {
		d.emit(ArchiveStopped{Reason: p.Lost, Last: p.Last})
	}
}

// archiveStart starts the archive goroutine when none runs and one should,
// or grants the role it needs first (then it reports true: an action).
func (d *decider) archiveStart() bool {
	spec, o := pointInTime(d.in.Mgors), d.in.Obs
	p := o.Archive
	if spec == nil || !p.Able || p.Running || p.Lost != "" || d.in.Now.Before(p.EndedAt.Add(archiveBackoff(p.Failures))) {
		return false
	}
	bases := succeededInto(d.s, o.Backups, spec.Store)
	if len(bases) == 0 || o.Status == nil || o.Config == nil {
		return false
	}
	newest := bases[len(bases)-1]
	if archiveStopped(d.s, d.in.Mgors, newest) {
		return false
	}
	member, err := backup.Source(o.Status, *o.Config)
	if err != nil {
		return false
	}
	if d.s.Auth == AuthOperator && !d.s.BackupRole {
		if o.Primary == "" {
			return false
		}
		d.act(Action{Kind: ActGrantBackupRole, Host: o.Primary}, ActionStarted{Target: o.Primary,
			Reason: "the operator's user needs the backup role to archive the oplog (spec.backup.pointInTime)"})
		return true
	}
	m := d.in.Mgors
	d.emit(ArchiveStarted{Backup: newest.Name, Member: member, From: newest.Start, Endpoint: spec.Store.Endpoint,
		Bucket: spec.Store.Bucket, Prefix: backup.ArchivePrefix(spec.Store.Prefix, m.Namespace, m.Name)})
	return false
}

// sameArchive says whether r archives where spec.backup asks.
func sameArchive(r *ArchiveRun, m *v1alpha1.Mgors) bool {
	spec := pointInTime(m)
	return r != nil && spec != nil && r.Endpoint == spec.Store.Endpoint && r.Bucket == spec.Store.Bucket &&
		r.Prefix == backup.ArchivePrefix(spec.Store.Prefix, m.Namespace, m.Name)
}

// archiveStopped says whether the archive m asks for stopped for good and
// newest (the newest backup) cannot restart it: its Start is not after the
// archive's end.
func archiveStopped(s State, m *v1alpha1.Mgors, newest archiveBase) bool {
	r := s.Archive
	if r == nil || r.Stopped == nil || !sameArchive(r, m) {
		return false
	}
	end := r.Stopped.Last
	if posAfter(r.From, end) {
		end = r.From
	}
	return !posAfter(newest.Start, end)
}

// ArchiveCover is what the archive reaches: the backups into Store whose
// End is at or after From restore to any point up to Until. The zero value
// covers nothing.
type ArchiveCover struct {
	Store       string
	From, Until backup.Position
}

// covers says whether a backup into st ending at end restores up to Until.
func (c ArchiveCover) covers(st v1alpha1.BackupStore, end backup.Position) bool {
	return c.Store != "" && c.Store == storeKey(st) && !c.Until.Wall.IsZero() &&
		!posAfter(c.From, end) && !posAfter(end, c.Until) && !end.Wall.IsZero()
}

// ArchiveCoverFor is the archive's reach as the state and the observation
// show it (zero without spec.backup.pointInTime or an archive run). Until
// this process's goroutine has read the store (after an operator restart,
// a few seconds), it is the status.backup.archivedUntil last written: the
// archive never shrinks by itself, and the statuses do not blink.
func ArchiveCoverFor(s State, o Observation, m *v1alpha1.Mgors) ArchiveCover {
	if !sameArchive(s.Archive, m) {
		return ArchiveCover{}
	}
	r, p := s.Archive, o.Archive
	c := ArchiveCover{Store: storeKey(pointInTime(m).Store), From: r.From}
	switch {
	case p.Store == c.Store && posAfter(p.Last, backup.Position{}):
		c.Until = p.Last
	case r.Stopped != nil:
		c.Until = r.Stopped.Last
	case m.Status.Backup != nil && m.Status.Backup.ArchivedUntil != nil:
		// The status holds the wall time to the second: every entry of that
		// second counts as archived.
		w := m.Status.Backup.ArchivedUntil.UTC()
		c.Until = backup.Position{T: uint32(w.Unix()), I: math.MaxUint32, Wall: w}
	}
	if c.Until.Wall.IsZero() {
		return ArchiveCover{}
	}
	return c
}

// withArchive adds the archive's fields to the cluster's status.backup:
// archivedUntil, pointInTimeRange (the oldest covered backup's End to
// archivedUntil) and, when the archive waits or stopped, the message.
func withArchive(bs *v1alpha1.BackupStatus, s State, o Observation, m *v1alpha1.Mgors) *v1alpha1.BackupStatus {
	spec := pointInTime(m)
	if spec == nil {
		return bs
	}
	out := v1alpha1.BackupStatus{}
	if bs != nil {
		out = *bs
	}
	msg := ""
	cover := ArchiveCoverFor(s, o, m)
	if cover.Store != "" {
		out.ArchivedUntil = metaTime(cover.Until.Wall)
		for _, b := range succeededInto(s, o.Backups, spec.Store) {
			if cover.covers(spec.Store, b.End) {
				out.PointInTimeRange = b.End.Wall.UTC().Format(time.RFC3339) + ".." + cover.Until.Wall.UTC().Format(time.RFC3339)
				break
			}
		}
	}
	p := o.Archive
	switch {
	case len(succeededInto(s, o.Backups, spec.Store)) == 0:
		msg = "point-in-time archiving waits for a first Succeeded backup into spec.backup.store"
	case p.Lost != "":
		msg = stoppedMessage(ArchiveStopped{Reason: p.Lost, Last: p.Last})
	case s.Archive != nil && s.Archive.Stopped != nil && !p.Running && sameArchive(s.Archive, m):
		msg = stoppedMessage(*s.Archive.Stopped)
	case !p.Running && p.Error != "":
		msg = fmt.Sprintf("point-in-time archiving failed (%s); trying again after %s", p.Error, archiveBackoff(p.Failures))
	}
	if msg != "" {
		if out.Message != "" {
			msg = out.Message + "; " + msg
		}
		out.Message = msg
	}
	if out == (v1alpha1.BackupStatus{}) {
		return bs
	}
	return &out
}

// coveredRange extends a Succeeded backup's pointInTimeRange to what the
// archive reaches (BackupStatuses).
func coveredRange(st *v1alpha1.MgorsBackupStatus, store v1alpha1.BackupStore, c ArchiveCover) {
	if st.Phase != v1alpha1.BackupSucceeded || st.End == nil || st.End.Time == nil {
		return
	}
	if end := fromStatus(*st.End); c.covers(store, end) {
		st.PointInTimeRange = end.Wall.UTC().Format(time.RFC3339) + ".." + c.Until.Wall.UTC().Format(time.RFC3339)
	}
}

// pruneArchive deletes the archive's chunks no restore can use (rule 7,
// after the schedules), while the archive runs and once it has gone past
// the End of the oldest backup that Succeeded into spec.backup.store: the
// chunks ending at or before that End, each time it moves past where the
// chunks were last pruned through. A restore starts at its
// backup's End (backup.Coverage), so older chunks serve no backup kept; a
// backup deleted, by hand or beyond a schedule's keep, frees its share.
func (d *decider) pruneArchive() {
	spec, o := pointInTime(d.in.Mgors), d.in.Obs
	if spec == nil || !o.BackupsRead || !o.Archive.Running || o.Archive.Store != storeKey(spec.Store) ||
		!sameArchive(d.s.Archive, d.in.Mgors) {
		return
	}
	bases := succeededInto(d.s, o.Backups, spec.Store)
	// The archive has gone past the End, so every chunk that ends at or
	// before it is written already: none comes after the prune.
	if len(bases) == 0 || !posAfter(bases[0].End, d.s.ArchivePruned) || !posAfter(o.Archive.Last, bases[0].End) {
		return
	}
	oldest := bases[0]
	d.act(Action{Kind: ActPruneArchive, Backup: &ScheduledBackup{Name: oldest.Name}, Through: oldest.End},
		ActionStarted{Target: oldest.Name, Reason: fmt.Sprintf(
			"the archive's chunks ending at or before %s, the End of the oldest backup kept, serve no restore", oldest.End)})
}
