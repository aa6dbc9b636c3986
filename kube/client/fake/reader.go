package fake

import (
	"context"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/kube/client"
)

// Reader is the observation's reader (kube.Reader) of unit tests: it reads
// through fake clientsets, so a test sees at once what it wrote, where the
// operator's informer caches would follow a moment later. Secrets come back
// without data from Secret and with it from SecretData, as from the caches.
type Reader struct {
	Kube        kubernetes.Interface
	MgorsClient client.Interface
}

// NewReader reads through kc and mc (mc may be nil when no test reads a Mgors).
func NewReader(kc kubernetes.Interface, mc client.Interface) *Reader {
	return &Reader{Kube: kc, MgorsClient: mc}
}

func bounded() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}

// Mgors reads a Mgors.
func (r *Reader) Mgors(namespace, name string) (*v1alpha1.Mgors, error) {
	ctx, cancel := bounded()
	defer cancel()
	return r.MgorsClient.Mgorses(namespace).Get(ctx, name, metav1.GetOptions{})
}

// Backups lists the MgorsBackups of namespace whose spec.cluster is cluster,
// by creationTimestamp then name; none when the Reader has no MgorsClient.
func (r *Reader) Backups(namespace, cluster string) ([]*v1alpha1.MgorsBackup, error) {
	if r.MgorsClient == nil {
		return nil, nil
	}
	ctx, cancel := bounded()
	defer cancel()
	l, err := r.MgorsClient.MgorsBackups(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []*v1alpha1.MgorsBackup
	for i := range l.Items {
		if l.Items[i].Spec.Cluster == cluster {
			out = append(out, &l.Items[i])
		}
	}
	slices.SortFunc(out, func(a, b *v1alpha1.MgorsBackup) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

// Backup reads a MgorsBackup; NotFound when the Reader has no MgorsClient.
func (r *Reader) Backup(namespace, name string) (*v1alpha1.MgorsBackup, error) {
	if r.MgorsClient == nil {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: v1alpha1.GroupName, Resource: v1alpha1.BackupResource}, name)
	}
	ctx, cancel := bounded()
	defer cancel()
	return r.MgorsClient.MgorsBackups(namespace).Get(ctx, name, metav1.GetOptions{})
}

// Restores lists the MgorsRestores of namespace whose spec.cluster is
// cluster, by creationTimestamp then name; none when the Reader has no
// MgorsClient.
func (r *Reader) Restores(namespace, cluster string) ([]*v1alpha1.MgorsRestore, error) {
	if r.MgorsClient == nil {
		return nil, nil
	}
	ctx, cancel := bounded()
	defer cancel()
	l, err := r.MgorsClient.MgorsRestores(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []*v1alpha1.MgorsRestore
	for i := range l.Items {
		if l.Items[i].Spec.Cluster == cluster {
			out = append(out, &l.Items[i])
		}
	}
	slices.SortFunc(out, func(a, b *v1alpha1.MgorsRestore) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

// Service reads a Service.
func (r *Reader) Service(namespace, name string) (*corev1.Service, error) {
	ctx, cancel := bounded()
	defer cancel()
	return r.Kube.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
}

// StatefulSet reads a StatefulSet.
func (r *Reader) StatefulSet(namespace, name string) (*appsv1.StatefulSet, error) {
	ctx, cancel := bounded()
	defer cancel()
	return r.Kube.AppsV1().StatefulSets(namespace).Get(ctx, name, metav1.GetOptions{})
}

// PodDisruptionBudget reads a budget.
func (r *Reader) PodDisruptionBudget(namespace, name string) (*policyv1.PodDisruptionBudget, error) {
	ctx, cancel := bounded()
	defer cancel()
	return r.Kube.PolicyV1().PodDisruptionBudgets(namespace).Get(ctx, name, metav1.GetOptions{})
}

// Pods lists pods.
func (r *Reader) Pods(namespace string, selector labels.Selector) ([]*corev1.Pod, error) {
	ctx, cancel := bounded()
	defer cancel()
	l, err := r.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.Pod, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out, nil
}

// Claims lists claims.
func (r *Reader) Claims(namespace string, selector labels.Selector) ([]*corev1.PersistentVolumeClaim, error) {
	ctx, cancel := bounded()
	defer cancel()
	l, err := r.Kube.CoreV1().PersistentVolumeClaims(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.PersistentVolumeClaim, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out, nil
}

// Secret reads a Secret without its data.
func (r *Reader) Secret(namespace, name string) (*corev1.Secret, error) {
	ctx, cancel := bounded()
	defer cancel()
	s, err := r.Kube.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	s.Data, s.StringData = nil, nil
	return s, nil
}

// SecretData reads a Secret with its data, and keeps what the informers'
// SecretData keeps: its name, namespace, UID, resourceVersion and data.
func (r *Reader) SecretData(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	s, err := r.Kube.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace, UID: s.UID, ResourceVersion: s.ResourceVersion},
		Data:       s.Data,
	}, nil
}

// FailedCreates lists the FailedCreate Events of a StatefulSet (the fake
// clientset ignores field selectors: the Events are filtered here).
func (r *Reader) FailedCreates(namespace, name string) ([]*corev1.Event, error) {
	ctx, cancel := bounded()
	defer cancel()
	l, err := r.Kube.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := []*corev1.Event{}
	for i := range l.Items {
		e := &l.Items[i]
		if e.Reason == "FailedCreate" && e.InvolvedObject.Kind == "StatefulSet" && e.InvolvedObject.Name == name {
			out = append(out, e)
		}
	}
	return out, nil
}

// Node reads a node.
func (r *Reader) Node(name string) (*corev1.Node, error) {
	ctx, cancel := bounded()
	defer cancel()
	return r.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
}

// StorageClasses lists the storage classes.
func (r *Reader) StorageClasses() ([]*storagev1.StorageClass, error) {
	ctx, cancel := bounded()
	defer cancel()
	l, err := r.Kube.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]*storagev1.StorageClass, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out, nil
}
