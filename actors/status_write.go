package actors

import (
	"context"
	"sync"

	"github.com/asynkron/protoactor-go/actor"
)

// statusWriter orders the status writes of a cluster, which run off the
// mailbox: each write is numbered when the actor computes it, and one
// started after a newer one is dropped, so a slow old write never
// overwrites a newer status (it would stay until the next change, which a
// quiet Healthy cluster may not have for a minute).
type statusWriter struct {
	mu      sync.Mutex // held during a write: writes never overlap
	next    uint64     // the number of the last status computed
	written uint64     // the number of the last status sent
}

// number numbers a status as it is computed, in the actor.
func (w *statusWriter) number() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.next++
	return w.next
}

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
		w.mu.Lock()
		defer w.mu.Unlock()
		if n < w.written {
			return // a newer status was sent already
		}
		w.written = n
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
