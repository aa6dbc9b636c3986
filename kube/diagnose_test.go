package kube

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/mgors/operator/kube/api/v1alpha1"
	mgorsfake "github.com/mgors/operator/kube/client/fake"
)

func TestDiagnose(t *testing.T) {
	m := sample(func(m *v1alpha1.Mgors) { m.Spec.Storage.StorageClassName = ptr.To("missing") })
	pod := func(name string, status corev1.PodStatus) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: Labels(m, ComponentMember)}, Status: status}
	}
	unschedulable := pod("db-0", corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/3 nodes are available: 3 Insufficient memory."}}})
	crashing := pod("db-1", corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
		Name:                 "mongod",
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 5m0s"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: "a\nb\nread security.keyFile: permissions on keyfile are too open"}},
	}}})
	pulling := pod("db-2", corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{{
		Name: "keyfile", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "mongo:9"`}}}}})
	healthy := pod("db-3", corev1.PodStatus{Phase: corev1.PodRunning})
	otherCluster := pod("x-0", unschedulable.Status)
	otherCluster.Labels = Labels(sample(func(m *v1alpha1.Mgors) { m.Name = "x" }), ComponentMember)
	claim := pvc(m, 0, "10Gi", true)
	claim.Spec.StorageClassName = ptr.To("missing")
	claim.Status.Phase = corev1.ClaimPending
	bound := pvc(m, 1, "10Gi", true)
	bound.Spec.StorageClassName = ptr.To("missing")
	bound.Status.Phase = corev1.ClaimBound
	noClass := pvc(m, 2, "10Gi", true)
	noClass.Status.Phase = corev1.ClaimPending

	c := fake.NewClientset(unschedulable, crashing, pulling, healthy, otherCluster, claim, bound, noClass)
	got, err := Diagnose(mgorsfake.NewReader(c, nil), m)
	if err != nil {
		t.Fatal(err)
	}
	want := []Problem{
		{Reason: ReasonStorageClassNotFound, Object: "PersistentVolumeClaim/data-db-0",
			Message: `persistentvolumeclaim data-db-0 is pending: storageclass.storage.k8s.io "missing" not found`},
		{Reason: ReasonNoDefaultStorageClass, Object: "PersistentVolumeClaim/data-db-2"},
		{Reason: ReasonPodsUnschedulable, Object: "Pod/db-0", Message: "pod db-0 is unschedulable: 0/3 nodes are available: 3 Insufficient memory."},
		{Reason: ReasonCrashLoopBackOff, Object: "Pod/db-1",
			Message: "pod db-1 container mongod: CrashLoopBackOff: back-off 5m0s; last exit code 1 (Error): a | b | read security.keyFile: permissions on keyfile are too open"},
		{Reason: ReasonImagePull, Object: "Pod/db-2", Message: `pod db-2 container keyfile: ImagePullBackOff: Back-off pulling image "mongo:9"`},
	}
	if len(got) != len(want) {
		t.Fatalf("problems:\n%v\nwant\n%v", got, want)
	}
	for i := range want {
		if got[i].Reason != want[i].Reason || got[i].Object != want[i].Object || (want[i].Message != "" && got[i].Message != want[i].Message) {
			t.Errorf("problem %d = %+v\nwant %+v", i, got[i], want[i])
		}
	}

	// Once the class and a default exist, the claims are no problem.
	c = fake.NewClientset(claim, noClass,
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "missing"}},
		&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "std", Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}}})
	if got, err := Diagnose(mgorsfake.NewReader(c, nil), m); err != nil || len(got) != 0 {
		t.Errorf("problems %v err %v", got, err)
	}
	c = fake.NewClientset()
	failOnce(c, "list", "pods", internal())
	if _, err := Diagnose(mgorsfake.NewReader(c, nil), m); !apierrors.IsInternalError(err) {
		t.Errorf("err = %v", err)
	}
}

func TestClip(t *testing.T) {
	long := strings.Repeat("é", 400) // 800 bytes
	got := clip(long)
	if len(got) > maxMessage || !utf8.ValidString(got) || !strings.HasSuffix(got, "...") {
		t.Errorf("clip gave %d bytes, valid %v", len(got), utf8.ValidString(got))
	}
	if clip("short") != "short" {
		t.Error("clip changed a short message")
	}
}

func TestDiagnoseCreateFailure(t *testing.T) {
	m := sample()
	set := StatefulSet(m, Options{})
	set.UID = "sts-uid"
	set.Status.Replicas = 1
	event := func(name, uid, msg string, at time.Time) *corev1.Event {
		return &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: "ns"},
			InvolvedObject: corev1.ObjectReference{Kind: "StatefulSet", Name: "db", UID: types.UID(uid)},
			Reason:         "FailedCreate", Message: msg, LastTimestamp: metav1.NewTime(at),
		}
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	older := event("e1", "sts-uid", `create Pod db-1 in StatefulSet db failed error: pods "db-1" is forbidden: exceeded quota: q, requested: memory=1Gi`, t0)
	newer := event("e2", "sts-uid", `create Pod db-1 in StatefulSet db failed error: pods "db-1" is forbidden: exceeded quota: q, requested: memory=2Gi`, t0.Add(time.Minute))
	stale := event("e3", "previous-uid", "from the StatefulSet of a previous incarnation", t0.Add(time.Hour))
	c := fake.NewClientset(set, older, newer, stale)
	got, err := Diagnose(mgorsfake.NewReader(c, nil), m)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Reason != ReasonPodCreateFailed || got[0].Object != "StatefulSet/db" || !strings.Contains(got[0].Message, "memory=2Gi") {
		t.Errorf("problems %+v", got)
	}
	// A StatefulSet with all its pods has no creation problem, whatever old Events say.
	full := set.DeepCopy()
	full.Status.Replicas = *full.Spec.Replicas
	c = fake.NewClientset(full, newer)
	if got, err := Diagnose(mgorsfake.NewReader(c, nil), m); err != nil || len(got) != 0 {
		t.Errorf("problems %v err %v", got, err)
	}
}

// The namespaced install may not read storage classes: its pending claims
// are no diagnosis (unknown is not missing), and no error.
func TestDiagnoseWithoutStorageClassRights(t *testing.T) {
	m := sample(func(m *v1alpha1.Mgors) { m.Spec.Storage.StorageClassName = ptr.To("fast") })
	named := pvc(m, 0, "10Gi", true)
	named.Spec.StorageClassName = ptr.To("fast")
	named.Status.Phase = corev1.ClaimPending
	noClass := pvc(m, 1, "10Gi", true)
	noClass.Status.Phase = corev1.ClaimPending
	c := fake.NewClientset(named, noClass)
	c.PrependReactor("*", "storageclasses", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, ErrNotWatched // the namespaced install's reader
	})
	got, err := Diagnose(mgorsfake.NewReader(c, nil), m)
	if err != nil || len(got) != 0 {
		t.Errorf("problems %v err %v", got, err)
	}
}
