package scale

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/mgors/operator/actors"
	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
	"github.com/mgors/operator/watch"
)

// BaselineRequeue is how often the baseline reconciles a cluster nothing
// changed: the peers' habit.
const BaselineRequeue = 5 * time.Second

// RunBaseline runs the baseline on env: a controller-runtime reconciler the
// way the peer operators are built (a workqueue with the default single
// worker, the Mgors read through the manager's cache, Pods and StatefulSets
// of the clusters watched and mapped to their Mgors, a requeue every 5 s),
// calling the same World, deciding with the same pure actors.Decide and
// appending the same events to the same store. What it leaves out: the
// actors' Kubernetes Events (announce) and snapshots. It returns when ctx
// ends.
func RunBaseline(ctx context.Context, env *Env) error {
	log.SetLogger(logr.Discard())
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	owned := cache.ByObject{Label: labels.SelectorFromSet(labels.Set{kube.LabelManagedBy: kube.ManagedBy})}
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 scheme,
		Logger:                 logr.Discard(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache: cache.Options{
			DefaultNamespaces: map[string]cache.Config{env.Namespace: {}},
			ByObject:          map[crclient.Object]cache.ByObject{&corev1.Pod{}: owned, &appsv1.StatefulSet{}: owned},
		},
	})
	if err != nil {
		return fmt.Errorf("baseline manager: %w", err)
	}
	r := &baseline{cache: mgr.GetClient(), env: env, states: map[types.UID]actors.State{}}
	toMgors := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o crclient.Object) []reconcile.Request {
		if name := watch.Cluster(o); name != "" {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
		}
		return nil
	})
	err = ctrl.NewControllerManagedBy(mgr).Named("mgors-baseline").
		For(&v1alpha1.Mgors{}).
		Owns(&appsv1.StatefulSet{}).
		Watches(&corev1.Pod{}, toMgors).
		Complete(r)
	if err != nil {
		return fmt.Errorf("baseline controller: %w", err)
	}
	// The World reads the operator's shared informers (kube.Informers), as
	// it does under the actors: start them beside controller-runtime's cache.
	defer env.Informers.Shutdown()
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	env.Informers.Start(ctx)
	if err := env.Informers.WaitForSync(ctx); err != nil {
		return fmt.Errorf("baseline informers: %w", err)
	}
	return mgr.Start(ctx)
}

// baseline is the reconciler. Its state per cluster is the fold of the
// events it appended (kept in memory, as the actors keep theirs).
type baseline struct {
	cache crclient.Client
	env   *Env

	mu     sync.Mutex
	states map[types.UID]actors.State
}

// Reconcile is one pass: read the Mgors from the cache, observe through the
// World, decide, append, carry out the action and append its result, write
// the status, and come back in 5 s.
func (b *baseline) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	m := &v1alpha1.Mgors{}
	if err := b.cache.Get(ctx, req.NamespacedName, m); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	b.mu.Lock()
	st, ok := b.states[m.UID]
	b.mu.Unlock()
	if !ok {
		st = actors.Initial()
	}
	stream := eventlog.Stream{Namespace: m.Namespace, Name: m.Name, UID: string(m.UID)}
	desired := mongo.Desired(m, clusterDomain)
	octx, cancel := context.WithTimeout(ctx, 20*time.Second)
	start := time.Now()
	obs, err := b.env.World.Observe(octx, m, desired, st.Auth)
	b.env.Observations.Add(time.Since(start))
	cancel()
	if err != nil { // as the actor does: a failed observation is looked at again later
		return reconcile.Result{RequeueAfter: BaselineRequeue}, nil //nolint:nilerr // controller-runtime would back off on an error
	}
	d := actors.Decide(st, actors.Inputs{Mgors: m, Desired: desired, Obs: obs, Now: time.Now()})
	if st, err = b.persist(ctx, stream, st, d.Events, "observation"); err != nil {
		return reconcile.Result{}, err
	}
	if d.Action != nil {
		actx, cancel := context.WithTimeout(ctx, 60*time.Second)
		aerr := b.env.World.Act(actx, m, *d.Action)
		cancel()
		if st, err = b.persist(ctx, stream, st, actors.Conclude(*d.Action, aerr), "result of "+string(d.Action.Kind)); err != nil {
			return reconcile.Result{}, err
		}
	}
	b.mu.Lock()
	b.states[m.UID] = st
	b.mu.Unlock()
	sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	_ = b.env.World.WriteStatus(sctx, m, actors.StatusFor(st, obs, m, b.env.Store.Name(), clusterDomain))
	cancel()
	return reconcile.Result{RequeueAfter: BaselineRequeue}, nil
}

// persist appends events after st and returns st with them folded in.
func (b *baseline) persist(ctx context.Context, s eventlog.Stream, st actors.State, events []actors.Event, cause string) (actors.State, error) {
	if len(events) == 0 {
		return st, nil
	}
	now := time.Now()
	recs := make([]eventlog.Record, 0, len(events))
	for i, e := range events {
		r, err := actors.Encode(s, st.Seq+int64(i)+1, now, cause, "bench-baseline", e)
		if err != nil {
			return st, err
		}
		recs = append(recs, r)
	}
	pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := b.env.Store.Append(pctx, s, recs...); err != nil {
		return st, err
	}
	for i, r := range recs {
		st = actors.Evolve(st, r.Seq, r.Time, events[i])
	}
	return st, nil
}
