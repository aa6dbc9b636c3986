package actors

import (
	"fmt"
	"math/rand/v2"
	"sync"
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
)

// manager spawns, feeds and stops one Cluster actor per Mgors incarnation.
type manager struct {
	deps     *Deps
	children map[string]child // by namespace/name
	// unspawned are the Mgors whose actor failed to spawn, by namespace/name:
	// the newest object seen and the failures so far, for the retry.
	unspawned map[string]unspawned
}

type unspawned struct {
	mgors    *v1alpha1.Mgors
	failures int
}

// respawn is the retry of a failed spawn, sent by the Manager to itself.
type respawn struct{ key string }

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
		return &manager{deps: deps, children: map[string]child{}, unspawned: map[string]unspawned{}}
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
		if u, ok := m.unspawned[msg.key]; ok {
			m.changed(ctx, u.mgors)
		}
	case ClusterDeleted:
		key := msg.Namespace + "/" + msg.Name
		delete(m.unspawned, key)
		if c, ok := m.children[key]; ok && (msg.UID == "" || msg.UID == c.uid) {
			ctx.Send(c.pid, msg) // before the poison pill: its Secrets are released
			ctx.Poison(c.pid)
			delete(m.children, key)
			m.deps.Log.Info().Str("cluster", key).Str("uid", c.uid).Msg("Mgors deleted: its actor stops")
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
	case *actor.Terminated:
		for k, c := range m.children {
			if c.pid.Equal(msg.Who) {
				delete(m.children, k)
			}
		}
	}
}

// changed feeds a Mgors to its actor, spawning it first when there is none
// (or the one there serves an older incarnation). A failed spawn (the name
// still held by a stopping predecessor) is retried with back-off.
func (m *manager) changed(ctx actor.Context, o *v1alpha1.Mgors) {
	key := o.Namespace + "/" + o.Name
	c, ok := m.children[key]
	if ok && c.uid != string(o.UID) {
		ctx.Poison(c.pid) // the old incarnation is gone; this is a new cluster
		ok = false
	}
	if !ok {
		pid, err := ctx.SpawnNamed(NewClusterProps(m.deps, o), childName(o.Namespace, o.Name, string(o.UID)))
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
	ctx.Send(c.pid, Update{Mgors: o})
}

// supervision restarts a failed Cluster actor after an exponential back-off
// (initial, doubling, capped, with jitter; the count resets after a quiet
// window). A restart rebuilds the actor from its event log and observes before
// acting. Nothing stops a Cluster actor for good: every failure it knows
// (a log that cannot be loaded, a conflicting writer, a panic) may pass.
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
