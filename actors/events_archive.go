package actors

import (
	"fmt"
	"time"

	"github.com/mgors/operator/mongo/backup"
)

// The events of the oplog archive (decide_archive.go, archive.go,
// docs/design/backup.md). The archive runs in a goroutine of its own, as a
// dump does; the log records when one starts and when the archive stops for
// good, never its progress: a chunk written is not a decision.

// ArchiveStarted records that an archive goroutine starts: it reads the
// oplog of Member after From (the Start of the MgorsBackup Backup, or where
// the archive in the store ends, when later) into Prefix (the archive's,
// backup.ArchivePrefix) in Bucket at Endpoint.
type ArchiveStarted struct {
	Backup   string          `json:"backup"`
	Member   string          `json:"member"`
	From     backup.Position `json:"from"`
	Endpoint string          `json:"endpoint"`
	Bucket   string          `json:"bucket"`
	Prefix   string          `json:"prefix"`
}

// ArchiveStopped records that the archive cannot continue (the member's
// oplog rolled over past its end, backup.ErrWindowLost, or does not hold
// it, backup.ErrDiverged): Last is the archive's last entry. It starts
// again only from a backup whose Start is after Last.
type ArchiveStopped struct {
	Reason string          `json:"reason"`
	Last   backup.Position `json:"last"`
}

// ActPruneArchive deletes the archive's chunks that end at or before
// Action.Through, the End of the oldest Succeeded backup into the store
// (Action.Backup names it): no restore reaches back past a backup's End, so
// nothing needs them once older backups are gone.
const ActPruneArchive ActionKind = "PruneArchive"

// ArchivePruned records the archive's chunks ending at or before Through
// (the End of Backup, the oldest Succeeded backup kept) deleted: Chunks of
// them. Recorded after the PruneArchive's ActionFinished.
type ArchivePruned struct {
	Backup  string          `json:"backup"`
	Through backup.Position `json:"through"`
	Chunks  int             `json:"chunks"`
}

func (ArchiveStarted) Type() string { return "ArchiveStarted" }
func (ArchiveStopped) Type() string { return "ArchiveStopped" }
func (ArchivePruned) Type() string  { return "ArchivePruned" }

func init() {
	register(ArchiveStarted{})
	register(ArchiveStopped{})
	register(ArchivePruned{})
}

// ArchiveRun is the archive goroutine last started, in the state, and
// whether the archive stopped for good since.
type ArchiveRun struct {
	ArchiveStarted
	// At is when it started (the ArchiveStarted record's time).
	At      time.Time       `json:"at"`
	Stopped *ArchiveStopped `json:"stopped,omitempty"`
}

// foldArchive folds the archive's events into the state (part of Evolve).
func foldArchive(s State, at time.Time, e Event) State {
	switch e := e.(type) {
	case ArchiveStarted:
		s.Archive = &ArchiveRun{ArchiveStarted: e, At: at}
	case ArchiveStopped:
		if s.Archive != nil {
			r, st := *s.Archive, e
			r.Stopped = &st
			s.Archive = &r
		}
	case ArchivePruned:
		s.ArchivePruned = e.Through
	}
	return s
}

// archiveAnnouncement tells people of the archive's start and stop (Announcement).
func archiveAnnouncement(e Event) (reason, message string, warning, ok bool) {
	switch e := e.(type) {
	case ArchiveStarted:
		return "ArchiveStarted", fmt.Sprintf("point-in-time archiving: reading the oplog of %s after %s (backup %s) into s3://%s/%s (%s)",
			e.Member, e.From, e.Backup, e.Bucket, e.Prefix, e.Endpoint), false, true
	case ArchiveStopped:
		return "ArchiveStopped", stoppedMessage(e), true, true
	case ArchivePruned:
		return "ArchivePruned", fmt.Sprintf("point-in-time archive: %d chunks ending at or before %s deleted; the oldest backup kept, %s, ends there and no restore reaches back past it",
			e.Chunks, e.Through, e.Backup), false, true
	}
	return "", "", false, false
}

// stoppedMessage names the hole and the way on.
func stoppedMessage(e ArchiveStopped) string {
	end := e.Last.String()
	if !e.Last.Wall.IsZero() {
		end = e.Last.Wall.UTC().Format(time.RFC3339) + " (" + end + ")"
	}
	return fmt.Sprintf("point-in-time archiving stopped: %s; the archive ends at %s and no restore reaches past it: take a MgorsBackup to restart point-in-time archiving", e.Reason, end)
}
