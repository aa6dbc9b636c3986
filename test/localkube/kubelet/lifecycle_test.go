package kubelet

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func (e *sharedEnv) logs(t *testing.T, pod, container string, previous bool) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b, err := e.cs.CoreV1().Pods(testNS).GetLogs(pod, &corev1.PodLogOptions{Container: container, Previous: previous}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("logs of %s/%s (previous=%v): %v", pod, container, previous, err)
	}
	return string(b)
}

// A crashing container is restarted with back-off, its restart count rises, and
// the previous run's log and exit code stay available.
func TestCrashingContainerIsRestarted(t *testing.T) {
	e := cluster(t)
	p := e.create(t, shellPod("crash", "echo run; echo bye > /dev/termination-log; sleep 0.2; exit 3"))
	p = e.waitPod(t, p.Name, 60*time.Second, "restartCount >= 2", func(p *corev1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 2
	})
	cs := p.Status.ContainerStatuses[0]
	last := cs.LastTerminationState.Terminated
	if last == nil || last.ExitCode != 3 || last.Reason != "Error" || last.Message != "bye\n" {
		t.Fatalf("lastState: %+v, want terminated with exit code 3, reason Error, message bye", cs.LastTerminationState)
	}
	if p.Status.Phase != corev1.PodRunning {
		t.Fatalf("phase %s, want Running for a restartPolicy Always pod in back-off", p.Status.Phase)
	}
	if got := e.logs(t, p.Name, "main", true); got != "run\n" {
		t.Fatalf("previous log %q, want %q", got, "run\n")
	}
	logs, _ := filepath.Glob(filepath.Join(e.cfg.Dir, "nodes", testNode, "pods", string(p.UID), "logs", "main", "*.log"))
	if len(logs) > 2 {
		t.Fatalf("logs of %d runs kept, want the current and the previous only: %v", len(logs), logs)
	}
	// The kubelet's Events tell the story, as `kubectl describe` shows it.
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		evs, err := e.cs.CoreV1().Events(testNS).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=crash"})
		cancel()
		reasons := map[string]bool{}
		if err == nil {
			for _, ev := range evs.Items {
				reasons[ev.Reason] = true
			}
		}
		if reasons["Created"] && reasons["Started"] && reasons["BackOff"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("events %v (%v): want Created, Started and BackOff", reasons, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Init containers run to completion in order before the app containers, and a
// pod whose containers all succeed under restartPolicy Never ends Succeeded.
func TestInitContainersRunFirst(t *testing.T) {
	e := cluster(t)
	pod := shellPod("init", "cat /initdir/order; stat -f -c %T /initdir")
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	// In memory: a tmpfs shared by the pod's containers.
	pod.Spec.Volumes = []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}}}
	mount := []corev1.VolumeMount{{Name: "work", MountPath: "/initdir"}}
	pod.Spec.Containers[0].VolumeMounts = mount
	for _, n := range []string{"first", "second"} {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{
			Name: n, Image: "debian:12", Command: []string{"/bin/sh", "-c", "sleep 0.3; echo " + n + " >> /initdir/order"}, VolumeMounts: mount,
		})
	}
	p := e.create(t, pod)
	p = e.waitPod(t, p.Name, 60*time.Second, "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	if got := e.logs(t, p.Name, "main", false); got != "first\nsecond\ntmpfs\n" {
		t.Fatalf("main saw %q, want the init containers' lines in order on a tmpfs", got)
	}
	e.deleteAndWait(t, testNS, p.Name)
	if mounts, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mounts), string(p.UID)) {
		t.Fatalf("mounts of the deleted pod remain:\n%s", mounts)
	}
	for _, s := range p.Status.InitContainerStatuses {
		if s.State.Terminated == nil || s.State.Terminated.Reason != "Completed" {
			t.Fatalf("init container %s: %+v, want terminated Completed", s.Name, s.State)
		}
	}
}

// runAsUser, runAsGroup, supplementalGroups and fsGroup are honoured; runAsNonRoot
// refuses a container that would run as root.
func TestSecurityContext(t *testing.T) {
	e := cluster(t)
	pod := shellPod("ids", "id -u; id -g; id -G; stat -c %g /data; touch /data/f && stat -c %g /data/f; sleep 3600")
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{
		RunAsUser: ptr.To(int64(1234)), RunAsGroup: ptr.To(int64(2345)),
		FSGroup: ptr.To(int64(3456)), SupplementalGroups: []int64{4567},
	}
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	p := e.create(t, pod)
	e.waitPod(t, p.Name, 60*time.Second, "Running", isRunningReady)
	var got string
	for i := 0; i < 50; i++ {
		if got = e.logs(t, p.Name, "main", false); strings.Count(got, "\n") >= 5 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	want := "1234\n2345\n2345 3456 4567\n3456\n3456\n"
	if got != want {
		t.Fatalf("ids %q, want %q", got, want)
	}

	ro := shellPod("readonly", "touch /etc/x 2>/dev/null && echo etc-writable; touch /tmp/x 2>/dev/null && echo tmp-writable; touch /data/x && echo volume-writable; sleep 3600")
	ro.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	ro.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	ro.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr.To(true)}
	rp := e.create(t, ro)
	e.waitPod(t, rp.Name, 60*time.Second, "Running", isRunningReady)
	for i := 0; i < 50; i++ {
		if got = e.logs(t, rp.Name, "main", false); got != "" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got != "volume-writable\n" {
		t.Fatalf("readOnlyRootFilesystem: %q, want only the volume writable", got)
	}

	root := shellPod("nonroot", "sleep 3600")
	root.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{RunAsNonRoot: ptr.To(true)}
	r := e.create(t, root)
	r = e.waitPod(t, r.Name, 30*time.Second, "CreateContainerConfigError", func(p *corev1.Pod) bool {
		return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil &&
			p.Status.ContainerStatuses[0].State.Waiting.Reason == "CreateContainerConfigError"
	})
	if msg := r.Status.ContainerStatuses[0].State.Waiting.Message; !strings.Contains(msg, "runAsNonRoot") {
		t.Fatalf("waiting message %q does not explain runAsNonRoot", msg)
	}
}

// A file written to a PersistentVolumeClaim survives the pod; a deleted pod's
// processes are gone and the pod object is removed.
func TestVolumeSurvivesPodAndProcessesEnd(t *testing.T) {
	e := cluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pvDir := filepath.Join(e.cfg.Dir, "volumes", "pv-test")
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-test"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: pvDir}},
			ClaimRef:               &corev1.ObjectReference{Namespace: testNS, Name: "data"},
		},
	}
	if _, err := e.cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.cs.CoreV1().PersistentVolumes().Delete(context.Background(), "pv-test", metav1.DeleteOptions{})
	})
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: testNS},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, VolumeName: "pv-test",
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	created, err := e.cs.CoreV1().PersistentVolumeClaims(testNS).Create(ctx, pvc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.cs.CoreV1().PersistentVolumeClaims(testNS).Delete(context.Background(), "data", metav1.DeleteOptions{})
	})
	// No PV controller runs in this test cluster: bind the claim by hand.
	created.Status.Phase = corev1.ClaimBound
	if _, err := e.cs.CoreV1().PersistentVolumeClaims(testNS).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	withClaim := func(name, script string) *corev1.Pod {
		p := shellPod(name, script)
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data/db"}}
		return p
	}
	w := e.create(t, withClaim("writer", "echo kept > /data/db/file; sleep 3600"))
	e.waitPod(t, w.Name, 60*time.Second, "Running", isRunningReady)
	pids, err := PodProcesses(e.cfg.Dir, testNS, w.Name)
	if err != nil || len(pids) != 1 {
		t.Fatalf("PodProcesses: %v, %v; want one process", pids, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if b, err := os.ReadFile(filepath.Join(pvDir, "file")); err == nil && string(b) == "kept\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pod's write did not land in the volume directory")
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.deleteAndWait(t, testNS, w.Name)
	if _, err := procStartTicks(pids[0]); err == nil { // gone or a zombie
		t.Fatalf("process %d of the deleted pod still runs", pids[0])
	}
	reader := withClaim("reader", "cat /data/db/file")
	reader.Spec.RestartPolicy = corev1.RestartPolicyNever
	r := e.create(t, reader)
	e.waitPod(t, r.Name, 60*time.Second, "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	if got := e.logs(t, r.Name, "main", false); got != "kept\n" {
		t.Fatalf("the next pod read %q, want %q", got, "kept\n")
	}
}

// postStart runs before the container counts as started; preStop runs before the
// container is stopped on deletion.
func TestLifecycleHooks(t *testing.T) {
	e := cluster(t)
	hostDir := filepath.Join(e.root, "hooks")
	pod := shellPod("hooks", "while [ ! -e /tmp/started ]; do sleep 0.1; done; cat /tmp/started; sleep 3600")
	pod.Spec.Volumes = []corev1.Volume{{Name: "out", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
		Path: hostDir, Type: ptr.To(corev1.HostPathDirectoryOrCreate)}}}}
	c := &pod.Spec.Containers[0]
	c.VolumeMounts = []corev1.VolumeMount{{Name: "out", MountPath: "/out"}}
	c.Lifecycle = &corev1.Lifecycle{
		PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c", "echo post-start > /tmp/started"}}},
		PreStop:   &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c", "echo pre-stop > /out/stopped"}}},
	}
	p := e.create(t, pod)
	e.waitPod(t, p.Name, 60*time.Second, "Running", isRunningReady)
	var got string
	for i := 0; i < 50; i++ {
		if got = e.logs(t, p.Name, "main", false); got != "" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got != "post-start\n" {
		t.Fatalf("the container saw %q from its postStart hook", got)
	}
	e.deleteAndWait(t, testNS, p.Name)
	if b, err := os.ReadFile(filepath.Join(hostDir, "stopped")); err != nil || string(b) != "pre-stop\n" {
		t.Fatalf("preStop hook left %q (%v)", b, err)
	}
}

// A sidecar (an init container with restartPolicy Always) starts before the next
// init container, runs beside the app container, and stops when the app is done.
func TestSidecar(t *testing.T) {
	e := cluster(t)
	always := corev1.ContainerRestartPolicyAlways
	pod := shellPod("sidecar", "cat /shared/setup; sleep 1")
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	pod.Spec.Volumes = []corev1.Volume{{Name: "shared", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	mount := []corev1.VolumeMount{{Name: "shared", MountPath: "/shared"}}
	pod.Spec.Containers[0].VolumeMounts = mount
	pod.Spec.InitContainers = []corev1.Container{
		{Name: "side", Image: "debian:12", RestartPolicy: &always, VolumeMounts: mount,
			Command:      []string{"/bin/sh", "-c", "echo side > /shared/side; exec sleep 3600"},
			StartupProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-e", "/shared/side"}}}, PeriodSeconds: 1}},
		{Name: "setup", Image: "debian:12", VolumeMounts: mount,
			Command: []string{"/bin/sh", "-c", "cat /shared/side > /shared/setup"}},
	}
	p := e.create(t, pod)
	p = e.waitPod(t, p.Name, 60*time.Second, "Succeeded", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	if got := e.logs(t, p.Name, "main", false); got != "side\n" {
		t.Fatalf("main read %q, want what the sidecar wrote before setup ran", got)
	}
	side := p.Status.InitContainerStatuses[0]
	if side.Name != "side" || side.State.Terminated == nil || side.RestartCount != 0 {
		t.Fatalf("sidecar status %+v: want terminated after the app, never restarted", side)
	}
}
