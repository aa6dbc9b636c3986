package actors

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
)

// statusWriter orders the status writes of a cluster, which run off the
// mailbox: each write is numbered when the actor computes it, and one
// overtaken by a newer one is dropped, so a slow old write never overwrites
// a newer status (it would stay until the next change, which a quiet Healthy
// cluster may not have for a minute), and a status that a newer one replaces
// before it got its turn (the Gate, the write before it) is never sent.
type statusWriter struct {
	next atomic.Uint64 // the number of the last status computed (the actor's: never waits for mu)
	mu   sync.Mutex    // held during a write: writes never overlap
}

// number numbers a status as it is computed, in the actor.
func (w *statusWriter) number() uint64 { return w.next.Add(1) }

// writeStatus writes, off the mailbox, the Mgors status computed from the
// state and the last observation, then the statuses of its MgorsBackups and
// MgorsRestores that differ.
func (c *cluster) writeStatus(ctx actor.Context) {
	if c.lastObs == nil {
		return
	}
	st := StatusFor(c.state, *c.lastObs, c.mgors, c.deps.Store.Name(), c.deps.ClusterDomain)
	backups, restores := c.lastObs.Backups, c.lastObs.Restores
	wantBackups, wantRestores := BackupStatuses(c.state, backups, ArchiveCoverFor(c.state, *c.lastObs, c.mgors)), RestoreStatuses(c.state, *c.lastObs)
	bw, _ := c.deps.World.(BackupWorld)
	rw, _ := c.deps.World.(RestoreWorld)
	deps, m, log, w, n := c.deps, c.mgors.DeepCopy(), c.log, c.status, c.status.number()
	go func() {
		defer recoverIn(log, "writing status")
		w.mu.Lock() // before the Gate: a slot is never held waiting for mu
		defer w.mu.Unlock()
		defer deps.Gate.enter()()
		if n < w.next.Load() {
			return // a newer status is computed, and is written after this one
		}
		if deps.mayWrite() != nil {
			return // the fence stops the actor at its next append or action
		}
		sctx, cancel := context.WithTimeout(context.Background(), deps.ObserveTimeout)
		defer cancel()
		if err := deps.World.WriteStatus(sctx, m, st); err != nil {
			log.Warn().Err(err).Msg("writing status failed; it is written again after the next change")
		}
		if bw != nil && len(wantBackups) > 0 {
			if err := writeStatuses(sctx, backups, wantBackups, bw.WriteBackupStatus); err != nil {
				log.Warn().Err(err).Msg("writing a backup's status failed; it is written again after the next change")
			}
		}
		if rw != nil && len(wantRestores) > 0 {
			if err := writeStatuses(sctx, restores, wantRestores, rw.WriteRestoreStatus); err != nil {
				log.Warn().Err(err).Msg("writing a restore's status failed; it is written again after the next change")
			}
		}
	}()
}
