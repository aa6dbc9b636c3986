package kubelet

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// A pod whose ReadWriteOnce claim a pod on another node still uses waits in
// ContainerCreating with the attach/detach controller's FailedAttachVolume event,
// and starts once that pod is force-deleted.
func TestReadWriteOnceVolumeOnOneNodeAtATime(t *testing.T) {
	e := cluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pvc-rwo-test"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: filepath.Join(e.cfg.Dir, "volumes", "rwo")}},
			ClaimRef:               &corev1.ObjectReference{Namespace: testNS, Name: "rwo"},
		},
	}
	if _, err := e.cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.cs.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
	})
	pvc, err := e.cs.CoreV1().PersistentVolumeClaims(testNS).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "rwo", Namespace: testNS},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeName: pv.Name,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.cs.CoreV1().PersistentVolumeClaims(testNS).Delete(context.Background(), "rwo", metav1.DeleteOptions{})
	})
	pvc.Status.Phase = corev1.ClaimBound // no PV controller here
	if _, err := e.cs.CoreV1().PersistentVolumeClaims(testNS).UpdateStatus(ctx, pvc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	withClaim := func(name, node string) *corev1.Pod {
		p := shellPod(name, "exec sleep 3600")
		p.Spec.NodeName = node
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "rwo"}}}}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		return p
	}
	// A pod bound to a node no kubelet serves: as one on a node that went down.
	old, err := e.cs.CoreV1().Pods(testNS).Create(ctx, withClaim("rwo-old", "gone-node"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.cs.CoreV1().Pods(testNS).Delete(context.Background(), old.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))})
	})
	// What its kubelet last reported before the node went down: running.
	old.Status = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "main",
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}}}
	if old, err = e.cs.CoreV1().Pods(testNS).UpdateStatus(ctx, old, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := e.create(t, withClaim("rwo-new", testNode))
	want := `Waiting for detach for volume "pvc-rwo-test" Volume is already used by pod(s) rwo-old`
	deadline := time.Now().Add(30 * time.Second)
	for {
		evs, err := e.cs.CoreV1().Events(testNS).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=rwo-new,reason=FailedAttachVolume"})
		if err == nil && len(evs.Items) > 0 {
			ev := evs.Items[0]
			if ev.Type != corev1.EventTypeWarning || ev.Message != want || ev.Source.Component != "attachdetach-controller" {
				t.Fatalf("event %s %q from %q, want Warning %q from attachdetach-controller", ev.Type, ev.Message, ev.Source.Component, want)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no FailedAttachVolume event (%v)", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	cur, err := e.cs.CoreV1().Pods(testNS).Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(cur.Status.ContainerStatuses); n > 0 {
		if w := cur.Status.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != "ContainerCreating" {
			t.Fatalf("blocked pod's container %+v, want waiting ContainerCreating", cur.Status.ContainerStatuses[0].State)
		}
	}
	if ps, _ := PodProcesses(e.cfg.Dir, testNS, p.Name); len(ps) > 0 {
		t.Fatalf("blocked pod runs processes %v", ps)
	}
	// A graceful delete leaves a pod whose node is gone as it is; force it.
	if err := e.cs.CoreV1().Pods(testNS).Delete(ctx, old.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}); err != nil {
		t.Fatal(err)
	}
	e.waitPod(t, p.Name, 60*time.Second, "Running once the old pod is gone", isRunningReady)
	if out, err := e.exec(t, p.Name, "main", []string{"/bin/sh", "-c", "touch /data/ok && echo ok"}); err != nil || !strings.Contains(out, "ok") {
		t.Fatalf("the volume in the new pod: %q %v", out, err)
	}
}
