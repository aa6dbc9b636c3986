package actors

import (
	"fmt"
	"time"

	"github.com/mgors/operator/mongo/backup"
)

// The events of a restore into this cluster (decide_restore.go,
// docs/design/backup.md). As a backup's, the restore is recorded before it
// starts and runs off the mailbox, not as an Action.

// RestoreStarted records that the MgorsRestore Restore (its UID) begins:
// the MgorsBackup Backup of the cluster Source, under Prefix in Bucket at
// Endpoint, is restored into the primary Member; with PointInTime, then
// replayed from the archive up to it.
type RestoreStarted struct {
	Restore     string    `json:"restore"`
	UID         string    `json:"uid"`
	Backup      string    `json:"backup"`
	Source      string    `json:"source"`
	Endpoint    string    `json:"endpoint"`
	Bucket      string    `json:"bucket"`
	Prefix      string    `json:"prefix"`
	Member      string    `json:"member"`
	PointInTime time.Time `json:"pointInTime,omitzero"`
}

// RestoreCompleted records a restore that finished: the data is as the
// source was at RestoredTo.
type RestoreCompleted struct {
	Restore     string          `json:"restore"`
	UID         string          `json:"uid"`
	Collections int             `json:"collections"`
	Documents   int64           `json:"documents"`
	Replayed    int64           `json:"replayed"`
	RestoredTo  backup.Position `json:"restoredTo"`
	Finished    time.Time       `json:"finished"`
}

// RestoreFailed records a restore that stopped or could not start, and why.
// One that stopped while it ran leaves the cluster partly restored.
type RestoreFailed struct {
	Restore string `json:"restore"`
	UID     string `json:"uid"`
	Reason  string `json:"reason"`
}

func (RestoreStarted) Type() string   { return "RestoreStarted" }
func (RestoreCompleted) Type() string { return "RestoreCompleted" }
func (RestoreFailed) Type() string    { return "RestoreFailed" }

func init() {
	register(RestoreStarted{})
	register(RestoreCompleted{})
	register(RestoreFailed{})
}

// RestoreRun is one restore in the state: its start, and once it ended its
// result.
type RestoreRun struct {
	RestoreStarted
	At        time.Time         `json:"at"`
	Completed *RestoreCompleted `json:"completed,omitempty"`
	Failed    string            `json:"failed,omitempty"`
}

// Running says whether the restore has no result yet.
func (r RestoreRun) Running() bool { return r.Completed == nil && r.Failed == "" }

// foldRestore folds the restore events into the state (part of Evolve).
func foldRestore(s State, at time.Time, e Event) State {
	switch e := e.(type) {
	case RestoreStarted:
		s.Restores = append(pruneRuns(s.Restores), RestoreRun{RestoreStarted: e, At: at})
	case RestoreCompleted:
		s.Restores = endRun(s.Restores, e.UID, func(r *RestoreRun) { c := e; r.Completed = &c })
	case RestoreFailed:
		if s.restoreRun(e.UID) == nil { // one refused before it started, or left by another incarnation
			s.Restores = append(pruneRuns(s.Restores), RestoreRun{RestoreStarted: RestoreStarted{Restore: e.Restore, UID: e.UID}, At: at})
		}
		s.Restores = endRun(s.Restores, e.UID, func(r *RestoreRun) { r.Failed = e.Reason })
	}
	return s
}

// restoreRun is the run of uid in the state, nil when none.
func (s State) restoreRun(uid string) *RestoreRun {
	for i := range s.Restores {
		if s.Restores[i].UID == uid {
			return &s.Restores[i]
		}
	}
	return nil
}

// running says whether the backup or restore uid runs, as the state shows.
func (s State) running(uid string) bool {
	if r := s.backupRun(uid); r != nil {
		return r.Running()
	}
	r := s.restoreRun(uid)
	return r != nil && r.Running()
}

// restoreAnnouncement tells people of a restore's start and end (Announcement).
func restoreAnnouncement(e Event) (reason, message string, warning, ok bool) {
	switch e := e.(type) {
	case RestoreStarted:
		to := "its end"
		if !e.PointInTime.IsZero() {
			to = e.PointInTime.UTC().Format(time.RFC3339)
		}
		return "RestoreStarted", fmt.Sprintf("restore %s: the backup %s of %s into %s, to %s; each collection it holds is replaced", e.Restore, e.Backup, e.Source, e.Member, to), false, true
	case RestoreCompleted:
		return "RestoreCompleted", fmt.Sprintf("restore %s: %d collections, %d documents, %d oplog entries replayed; the data is as of %s (%s)", e.Restore,
			e.Collections, e.Documents, e.Replayed, e.RestoredTo.Wall.UTC().Format(time.RFC3339), e.RestoredTo), false, true
	case RestoreFailed:
		return "RestoreFailed", fmt.Sprintf("restore %s: %s", e.Restore, e.Reason), true, true
	}
	return "", "", false, false
}
