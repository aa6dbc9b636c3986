package actors

import (
	"context"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/mgors/operator/actors/eventlog"
)

// One owner at a time (docs/design/sharding.md). A Mgors leaves a live
// replica only through the drain handshake: ClusterDrain lets its actor
// finish the step under way and stop, then the Manager tells Deps.Released,
// which gives the Mgors back (manager.go). What the handshake cannot cover (a
// replica paused past its Lease, whose Mgors were moved without it) the
// Lease check and the event log fence here.
//
// The event log is the fence between owners. An
// append that does not continue the log (ErrSequence) means the actor's view
// is stale. When the records past its view are its own (an append that timed
// out but was committed), a restart reloads them and carries on, as before.
// When another writer wrote them, a second owner exists and this one is the
// stale one: the actor stops for good and tells its Manager (Fenced), instead
// of restarting into a fight with the new owner that would never end.

// Fenced is sent by a Cluster actor to its Manager when it stopped for good:
// another writer wrote its event log, or this replica's Lease (Deps.Lease) no
// longer allows it to write.
type Fenced struct {
	Namespace, Name, UID string
	// By names the other writer, or says why the actor may not write.
	By string
}

// OtherWriter returns who, other than self, wrote the log past seq (the last
// record the actor knows), or "" when every record past seq is self's. snap
// and recs are what the store loads now; a snapshot past seq can only be
// another writer's (an actor snapshots its own state, never beyond it).
func OtherWriter(self string, seq int64, snap *eventlog.Snapshot, recs []eventlog.Record) string {
	if snap != nil && snap.Seq > seq {
		return fmt.Sprintf("the writer of the snapshot at seq %d", snap.Seq)
	}
	for _, r := range recs {
		if r.Seq > seq && r.Writer != self {
			return r.Writer
		}
	}
	return ""
}

// mayWrite asks the Lease whether this replica may still write.
func (d *Deps) mayWrite() error {
	if d.Lease == nil {
		return nil
	}
	if err := d.Lease(); err != nil {
		return fmt.Errorf("this replica's Lease: %w", err)
	}
	return nil
}

// otherWriter loads the stream after an ErrSequence and names the other
// writer past seq; "" when there is none or the log cannot be read (then the
// actor restarts, as for any failure, and reloads).
func (d *Deps) otherWriter(stream eventlog.Stream, seq int64) string {
	ctx, cancel := context.WithTimeout(context.Background(), d.ObserveTimeout)
	defer cancel()
	snap, recs, err := d.Store.Load(ctx, stream)
	if err != nil {
		return ""
	}
	return OtherWriter(d.Writer, seq, snap, recs)
}

// fence stops the actor for good: nothing more is observed, appended or
// carried out by it, and its Manager is told (Fenced). An action whose
// ActionStarted is in the log without a result is settled by the next owner,
// as after a crash.
func (c *cluster) fence(ctx actor.Context, by string) {
	c.ready = false
	if c.stopTimer != nil {
		c.stopTimer()
		c.stopTimer = nil
	}
	c.log.Error().Str("writer", by).Int64("seq", c.state.Seq).Msg("fenced (another writer in the event log, or this replica's Lease): the actor stops for good")
	ctx.Send(ctx.Parent(), Fenced{Namespace: c.stream.Namespace, Name: c.stream.Name, UID: c.stream.UID, By: by})
	ctx.Stop(ctx.Self())
}
