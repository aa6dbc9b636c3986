package actors

import (
	"context"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// RestoreWorld is what a World does for restores (KubeWorld). A World
// without it restores nothing: the restores it is shown stay Pending.
type RestoreWorld interface {
	// Restore restores b into m's primary as run says, and returns
	// RestoreCompleted or RestoreFailed. ctx bounds the whole restore.
	Restore(ctx context.Context, m *v1alpha1.Mgors, b *v1alpha1.MgorsBackup, run RestoreStarted) Event
	// WriteRestoreStatus writes the status of r when it differs.
	WriteRestoreStatus(ctx context.Context, r *v1alpha1.MgorsRestore, st v1alpha1.MgorsRestoreStatus) error
	// RestoreEvent records a Kubernetes Event on r.
	RestoreEvent(r *v1alpha1.MgorsRestore, warning bool, reason, message string)
}

// restoreDeadline bounds one restore.
const restoreDeadline = 12 * time.Hour

// tendRestores starts the restore of every run the state shows running that
// no goroutine runs and no result waits for, when its start was just
// recorded (fresh). Any other such run was under way when the operator
// stopped: it fails, for what it left cannot be told apart from what it
// would have written.
func (c *cluster) tendRestores(ctx actor.Context, fresh map[string]bool) {
	rw, ok := c.deps.World.(RestoreWorld)
	if !ok || c.lastObs == nil {
		return
	}
	j := c.jobs
	for _, r := range c.state.Restores {
		if !r.Running() {
			continue
		}
		j.mu.Lock()
		_, running := j.cancel[r.UID]
		_, ended := j.results[r.UID]
		if running || ended {
			j.mu.Unlock()
			continue
		}
		b := c.lastObs.RestoreBackups[r.Backup]
		if !fresh[r.UID] || b == nil {
			reason := "the operator stopped while the restore ran; the cluster holds part of it: create another MgorsRestore"
			if b == nil {
				reason = "the MgorsBackup " + r.Backup + " is gone"
			}
			j.results[r.UID] = RestoreFailed{Restore: r.Restore, UID: r.UID, Reason: reason}
			j.mu.Unlock()
			continue
		}
		rctx, cancel := context.WithTimeout(context.Background(), restoreDeadline)
		j.cancel[r.UID] = cancel
		j.mu.Unlock()
		m, b, run := c.subject(), b.DeepCopy(), r.RestoreStarted
		c.log.Info().Str("restore", run.Restore).Str("backup", run.Backup).Str("member", run.Member).Msg("restore goroutine started")
		async(ctx, func() any {
			defer cancel()
			return jobDone{uid: run.UID, result: rw.Restore(rctx, m, b, run)}
		}, func(err error) any {
			return jobDone{uid: run.UID, result: RestoreFailed{Restore: run.Restore, UID: run.UID, Reason: err.Error()}}
		})
	}
}

// announceRestore tells a restore's start and end on its MgorsRestore too.
func (c *cluster) announceRestore(e Event) {
	rw, ok := c.deps.World.(RestoreWorld)
	reason, message, warning, told := restoreAnnouncement(e)
	if !ok || !told || c.lastObs == nil {
		return
	}
	if r := observedRestore(c.lastObs.Restores, jobUID(e)); r != nil {
		rw.RestoreEvent(r, warning, reason, message)
	}
}
