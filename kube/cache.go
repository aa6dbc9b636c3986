package kube

import (
	"context"
	"errors"
	"unique"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// Reader is what the observation reads of the Kubernetes API: in the
// operator the shared informer caches (Informers), in unit tests a fake that
// reads through a fake clientset (kube/client/fake.Reader). A missing object
// is the API's NotFound error. The objects are shared with the cache: never
// modify one (copy it first). They are as Transform leaves them: no
// managedFields, no last-applied annotation, a Pod without its spec but its
// node, a StatefulSet without its pod template but its annotations, claims
// and budgets with only the spec and status fields the observation reads,
// a Secret without its data (SecretData has the data).
type Reader interface {
	// Mgors is a Mgors object (status included).
	Mgors(namespace, name string) (*v1alpha1.Mgors, error)
	// Backups are the MgorsBackups of the namespace whose spec.cluster is
	// cluster (status included), oldest first: by creationTimestamp, then
	// name. None is a slice of length 0 and no error.
	Backups(namespace, cluster string) ([]*v1alpha1.MgorsBackup, error)
	// Backup is one MgorsBackup by name (status included).
	Backup(namespace, name string) (*v1alpha1.MgorsBackup, error)
	// Restores are the MgorsRestores of the namespace whose spec.cluster is
	// cluster (status included), oldest first: by creationTimestamp, then
	// name. None is a slice of length 0 and no error.
	Restores(namespace, cluster string) ([]*v1alpha1.MgorsRestore, error)
	// Service is a Service the operator made.
	Service(namespace, name string) (*corev1.Service, error)
	// StatefulSet is a StatefulSet the operator made.
	StatefulSet(namespace, name string) (*appsv1.StatefulSet, error)
	// PodDisruptionBudget is a budget the operator made.
	PodDisruptionBudget(namespace, name string) (*policyv1.PodDisruptionBudget, error)
	// Pods are the pods of the namespace that selector selects, of those the
	// operator's StatefulSets made.
	Pods(namespace string, selector labels.Selector) ([]*corev1.Pod, error)
	// Claims are the claims of the namespace that selector selects, of those
	// made from the operator's claim templates.
	Claims(namespace string, selector labels.Selector) ([]*corev1.PersistentVolumeClaim, error)
	// Secret is any Secret of the namespace (the user's too), without its data.
	Secret(namespace, name string) (*corev1.Secret, error)
	// SecretData is a Secret with its data, as of the resourceVersion the
	// cache holds: its name, namespace, UID, resourceVersion and data, and
	// no other field (Secret has its metadata). Never log what it returns.
	SecretData(ctx context.Context, namespace, name string) (*corev1.Secret, error)
	// FailedCreates are the FailedCreate Events of the StatefulSet
	// namespace/name (its controller could not make a pod: a quota, an
	// admission policy), of any incarnation of the name: the caller matches
	// the UID. None is a slice of length 0 and no error.
	FailedCreates(namespace, name string) ([]*corev1.Event, error)
	// Node is a node with its Ready condition only; ErrNotWatched in the
	// namespaced install, which may not read nodes.
	Node(name string) (*corev1.Node, error)
	// StorageClasses are the cluster's storage classes; ErrNotWatched in the
	// namespaced install, which may not read them.
	StorageClasses() ([]*storagev1.StorageClass, error)
}

// ErrNotWatched is a read of a kind the operator does not watch: the
// cluster-scoped nodes and storage classes in the namespaced install. What
// it would tell is unknown, which no rule acts on.
var ErrNotWatched = errors.New("not watched by this operator (the namespaced install cannot read cluster-scoped objects)")

// ErrNotSynced is a read before the caches synced: an empty cache would say
// that every object is missing.
var ErrNotSynced = errors.New("the informer caches have not synced yet")

// lastApplied is kubectl's copy of the applied object: never read, often
// the largest annotation, and on a Secret it holds the Secret's data.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// Transform trims an object before an informer stores it, so the caches
// hold what the operator reads and nothing else: no managedFields and no
// last-applied annotation on any kind; a Pod keeps its metadata, its node
// and its status's phase, conditions and container statuses (of each its
// name, restart count, waiting state and last termination); a StatefulSet
// keeps its metadata, replicas, claim retention policy, its pod template's
// annotations (the hash), of each claim template the name and requests, and
// its status's replicas; a claim keeps its metadata, storage class, volume
// name and requests, and its status's phase and capacity; a budget keeps its
// metadata and minAvailable; a Secret keeps its metadata only (no value is
// ever cached in an informer); an Event keeps whose it is (kind, name, UID),
// its reason, message and times; a Node keeps its name and Ready condition.
// Anything else (a Mgors, a Service, a delete tombstone) passes as is.
func Transform(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
		if a := m.GetAnnotations(); a[lastApplied] != "" {
			delete(a, lastApplied)
		}
		internMeta(m)
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		o.Spec = corev1.PodSpec{NodeName: o.Spec.NodeName}
		o.Status = corev1.PodStatus{Phase: o.Status.Phase, Conditions: o.Status.Conditions,
			InitContainerStatuses: containerStatuses(o.Status.InitContainerStatuses),
			ContainerStatuses:     containerStatuses(o.Status.ContainerStatuses)}
	case *corev1.Secret:
		o.Data, o.StringData, o.Annotations = nil, nil, nil
	case *appsv1.StatefulSet:
		// The pod template is compared by its hash annotation, and
		// EnsureStatefulSet reads the object fresh before it writes: of the
		// spec the observation reads the replicas, the retention policy and
		// the data claim template's requests (claimTemplateSize), and of the
		// status the replicas (Diagnose).
		claims := make([]corev1.PersistentVolumeClaim, len(o.Spec.VolumeClaimTemplates))
		for i, c := range o.Spec.VolumeClaimTemplates {
			claims[i].Name = c.Name
			claims[i].Spec.Resources.Requests = c.Spec.Resources.Requests
		}
		o.Spec = appsv1.StatefulSetSpec{Replicas: o.Spec.Replicas,
			PersistentVolumeClaimRetentionPolicy: o.Spec.PersistentVolumeClaimRetentionPolicy,
			Template:                             corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: internMap(o.Spec.Template.Annotations)}},
			VolumeClaimTemplates:                 claims}
		o.Status = appsv1.StatefulSetStatus{Replicas: o.Status.Replicas}
	case *corev1.PersistentVolumeClaim:
		o.Spec = corev1.PersistentVolumeClaimSpec{StorageClassName: o.Spec.StorageClassName, VolumeName: o.Spec.VolumeName,
			Resources: corev1.VolumeResourceRequirements{Requests: o.Spec.Resources.Requests}}
		o.Status = corev1.PersistentVolumeClaimStatus{Phase: o.Status.Phase, Capacity: o.Status.Capacity}
	case *policyv1.PodDisruptionBudget:
		o.Spec = policyv1.PodDisruptionBudgetSpec{MinAvailable: o.Spec.MinAvailable}
		o.Status = policyv1.PodDisruptionBudgetStatus{}
	case *corev1.Event:
		// What createFailure reads: whose, why, and when it last happened.
		o.ObjectMeta = metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace, UID: o.UID, ResourceVersion: o.ResourceVersion}
		o.InvolvedObject = corev1.ObjectReference{Kind: o.InvolvedObject.Kind, Name: o.InvolvedObject.Name, UID: o.InvolvedObject.UID}
		o.Source, o.Related, o.Action, o.ReportingController, o.ReportingInstance = corev1.EventSource{}, nil, "", "", ""
	case *corev1.Node:
		var ready []corev1.NodeCondition
		for _, c := range o.Status.Conditions {
			if c.Type == corev1.NodeReady {
				ready = append(ready, c)
			}
		}
		o.ObjectMeta = metav1.ObjectMeta{Name: o.Name, UID: o.UID, ResourceVersion: o.ResourceVersion}
		o.Spec, o.Status = corev1.NodeSpec{}, corev1.NodeStatus{Conditions: ready}
	}
	return obj, nil
}

// internMeta makes the strings that repeat from object to object share
// one copy: the namespace, the labels' and annotations' keys and values,
// the owners' API versions and kinds, the finalizers. Decoded, each object
// holds copies of its own (the labels alone are most of a claim's or a
// budget's size); the values are the same.
func internMeta(m metav1.Object) {
	m.SetNamespace(unique.Make(m.GetNamespace()).Value())
	m.SetLabels(internMap(m.GetLabels()))
	m.SetAnnotations(internMap(m.GetAnnotations()))
	refs := m.GetOwnerReferences()
	for i := range refs {
		refs[i].APIVersion, refs[i].Kind = unique.Make(refs[i].APIVersion).Value(), unique.Make(refs[i].Kind).Value()
	}
	f := m.GetFinalizers()
	for i := range f {
		f[i] = unique.Make(f[i]).Value()
	}
}

// internMap is a copy of in whose keys and values are interned, or in
// when it is empty.
func internMap(in map[string]string) map[string]string {
	if len(in) == 0 {
		return in
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[unique.Make(k).Value()] = unique.Make(v).Value()
	}
	return out
}

// containerStatuses keep what the observation (restarts, last exit code)
// and Diagnose (waiting reasons, crash messages) read of a pod's
// containers: the name, restart count, waiting state and last termination.
// The image, IDs, running state, resources and mounts are dropped.
func containerStatuses(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	if in == nil {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(in))
	for i, c := range in {
		out[i] = corev1.ContainerStatus{Name: c.Name, RestartCount: c.RestartCount,
			State:                corev1.ContainerState{Waiting: c.State.Waiting},
			LastTerminationState: corev1.ContainerState{Terminated: c.LastTerminationState.Terminated}}
	}
	return out
}

var _ cache.TransformFunc = Transform
