package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/kube/client"
)

// InformerOptions choose what the Informers watch.
type InformerOptions struct {
	// Namespace limits every namespaced informer to one namespace; "" is all.
	Namespace string
	// MgorsSelector is the label selector of the Mgors objects watched
	// ("" all; the sharded mode watches a replica's own).
	MgorsSelector string
	// ClusterScoped also watches nodes and storage classes; the namespaced
	// install may not, and goes without them (ErrNotWatched).
	ClusterScoped bool
	// Resync is the informers' resync period (0: none).
	Resync time.Duration
}

// Informers are the operator's shared informers, one watch per kind: the
// watch dispatcher adds its handlers to them and the World reads their
// caches (Reader). The kinds the operator makes (Pods, StatefulSets,
// claims, Services, budgets) are selected by the managed-by label; Secrets
// are not, as a Secret the user names in the spec carries no label of ours,
// and are cached without their data (Transform), which SecretData reads once
// per resourceVersion. MgorsBackups and MgorsRestores are all of the
// namespaces watched, indexed by the cluster they name (Backups, Restores).
type Informers struct {
	kube kubernetes.Interface
	opts InformerOptions

	owned, all informers.SharedInformerFactory
	// failures holds the FailedCreate Events of StatefulSets (FailedCreates).
	failures   informers.SharedInformerFactory
	failedSets cache.Indexer
	mgors      cache.SharedIndexInformer
	backups    cache.SharedIndexInformer
	restores   cache.SharedIndexInformer

	pods   corelisters.PodLister
	claims corelisters.PersistentVolumeClaimLister
	// podIndex and claimIndex index them by cluster (clusterIndex), so
	// that reading one cluster's does not walk every pod of a namespace
	// with a thousand clusters.
	podIndex, claimIndex cache.Indexer
	services             corelisters.ServiceLister
	sets                 appslisters.StatefulSetLister
	budgets              policylisters.PodDisruptionBudgetLister
	secrets              corelisters.SecretLister
	nodes                corelisters.NodeLister
	classes              storagelisters.StorageClassLister

	synced atomic.Bool
	// values holds the Secrets SecretData read, by namespace/name; only
	// those asked for, and each dropped when its Secret is deleted.
	mu         sync.Mutex
	values     map[string]secretValue
	valueReads atomic.Int64
}

var _ Reader = (*Informers)(nil)

// NewInformers makes the informers; nothing is watched before Start.
func NewInformers(kc kubernetes.Interface, mc client.Interface, o InformerOptions) *Informers {
	i := &Informers{kube: kc, opts: o, values: map[string]secretValue{}}
	i.owned = informers.NewSharedInformerFactoryWithOptions(kc, o.Resync,
		informers.WithNamespace(o.Namespace), informers.WithTransform(Transform),
		informers.WithTweakListOptions(func(l *metav1.ListOptions) { l.LabelSelector = LabelManagedBy + "=" + ManagedBy }))
	i.all = informers.NewSharedInformerFactoryWithOptions(kc, o.Resync,
		informers.WithNamespace(o.Namespace), informers.WithTransform(Transform))
	pods, claims := i.owned.Core().V1().Pods().Informer(), i.owned.Core().V1().PersistentVolumeClaims().Informer()
	_ = pods.AddIndexers(cache.Indexers{clusterIndex: byCluster})
	_ = claims.AddIndexers(cache.Indexers{clusterIndex: byCluster})
	i.podIndex, i.claimIndex = pods.GetIndexer(), claims.GetIndexer()
	i.pods = i.owned.Core().V1().Pods().Lister()
	i.claims = i.owned.Core().V1().PersistentVolumeClaims().Lister()
	i.services = i.owned.Core().V1().Services().Lister()
	i.sets = i.owned.Apps().V1().StatefulSets().Lister()
	i.budgets = i.owned.Policy().V1().PodDisruptionBudgets().Lister()
	i.failures = informers.NewSharedInformerFactoryWithOptions(kc, o.Resync,
		informers.WithNamespace(o.Namespace), informers.WithTransform(Transform),
		informers.WithTweakListOptions(func(l *metav1.ListOptions) { l.FieldSelector = failedCreateSelector }))
	failed := i.failures.Core().V1().Events().Informer()
	_ = failed.AddIndexers(cache.Indexers{failedSetIndex: failedSet})
	i.failedSets = failed.GetIndexer()
	secrets := i.all.Core().V1().Secrets()
	i.secrets = secrets.Lister()
	_, _ = secrets.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: i.forgetValue})
	if o.ClusterScoped {
		i.nodes = i.all.Core().V1().Nodes().Lister()
		i.classes = i.all.Storage().V1().StorageClasses().Lister()
	}
	// Wrapped as generated informers are, so a fake client that cannot
	// stream lists through watches says so to the reflector.
	i.mgors = cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, l metav1.ListOptions) (runtime.Object, error) {
			l.LabelSelector = o.MgorsSelector
			return mc.Mgorses(o.Namespace).List(ctx, l)
		},
		WatchFuncWithContext: func(ctx context.Context, l metav1.ListOptions) (watch.Interface, error) {
			l.LabelSelector = o.MgorsSelector
			return mc.Mgorses(o.Namespace).Watch(ctx, l)
		},
	}, mc), &v1alpha1.Mgors{}, o.Resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	_ = i.mgors.SetTransform(Transform)
	// Every MgorsBackup of the namespaces watched: a backup carries no label
	// of ours (the sharded mode's replicas each see all, and the Manager pokes
	// only the clusters it runs).
	i.backups = cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, l metav1.ListOptions) (runtime.Object, error) {
			return mc.MgorsBackups(o.Namespace).List(ctx, l)
		},
		WatchFuncWithContext: func(ctx context.Context, l metav1.ListOptions) (watch.Interface, error) {
			return mc.MgorsBackups(o.Namespace).Watch(ctx, l)
		},
	}, mc), &v1alpha1.MgorsBackup{}, o.Resync, cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
		BackupClusterIndex:   backupCluster,
	})
	_ = i.backups.SetTransform(Transform)
	// Every MgorsRestore of the namespaces watched, as the backups.
	i.restores = cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, l metav1.ListOptions) (runtime.Object, error) {
			return mc.MgorsRestores(o.Namespace).List(ctx, l)
		},
		WatchFuncWithContext: func(ctx context.Context, l metav1.ListOptions) (watch.Interface, error) {
			return mc.MgorsRestores(o.Namespace).Watch(ctx, l)
		},
	}, mc), &v1alpha1.MgorsRestore{}, o.Resync, cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
		RestoreClusterIndex:  restoreCluster,
		RestoreBackupIndex:   restoreBackup,
	})
	_ = i.restores.SetTransform(Transform)
	return i
}

// BackupClusterIndex is the index of the MgorsBackup informer by the
// cluster a backup names: "namespace/spec.cluster".
const BackupClusterIndex = "cluster"

func backupCluster(obj any) ([]string, error) {
	b, ok := obj.(*v1alpha1.MgorsBackup)
	if !ok {
		return nil, nil
	}
	return []string{b.Namespace + "/" + b.Spec.Cluster}, nil
}

// RestoreClusterIndex is the index of the MgorsRestore informer by the
// cluster a restore names: "namespace/spec.cluster".
const RestoreClusterIndex = "cluster"

func restoreCluster(obj any) ([]string, error) {
	r, ok := obj.(*v1alpha1.MgorsRestore)
	if !ok {
		return nil, nil
	}
	return []string{r.Namespace + "/" + r.Spec.Cluster}, nil
}

// RestoreBackupIndex is the index of the MgorsRestore informer by the
// backup a restore names: "namespace/spec.backup", for the dispatcher to wake
// the clusters whose restores wait on a backup that changed.
const RestoreBackupIndex = "backup"

func restoreBackup(obj any) ([]string, error) {
	r, ok := obj.(*v1alpha1.MgorsRestore)
	if !ok {
		return nil, nil
	}
	return []string{r.Namespace + "/" + r.Spec.Backup}, nil
}

// RestoreInformer is the informer of the MgorsRestore objects, for the
// dispatcher's handler.
func (i *Informers) RestoreInformer() cache.SharedIndexInformer { return i.restores }

// BackupInformer is the informer of the MgorsBackup objects, for the
// dispatcher's handler.
func (i *Informers) BackupInformer() cache.SharedIndexInformer { return i.backups }

// MgorsInformer is the informer of the Mgors objects, for the dispatcher's handler.
func (i *Informers) MgorsInformer() cache.SharedIndexInformer { return i.mgors }

// Owned are the informers of the objects whose changes wake a cluster's
// actor, by the word the dispatcher names them with. The Secrets' informer
// holds every Secret of the namespaces watched: only those a Mgors owns (the
// operator's certificate, keyfile, credentials) wake its actor, so a
// certificate renewed or a keyfile rotation's write is seen at once rather
// than at the next --interval.
func (i *Informers) Owned() map[string]cache.SharedIndexInformer {
	return map[string]cache.SharedIndexInformer{
		"pod":         i.owned.Core().V1().Pods().Informer(),
		"statefulset": i.owned.Apps().V1().StatefulSets().Informer(),
		"pvc":         i.owned.Core().V1().PersistentVolumeClaims().Informer(),
		"secret":      i.all.Core().V1().Secrets().Informer(),
	}
}

// Start starts every informer; they stop when ctx ends.
func (i *Informers) Start(ctx context.Context) {
	go i.mgors.RunWithContext(ctx)
	go i.backups.RunWithContext(ctx)
	go i.restores.RunWithContext(ctx)
	i.owned.Start(ctx.Done())
	i.all.Start(ctx.Done())
	i.failures.Start(ctx.Done())
}

// WaitForSync waits until every cache holds its first list; only then do
// reads answer (ErrNotSynced before).
func (i *Informers) WaitForSync(ctx context.Context) error {
	if !cache.WaitForCacheSync(ctx.Done(), i.mgors.HasSynced) {
		return fmt.Errorf("the Mgors cache did not sync: %w", context.Cause(ctx))
	}
	if !cache.WaitForCacheSync(ctx.Done(), i.backups.HasSynced) {
		return fmt.Errorf("the MgorsBackup cache did not sync (is the mgorsbackups.mgors.io CRD installed?): %w", context.Cause(ctx))
	}
	if !cache.WaitForCacheSync(ctx.Done(), i.restores.HasSynced) {
		return fmt.Errorf("the MgorsRestore cache did not sync (is the mgorsrestores.mgors.io CRD installed?): %w", context.Cause(ctx))
	}
	for _, f := range []informers.SharedInformerFactory{i.owned, i.all, i.failures} {
		for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
			if !ok {
				return fmt.Errorf("the %v cache did not sync: %w", typ, context.Cause(ctx))
			}
		}
	}
	i.synced.Store(true)
	return nil
}

// Synced reports whether WaitForSync succeeded.
func (i *Informers) Synced() bool { return i.synced.Load() }

// Shutdown waits for the informers' goroutines once ctx ended.
func (i *Informers) Shutdown() {
	i.owned.Shutdown()
	i.all.Shutdown()
	i.failures.Shutdown()
}

// SecretValueReads counts the GETs SecretData made: one per Secret and
// resourceVersion, none while nothing changes.
func (i *Informers) SecretValueReads() int64 { return i.valueReads.Load() }

func (i *Informers) ready() error {
	if !i.synced.Load() {
		return ErrNotSynced
	}
	return nil
}

// Mgors reads a Mgors from the cache.
func (i *Informers) Mgors(namespace, name string) (*v1alpha1.Mgors, error) {
	if err := i.ready(); err != nil {
		return nil, err
	}
	obj, ok, err := i.mgors.GetIndexer().GetByKey(namespace + "/" + name)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: v1alpha1.GroupName, Resource: "mgorses"}, name)
	}
	m, ok := obj.(*v1alpha1.Mgors)
	if !ok {
		return nil, fmt.Errorf("the Mgors cache holds a %T", obj)
	}
	return m, nil
}

// Backups lists from the cache the MgorsBackups of namespace whose
// spec.cluster is cluster, by creationTimestamp then name.
func (i *Informers) Backups(namespace, cluster string) ([]*v1alpha1.MgorsBackup, error) {
	if err := i.ready(); err != nil {
		return nil, err
	}
	objs, err := i.backups.GetIndexer().ByIndex(BackupClusterIndex, namespace+"/"+cluster)
	if err != nil {
		return nil, err
	}
	out := make([]*v1alpha1.MgorsBackup, 0, len(objs))
	for _, obj := range objs {
		b, ok := obj.(*v1alpha1.MgorsBackup)
		if !ok {
			return nil, fmt.Errorf("the MgorsBackup cache holds a %T", obj)
		}
		out = append(out, b)
	}
	sortBackups(out)
	return out, nil
}

// Backup reads a MgorsBackup from the cache.
func (i *Informers) Backup(namespace, name string) (*v1alpha1.MgorsBackup, error) {
	if err := i.ready(); err != nil {
		return nil, err
	}
	obj, ok, err := i.backups.GetIndexer().GetByKey(namespace + "/" + name)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: v1alpha1.GroupName, Resource: v1alpha1.BackupResource}, name)
	}
	b, ok := obj.(*v1alpha1.MgorsBackup)
	if !ok {
		return nil, fmt.Errorf("the MgorsBackup cache holds a %T", obj)
	}
	return b, nil
}

// Restores lists from the cache the MgorsRestores of namespace whose
// spec.cluster is cluster, by creationTimestamp then name.
func (i *Informers) Restores(namespace, cluster string) ([]*v1alpha1.MgorsRestore, error) {
	if err := i.ready(); err != nil {
		return nil, err
	}
	objs, err := i.restores.GetIndexer().ByIndex(RestoreClusterIndex, namespace+"/"+cluster)
	if err != nil {
		return nil, err
	}
	out := make([]*v1alpha1.MgorsRestore, 0, len(objs))
	for _, obj := range objs {
		r, ok := obj.(*v1alpha1.MgorsRestore)
		if !ok {
			return nil, fmt.Errorf("the MgorsRestore cache holds a %T", obj)
		}
		out = append(out, r)
	}
	sortRestores(out)
	return out, nil
}

// sortRestores sorts restores oldest first: by creationTimestamp, then name.
func sortRestores(rs []*v1alpha1.MgorsRestore) {
	slices.SortFunc(rs, func(a, b *v1alpha1.MgorsRestore) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// sortBackups sorts backups oldest first: by creationTimestamp, then name.
func sortBackups(bs []*v1alpha1.MgorsBackup) {
	slices.SortFunc(bs, func(a, b *v1alpha1.MgorsBackup) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// Service reads a Service from the cache.
func (i *Informers) Service(namespace, name string) (*corev1.Service, error) {
	if err := i.ready(); err != nil {
		return nil, err
	}
	return i.services.Services(namespace).Get(name)
}

// StatefulSet reads a StatefulSet from the cache.
func (i *Informers) StatefulSet(namespace, name string) (*appsv1.StatefulSet, error) {
	if err := i.ready(); err != nil {
		return nil, err
	}
	return i.sets.StatefulSets(namespace).Get(name)
}

// PodDisruptionBudget reads a budget from the cache.
func (i *Informers) PodDisruptionBudget(namespace, name string) (*policyv1.PodDisruptionBudget, error) {
	if err := i.ready(); err != nil {
		return nil, err
	}
	return i.budgets.PodDisruptionBudgets(namespace).Get(name)
}

// Pods lists pods from the cache.
func (i *Informers) Pods(namespace string, selector labels.Selector) ([]*corev1.Pod, error) {
	if err := i.ready(); err != nil {
		return nil, err
	}
	if cluster, ok := selector.RequiresExactMatch(LabelCluster); ok {
		return byIndex[*corev1.Pod](i.podIndex, clusterIndex, namespace+"/"+cluster, selector)
	}
	return i.pods.Pods(namespace).List(selector)
}

// Claims lists claims from the cache.
func (i *Informers) Claims(namespace string, selector labels.Selector) ([]*corev1.PersistentVolumeClaim, error) {
	if err := i.ready(); err != nil {
		return nil, err
	}
	if cluster, ok := selector.RequiresExactMatch(LabelCluster); ok {
		return byIndex[*corev1.PersistentVolumeClaim](i.claimIndex, clusterIndex, namespace+"/"+cluster, selector)
	}
	return i.claims.PersistentVolumeClaims(namespace).List(selector)
}

// clusterIndex indexes the pods and claims by "namespace/cluster", the
// value of their LabelCluster.
const clusterIndex = "cluster"

func byCluster(obj any) ([]string, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, nil
	}
	c, ok := m.GetLabels()[LabelCluster]
	if !ok {
		return nil, nil
	}
	return []string{m.GetNamespace() + "/" + c}, nil
}

// byIndex lists from an indexer the objects under key of index, those
// selector selects.
func byIndex[T metav1.Object](ix cache.Indexer, index, key string, selector labels.Selector) ([]T, error) {
	objs, err := ix.ByIndex(index, key)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(objs))
	for _, obj := range objs {
		if o, ok := obj.(T); ok && selector.Matches(labels.Set(o.GetLabels())) {
			out = append(out, o)
		}
	}
	return out, nil
}

// Secret reads a Secret's metadata from the cache.
func (i *Informers) Secret(namespace, name string) (*corev1.Secret, error) {
	if err := i.ready(); err != nil {
		return nil, err
	}
	return i.secrets.Secrets(namespace).Get(name)
}

// secretValue is a Secret SecretData read, and the resourceVersion the
// cache showed when it was read.
type secretValue struct {
	secret *corev1.Secret
	seen   string
}

// SecretData returns the Secret with its data: the copy read before while
// the cache shows its resourceVersion, or still the one it showed when the
// copy was read (the cache lags a write the GET already saw: the copy is
// the newer), else one bounded GET (counted, SecretValueReads). A Secret the
// cache does not hold is NotFound, with no GET. Only its name, namespace,
// UID, resourceVersion and data are kept (dataOnly).
func (i *Informers) SecretData(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	meta, err := i.Secret(namespace, name)
	if err != nil {
		return nil, err
	}
	key := namespace + "/" + name
	i.mu.Lock()
	v, ok := i.values[key]
	i.mu.Unlock()
	if ok && v.secret.UID == meta.UID && (v.secret.ResourceVersion == meta.ResourceVersion || v.seen == meta.ResourceVersion) {
		return v.secret, nil
	}
	cctx, cancel := context.WithTimeout(ctx, DefaultCallTimeout)
	defer cancel()
	i.valueReads.Add(1)
	s, err := i.kube.CoreV1().Secrets(namespace).Get(cctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	s = dataOnly(s)
	i.mu.Lock()
	i.values[key] = secretValue{secret: s, seen: meta.ResourceVersion}
	i.mu.Unlock()
	return s, nil
}

// dataOnly is what SecretData keeps of a Secret read with its data, all
// its callers read: its name, namespace, UID and resourceVersion, and its
// data. Its labels, annotations, owners and finalizers are the cache's
// (Secret), and a copy of the whole object would be held per Secret asked
// for.
func dataOnly(s *corev1.Secret) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace, UID: s.UID, ResourceVersion: s.ResourceVersion},
		Data:       s.Data,
	}
}

// forgetValue drops the data of a deleted Secret.
func (i *Informers) forgetValue(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if s, ok := obj.(*corev1.Secret); ok {
		i.mu.Lock()
		delete(i.values, s.Namespace+"/"+s.Name)
		i.mu.Unlock()
	}
}

// failedCreateSelector selects the Events the failures informer holds: the
// StatefulSet controller's FailedCreate, filtered by the API server.
const failedCreateSelector = "involvedObject.kind=StatefulSet,reason=FailedCreate"

// failedSetIndex indexes those Events by "namespace/statefulset".
const failedSetIndex = "statefulset"

func failedSet(obj any) ([]string, error) {
	e, ok := obj.(*corev1.Event)
	if !ok {
		return nil, nil
	}
	return []string{e.Namespace + "/" + e.InvolvedObject.Name}, nil
}

// FailedCreates lists from the cache the FailedCreate Events of the
// StatefulSet namespace/name.
func (i *Informers) FailedCreates(namespace, name string) ([]*corev1.Event, error) {
	if err := i.ready(); err != nil {
		return nil, err
	}
	return byIndex[*corev1.Event](i.failedSets, failedSetIndex, namespace+"/"+name, labels.Everything())
}

// Node reads a node's readiness from the cache.
func (i *Informers) Node(name string) (*corev1.Node, error) {
	if i.nodes == nil {
		return nil, ErrNotWatched
	}
	if err := i.ready(); err != nil {
		return nil, err
	}
	return i.nodes.Get(name)
}

// StorageClasses lists the storage classes from the cache.
func (i *Informers) StorageClasses() ([]*storagev1.StorageClass, error) {
	if i.classes == nil {
		return nil, ErrNotWatched
	}
	if err := i.ready(); err != nil {
		return nil, err
	}
	return i.classes.List(labels.Everything())
}
