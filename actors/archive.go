package actors

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo/backup"
)

// ArchiveWorld is what a World does for the oplog archive (KubeWorld). A
// World without it archives nothing.
type ArchiveWorld interface {
	// Archive archives the oplog of run.Member into m's spec.backup.store
	// under run.Prefix, after run.From, or after the store's newest chunk
	// when that is later (backup.Archiver.Resume), every
	// spec.backup.pointInTime.chunkSeconds, authenticated as auth. It calls
	// progress with the archive's last entry once the store was read and
	// after each pass, and returns when ctx ends or a pass fails: the
	// error (backup.ErrWindowLost and backup.ErrDiverged: the archive cannot
	// continue from there).
	Archive(ctx context.Context, m *v1alpha1.Mgors, run ArchiveStarted, auth Auth, progress func(backup.Position)) error
}

// archiveJob is the cluster's archive goroutine in this process and its
// progress. Like jobs it is shared by the actor's incarnations: a
// supervisor restart keeps the goroutine; an actor that stops for good,
// or spec.backup.pointInTime disabled or moved to another store, cancels it.
type archiveJob struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	run    uint64 // numbers the runs: an old run's report is dropped
	p      ArchiveProgress
}

// stop cancels the goroutine, if one runs.
func (a *archiveJob) stop() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stopLocked()
}

func (a *archiveJob) stopLocked() {
	if a.cancel != nil {
		a.cancel()
		a.cancel = nil
	}
	a.run++
	a.p.Running = false
}

// publish records the archive's last entry of run n.
func (a *archiveJob) publish(n uint64, last backup.Position) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if n == a.run {
		a.p.Last, a.p.Failures, a.p.Error = last, 0, ""
	}
}

// ended records the end of run n: cancelled, lost for good, or failed
// (then started again after a back-off).
func (a *archiveJob) ended(n uint64, err error, now func() time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if n != a.run {
		return // cancelled: a newer run, or none, replaced it
	}
	a.cancel, a.p.Running = nil, false
	switch {
	case err == nil || errors.Is(err, context.Canceled):
	case errors.Is(err, backup.ErrWindowLost) || errors.Is(err, backup.ErrDiverged):
		a.p.Lost = err.Error()
	default:
		a.p.Failures++
		a.p.EndedAt, a.p.Error = now(), err.Error()
	}
}

// tendArchive cancels the archive goroutine when the spec no longer asks
// for it where it writes, and puts its progress in the observation.
func (c *cluster) tendArchive(obs *Observation) {
	a := c.jobs.archive
	_, able := c.deps.World.(ArchiveWorld)
	a.mu.Lock()
	defer a.mu.Unlock()
	if spec := pointInTime(c.mgors); a.p.Running && (spec == nil || storeKey(spec.Store) != a.p.Store) {
		c.log.Info().Msg("oplog archive cancelled: spec.backup.pointInTime is disabled or names another store")
		a.stopLocked()
	}
	obs.Archive = a.p
	obs.Archive.Able = able
}

// archiveRecorded starts the goroutine an ArchiveStarted asks for, and
// forgets the loss an ArchiveStopped recorded.
func (c *cluster) archiveRecorded(ctx actor.Context, events []Event) {
	aw, ok := c.deps.World.(ArchiveWorld)
	spec := pointInTime(c.mgors)
	if !ok {
		return
	}
	a := c.jobs.archive
	for _, e := range events {
		switch e := e.(type) {
		case ArchiveStopped:
			a.mu.Lock()
			a.p.Lost = ""
			a.mu.Unlock()
		case ArchiveStarted:
			if spec == nil {
				continue
			}
			a.mu.Lock()
			a.stopLocked()
			actx, cancel := context.WithCancel(context.Background())
			key := storeKey(spec.Store)
			if a.p.Store != key {
				a.p.Last = backup.Position{}
			}
			n := a.run
			a.cancel = cancel
			a.p.Running, a.p.Store, a.p.From, a.p.Lost = true, key, e.From, ""
			a.mu.Unlock()
			m, run, auth, log, now := c.subject(), e, c.state.Auth, c.log, c.deps.now
			log.Info().Str("member", run.Member).Str("from", run.From.String()).Str("archive", run.Prefix).Msg("oplog archive goroutine started")
			async(ctx, func() any {
				defer cancel()
				err := aw.Archive(actx, m, run, auth, func(p backup.Position) { a.publish(n, p) })
				if actx.Err() != nil {
					err = context.Canceled
				} else if err != nil {
					log.Warn().Err(err).Str("member", run.Member).Msg("oplog archive run ended")
				}
				a.ended(n, err, now)
				return Poke{Reason: "oplog archive ended"}
			}, func(err error) any {
				a.ended(n, err, now)
				return Poke{Reason: "oplog archive ended"}
			})
		}
	}
}
