package actors

import (
	"context"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo/backup"
)

// BackupWorld is what a World does for backups (KubeWorld). A World
// without it takes none: the backups it is shown stay Pending.
type BackupWorld interface {
	// Backup dumps the cluster as run says (the member, the prefix) into
	// the store of b, authenticated as auth, and returns BackupCompleted or
	// BackupFailed. ctx bounds the whole dump; each call has its own deadline.
	Backup(ctx context.Context, m *v1alpha1.Mgors, b *v1alpha1.MgorsBackup, run BackupStarted, auth Auth) Event
	// SettleBackup is the result of a backup no goroutine runs any more:
	// BackupCompleted when the store holds its manifest, BackupFailed when
	// it holds none; an error when the store cannot say (tried again at the
	// next observation).
	SettleBackup(ctx context.Context, m *v1alpha1.Mgors, b *v1alpha1.MgorsBackup, run BackupStarted) (Event, error)
	// WriteBackupStatus writes the status of b when it differs.
	WriteBackupStatus(ctx context.Context, b *v1alpha1.MgorsBackup, st v1alpha1.MgorsBackupStatus) error
	// BackupEvent records a Kubernetes Event on b, for `kubectl describe mgob`.
	BackupEvent(b *v1alpha1.MgorsBackup, warning bool, reason, message string)
}

// backupDeadline bounds one dump, and settleDeadline the reading of one
// manifest after a restart.
const (
	backupDeadline = 12 * time.Hour
	settleDeadline = time.Minute
)

// jobs are a cluster's dumps and restores running in this process, and the
// results of those that ended, not yet recorded, by the UID of their
// MgorsBackup or MgorsRestore. It is shared by the actor's incarnations (as
// latestSpec): a supervisor restart neither loses a result nor settles a
// job that still runs.
type jobs struct {
	mu      sync.Mutex
	cancel  map[string]context.CancelFunc
	results map[string]Event
	archive *archiveJob // the oplog archive's goroutine (archive.go)
}

func newJobs() *jobs {
	return &jobs{cancel: map[string]context.CancelFunc{}, results: map[string]Event{}, archive: &archiveJob{}}
}

// jobDone is the end of a dump, a restore or a settling, sent by its
// goroutine; result is nil when a settling could not tell.
type jobDone struct {
	uid    string
	result Event
}

// pending are the results not yet recorded, for Decide.
func (j *jobs) pending() map[string]Event {
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.results) == 0 {
		return nil
	}
	out := make(map[string]Event, len(j.results))
	for k, v := range j.results {
		out[k] = v
	}
	return out
}

// tendBackups starts a goroutine for every backup the state shows running
// that none runs and no result waits for: the dump of those whose start was
// just recorded (fresh), a settling from the store for the others (the
// operator restarted while they ran). A backup whose MgorsBackup is not
// observed waits: Decide fails it once the observation shows it deleted.
func (c *cluster) tendBackups(ctx actor.Context, fresh map[string]bool) {
	bw, ok := c.deps.World.(BackupWorld)
	if !ok || c.lastObs == nil {
		return
	}
	j := c.jobs
	for _, r := range c.state.Backups {
		if !r.Running() {
			continue
		}
		b := observedBackup(c.lastObs.Backups, r.UID)
		j.mu.Lock()
		_, running := j.cancel[r.UID]
		_, ended := j.results[r.UID]
		if running || ended || b == nil {
			j.mu.Unlock()
			continue
		}
		deadline, what := settleDeadline, "settling"
		if fresh[r.UID] {
			deadline, what = backupDeadline, "dump"
		}
		bctx, cancel := context.WithTimeout(context.Background(), deadline)
		j.cancel[r.UID] = cancel
		j.mu.Unlock()
		m, b, run, auth, log := c.subject(), b.DeepCopy(), r.BackupStarted, c.state.Auth, c.log
		log.Info().Str("backup", run.Backup).Str("member", run.Member).Str("step", what).Msg("backup goroutine started")
		async(ctx, func() any {
			defer cancel()
			if what == "dump" {
				return jobDone{uid: run.UID, result: bw.Backup(bctx, m, b, run, auth)}
			}
			res, err := bw.SettleBackup(bctx, m, b, run)
			if err != nil {
				log.Warn().Err(err).Str("backup", run.Backup).Msg("settling a backup from its store failed; trying again at the next observation")
			}
			return jobDone{uid: run.UID, result: res}
		}, func(err error) any {
			return jobDone{uid: run.UID, result: BackupFailed{Backup: run.Backup, UID: run.UID, Reason: err.Error()}}
		})
	}
}

// onJobDone keeps a job's result until Decide records it.
func (c *cluster) onJobDone(ctx actor.Context, msg jobDone) {
	j := c.jobs
	j.mu.Lock()
	delete(j.cancel, msg.uid)
	if msg.result != nil && c.state.running(msg.uid) {
		j.results[msg.uid] = msg.result
	}
	j.mu.Unlock()
	c.observe(ctx)
}

// jobsRecorded forgets the results the records hold, cancels the jobs that
// failed (deleted while they ran), and starts those whose start was
// recorded.
func (c *cluster) jobsRecorded(ctx actor.Context, events []Event) {
	fresh := map[string]bool{}
	j := c.jobs
	j.mu.Lock()
	for _, e := range events {
		switch e := e.(type) {
		case BackupStarted:
			fresh[e.UID] = true
		case RestoreStarted:
			fresh[e.UID] = true
		case BackupCompleted:
			delete(j.results, e.UID)
		case RestoreCompleted:
			delete(j.results, e.UID)
		case BackupFailed:
			j.end(e.UID)
		case RestoreFailed:
			j.end(e.UID)
		}
	}
	j.mu.Unlock()
	c.archiveRecorded(ctx, events)
	c.tendJobs(ctx, fresh)
}

// end forgets uid's result and cancels its goroutine, if any (it failed:
// deleted while it ran). j.mu is held.
func (j *jobs) end(uid string) {
	delete(j.results, uid)
	if cancel, ok := j.cancel[uid]; ok {
		cancel()
	}
}

// tendJobs starts or settles the backups and restores the state shows
// running (tendBackups, tendRestores).
func (c *cluster) tendJobs(ctx actor.Context, fresh map[string]bool) {
	c.tendBackups(ctx, fresh)
	c.tendRestores(ctx, fresh)
}

// writeStatuses writes, with write, the status want names for each of objs
// (MgorsBackups or MgorsRestores) that has one; from the status writer's
// goroutine. The first error is returned, every write tried.
func writeStatuses[O interface{ GetName() string }, S any](ctx context.Context, objs []O, want map[string]S,
	write func(context.Context, O, S) error) error {
	var firstErr error
	for _, o := range objs {
		st, ok := want[o.GetName()]
		if !ok {
			continue
		}
		if err := write(ctx, o, st); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	return firstErr
}

// stop cancels every job: the actor stops for good (its Mgors deleted, or
// given to another replica, which settles them).
func (j *jobs) stop() {
	j.archive.stop()
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, cancel := range j.cancel {
		cancel()
	}
}

// completed is the record of a backup whose manifest man was written.
func completed(run BackupStarted, man *backup.Manifest) BackupCompleted {
	return BackupCompleted{Backup: run.Backup, UID: run.UID, Member: man.Member, SizeBytes: man.Size,
		Collections: len(man.Collections), Entries: man.Oplog.Entries, Started: man.Started, Finished: man.Finished,
		Start: man.Start, End: man.End}
}

// announceBackup tells a backup's start and end on its MgorsBackup too.
func (c *cluster) announceBackup(e Event) {
	bw, ok := c.deps.World.(BackupWorld)
	reason, message, warning, told := backupAnnouncement(e)
	if !ok || !told || c.lastObs == nil {
		return
	}
	if b := observedBackup(c.lastObs.Backups, jobUID(e)); b != nil {
		bw.BackupEvent(b, warning, reason, message)
	}
}

// jobUID is the UID of the MgorsBackup or MgorsRestore a backup or restore
// event is about, "" for any other event.
func jobUID(e Event) string {
	switch e := e.(type) {
	case BackupStarted:
		return e.UID
	case BackupCompleted:
		return e.UID
	case BackupFailed:
		return e.UID
	case RestoreStarted:
		return e.UID
	case RestoreCompleted:
		return e.UID
	case RestoreFailed:
		return e.UID
	}
	return ""
}
