package actors

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
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

// Permanent marks a failure that restarting cannot fix; the supervisor stops
// the actor instead of restarting it.
type Permanent struct{ Err error }

func (p Permanent) Error() string { return "permanent: " + p.Err.Error() }
func (p Permanent) Unwrap() error { return p.Err }

// manager spawns, feeds and stops one Cluster actor per Mgors incarnation.
type manager struct {
	deps     *Deps
	children map[string]child // by namespace/name
}

type child struct {
	uid string
	pid *actor.PID
}

// NewManagerProps returns the props of the Manager, supervising its Cluster
// actors with Supervision.
func NewManagerProps(deps *Deps) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor {
		return &manager{deps: deps, children: map[string]child{}}
	}, actor.WithSupervisor(NewSupervision(deps.Log, time.Second, 2*time.Minute)))
}

// childName names a Cluster actor by namespace, name and UID, so a re-created
// Mgors is a new actor with a new log stream, never its predecessor's.
func childName(ns, name, uid string) string { return fmt.Sprintf("cluster:%s:%s:%s", ns, name, uid) }

// Receive handles the watch's messages.
func (m *manager) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case ClusterChanged:
		o := msg.Mgors
		key := o.Namespace + "/" + o.Name
		c, ok := m.children[key]
		if ok && c.uid != string(o.UID) {
			ctx.Poison(c.pid) // the old incarnation is gone; this is a new cluster
			ok = false
		}
		if !ok {
			pid, err := ctx.SpawnNamed(NewClusterProps(m.deps, o), childName(o.Namespace, o.Name, string(o.UID)))
			if err != nil {
				m.deps.Log.Error().Err(err).Str("cluster", key).Msg("spawning the cluster actor failed")
				return
			}
			c = child{uid: string(o.UID), pid: pid}
			m.children[key] = c
		}
		ctx.Send(c.pid, Update{Mgors: o})
	case ClusterDeleted:
		key := msg.Namespace + "/" + msg.Name
		if c, ok := m.children[key]; ok && (msg.UID == "" || msg.UID == c.uid) {
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

// supervision restarts a failed Cluster actor after an exponential back-off
// (initial, doubling, capped, with jitter; the count resets after a quiet
// window), and stops it when the failure is Permanent. A restart rebuilds the
// actor from its event log and observes before acting.
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

// HandleFailure decides, per failure, between a delayed restart and a stop.
func (s *supervision) HandleFailure(_ *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, _ *actor.RestartStatistics, reason interface{}, _ interface{}) {
	err, _ := reason.(error)
	if err == nil {
		err = fmt.Errorf("%v", reason)
	}
	var perm Permanent
	if errors.As(err, &perm) {
		s.log.Error().Err(err).Str("actor", child.Id).Msg("cluster actor failed permanently; stopped")
		sup.StopChildren(child)
		return
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
