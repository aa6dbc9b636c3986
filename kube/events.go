package kube

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// EventComponent is the source of the operator's Kubernetes Events.
const EventComponent = "mgors-operator"

// Reasons of the operator's Kubernetes Events, one per kind of decision, so
// `kubectl get events --field-selector reason=...` finds them.
const (
	EventPhaseChanged  = "PhaseChanged"
	EventMemberAdded   = "MemberAdded"
	EventMemberRemoved = "MemberRemoved"
	EventInitiated     = "Initiated"
	EventUserCreated   = "UserCreated"
	EventReconfigured  = "Reconfigured"
	EventStepDown      = "StepDown"
	EventMajorityLost  = "MajorityLost"
	EventStalled       = "Stalled"
)

// EventScheme knows client-go's built-in types and the Mgors types: the
// recorder resolves the object an Event is about through it, and drops Events
// about kinds it does not know.
func EventScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(v1alpha1.AddToScheme(s))
	return s
}

// NewEventBroadcaster starts a broadcaster that sends Events to the API
// server (each in its object's namespace) as EventComponent, and returns a
// Recorder on it and the function that stops it. The broadcaster aggregates
// and rate-limits repeated Events as client-go does; it stops with ctx too.
func NewEventBroadcaster(ctx context.Context, c kubernetes.Interface) (*Recorder, func()) {
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.CoreV1().Events("")})
	rec := b.NewRecorder(EventScheme(), corev1.EventSource{Component: EventComponent})
	return NewRecorder(rec), b.Shutdown
}

// Recorder records the operator's decisions about a Mgors as Kubernetes
// Events, through typed helpers so that reasons stay few and messages say
// the same things the same way. No helper takes a secret, and every message
// is scrubbed of URI credentials before it leaves.
type Recorder struct {
	rec record.EventRecorder
}

// NewRecorder wraps an EventRecorder (a broadcaster's, or record.FakeRecorder in tests).
func NewRecorder(r record.EventRecorder) *Recorder { return &Recorder{rec: r} }

// userinfo matches the credentials of a mongodb:// or mongodb+srv:// URI.
var userinfo = regexp.MustCompile(`(mongodb(?:\+srv)?://)[^@/\s]*@`)

// Redact removes credentials from any mongodb:// URI in s.
func Redact(s string) string {
	return userinfo.ReplaceAllString(s, "${1}REDACTED@")
}

func (r *Recorder) emit(m runtime.Object, typ, reason, format string, args ...any) {
	if r == nil || r.rec == nil {
		return
	}
	msg := Redact(fmt.Sprintf(format, args...))
	if len(msg) > 1024 { // the API server truncates notes; keep the start, which says what happened
		msg = strings.ToValidUTF8(msg[:1021], "") + "..."
	}
	r.rec.Event(m, typ, reason, msg)
}

// PhaseChanged records a move of the cluster's state machine and why.
func (r *Recorder) PhaseChanged(m *v1alpha1.Mgors, from, to v1alpha1.Phase, why string) {
	if from == "" {
		r.emit(m, corev1.EventTypeNormal, EventPhaseChanged, "phase %s: %s", to, why)
		return
	}
	r.emit(m, corev1.EventTypeNormal, EventPhaseChanged, "phase %s -> %s: %s", from, to, why)
}

// MemberAdded records a member that joined the config, with its votes.
func (r *Recorder) MemberAdded(m *v1alpha1.Mgors, member string, votes int32, configVersion int64) {
	r.emit(m, corev1.EventTypeNormal, EventMemberAdded, "member %s added with %d vote(s), config version %d", member, votes, configVersion)
}

// MemberRemoved records a member that left the config.
func (r *Recorder) MemberRemoved(m *v1alpha1.Mgors, member string, configVersion int64) {
	r.emit(m, corev1.EventTypeNormal, EventMemberRemoved, "member %s removed, config version %d", member, configVersion)
}

// Initiated records the one replSetInitiate of the replica set's life.
func (r *Recorder) Initiated(m *v1alpha1.Mgors, on string, members int) {
	r.emit(m, corev1.EventTypeNormal, EventInitiated, "replica set %s initiated on %s with %d member(s)", m.ReplSetName(), on, members)
}

// UserCreated records a database user the operator created: its name and
// database, never its password.
func (r *Recorder) UserCreated(m *v1alpha1.Mgors, username, db string) {
	r.emit(m, corev1.EventTypeNormal, EventUserCreated, "user %s created in database %s", username, db)
}

// Reconfigured records a replSetReconfig: the change, the new config version,
// and whether it was forced (a Warning, as a forced reconfig may lose writes).
func (r *Recorder) Reconfigured(m *v1alpha1.Mgors, change string, configVersion int64, forced bool) {
	if forced {
		r.emit(m, corev1.EventTypeWarning, EventReconfigured, "forced reconfig to version %d: %s", configVersion, change)
		return
	}
	r.emit(m, corev1.EventTypeNormal, EventReconfigured, "reconfig to version %d: %s", configVersion, change)
}

// StepDown records a primary the operator asked to step down, and why.
func (r *Recorder) StepDown(m *v1alpha1.Mgors, member, why string) {
	r.emit(m, corev1.EventTypeNormal, EventStepDown, "primary %s asked to step down: %s", member, why)
}

// MajorityLost records that fewer than a majority of voting members answer,
// naming the missing ones.
func (r *Recorder) MajorityLost(m *v1alpha1.Mgors, reachable, voters int, missing []string) {
	r.emit(m, corev1.EventTypeWarning, EventMajorityLost, "%d of %d voting members reachable; missing: %s",
		reachable, voters, strings.Join(missing, ", "))
}

// Stalled records that progress waits on something outside the operator, with
// the condition's reason (e.g. a Problem's) and message.
func (r *Recorder) Stalled(m *v1alpha1.Mgors, reason, message string) {
	r.emit(m, corev1.EventTypeWarning, EventStalled, "%s: %s", Reason(reason), message)
}

// Event records an Event of the given reason, for the actor's decisions that
// have no typed helper; the message is scrubbed like the others.
func (r *Recorder) Event(m *v1alpha1.Mgors, warning bool, reason, message string) {
	r.emit(m, eventType(warning), reason, "%s", message)
}

// BackupEvent records an Event about a MgorsBackup, for `kubectl describe mgob`.
func (r *Recorder) BackupEvent(b *v1alpha1.MgorsBackup, warning bool, reason, message string) {
	r.emit(b, eventType(warning), reason, "%s", message)
}

// RestoreEvent records an Event about a MgorsRestore, for `kubectl describe mgor`.
func (r *Recorder) RestoreEvent(rs *v1alpha1.MgorsRestore, warning bool, reason, message string) {
	r.emit(rs, eventType(warning), reason, "%s", message)
}

func eventType(warning bool) string {
	if warning {
		return corev1.EventTypeWarning
	}
	return corev1.EventTypeNormal
}
