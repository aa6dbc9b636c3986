package kubelet

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// testBinary is the test binary's directory, mounted into pods at /testbin so that
// they can run it as their workload.
func testBinary(t *testing.T) (dir, name string) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(exe), filepath.Base(exe)
}

// servePod is a pod whose container serves HTTP on addr with the test binary.
func servePod(t *testing.T, name, addr string) *corev1.Pod {
	dir, bin := testBinary(t)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS},
		Spec: corev1.PodSpec{
			NodeName:                      testNode,
			TerminationGracePeriodSeconds: ptr.To(int64(5)),
			Volumes: []corev1.Volume{{Name: "testbin", VolumeSource: corev1.VolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: dir}}}},
			Containers: []corev1.Container{{
				Name: "web", Image: "localkube/testbin",
				Command:      []string{"/testbin/" + bin},
				Env:          []corev1.EnvVar{{Name: "LOCALKUBE_TEST_SERVE", Value: addr}},
				VolumeMounts: []corev1.VolumeMount{{Name: "testbin", MountPath: "/testbin", ReadOnly: true}},
			}},
		},
	}
}

func shellPod(name string, script string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS},
		Spec: corev1.PodSpec{
			NodeName:                      testNode,
			TerminationGracePeriodSeconds: ptr.To(int64(2)),
			Containers: []corev1.Container{{
				Name: "main", Image: "debian:12", Command: []string{"/bin/sh", "-c", script},
			}},
		},
	}
}

func (e *sharedEnv) create(t *testing.T, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := e.cs.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s: %v", pod.Name, err)
	}
	t.Cleanup(func() { e.deleteAndWait(t, p.Namespace, p.Name) })
	return p
}

func (e *sharedEnv) deleteAndWait(t *testing.T, ns, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := e.cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return
	}
	for ctx.Err() == nil {
		if _, err := e.cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Errorf("pod %s/%s was not removed", ns, name)
}

// waitPod polls a pod until cond holds, failing after timeout.
func (e *sharedEnv) waitPod(t *testing.T, name string, timeout time.Duration, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last *corev1.Pod
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		p, err := e.cs.CoreV1().Pods(testNS).Get(ctx, name, metav1.GetOptions{})
		cancel()
		if err == nil {
			last = p
			if cond(p) {
				return p
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("pod %s: timed out waiting for %s; last status: %+v\nkubelet log:\n%s", name, what, last.Status, e.kubeletLog(name))
	return nil
}

// kubeletLog is the end of what the kubelet logged about a pod, for failures.
func (e *sharedEnv) kubeletLog(pod string) string {
	b, _ := os.ReadFile(filepath.Join(e.root, "kubelet.log"))
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, `"`+testNS+"/"+pod+`"`) {
			lines = append(lines, l)
		}
	}
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n")
}

func isRunningReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func httpGet(url string) (string, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// httpGetOnceListening polls url for up to 20 s: a pod without a readiness
// probe is Ready once started, not yet listening.
func httpGetOnceListening(url string) (got string, err error) {
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if got, err = httpGet(url); err == nil {
			break
		}
	}
	return got, err
}

// Two pods bind the same localhost port, get distinct addresses, answer the host
// at their pod IPs, and reach each other.
func TestPodsHaveTheirOwnNetwork(t *testing.T) {
	e := cluster(t)
	a := e.create(t, servePod(t, "net-a", "0.0.0.0:8080"))
	b := e.create(t, servePod(t, "net-b", "127.0.0.1:8080"))
	a = e.waitPod(t, a.Name, 60*time.Second, "Running and Ready", isRunningReady)
	b = e.waitPod(t, b.Name, 60*time.Second, "Running and Ready", isRunningReady)
	if a.Status.PodIP == "" || a.Status.PodIP == b.Status.PodIP {
		t.Fatalf("pod IPs %q and %q: want two distinct addresses", a.Status.PodIP, b.Status.PodIP)
	}
	got, err := httpGetOnceListening("http://" + a.Status.PodIP + ":8080/")
	if err != nil || got != "hello from net-a" {
		t.Fatalf("host to pod a: %q, %v", got, err)
	}
	// b listens on its own loopback only: not reachable from outside, yet running.
	if _, err := httpGet("http://" + b.Status.PodIP + ":8080/"); err == nil {
		t.Fatalf("pod b's loopback-only server answered on its pod IP")
	}
	for _, p := range []*corev1.Pod{a, b} {
		if p.Status.ContainerStatuses[0].RestartCount != 0 {
			t.Fatalf("pod %s restarted: both pods must hold 127.0.0.1:8080 at once", p.Name)
		}
	}
	out, err := e.exec(t, b.Name, "web", []string{"/testbin/" + filepath.Base(os.Args[0])},
		"LOCALKUBE_TEST_GET=http://"+a.Status.PodIP+":8080/")
	if err != nil || !strings.Contains(out, "hello from net-a") {
		t.Fatalf("pod b to pod a: %q, %v", out, err)
	}
	out, err = e.exec(t, b.Name, "web", []string{"/testbin/" + filepath.Base(os.Args[0])},
		"LOCALKUBE_TEST_GET=http://127.0.0.1:8080/")
	if err != nil || !strings.Contains(out, "hello from net-b") {
		t.Fatalf("pod b to its own localhost: %q, %v", out, err)
	}
	_ = fmt.Sprint()
}

// A pod on the node's network has the node's address, name and hosts file.
func TestHostNetworkPod(t *testing.T) {
	e := cluster(t)
	pod := shellPod("hostnet", `hostname; echo "$HOSTNAME"; cat /etc/hosts; echo end; sleep 3600`)
	pod.Spec.HostNetwork = true
	p := e.create(t, pod)
	p = e.waitPod(t, p.Name, 60*time.Second, "Running", isRunningReady)
	if p.Status.PodIP != testGateway {
		t.Fatalf("podIP %q, want the node IP %s", p.Status.PodIP, testGateway)
	}
	host, _ := os.Hostname()
	hosts, _ := os.ReadFile("/etc/hosts")
	want := host + "\n" + host + "\n" + string(hosts) + "end\n"
	var got string
	for i := 0; i < 50; i++ {
		if got = e.logs(t, p.Name, "main", false); strings.HasSuffix(got, "end\n") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got != want {
		t.Fatalf("hostNetwork pod saw %q, want %q", got, want)
	}
}
