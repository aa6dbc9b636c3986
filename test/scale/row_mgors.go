package scale

import (
	"context"
	"log/slog"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/mgors/operator/actors"
	"github.com/mgors/operator/watch"
)

// RunMgors runs the operator's own pieces on env as cmd/mgors-operator's
// lead() wires them (one replica, no Lease, the flags' defaults): the watch
// dispatcher feeding the actors' Manager, one actor per Mgors. It returns
// when ctx ends and the actors stopped.
func RunMgors(ctx context.Context, env *Env) error {
	deps := &actors.Deps{
		Store: env.Store, World: env.World, Log: env.Log, Writer: "bench-scale", ClusterDomain: clusterDomain,
		Interval: time.Minute, ObserveTimeout: 20 * time.Second, ActTimeout: 60 * time.Second, SnapshotEvery: 100,
		Metrics: env.Observations,
	}
	if env.Config != nil {
		deps.Gate = actors.NewGate(int(env.Config.QPS)) // as cmd/mgors-operator: one slot per request a second
	}
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(zerolog.NewSlogHandler(env.Log.With().Str("component", "protoactor").Logger().Level(zerolog.WarnLevel)))
	}))
	mgr, err := system.Root.SpawnNamed(actors.NewManagerProps(deps), "manager")
	if err != nil {
		return err
	}
	d := &watch.Dispatcher{Informers: env.Informers, Namespace: env.Namespace, Log: env.Log,
		Send: func(msg any) { system.Root.Send(mgr, msg) }}
	err = d.Run(ctx, 2*time.Minute)
	_ = system.Root.PoisonFuture(mgr).Wait()
	return err
}
