// Package watch turns changes of Mgors objects, of the Pods, StatefulSets,
// PVCs and Secrets they own, and of the MgorsBackups and MgorsRestores that
// name them, as the
// shared informers (kube.Informers) see them, into messages to the actors'
// Manager. It never blocks an informer callback (sending to an actor is a
// non-blocking enqueue) and never decides anything: it only says what
// changed, addressed by namespace/name and UID.
package watch

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/mgors/operator/actors"
	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/kube/shard"
)

// Sink receives the dispatcher's messages; the actor system's root context
// sending to the Manager's PID is one (a non-blocking enqueue).
type Sink func(msg any)

// Dispatcher forwards the events of the operator's shared informers
// (kube.Informers, whose caches the World reads: one watch per kind).
type Dispatcher struct {
	Informers *kube.Informers
	// Namespace is the one namespace watched ("" all), for the log.
	Namespace string
	Send      Sink
	Log       zerolog.Logger
	// Owner, when set (sharded mode, docs/design/sharding.md), is this
	// replica's identity: the Informers select only the Mgors labelled as its
	// own (OwnerSelector), so the cache holds only the owned clusters, and
	// one asked to drain is sent as ClusterDrain. A Mgors that leaves the
	// selection (moved, or given back) arrives as a delete.
	Owner string

	synced atomic.Bool
}

// OwnerSelector is the label selector of the Mgors objects a replica
// watches: those labelled as owner's in the sharded mode, all when owner is "".
func OwnerSelector(owner string) string {
	if owner == "" {
		return ""
	}
	return shard.LabelOwner + "=" + owner
}

// Synced reports whether every informer cache has synced, for readiness.
func (d *Dispatcher) Synced() bool { return d.synced.Load() }

// Run starts the informers and blocks until ctx ends. It returns an error if
// the caches do not sync within syncTimeout. The Mgors handler is added once
// every cache synced: it replays an ADD for each Mgors, which starts its
// actor, so no actor observes a cache still empty.
func (d *Dispatcher) Run(ctx context.Context, syncTimeout time.Duration) error {
	// Owned objects carry the managed-by label; the cluster they belong to is
	// their instance label.
	for what, inf := range d.Informers.Owned() {
		if _, err := inf.AddEventHandler(d.ownedHandler(what)); err != nil {
			return fmt.Errorf("watch: %w", err)
		}
	}
	// A MgorsBackup names its cluster in spec.cluster, and so does a
	// MgorsRestore.
	if _, err := d.Informers.BackupInformer().AddEventHandler(d.backupHandler()); err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	if _, err := d.Informers.RestoreInformer().AddEventHandler(d.restoreHandler()); err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	defer d.Informers.Shutdown() // after stop, below: waits for the informers to end
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	d.Informers.Start(ctx)
	syncCtx, cancel := context.WithTimeoutCause(ctx, syncTimeout, fmt.Errorf("not within %s", syncTimeout))
	defer cancel()
	if err := d.Informers.WaitForSync(syncCtx); err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	if _, err := d.Informers.MgorsInformer().AddEventHandler(d.mgorsHandler()); err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	d.synced.Store(true)
	d.Log.Info().Str("namespace", d.Namespace).Msg("watching Mgors objects and what they own")
	<-ctx.Done()
	return nil
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
	return onChange(send)
}

// onChange calls send for each add, delete, and update that is not a
// resync (the same resourceVersion again: nothing changed).
func onChange(send func(obj any)) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: send,
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(metav1.Object)
			n, ok2 := newObj.(metav1.Object)
			if ok1 && ok2 && o.GetResourceVersion() == n.GetResourceVersion() {
				return
			}
			send(newObj)
		},
		DeleteFunc: send,
	}
}

// backupHandler wakes the actor of the cluster a MgorsBackup names
// (spec.cluster) when the backup is added, changed (its status included: the
// spec is immutable) or deleted, as an owned object does; and the actors of
// the clusters whose MgorsRestores name it (spec.backup), which wait on it to
// succeed or learn it is gone.
func (d *Dispatcher) backupHandler() cache.ResourceEventHandler {
	send := func(obj any) {
		b, ok := Unwrap(obj).(*v1alpha1.MgorsBackup)
		if !ok {
			return
		}
		if b.Spec.Cluster != "" {
			d.Send(actors.OwnedChanged{Namespace: b.Namespace, Cluster: b.Spec.Cluster, What: "backup " + b.Name})
		}
		for _, r := range d.restoresOf(b.Namespace, b.Name) {
			if r.Spec.Cluster != "" {
				d.Send(restoreChanged(r))
			}
		}
	}
	return onChange(send)
}

// restoresOf are the MgorsRestores of namespace whose spec.backup is backup,
// read from the restore informer's index (no API call, no wait: an informer
// callback must not block); none without Informers.
func (d *Dispatcher) restoresOf(namespace, backup string) []*v1alpha1.MgorsRestore {
	if d.Informers == nil {
		return nil
	}
	objs, err := d.Informers.RestoreInformer().GetIndexer().ByIndex(kube.RestoreBackupIndex, namespace+"/"+backup)
	if err != nil {
		d.Log.Error().Err(err).Str("namespace", namespace).Str("backup", backup).Msg("reading the restores of a backup")
		return nil
	}
	out := make([]*v1alpha1.MgorsRestore, 0, len(objs))
	for _, obj := range objs {
		if r, ok := obj.(*v1alpha1.MgorsRestore); ok {
			out = append(out, r)
		}
	}
	return out
}

// restoreChanged is the message that wakes the actor of the cluster a
// MgorsRestore names.
func restoreChanged(r *v1alpha1.MgorsRestore) actors.OwnedChanged {
	return actors.OwnedChanged{Namespace: r.Namespace, Cluster: r.Spec.Cluster, What: "restore " + r.Name}
}

// restoreHandler wakes the actor of the cluster a MgorsRestore names
// (spec.cluster) when the restore is added, changed (its status included:
// the spec is immutable) or deleted, as backupHandler does for a backup.
func (d *Dispatcher) restoreHandler() cache.ResourceEventHandler {
	send := func(obj any) {
		r, ok := Unwrap(obj).(*v1alpha1.MgorsRestore)
		if !ok || r.Spec.Cluster == "" {
			return
		}
		d.Send(restoreChanged(r))
	}
	return onChange(send)
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
