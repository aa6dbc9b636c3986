package kube

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/tools/reference"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

func TestRecorderHelpers(t *testing.T) {
	m := sample()
	for _, tc := range []struct {
		name string
		emit func(*Recorder)
		want string
	}{
		{"phase", func(r *Recorder) {
			r.PhaseChanged(m, v1alpha1.PhaseProvisioning, v1alpha1.PhaseInitiating, "all members answer")
		},
			"Normal PhaseChanged phase Provisioning -> Initiating: all members answer"},
		{"first phase", func(r *Recorder) { r.PhaseChanged(m, "", v1alpha1.PhaseProvisioning, "new cluster") },
			"Normal PhaseChanged phase Provisioning: new cluster"},
		{"added", func(r *Recorder) { r.MemberAdded(m, "db-3", 0, 5) },
			"Normal MemberAdded member db-3 added with 0 vote(s), config version 5"},
		{"removed", func(r *Recorder) { r.MemberRemoved(m, "db-4", 6) }, "Normal MemberRemoved member db-4 removed, config version 6"},
		{"initiated", func(r *Recorder) { r.Initiated(m, "db-0", 3) }, "Normal Initiated replica set db initiated on db-0 with 3 member(s)"},
		{"user", func(r *Recorder) { r.UserCreated(m, "admin", "admin") }, "Normal UserCreated user admin created in database admin"},
		{"reconfig", func(r *Recorder) { r.Reconfigured(m, "db-2 votes 0 -> 1", 7, false) },
			"Normal Reconfigured reconfig to version 7: db-2 votes 0 -> 1"},
		{"forced", func(r *Recorder) { r.Reconfigured(m, "keep db-0", 100007, true) },
			"Warning Reconfigured forced reconfig to version 100007: keep db-0"},
		{"stepdown", func(r *Recorder) { r.StepDown(m, "db-0", "rolling restart") },
			"Normal StepDown primary db-0 asked to step down: rolling restart"},
		{"majority", func(r *Recorder) { r.MajorityLost(m, 1, 3, []string{"db-1", "db-2"}) },
			"Warning MajorityLost 1 of 3 voting members reachable; missing: db-1, db-2"},
		{"stalled", func(r *Recorder) {
			r.Stalled(m, ReasonStorageClassNotFound, `storageclass.storage.k8s.io "x" not found`)
		},
			`Warning Stalled StorageClassNotFound: storageclass.storage.k8s.io "x" not found`},
		{"credentials scrubbed", func(r *Recorder) {
			r.Stalled(m, "Unreachable", "dial mongodb://admin:s3cret@db-0.db-svc:27017/?replicaSet=db failed")
		}, "Warning Stalled Unreachable: dial mongodb://REDACTED@db-0.db-svc:27017/?replicaSet=db failed"},
	} {
		fr := record.NewFakeRecorder(1)
		tc.emit(NewRecorder(fr))
		if got := <-fr.Events; got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
	var nilRec *Recorder
	nilRec.Initiated(m, "db-0", 3) // a nil Recorder records nothing and does not panic
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"mongodb+srv://u:p@h/x":             "mongodb+srv://REDACTED@h/x",
		"mongodb://h0,h1/?replicaSet=rs":    "mongodb://h0,h1/?replicaSet=rs",
		"a mongodb://u@h b mongodb://x:y@z": "a mongodb://REDACTED@h b mongodb://REDACTED@z",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEventSchemeResolvesMgors(t *testing.T) {
	m := sample() // no TypeMeta, as objects from typed clients often come
	ref, err := reference.GetReference(EventScheme(), m)
	if err != nil {
		t.Fatal(err)
	}
	if ref.Kind != "Mgors" || ref.APIVersion != "mgors.io/v1alpha1" || ref.UID != m.UID {
		t.Errorf("reference %+v", ref)
	}
	if _, err := reference.GetReference(EventScheme(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}); err != nil {
		t.Errorf("built-in kinds: %v", err)
	}
}

// BackupEvent and RestoreEvent are about the MgorsBackup or MgorsRestore,
// scrubbed like the others.
func TestRecorderBackupAndRestoreEvents(t *testing.T) {
	b := &v1alpha1.MgorsBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "nightly", UID: "b-1"}}
	r := &v1alpha1.MgorsRestore{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "back", UID: "r-1"}}
	fr := record.NewFakeRecorder(2)
	rec := NewRecorder(fr)
	rec.BackupEvent(b, false, "BackupStarted", "from db-1")
	rec.RestoreEvent(r, true, "RestoreFailed", "dial mongodb://u:p@db-0:27017 failed")
	for _, want := range []string{"Normal BackupStarted from db-1", "Warning RestoreFailed dial mongodb://REDACTED@db-0:27017 failed"} {
		if got := <-fr.Events; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	ref, err := reference.GetReference(EventScheme(), r)
	if err != nil || ref.Kind != v1alpha1.RestoreKind || ref.UID != r.UID {
		t.Errorf("reference %+v, %v", ref, err)
	}
	var nilRec *Recorder
	nilRec.RestoreEvent(r, false, "RestoreStarted", "x") // records nothing, does not panic
}

func TestEventBroadcasterSendsToAPI(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := fake.NewClientset()
	rec, stop := NewEventBroadcaster(ctx, c)
	defer stop()
	m := sample()
	rec.Initiated(m, "db-0", 3)
	var got []corev1.Event
	// The broadcaster writes asynchronously: wait for the outcome, not for a time.
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := c.CoreV1().Events("ns").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		got = l.Items
		return len(got) > 0, nil
	})
	if err != nil {
		t.Fatalf("no event reached the API: %v", err)
	}
	e := got[0]
	if e.Source.Component != EventComponent || e.Reason != EventInitiated || e.InvolvedObject.Kind != "Mgors" ||
		e.InvolvedObject.Name != "db" || !strings.Contains(e.Message, "initiated on db-0") {
		t.Errorf("event %+v", e)
	}
}
