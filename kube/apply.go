package kube

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// DefaultCallTimeout bounds each API call of an Applier whose Timeout is zero,
// so a slow API server delays one cluster's actor, never all of them.
const DefaultCallTimeout = 10 * time.Second

// Applier creates and updates the objects of Mgors clusters. Each Ensure
// method creates the object when it is missing, leaves it alone when it is
// what we want, and otherwise updates only the fields the builders set,
// keeping what the API server filled in. Each reports whether it wrote.
type Applier struct {
	// Client is the Kubernetes API.
	Client kubernetes.Interface
	// Timeout bounds each API call; zero means DefaultCallTimeout.
	Timeout time.Duration
	// CertificateLifetime is the life of the member certificates the
	// operator issues; zero means a year (short in tests of renewal).
	CertificateLifetime time.Duration
}

// NewApplier returns an Applier with the default call timeout.
func NewApplier(c kubernetes.Interface) *Applier { return &Applier{Client: c} }

func (a *Applier) call(ctx context.Context) (context.Context, context.CancelFunc) {
	t := a.Timeout
	if t <= 0 {
		t = DefaultCallTimeout
	}
	return context.WithTimeout(ctx, t)
}

// ImmutableChange is returned when an existing object differs from the desired
// one in a field the API server will not update (a StatefulSet's volume claim
// templates, selector, serviceName or podManagementPolicy; a Service's
// clusterIP). Nothing was written; the actor reports it as Stalled, or replaces
// the object deliberately (ReplaceStatefulSet).
type ImmutableChange struct {
	// Kind and Name name the object.
	Kind, Name string
	// Field is the JSON path of the field, e.g. spec.volumeClaimTemplates.
	Field string
}

// Error names the object and the field.
func (e *ImmutableChange) Error() string {
	return fmt.Sprintf("%s %s: %s differs and cannot be updated in place", e.Kind, e.Name, e.Field)
}

// NotOwned is returned when an object of the desired name exists but is not
// controlled by this Mgors (a user's object, or one of a deleted Mgors of the
// same name): the operator never takes over or modifies it.
type NotOwned struct {
	// Kind and Name name the object.
	Kind, Name string
}

// Error names the object.
func (e *NotOwned) Error() string {
	return fmt.Sprintf("%s %s exists and is not owned by this Mgors", e.Kind, e.Name)
}

// Terminating is returned when the object is being deleted (a StatefulSet
// being replaced waits for the garbage collector to orphan its pods): nothing
// was written; try again once it is gone.
type Terminating struct {
	// Kind and Name name the object.
	Kind, Name string
}

// Error names the object.
func (e *Terminating) Error() string {
	return fmt.Sprintf("%s %s is being deleted", e.Kind, e.Name)
}

// controllerUID is the UID of the Mgors a desired object names as controller.
func controllerUID(desired metav1.Object) types.UID {
	if ref := metav1.GetControllerOfNoCopy(desired); ref != nil {
		return ref.UID
	}
	return ""
}

func ownedLike(existing, desired metav1.Object) bool {
	ref := metav1.GetControllerOfNoCopy(existing)
	uid := controllerUID(desired)
	return ref != nil && uid != "" && ref.UID == uid
}

// mergeLabels adds the desired labels to existing ones, keeping others'.
// It reports whether anything changed.
func mergeLabels(existing metav1.Object, desired map[string]string) bool {
	l := existing.GetLabels()
	changed := false
	for k, v := range desired {
		if w, ok := l[k]; !ok || w != v {
			if l == nil {
				l = map[string]string{}
			}
			l[k] = v
			changed = true
		}
	}
	existing.SetLabels(l)
	return changed
}

// object is what ensure needs of a typed object.
type object[T any] interface {
	metav1.Object
	DeepCopy() T
}

// typedClient is what ensure needs of a typed client.
type typedClient[T any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// ensure is the one loop behind the Ensure methods: read, create when missing,
// refuse what is not ours, let update turn a fresh copy of the existing object
// into the desired one (reporting whether it changed anything), and write only
// then; a conflict starts over from a fresh read. Each call has its own deadline.
func ensure[T object[T]](ctx context.Context, a *Applier, c typedClient[T], kind string, desired T,
	update func(cur, next T) (bool, error)) (bool, error) {
	changed := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		changed = false
		cur, err := bounded(ctx, a, func(ctx context.Context) (T, error) {
			return c.Get(ctx, desired.GetName(), metav1.GetOptions{})
		})
		if apierrors.IsNotFound(err) {
			_, err := bounded(ctx, a, func(ctx context.Context) (T, error) {
				return c.Create(ctx, desired, metav1.CreateOptions{})
			})
			changed = err == nil
			return err
		}
		if err != nil {
			return err
		}
		if !ownedLike(cur, desired) {
			return &NotOwned{Kind: kind, Name: desired.GetName()}
		}
		if cur.GetDeletionTimestamp() != nil {
			return &Terminating{Kind: kind, Name: desired.GetName()}
		}
		next := cur.DeepCopy()
		diff := mergeLabels(next, desired.GetLabels())
		d, err := update(cur, next)
		if err != nil || !diff && !d {
			return err
		}
		_, err = bounded(ctx, a, func(ctx context.Context) (T, error) {
			return c.Update(ctx, next, metav1.UpdateOptions{})
		})
		changed = err == nil
		return err
	})
	return changed, err
}

// bounded runs one API call under the Applier's per-call deadline.
func bounded[T any](ctx context.Context, a *Applier, f func(context.Context) (T, error)) (T, error) {
	cctx, cancel := a.call(ctx)
	defer cancel()
	return f(cctx)
}

// EnsureService creates or updates the headless Service: labels, selector,
// ports and publishNotReadyAddresses. Its clusterIP cannot change in place: an
// owned Service that is not headless is an ImmutableChange.
func (a *Applier) EnsureService(ctx context.Context, desired *corev1.Service) (bool, error) {
	return ensure(ctx, a, a.Client.CoreV1().Services(desired.Namespace), "Service", desired,
		func(cur, next *corev1.Service) (bool, error) {
			if cur.Spec.ClusterIP != desired.Spec.ClusterIP {
				return false, &ImmutableChange{Kind: "Service", Name: desired.Name, Field: "spec.clusterIP"}
			}
			diff := false
			if !maps.Equal(cur.Spec.Selector, desired.Spec.Selector) {
				next.Spec.Selector = maps.Clone(desired.Spec.Selector)
				diff = true
			}
			if len(cur.Spec.Ports) != len(desired.Spec.Ports) || !equality.Semantic.DeepDerivative(desired.Spec.Ports, cur.Spec.Ports) {
				next.Spec.Ports = desired.Spec.Ports
				diff = true
			}
			if cur.Spec.PublishNotReadyAddresses != desired.Spec.PublishNotReadyAddresses {
				next.Spec.PublishNotReadyAddresses = desired.Spec.PublishNotReadyAddresses
				diff = true
			}
			return diff, nil
		})
}
