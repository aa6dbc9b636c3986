package kube

import (
	"context"
	"fmt"
	"maps"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/mgors/operator/kube/api/v1alpha1"
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

// MissingSecretKey is returned when an existing Secret lacks a key the members
// need (a user-made Secret named in spec.auth). The operator does not add it.
type MissingSecretKey struct {
	// Name is the Secret, Key the missing key.
	Name, Key string
}

// Error names the Secret and the key.
func (e *MissingSecretKey) Error() string {
	return fmt.Sprintf("secret %s has no key %q", e.Name, e.Key)
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

// EnsureStatefulSet creates the StatefulSet, or updates the fields that may
// change in place: labels, update strategy, claim retention policy and the pod
// template (which rolls no pod by itself: the strategy is OnDelete).
//
// Replicas are set on create only. Afterwards they belong to the actor through
// ScaleStatefulSet, so that a desired object built from spec.members can never
// jump the set by more than the one member the actor is adding or removing.
//
// The pod template is compared by its TemplateHashAnnotation (what we build)
// and as a derivative of the existing one (hand edits of fields we set), so
// the API server's defaults never look like a change.
func (a *Applier) EnsureStatefulSet(ctx context.Context, desired *appsv1.StatefulSet) (bool, error) {
	return ensure(ctx, a, a.Client.AppsV1().StatefulSets(desired.Namespace), "StatefulSet", desired,
		func(cur, next *appsv1.StatefulSet) (bool, error) {
			if field := immutableStatefulSetChange(cur, desired); field != "" {
				return false, &ImmutableChange{Kind: "StatefulSet", Name: desired.Name, Field: field}
			}
			diff := false
			if cur.Spec.UpdateStrategy.Type != desired.Spec.UpdateStrategy.Type {
				next.Spec.UpdateStrategy = desired.Spec.UpdateStrategy
				diff = true
			}
			if !equality.Semantic.DeepDerivative(desired.Spec.PersistentVolumeClaimRetentionPolicy, cur.Spec.PersistentVolumeClaimRetentionPolicy) {
				next.Spec.PersistentVolumeClaimRetentionPolicy = desired.Spec.PersistentVolumeClaimRetentionPolicy
				diff = true
			}
			if templateDiffers(&cur.Spec.Template, &desired.Spec.Template) {
				next.Spec.Template = *desired.Spec.Template.DeepCopy()
				diff = true
			}
			return diff, nil
		})
}

func templateDiffers(cur, desired *corev1.PodTemplateSpec) bool {
	if cur.Annotations[TemplateHashAnnotation] != desired.Annotations[TemplateHashAnnotation] {
		return true
	}
	// Labels and annotations must match exactly: a label the user removed from
	// spec.podLabels must go, and the API server adds none to a template.
	if !maps.Equal(cur.Labels, desired.Labels) || !maps.Equal(cur.Annotations, desired.Annotations) {
		return true
	}
	return !equality.Semantic.DeepDerivative(desired.Spec, cur.Spec)
}

// immutableStatefulSetChange names the first immutable field in which cur
// differs from desired, or "".
func immutableStatefulSetChange(cur, desired *appsv1.StatefulSet) string {
	switch {
	case !equality.Semantic.DeepEqual(cur.Spec.Selector, desired.Spec.Selector):
		return "spec.selector"
	case cur.Spec.ServiceName != desired.Spec.ServiceName:
		return "spec.serviceName"
	case cur.Spec.PodManagementPolicy != desired.Spec.PodManagementPolicy:
		return "spec.podManagementPolicy"
	case !claimsMatch(cur.Spec.VolumeClaimTemplates, desired.Spec.VolumeClaimTemplates):
		return "spec.volumeClaimTemplates"
	}
	return ""
}

// claimsMatch compares the claim templates by what we set: names, access
// modes, class and requested size (a grown spec.storage.size shows here).
func claimsMatch(cur, desired []corev1.PersistentVolumeClaim) bool {
	if len(cur) != len(desired) {
		return false
	}
	for i := range desired {
		d, c := desired[i], cur[i]
		if d.Name != c.Name || !equality.Semantic.DeepEqual(d.Spec.AccessModes, c.Spec.AccessModes) ||
			!ptr.Equal(d.Spec.StorageClassName, c.Spec.StorageClassName) ||
			!equality.Semantic.DeepEqual(d.Spec.Resources.Requests, c.Spec.Resources.Requests) {
			return false
		}
	}
	return true
}

// EnsurePodDisruptionBudget creates or updates the budget: labels, selector,
// minAvailable and the unhealthy-pod eviction policy.
func (a *Applier) EnsurePodDisruptionBudget(ctx context.Context, desired *policyv1.PodDisruptionBudget) (bool, error) {
	return ensure(ctx, a, a.Client.PolicyV1().PodDisruptionBudgets(desired.Namespace), "PodDisruptionBudget", desired,
		func(cur, next *policyv1.PodDisruptionBudget) (bool, error) {
			if equality.Semantic.DeepEqual(cur.Spec.Selector, desired.Spec.Selector) &&
				equality.Semantic.DeepEqual(cur.Spec.MinAvailable, desired.Spec.MinAvailable) &&
				equality.Semantic.DeepEqual(cur.Spec.MaxUnavailable, desired.Spec.MaxUnavailable) &&
				equality.Semantic.DeepEqual(cur.Spec.UnhealthyPodEvictionPolicy, desired.Spec.UnhealthyPodEvictionPolicy) {
				return false, nil
			}
			next.Spec.Selector = desired.Spec.Selector.DeepCopy()
			next.Spec.MinAvailable = desired.Spec.MinAvailable
			next.Spec.MaxUnavailable = desired.Spec.MaxUnavailable
			next.Spec.UnhealthyPodEvictionPolicy = desired.Spec.UnhealthyPodEvictionPolicy
			return true, nil
		})
}

// EnsureSecret creates the Secret when it does not exist. An existing Secret
// is never modified nor regenerated, ours or a user's: members and clients
// already use what it holds. It must hold every key desired has, or the
// result is a MissingSecretKey.
func (a *Applier) EnsureSecret(ctx context.Context, desired *corev1.Secret) (bool, error) {
	return a.ensureSecret(ctx, desired.Namespace, desired.Name, func() (*corev1.Secret, error) { return desired, nil }, keys(desired))
}

func keys(s *corev1.Secret) []string {
	var out []string
	for k := range s.Data {
		out = append(out, k)
	}
	for k := range s.StringData {
		out = append(out, k)
	}
	return out
}

// ensureSecret reads the Secret first and builds the desired one (which may
// generate key material) only when it is missing.
func (a *Applier) ensureSecret(ctx context.Context, namespace, name string, build func() (*corev1.Secret, error), want []string) (bool, error) {
	c := a.Client.CoreV1().Secrets(namespace)
	check := func(s *corev1.Secret) error {
		for _, k := range want {
			if _, ok := s.Data[k]; !ok {
				return &MissingSecretKey{Name: name, Key: k}
			}
		}
		return nil
	}
	cctx, cancel := a.call(ctx)
	defer cancel()
	cur, err := c.Get(cctx, name, metav1.GetOptions{})
	if err == nil {
		return false, check(cur)
	}
	if !apierrors.IsNotFound(err) {
		return false, err
	}
	desired, err := build()
	if err != nil {
		return false, err
	}
	cctx2, cancel2 := a.call(ctx)
	defer cancel2()
	if _, err := c.Create(cctx2, desired, metav1.CreateOptions{}); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return false, err
		}
		// Someone made it between our read and our create: theirs stands.
		cctx3, cancel3 := a.call(ctx)
		defer cancel3()
		cur, err := c.Get(cctx3, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return false, check(cur)
	}
	return true, nil
}

// EnsureKeyfile creates the keyfile Secret of m with a fresh key when it does
// not exist; the key is generated only then, so it never lingers in memory
// for nothing.
func (a *Applier) EnsureKeyfile(ctx context.Context, m *v1alpha1.Mgors) (bool, error) {
	return a.ensureSecret(ctx, m.Namespace, m.KeyfileSecretName(), func() (*corev1.Secret, error) {
		key, err := GenerateKeyfile()
		if err != nil {
			return nil, err
		}
		return KeyfileSecret(m, key), nil
	}, []string{v1alpha1.KeyfileSecretKey})
}

// EnsureAdminCredentials creates the admin Secret of m with the given user
// name and a fresh password when it does not exist.
func (a *Applier) EnsureAdminCredentials(ctx context.Context, m *v1alpha1.Mgors, username string) (bool, error) {
	return a.ensureSecret(ctx, m.Namespace, m.AdminSecretName(), func() (*corev1.Secret, error) {
		pw, err := GeneratePassword()
		if err != nil {
			return nil, err
		}
		return AdminSecret(m, username, pw), nil
	}, []string{v1alpha1.AdminUsernameSecretKey, v1alpha1.AdminPasswordSecretKey})
}

// EnsureOperatorCredentials creates the Secret of the operator's own user
// with the given user name and a fresh password when it does not exist.
func (a *Applier) EnsureOperatorCredentials(ctx context.Context, m *v1alpha1.Mgors, username string) (bool, error) {
	return a.ensureSecret(ctx, m.Namespace, m.OperatorSecretName(), func() (*corev1.Secret, error) {
		pw, err := GeneratePassword()
		if err != nil {
			return nil, err
		}
		return OperatorSecret(m, username, pw), nil
	}, []string{v1alpha1.AdminUsernameSecretKey, v1alpha1.AdminPasswordSecretKey})
}

// Secret reads a Secret, for the actor that needs the admin credentials or the
// keyfile to talk to the members. Never log what it returns.
func (a *Applier) Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	cctx, cancel := a.call(ctx)
	defer cancel()
	return a.Client.CoreV1().Secrets(namespace).Get(cctx, name, metav1.GetOptions{})
}

// ScaleStatefulSet sets the replicas of m's StatefulSet name (members or
// arbiters). The actor calls it one member at a time, after the reconfig that
// makes the step safe. It reports whether it wrote.
func (a *Applier) ScaleStatefulSet(ctx context.Context, m *v1alpha1.Mgors, name string, replicas int32) (bool, error) {
	c := a.Client.AppsV1().StatefulSets(m.Namespace)
	changed := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		changed = false
		cur, err := bounded(ctx, a, func(ctx context.Context) (*appsv1.StatefulSet, error) {
			return c.Get(ctx, name, metav1.GetOptions{})
		})
		if err != nil {
			return err
		}
		if !OwnedBy(cur, m) {
			return &NotOwned{Kind: "StatefulSet", Name: name}
		}
		if cur.Spec.Replicas != nil && *cur.Spec.Replicas == replicas {
			return nil
		}
		next := cur.DeepCopy()
		next.Spec.Replicas = ptr.To(replicas)
		_, err = bounded(ctx, a, func(ctx context.Context) (*appsv1.StatefulSet, error) {
			return c.Update(ctx, next, metav1.UpdateOptions{})
		})
		changed = err == nil
		return err
	})
	return changed, err
}

// ReplaceStatefulSet deletes m's StatefulSet with orphan propagation, leaving
// its pods and volumes running, and creates desired in its place; the new
// StatefulSet adopts the pods by their labels. This is how an immutable field
// changes (a grown volume claim template after ExpandPVCs). The delete is
// preconditioned on the UID read, so it never removes a newer object.
//
// The garbage collector orphans the pods before the old object goes, so the
// create may find it still there: the result is then a Terminating error, and
// the actor calls again. The new StatefulSet keeps the old one's replicas when
// it still exists; desired must carry the current replicas for a later call.
func (a *Applier) ReplaceStatefulSet(ctx context.Context, m *v1alpha1.Mgors, desired *appsv1.StatefulSet) error {
	c := a.Client.AppsV1().StatefulSets(desired.Namespace)
	terminating := &Terminating{Kind: "StatefulSet", Name: desired.Name}
	cur, err := bounded(ctx, a, func(ctx context.Context) (*appsv1.StatefulSet, error) {
		return c.Get(ctx, desired.Name, metav1.GetOptions{})
	})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return err
	case !OwnedBy(cur, m):
		return &NotOwned{Kind: "StatefulSet", Name: desired.Name}
	case cur.DeletionTimestamp != nil:
		return terminating
	default:
		next := desired.DeepCopy()
		next.Spec.Replicas = cur.Spec.Replicas // replacing never scales
		desired = next
		_, err := bounded(ctx, a, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, c.Delete(ctx, desired.Name, metav1.DeleteOptions{
				PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan),
				Preconditions:     &metav1.Preconditions{UID: &cur.UID},
			})
		})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	_, err = bounded(ctx, a, func(ctx context.Context) (*appsv1.StatefulSet, error) {
		return c.Create(ctx, desired, metav1.CreateOptions{})
	})
	if apierrors.IsAlreadyExists(err) {
		return terminating
	}
	return err
}

// ExpandPVCs raises the storage request of the data claims of the given
// members to size (never lowers it). The StorageClass must allow volume
// expansion; the API server refuses the update otherwise.
func (a *Applier) ExpandPVCs(ctx context.Context, m *v1alpha1.Mgors, ordinals []int32, size resource.Quantity) (bool, error) {
	c := a.Client.CoreV1().PersistentVolumeClaims(m.Namespace)
	changed := false
	for _, o := range ordinals {
		name := PVCName(m, o)
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := bounded(ctx, a, func(ctx context.Context) (*corev1.PersistentVolumeClaim, error) {
				return c.Get(ctx, name, metav1.GetOptions{})
			})
			if err != nil {
				return err
			}
			if cur.Labels[LabelCluster] != m.Name {
				return &NotOwned{Kind: "PersistentVolumeClaim", Name: name}
			}
			if q, ok := cur.Spec.Resources.Requests[corev1.ResourceStorage]; ok && q.Cmp(size) >= 0 {
				return nil
			}
			next := cur.DeepCopy()
			if next.Spec.Resources.Requests == nil {
				next.Spec.Resources.Requests = corev1.ResourceList{}
			}
			next.Spec.Resources.Requests[corev1.ResourceStorage] = size.DeepCopy()
			if _, err := bounded(ctx, a, func(ctx context.Context) (*corev1.PersistentVolumeClaim, error) {
				return c.Update(ctx, next, metav1.UpdateOptions{})
			}); err != nil {
				return err
			}
			changed = true
			return nil
		})
		if err != nil {
			return changed, err
		}
	}
	return changed, nil
}
