package actors

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/scheduler"
	"github.com/rs/zerolog"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// Messages the Manager receives from the watch dispatcher.
type (
	// ClusterChanged: a Mgors was added or modified (a re-list ADD included).
	ClusterChanged struct{ Mgors *v1alpha1.Mgors }
	// ClusterDeleted: a Mgors is gone.
	ClusterDeleted struct{ Namespace, Name, UID string }
	// OwnedChanged: a Pod, StatefulSet or PVC of a cluster changed.
	OwnedChanged struct{ Namespace, Cluster, What string }
	// Clusters asks the Manager for the clusters it runs (for health and tests).
	Clusters struct{}
	// ClusterDrain: this replica is asked to give a Mgors back (the drain
	// handshake, docs/design/sharding.md): its actor finishes the step under
	// way and stops, then Deps.Released acknowledges.
	ClusterDrain struct{ Namespace, Name, UID string }
)

// manager spawns, feeds and stops one Cluster actor per Mgors incarnation.
type manager struct {
	deps     *Deps
	children map[string]child // by namespace/name
	// unspawned are the Mgors whose actor failed to spawn, by namespace/name:
	// the newest object seen and the failures so far, for the retry.
	unspawned map[string]unspawned
	// fenced are the incarnations (uid by namespace/name) whose actor stopped
	// for good (Fenced): not respawned here until the Mgors leaves this Manager
	// (ClusterDeleted, also sent when it moves to another replica) or, without
	// sharding (no Deps.Fenced), after Deps.FenceRespawn.
	fenced map[string]string
	// draining are the incarnations (uid by namespace/name) being given back:
	// not respawned until the Mgors leaves this Manager (ClusterDeleted).
	draining map[string]string
	// seen is the newest Mgors sent to each running actor, by namespace/name,
	// for a respawn after a fence.
	seen map[string]*v1alpha1.Mgors
}

type unspawned struct {
	mgors    *v1alpha1.Mgors
	failures int
}

// respawn is the retry of a failed spawn, or the end of a fence's wait,
// sent by the Manager to itself.
type respawn struct {
	key string
	// fenced is the fenced incarnation's uid whose wait ended ("": a spawn retry).
	fenced string
}

// defaultFenceRespawn is how long, without sharding, a fenced cluster waits
// before its actor is spawned again: twice the leader Lease, so the deposed
// leader that fenced it has stopped (it stops leading within its renew
// deadline, before the Lease can even expire).
const defaultFenceRespawn = 30 * time.Second

// spawnRetry is the delay before the nth retry of a failed spawn: 1 s
// doubling to a minute.
func spawnRetry(n int) time.Duration { return min(time.Second<<min(max(n-1, 0), 6), time.Minute) }

type child struct {
	uid string
	pid *actor.PID
}

// NewManagerProps returns the props of the Manager, supervising its Cluster
// actors with Supervision.
func NewManagerProps(deps *Deps) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor {
		return &manager{deps: deps, children: map[string]child{}, unspawned: map[string]unspawned{}, fenced: map[string]string{}, draining: map[string]string{}, seen: map[string]*v1alpha1.Mgors{}}
	}, actor.WithSupervisor(NewSupervision(deps.Log, time.Second, 2*time.Minute)))
}

// childName names a Cluster actor by namespace, name and UID, so a re-created
// Mgors is a new actor with a new log stream, never its predecessor's.
func childName(ns, name, uid string) string { return fmt.Sprintf("cluster:%s:%s:%s", ns, name, uid) }

// Receive handles the watch's messages.
func (m *manager) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case ClusterChanged:
		m.changed(ctx, msg.Mgors)
	case respawn:
		if msg.fenced != "" {
			if m.fenced[msg.key] != msg.fenced {
				return // it left (and maybe came back) meanwhile
			}
			delete(m.fenced, msg.key)
		}
		if u, ok := m.unspawned[msg.key]; ok {
			m.changed(ctx, u.mgors)
		}
	case ClusterDeleted:
		key := msg.Namespace + "/" + msg.Name
		delete(m.unspawned, key)
		delete(m.fenced, key)
		delete(m.draining, key)
		delete(m.seen, key)
		if c, ok := m.children[key]; ok && (msg.UID == "" || msg.UID == c.uid) {
			ctx.Send(c.pid, msg) // before the poison pill: its Secrets are released
			ctx.Poison(c.pid)
			delete(m.children, key)
			m.deps.Log.Info().Str("cluster", key).Str("uid", c.uid).Msg("Mgors deleted: its actor stops")
		}
	case Fenced:
		key := msg.Namespace + "/" + msg.Name
		if c, ok := m.children[key]; ok && c.uid == msg.UID {
			delete(m.children, key) // (its Terminated may come first)
		}
		m.fenced[key] = msg.UID
		m.deps.Log.Warn().Str("cluster", key).Str("uid", msg.UID).Str("writer", msg.By).Msg("cluster actor fenced: not respawned while this Mgors stays here")
		if m.deps.Fenced != nil {
			m.deps.Fenced(msg)
			return
		}
		// Without sharding the other writer is a deposed leader on its way
		// out: this replica runs the cluster again once it has gone.
		if o := m.seen[key]; o != nil && string(o.UID) == msg.UID {
			m.unspawned[key] = unspawned{mgors: o}
			wait := m.deps.FenceRespawn
			if wait <= 0 {
				wait = defaultFenceRespawn
			}
			scheduler.NewTimerScheduler(ctx).SendOnce(wait, ctx.Self(), respawn{key: key, fenced: msg.UID})
		}
	case OwnedChanged:
		if c, ok := m.children[msg.Namespace+"/"+msg.Cluster]; ok {
			ctx.Send(c.pid, Poke{Reason: msg.What})
		}
	case Clusters:
		out := map[string]string{}
		for k, c := range m.children {
			out[k] = c.uid
		}
		ctx.Respond(out)
	case ClusterDrain:
		m.drain(ctx, msg)
	case *actor.Terminated:
		for k, c := range m.children {
			if c.pid.Equal(msg.Who) {
				delete(m.children, k)
				if m.draining[k] == c.uid {
					m.released(k, c.uid)
				}
			}
		}
	}
}

// changed feeds a Mgors to its actor, spawning it first when there is none
// (or the one there serves an older incarnation). A failed spawn (the name
// still held by a stopping predecessor) is retried with back-off.
func (m *manager) changed(ctx actor.Context, o *v1alpha1.Mgors) {
	key := o.Namespace + "/" + o.Name
	if m.draining[key] == string(o.UID) {
		return // being given back: another replica runs it next
	}
	if uid, ok := m.fenced[key]; ok {
		if uid == string(o.UID) {
			if u, waiting := m.unspawned[key]; waiting {
				u.mgors = o // the respawn after the fence starts from the newest
				m.unspawned[key] = u
			}
			return
		}
		delete(m.fenced, key) // a new incarnation: a new log, no fence
	}
	c, ok := m.children[key]
	if ok && c.uid != string(o.UID) {
		ctx.Poison(c.pid) // the old incarnation is gone; this is a new cluster
		ok = false
	}
	if !ok {
		pid, err := ctx.SpawnNamed(NewClusterProps(m.writerTerm(), o), childName(o.Namespace, o.Name, string(o.UID)))
		if err != nil {
			// A retry that finds the actor spawned (or the Mgors deleted) does nothing.
			u := m.unspawned[key]
			u.mgors, u.failures = o, u.failures+1
			m.unspawned[key] = u
			m.deps.Log.Error().Err(err).Str("cluster", key).Int("failures", u.failures).Msg("spawning the cluster actor failed; retrying")
			scheduler.NewTimerScheduler(ctx).SendOnce(spawnRetry(u.failures), ctx.Self(), respawn{key: key})
			return
		}
		delete(m.unspawned, key)
		c = child{uid: string(o.UID), pid: pid}
		m.children[key] = c
	}
	m.seen[key] = o
	ctx.Send(c.pid, Update{Mgors: o})
}

// spawned numbers the Cluster actors spawned in this process (WriterTerms);
// a Manager restarted by its supervisor goes on counting, so no name returns.
var spawned atomic.Int64

// writerTerm is the Deps of a new actor: with WriterTerms, its own writer
// name, Writer#n, n numbering the actors this process spawned. A
// supervisor's restart of the actor keeps its props, so its name: it reloads
// the log and goes on as the same writer.
func (m *manager) writerTerm() *Deps {
	if !m.deps.WriterTerms {
		return m.deps
	}
	d := *m.deps
	d.Writer = fmt.Sprintf("%s#%d", m.deps.Writer, spawned.Add(1))
	return &d
}

// drain stops the cluster's actor after its current step; Terminated then
// acknowledges. Without an actor (never spawned, fenced, or already stopped:
// a repeated request) it acknowledges at once.
func (m *manager) drain(ctx actor.Context, msg ClusterDrain) {
	key := msg.Namespace + "/" + msg.Name
	delete(m.unspawned, key)
	m.draining[key] = msg.UID
	if c, ok := m.children[key]; ok && c.uid == msg.UID {
		ctx.Send(c.pid, drain{})
		return
	}
	m.released(key, msg.UID)
}

// released tells Deps.Released that the actor of key's incarnation uid stopped.
func (m *manager) released(key, uid string) {
	m.deps.Log.Info().Str("cluster", key).Str("uid", uid).Msg("cluster actor stopped for a move: giving the Mgors back")
	if m.deps.Released != nil {
		ns, name, _ := strings.Cut(key, "/")
		m.deps.Released(ns, name, uid)
	}
}

// supervision restarts a failed Cluster actor after an exponential back-off
// (initial, doubling, capped, with jitter; the count resets after a quiet
// window). A restart rebuilds the actor from its event log and observes before
// acting. Every failure it knows (a log that cannot be loaded, a panic) may
// pass; only a fence (another writer in its log, or a lost Lease) stops a
// Cluster actor for good, and that is the actor's own stop, not a failure.
type supervision struct {
	log     zerolog.Logger
	initial time.Duration
	max     time.Duration

	mu       sync.Mutex
	failures map[string]int
	last     map[string]time.Time
}

// NewSupervision returns the Cluster actors' supervisor strategy.
func NewSupervision(log zerolog.Logger, initial, maxBackoff time.Duration) actor.SupervisorStrategy {
	return &supervision{log: log, initial: initial, max: maxBackoff, failures: map[string]int{}, last: map[string]time.Time{}}
}

// HandleFailure restarts the failed child after its back-off.
func (s *supervision) HandleFailure(_ *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, _ *actor.RestartStatistics, reason interface{}, _ interface{}) {
	err, _ := reason.(error)
	if err == nil {
		err = fmt.Errorf("%v", reason)
	}
	s.mu.Lock()
	if time.Since(s.last[child.Id]) > 10*s.max {
		s.failures[child.Id] = 0
	}
	s.failures[child.Id]++
	s.last[child.Id] = time.Now()
	n := s.failures[child.Id]
	s.mu.Unlock()
	delay := min(s.initial<<min(n-1, 16), s.max)
	delay += time.Duration(rand.Int64N(int64(delay/4) + 1))
	s.log.Warn().Err(err).Str("actor", child.Id).Int("failures", n).Dur("backoff", delay).Msg("cluster actor failed; restarting from its event log")
	time.AfterFunc(delay, func() { sup.RestartChildren(child) })
}
