package kubelet

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestMultiAttachConflicts(t *testing.T) {
	pv := func(name string, modes ...corev1.PersistentVolumeAccessMode) *corev1.PersistentVolume {
		return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{AccessModes: modes}}
	}
	rwo := pv("pvc-1", corev1.ReadWriteOnce)
	user := func(name, node, claim string, mutate ...func(*corev1.Pod)) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "db", UID: types.UID(name)},
			Spec: corev1.PodSpec{NodeName: node, Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}
		for _, m := range mutate {
			m(&p)
		}
		return p
	}
	deleting := func(p *corev1.Pod) { now := metav1.Now(); p.DeletionTimestamp = &now }
	stopped := func(p *corev1.Pod) {
		p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}
	}
	me := user("db-0", "node-2", "data-db-0")
	for _, tc := range []struct {
		name   string
		pvs    map[string]*corev1.PersistentVolume
		others []corev1.Pod
		want   map[string][]string
	}{
		{"nobody else", map[string]*corev1.PersistentVolume{"data-db-0": rwo}, []corev1.Pod{me}, map[string][]string{}},
		{"old pod on a down node still holds it", map[string]*corev1.PersistentVolume{"data-db-0": rwo},
			[]corev1.Pod{me, user("db-0-old", "node-1", "data-db-0")}, map[string][]string{"pvc-1": {"db-0-old"}}},
		{"gracefully deleted but still running (node down): still held", map[string]*corev1.PersistentVolume{"data-db-0": rwo},
			[]corev1.Pod{user("db-0-old", "node-1", "data-db-0", deleting)}, map[string][]string{"pvc-1": {"db-0-old"}}},
		{"deleted and stopped: free", map[string]*corev1.PersistentVolume{"data-db-0": rwo},
			[]corev1.Pod{user("db-0-old", "node-1", "data-db-0", deleting, stopped)}, map[string][]string{}},
		{"failed pod: free", map[string]*corev1.PersistentVolume{"data-db-0": rwo},
			[]corev1.Pod{user("db-0-old", "node-1", "data-db-0", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed })}, map[string][]string{}},
		{"same node: no attachment needed", map[string]*corev1.PersistentVolume{"data-db-0": rwo},
			[]corev1.Pod{user("reader", "node-2", "data-db-0")}, map[string][]string{}},
		{"unscheduled pod: not attached", map[string]*corev1.PersistentVolume{"data-db-0": rwo},
			[]corev1.Pod{user("pending", "", "data-db-0")}, map[string][]string{}},
		{"ReadWriteMany may be shared", map[string]*corev1.PersistentVolume{"data-db-0": pv("pvc-1", corev1.ReadWriteMany)},
			[]corev1.Pod{user("db-0-old", "node-1", "data-db-0")}, map[string][]string{}},
		{"ReadWriteOncePod is exclusive too", map[string]*corev1.PersistentVolume{"data-db-0": pv("pvc-1", corev1.ReadWriteOncePod)},
			[]corev1.Pod{user("db-0-old", "node-1", "data-db-0")}, map[string][]string{"pvc-1": {"db-0-old"}}},
		{"another claim", map[string]*corev1.PersistentVolume{"data-db-0": rwo},
			[]corev1.Pod{user("db-1", "node-1", "data-db-1")}, map[string][]string{}},
		{"another namespace's claim of the same name", map[string]*corev1.PersistentVolume{"data-db-0": rwo},
			[]corev1.Pod{user("db-0", "node-1", "data-db-0", func(p *corev1.Pod) { p.Namespace, p.UID = "other", "x" })}, map[string][]string{}},
	} {
		if got := multiAttachConflicts(&me, "node-2", tc.pvs, tc.others); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if got, want := multiAttachMessage("pvc-1", []string{"db-0"}), `Waiting for detach for volume "pvc-1" Volume is already used by pod(s) db-0`; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
}
