package kube

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/kube/client"
)

// StatusWriter writes the status of Mgors objects (and, with Backup and
// Restore, of MgorsBackups and MgorsRestores) in small transactions: a
// read (the cache's copy when there is one), a change applied to a copy, and
// a write only when the status really changed, carrying the read's
// resourceVersion and retried from a fresh read on conflict. The actor owns
// what the status says; the writer owns how it gets there safely.
type StatusWriter struct {
	// Client is the Mgors API.
	Client client.Interface
	// Timeout bounds each API call; zero means DefaultCallTimeout.
	Timeout time.Duration
	// Cache, when set, is looked at first (the informer cache, Reader): a
	// status it already shows is not written and costs no API call; one
	// that differs is written from the cached copy (or from the answer to
	// our own last write, while the cache lags it), one request, and from
	// a fresh read only when that copy was stale (the API answers Conflict:
	// someone else wrote).
	Cache interface {
		Mgors(namespace, name string) (*v1alpha1.Mgors, error)
	}

	// mine holds, by UID, the answer to our last status write of each
	// object until the cache shows it (lagging): the next write carries
	// that answer's resourceVersion rather than the cache's older one,
	// which the API would refuse with a Conflict.
	mu   sync.Mutex
	mine map[types.UID]written
}

// NewStatusWriter returns a StatusWriter with the default call timeout.
func NewStatusWriter(c client.Interface) *StatusWriter { return &StatusWriter{Client: c} }

// ErrCredentialsInStatus is returned, and nothing written, when a status would
// carry a connection string with credentials: secrets never go into status.
var ErrCredentialsInStatus = errors.New("status connection string carries credentials")

// Update applies mutate to a fresh copy of the status of namespace/name and
// writes it when it differs semantically from what is stored (conditions set
// with SetCondition keep their lastTransitionTime while their status holds,
// so a repeated observation writes nothing). An object with another UID is
// another incarnation of the name: it is skipped, as is a status that did not
// change; both return false and no error. A missing object returns the API's
// NotFound error. mutate may run more than once (on the cached copy, on
// conflicts): it must only set fields, never accumulate.
func (w *StatusWriter) Update(ctx context.Context, namespace, name string, uid types.UID,
	mutate func(*v1alpha1.MgorsStatus)) (bool, error) {
	c := w.Client.Mgorses(namespace)
	timeout := w.Timeout
	if timeout <= 0 {
		timeout = DefaultCallTimeout
	}
	var cached *v1alpha1.Mgors // the first attempt's base, when the cache has the object
	if w.Cache != nil {
		if cur, err := w.Cache.Mgors(namespace, name); err == nil && (uid == "" || cur.UID == uid) {
			if mine := w.lagging(cur); mine != nil {
				cur = mine // the cache does not show our last write yet: its answer is the newer
			}
			next := cur.Status.DeepCopy()
			mutate(next)
			if equality.Semantic.DeepEqual(cur.Status, *next) {
				return false, nil
			}
			cached = cur
		}
	}
	changed := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		changed = false
		cur := cached
		cached = nil
		if cur == nil {
			gctx, cancel := context.WithTimeout(ctx, timeout)
			var err error
			cur, err = c.Get(gctx, name, metav1.GetOptions{})
			cancel()
			if err != nil {
				return err
			}
		}
		if uid != "" && cur.UID != uid {
			return nil
		}
		next := cur.DeepCopy()
		mutate(&next.Status)
		if equality.Semantic.DeepEqual(cur.Status, next.Status) {
			return nil
		}
		if hasCredentials(next.Status.ConnectionString) || hasCredentials(next.Status.ExternalConnectionString) {
			return ErrCredentialsInStatus
		}
		uctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		got, err := c.UpdateStatus(uctx, next, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		w.wrote(cur.ResourceVersion, got)
		changed = true
		return nil
	})
	return changed, err
}

// written is the answer to a status write, kept until the cache shows it.
type written struct {
	base string // the resourceVersion the write carried
	obj  *v1alpha1.Mgors
}

// wrote keeps the answer to a write from base, when there is a cache to lag it.
func (w *StatusWriter) wrote(base string, got *v1alpha1.Mgors) {
	if w.Cache == nil || got == nil || got.UID == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.mine == nil {
		w.mine = map[types.UID]written{}
	}
	w.mine[got.UID] = written{base: base, obj: got}
}

// lagging is the answer to our last write of cur's object while the cache
// still shows cur at the resourceVersion that write replaced; nil (and
// forgotten) once the cache shows anything else: our write, or a later one.
func (w *StatusWriter) lagging(cur *v1alpha1.Mgors) *v1alpha1.Mgors {
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.mine[cur.UID]
	if !ok {
		return nil
	}
	if cur.ResourceVersion == e.base {
		return e.obj
	}
	delete(w.mine, cur.UID)
	return nil
}

// Backup writes st as the status of the MgorsBackup b (a copy the caller
// read, from the cache or the API): nothing when st equals b.Status
// semantically, else an update of the status subresource. A backup gone (the
// API's NotFound) is no error: there is nothing to report to. On a conflict
// it reads the backup again and writes st over the fresh copy once (again
// nothing when that copy already holds st, or when it is another
// incarnation of the name, another UID). Every call is bounded by ctx and
// the writer's Timeout; b is never modified.
func (w *StatusWriter) Backup(ctx context.Context, b *v1alpha1.MgorsBackup, st v1alpha1.MgorsBackupStatus) error {
	return writeStatusOf(ctx, w.timeout(), w.Client.MgorsBackups(b.Namespace), b, v1alpha1.BackupKind,
		func(x *v1alpha1.MgorsBackup) any { return x.Status }, st,
		func(x *v1alpha1.MgorsBackup) *v1alpha1.MgorsBackup {
			n := x.DeepCopy()
			n.Status = *st.DeepCopy()
			return n
		})
}

// Restore writes st as the status of the MgorsRestore r (a copy the caller
// read, from the cache or the API), as Backup does for a MgorsBackup.
func (w *StatusWriter) Restore(ctx context.Context, r *v1alpha1.MgorsRestore, st v1alpha1.MgorsRestoreStatus) error {
	return writeStatusOf(ctx, w.timeout(), w.Client.MgorsRestores(r.Namespace), r, v1alpha1.RestoreKind,
		func(x *v1alpha1.MgorsRestore) any { return x.Status }, st,
		func(x *v1alpha1.MgorsRestore) *v1alpha1.MgorsRestore {
			n := x.DeepCopy()
			n.Status = *st.DeepCopy()
			return n
		})
}

func (w *StatusWriter) timeout() time.Duration {
	if w.Timeout <= 0 {
		return DefaultCallTimeout
	}
	return w.Timeout
}

// statusClient is what writeStatusOf needs of a typed client.
type statusClient[T metav1.Object] interface {
	UpdateStatus(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
}

// writeStatusOf writes want as obj's status (statusOf reads one, with
// copies obj with want as its status), as StatusWriter.Backup says.
func writeStatusOf[T metav1.Object](ctx context.Context, timeout time.Duration, c statusClient[T], obj T, kind string,
	statusOf func(T) any, want any, with func(T) T) error {
	if equality.Semantic.DeepEqual(statusOf(obj), want) {
		return nil
	}
	write := func(cur T) error {
		uctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		_, err := c.UpdateStatus(uctx, with(cur), metav1.UpdateOptions{})
		return err
	}
	err := write(obj)
	if apierrors.IsConflict(err) {
		gctx, cancel := context.WithTimeout(ctx, timeout)
		cur, gerr := c.Get(gctx, obj.GetName(), metav1.GetOptions{})
		cancel()
		switch {
		case gerr != nil:
			err = gerr
		case obj.GetUID() != "" && cur.GetUID() != obj.GetUID():
			return nil // another object of the same name: not ours to report on
		case equality.Semantic.DeepEqual(statusOf(cur), want):
			return nil
		default:
			err = write(cur)
		}
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("writing the status of %s %s/%s: %w", kind, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// hasCredentials reports whether a mongodb:// URI names a user or password.
func hasCredentials(uri string) bool {
	if uri == "" {
		return false
	}
	u, err := url.Parse(uri)
	if err != nil {
		return strings.Contains(uri, "@") // unparsable: refuse anything that looks like userinfo
	}
	return u.User != nil
}

// The API server's rule for a condition's reason (metav1.Condition).
var reasonPattern = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

// maxConditionMessage is the schema's bound on a condition message.
const maxConditionMessage = 32768

// Reason returns s when it is a valid CamelCase condition reason, and
// otherwise s turned into one ("majority lost" → "MajorityLost"), so a status
// write never fails validation over a reason; "Unknown" if nothing is left.
func Reason(s string) string {
	if reasonPattern.MatchString(s) && len(s) <= 1024 {
		return s
	}
	var b strings.Builder
	upper := true
	for _, r := range s {
		if r > unicode.MaxASCII || !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			upper = true
			continue
		}
		if b.Len() == 0 && !unicode.IsLetter(r) {
			continue
		}
		if upper {
			r = unicode.ToUpper(r)
			upper = false
		}
		b.WriteRune(r)
	}
	out := b.String()
	if len(out) > 1024 {
		out = out[:1024]
	}
	if out == "" {
		return "Unknown"
	}
	return out
}

// SetCondition sets a condition of the status for the given generation of the
// spec. Its lastTransitionTime changes only when its status does, so setting
// the same condition again is no change for Update.
func SetCondition(s *v1alpha1.MgorsStatus, generation int64, typ string, status metav1.ConditionStatus, reason, message string) bool {
	if len(message) > maxConditionMessage {
		message = strings.ToValidUTF8(message[:maxConditionMessage-3], "") + "..."
	}
	return meta.SetStatusCondition(&s.Conditions, metav1.Condition{
		Type:               typ,
		Status:             status,
		ObservedGeneration: generation,
		Reason:             Reason(reason),
		Message:            message,
	})
}

// RemoveCondition removes a condition of the status, reporting whether it was there.
func RemoveCondition(s *v1alpha1.MgorsStatus, typ string) bool {
	return meta.RemoveStatusCondition(&s.Conditions, typ)
}

// ReadyString is status.ready: healthy members over desired members, "2/3".
func ReadyString(healthy, desired int32) string {
	return fmt.Sprintf("%d/%d", healthy, desired)
}

// SetScale sets what the scale subresource reads: the number of member pods
// and their selector.
func SetScale(s *v1alpha1.MgorsStatus, m *v1alpha1.Mgors, replicas int32) {
	s.Replicas = replicas
	s.Selector = PodSelector(m)
}

// SetMembers sets the members table and the values derived from it:
// status.ready (healthy data-bearing members over spec.members) and
// status.primary.
func SetMembers(s *v1alpha1.MgorsStatus, m *v1alpha1.Mgors, members []v1alpha1.MemberStatus) {
	s.Members = members
	var healthy int32
	s.Primary = ""
	for _, mb := range members {
		if mb.State == "PRIMARY" {
			s.Primary = mb.Name
		}
		if mb.Healthy && mb.State != "ARBITER" {
			healthy++
		}
	}
	s.Ready = ReadyString(healthy, m.Spec.Members)
}
