// Package watch turns changes of Mgors objects, and of the Pods, StatefulSets
// and PVCs they own, into messages to the actors' Manager. It never blocks an
// informer callback (sending to an actor is a non-blocking enqueue) and never
// decides anything: it only says what changed, addressed by namespace/name and UID.
package watch

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/mgors/operator/actors"
	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/kube/client"
	"github.com/mgors/operator/kube/shard"
)

// Sink receives the dispatcher's messages; the actor system's root context
// sending to the Manager's PID is one (a non-blocking enqueue).
type Sink func(msg any)

// Dispatcher runs the informers and forwards their events.
type Dispatcher struct {
	Mgors client.Interface
	Kube  kubernetes.Interface
	// Namespace limits the watch to one namespace; "" watches all.
	Namespace string
	// Resync is the informers' resync period (0: none; the actors observe on
	// their own timer anyway).
	Resync time.Duration
	Send   Sink
	Log    zerolog.Logger
	// Owner, when set (sharded mode, docs/design/sharding.md), is this
	// replica's identity: only the Mgors labelled as its own are watched, so
	// the cache holds only the owned clusters, and one asked to drain is sent
	// as ClusterDrain. A Mgors that leaves the selection (moved, or given
	// back) arrives as a delete.
	Owner string

	synced atomic.Bool
}

// Synced reports whether every informer cache has synced, for readiness.
func (d *Dispatcher) Synced() bool { return d.synced.Load() }

// Run starts the informers and blocks until ctx ends. It returns an error if
// the caches do not sync within syncTimeout.
func (d *Dispatcher) Run(ctx context.Context, syncTimeout time.Duration) error {
	// Wrapped as generated informers are, so a fake client that cannot stream
	// lists through watches says so to the reflector.
	mgorsInformer := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			d.selectOwned(&o)
			return d.Mgors.Mgorses(d.Namespace).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			d.selectOwned(&o)
			return d.Mgors.Mgorses(d.Namespace).Watch(ctx, o)
		},
	}, d.Mgors), &v1alpha1.Mgors{}, d.Resync, cache.Indexers{})
	if _, err := mgorsInformer.AddEventHandler(d.mgorsHandler()); err != nil {
		return fmt.Errorf("watch: %w", err)
	}

	// Owned objects carry the managed-by label; the cluster they belong to is
	// their instance label.
	factory := informers.NewSharedInformerFactoryWithOptions(d.Kube, d.Resync,
		informers.WithNamespace(d.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = kube.LabelManagedBy + "=" + kube.ManagedBy }))
	for what, inf := range map[string]cache.SharedIndexInformer{
		"pod":         factory.Core().V1().Pods().Informer(),
		"statefulset": factory.Apps().V1().StatefulSets().Informer(),
		"pvc":         factory.Core().V1().PersistentVolumeClaims().Informer(),
	} {
		if _, err := inf.AddEventHandler(d.ownedHandler(what)); err != nil {
			return fmt.Errorf("watch: %w", err)
		}
	}

	go mgorsInformer.Run(ctx.Done())
	factory.Start(ctx.Done())
	syncCtx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), mgorsInformer.HasSynced) {
		return fmt.Errorf("watch: the Mgors cache did not sync within %s", syncTimeout)
	}
	for typ, ok := range factory.WaitForCacheSync(syncCtx.Done()) {
		if !ok {
			return fmt.Errorf("watch: the %v cache did not sync within %s", typ, syncTimeout)
		}
	}
	d.synced.Store(true)
	d.Log.Info().Str("namespace", d.Namespace).Msg("watching Mgors objects and what they own")
	<-ctx.Done()
	factory.Shutdown()
	return nil
}

// selectOwned narrows a Mgors list or watch to this replica's own.
func (d *Dispatcher) selectOwned(o *metav1.ListOptions) {
	if d.Owner != "" {
		o.LabelSelector = shard.LabelOwner + "=" + d.Owner
	}
}

// changed is the message for an added or updated Mgors: ClusterDrain when
// this replica is asked to give it back, ClusterChanged otherwise.
func (d *Dispatcher) changed(m *v1alpha1.Mgors) any {
	if d.Owner != "" && shard.MustRelease(m.Labels, d.Owner) {
		return actors.ClusterDrain{Namespace: m.Namespace, Name: m.Name, UID: string(m.UID)}
	}
	return actors.ClusterChanged{Mgors: m.DeepCopy()}
}

// mgorsHandler forwards Mgors changes. Adds and updates are both
// ClusterChanged (a re-list replays ADDs for known objects); an update that
// changes only the status or resourceVersion (our own status writes) is not news.
func (d *Dispatcher) mgorsHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if m, ok := obj.(*v1alpha1.Mgors); ok {
				d.Send(d.changed(m))
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*v1alpha1.Mgors)
			n, ok2 := newObj.(*v1alpha1.Mgors)
			if !ok1 || !ok2 || !SpecOrMetaChanged(o, n) {
				return
			}
			d.Send(d.changed(n))
		},
		DeleteFunc: func(obj any) {
			if m, ok := Unwrap(obj).(*v1alpha1.Mgors); ok {
				d.Send(actors.ClusterDeleted{Namespace: m.Namespace, Name: m.Name, UID: string(m.UID)})
			}
		},
	}
}

// SpecOrMetaChanged reports whether an update is news for the actor: a new
// generation (spec), different labels or annotations (the force annotation),
// a deletion timestamp, or a new UID. A status-only update is not.
func SpecOrMetaChanged(o, n *v1alpha1.Mgors) bool {
	return o.Generation != n.Generation || o.UID != n.UID ||
		!equality.Semantic.DeepEqual(o.Labels, n.Labels) ||
		!equality.Semantic.DeepEqual(o.Annotations, n.Annotations) ||
		!o.DeletionTimestamp.Equal(n.DeletionTimestamp)
}

func (d *Dispatcher) ownedHandler(what string) cache.ResourceEventHandler {
	send := func(obj any) {
		o, ok := Unwrap(obj).(metav1.Object)
		if !ok {
			return
		}
		cluster := Cluster(o)
		if cluster == "" {
			return
		}
		d.Send(actors.OwnedChanged{Namespace: o.GetNamespace(), Cluster: cluster, What: what + " " + o.GetName()})
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: send,
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(metav1.Object)
			n, ok2 := newObj.(metav1.Object)
			if ok1 && ok2 && o.GetResourceVersion() == n.GetResourceVersion() {
				return // a resync: nothing changed
			}
			send(newObj)
		},
		DeleteFunc: send,
	}
}

// Cluster is the name of the Mgors that owns obj, from its controller owner
// reference, or its instance label; "" when neither names one.
func Cluster(obj metav1.Object) string {
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Kind == v1alpha1.Kind && ref.Controller != nil && *ref.Controller {
			return ref.Name
		}
	}
	return obj.GetLabels()[kube.LabelInstance]
}

// Unwrap returns the object inside a delete tombstone, or obj itself.
func Unwrap(obj any) any {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return obj
}
