package actors

import (
	"fmt"
	"time"

	"github.com/mgors/operator/mongo/backup"
)

// The events of a backup (decide_backup.go, docs/design/backup.md). A backup
// is recorded in its cluster's log: started before the dump begins, then
// completed or failed. The dump itself is not an Action: actions run one at
// a time, and a dump of minutes must not hold back a failover's reconfig.
// Nothing here names a credential: the store is named by endpoint and bucket.

// BackupStarted records that the dump of the MgorsBackup Backup (its UID)
// begins: it reads Member and writes under Prefix in Bucket at Endpoint.
type BackupStarted struct {
	Backup   string `json:"backup"`
	UID      string `json:"uid"`
	Member   string `json:"member"`
	Endpoint string `json:"endpoint"`
	Bucket   string `json:"bucket"`
	Prefix   string `json:"prefix"`
}

// BackupCompleted records a backup whose manifest is written: what it holds
// and the one point in time it restores to (End).
type BackupCompleted struct {
	Backup      string          `json:"backup"`
	UID         string          `json:"uid"`
	Member      string          `json:"member"`
	SizeBytes   int64           `json:"sizeBytes"`
	Collections int             `json:"collections"`
	Entries     int64           `json:"entries"`
	Started     time.Time       `json:"started"`
	Finished    time.Time       `json:"finished"`
	Start       backup.Position `json:"start"`
	End         backup.Position `json:"end"`
}

// BackupFailed records a backup that stopped without a manifest, and why. A
// backup the log shows started and the store holds no manifest of, after the
// operator restarted, fails too: the dump that was under way is gone.
type BackupFailed struct {
	Backup string `json:"backup"`
	UID    string `json:"uid"`
	Reason string `json:"reason"`
}

// ActGrantBackupRole grants the operator's own user the built-in backup role
// (find on every database and on local.oplog.rs), on the primary, before its
// first backup: the roles the user is created with do not read user data.
const ActGrantBackupRole ActionKind = "GrantBackupRole"

func (BackupStarted) Type() string   { return "BackupStarted" }
func (BackupCompleted) Type() string { return "BackupCompleted" }
func (BackupFailed) Type() string    { return "BackupFailed" }

func init() {
	register(BackupStarted{})
	register(BackupCompleted{})
	register(BackupFailed{})
}

// BackupRun is one backup in the state: its start, and once it ended its
// result (Completed or Failed set).
type BackupRun struct {
	BackupStarted
	// At is when it started (the BackupStarted record's time).
	At        time.Time        `json:"at"`
	Completed *BackupCompleted `json:"completed,omitempty"`
	Failed    string           `json:"failed,omitempty"`
}

// Running says whether the backup has no result yet.
func (r BackupRun) Running() bool { return r.Completed == nil && r.Failed == "" }

// keptBackups is how many ended backups the state keeps, for their
// MgorsBackup's status; the oldest ended ones go first.
const keptBackups = 32

// foldBackup folds the backup events, the schedules' too, into the state
// (part of Evolve).
func foldBackup(s State, at time.Time, e Event) State {
	s = foldSchedule(s, at, e)
	switch e := e.(type) {
	case BackupStarted:
		s.Backups = append(pruneRuns(s.Backups), BackupRun{BackupStarted: e, At: at})
	case BackupCompleted:
		s.Backups = endRun(s.Backups, e.UID, func(r *BackupRun) { c := e; r.Completed = &c })
	case BackupFailed:
		if s.backupRun(e.UID) == nil { // one the log never started (a status left by another incarnation)
			s.Backups = append(pruneRuns(s.Backups), BackupRun{BackupStarted: BackupStarted{Backup: e.Backup, UID: e.UID}, At: at})
		}
		s.Backups = endRun(s.Backups, e.UID, func(r *BackupRun) { r.Failed = e.Reason })
	case ActionFinished:
		if e.Action == ActGrantBackupRole && s.InFlight != nil && s.InFlight.Action == e.Action {
			s.BackupRole = true
		}
	case AuthSwitched:
		if e.To == AuthOperator {
			s.BackupRole = false // perhaps a user re-created: grant again (it may be repeated)
		}
	}
	return s
}

// jobRun is a BackupRun or a RestoreRun, for the folds they share.
type jobRun interface {
	Running() bool
	id() string
}

func (r BackupRun) id() string  { return r.UID }
func (r RestoreRun) id() string { return r.UID }

// endRun applies end to the running run of uid, in a copy of runs (states
// share nothing).
func endRun[R jobRun](runs []R, uid string, end func(*R)) []R {
	out := append([]R(nil), runs...)
	for i := range out {
		if out[i].id() == uid && out[i].Running() {
			end(&out[i])
		}
	}
	return out
}

// pruneRuns drops the oldest ended runs beyond keptBackups-1, in a copy,
// leaving room for one more.
func pruneRuns[R jobRun](runs []R) []R {
	ended := 0
	for _, r := range runs {
		if !r.Running() {
			ended++
		}
	}
	out := make([]R, 0, len(runs)+1)
	for _, r := range runs {
		if !r.Running() && ended >= keptBackups {
			ended--
			continue
		}
		out = append(out, r)
	}
	return out
}

// backupRun is the run of uid in the state, nil when none.
func (s State) backupRun(uid string) *BackupRun {
	for i := range s.Backups {
		if s.Backups[i].UID == uid {
			return &s.Backups[i]
		}
	}
	return nil
}

// backupAnnouncement tells people of a backup's start and end (Announcement).
func backupAnnouncement(e Event) (reason, message string, warning, ok bool) {
	switch e := e.(type) {
	case BackupStarted:
		return "BackupStarted", fmt.Sprintf("backup %s: reading %s into s3://%s/%s (%s)", e.Backup, e.Member, e.Bucket, e.Prefix, e.Endpoint), false, true
	case BackupCompleted:
		return "BackupCompleted", fmt.Sprintf("backup %s: %s from %s, %d collections, restores to %s (%s)", e.Backup,
			backup.HumanSize(e.SizeBytes), e.Member, e.Collections, e.End.Wall.UTC().Format(time.RFC3339), e.End), false, true
	case BackupFailed:
		return "BackupFailed", fmt.Sprintf("backup %s: %s", e.Backup, e.Reason), true, true
	}
	return scheduleAnnouncement(e)
}
