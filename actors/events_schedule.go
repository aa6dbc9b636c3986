package actors

import (
	"fmt"
	"strings"
	"time"
)

// The events and actions of spec.backup.schedules (decide_schedule.go,
// docs/design/backup.md "Schedules and retention").

// ActCreateBackup creates the MgorsBackup a schedule fired for (its
// BackupScheduled is recorded first); one that exists already is success.
const ActCreateBackup ActionKind = "CreateBackup"

// ActPruneBackup deletes every object under a scheduled backup's prefix in
// its store, then the MgorsBackup (only if its UID is still the one named):
// the schedule keeps enough newer Succeeded backups.
const ActPruneBackup ActionKind = "PruneBackup"

// ScheduledBackup is the MgorsBackup an ActCreateBackup creates or an
// ActPruneBackup deletes.
type ScheduledBackup struct {
	Name     string
	Schedule string
	// UID is the backup a prune deletes: another under its name is left.
	UID string
}

// BackupScheduled records that Schedule fired at At and that its
// MgorsBackup Backup is to be created (written before the create, so that
// a restart never takes one fire twice).
type BackupScheduled struct {
	Schedule string    `json:"schedule"`
	Backup   string    `json:"backup"`
	At       time.Time `json:"at"`
}

// BackupPruned records a schedule's backup deleted beyond its keep: the
// objects deleted under its prefix, then the MgorsBackup.
type BackupPruned struct {
	Schedule string `json:"schedule"`
	Backup   string `json:"backup"`
	Objects  int    `json:"objects"`
}

// ScheduleInvalid records that spec generation Generation holds cron
// expressions that do not parse (the schema only counts five fields), each
// error naming its field; told once per generation as a Warning.
type ScheduleInvalid struct {
	Generation int64    `json:"generation"`
	Errors     []string `json:"errors"`
}

func (BackupScheduled) Type() string { return "BackupScheduled" }
func (BackupPruned) Type() string    { return "BackupPruned" }
func (ScheduleInvalid) Type() string { return "ScheduleInvalid" }

func init() {
	register(BackupScheduled{})
	register(BackupPruned{})
	register(ScheduleInvalid{})
}

// Schedules is what the state keeps of the backup schedules.
type Schedules struct {
	// Fires are each schedule's last fire recorded, by schedule name.
	Fires map[string]ScheduleFire `json:"fires,omitempty"`
	// Reported is the spec generation whose invalid expressions were told.
	Reported int64 `json:"reported,omitempty"`
	// FailedAt is when the last create or prune failed: the next waits
	// scheduleRetry, so that a store or an API refusing them does not hold
	// the cluster's own actions in back-off.
	FailedAt time.Time `json:"failedAt,omitzero"`
}

// ScheduleFire is one schedule's last fire: when, its backup, and whether
// the create is known done.
type ScheduleFire struct {
	At      time.Time `json:"at"`
	Backup  string    `json:"backup"`
	Created bool      `json:"created,omitempty"`
}

// foldSchedule folds the schedule events into the state (part of
// foldBackup). It runs before Evolve clears the action in flight.
func foldSchedule(s State, at time.Time, e Event) State {
	switch e := e.(type) {
	case BackupScheduled:
		s.Schedules.Fires = with(s.Schedules.Fires, e.Schedule, ScheduleFire{At: e.At, Backup: e.Backup})
	case ScheduleInvalid:
		s.Schedules.Reported = e.Generation
	case ActionFinished:
		f := s.InFlight
		if f == nil || f.Action != e.Action || !storeAction(e.Action) {
			return s
		}
		s.Schedules.FailedAt = time.Time{}
		for name, fire := range s.Schedules.Fires {
			if e.Action == ActCreateBackup && fire.Backup == f.Target {
				fire.Created = true
				s.Schedules.Fires = with(s.Schedules.Fires, name, fire)
			}
		}
	case ActionFailed:
		if f := s.InFlight; f != nil && f.Action == e.Action && storeAction(e.Action) {
			s.Schedules.FailedAt = at
		}
	}
	return s
}

// storeAction says whether an action is one of the schedules' and the
// archive's (CreateBackup, PruneBackup, PruneArchive): its failure waits
// scheduleRetry rather than holding the cluster's own actions in back-off.
func storeAction(k ActionKind) bool {
	return k == ActCreateBackup || k == ActPruneBackup || k == ActPruneArchive
}

// scheduleAnnouncement tells people of a schedule's backups (Announcement).
func scheduleAnnouncement(e Event) (reason, message string, warning, ok bool) {
	switch e := e.(type) {
	case BackupScheduled:
		return "BackupScheduled", fmt.Sprintf("schedule %s fired at %s: creating MgorsBackup %s", e.Schedule, e.At.UTC().Format(time.RFC3339), e.Backup), false, true
	case BackupPruned:
		return "BackupPruned", fmt.Sprintf("schedule %s: MgorsBackup %s deleted beyond the schedule's keep, with its %d objects", e.Schedule, e.Backup, e.Objects), false, true
	case ScheduleInvalid:
		return "ScheduleInvalid", strings.Join(e.Errors, "; ") + "; the other schedules run", true, true
	}
	return "", "", false, false
}
