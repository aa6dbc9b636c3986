// Package e2e runs the kubelet inside a whole localkube cluster (scheduler,
// controllers, CoreDNS, several Nodes): what a StatefulSet of an operator meets.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/utils/ptr"

	"github.com/mgors/operator/test/localkube/harness"
)

// The test binary doubles as the pods' workload: LOCALKUBE_TEST_SERVE=ADDR serves
// "hello from HOSTNAME", LOCALKUBE_TEST_GET=URL prints what URL answers.
func TestMain(m *testing.M) {
	if url := os.Getenv("LOCALKUBE_TEST_GET"); url != "" {
		c := http.Client{Timeout: 5 * time.Second}
		resp, err := c.Get(url)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		_, _ = io.Copy(os.Stdout, resp.Body)
		_ = resp.Body.Close()
		os.Exit(0)
	}
	if addr := os.Getenv("LOCALKUBE_TEST_SERVE"); addr != "" {
		host, _ := os.Hostname()
		http.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { _, _ = fmt.Fprintf(w, "hello from %s", host) })
		fmt.Println("serving on", addr)
		fmt.Fprintln(os.Stderr, http.ListenAndServe(addr, nil))
		os.Exit(1)
	}
	if os.Getenv("LOCALKUBE_KUBELET_E2E") == "" {
		fmt.Println("kubelet e2e: skipped, set LOCALKUBE_KUBELET_E2E=1 to run it against a localkube cluster")
		os.Exit(m.Run())
	}
	os.Exit(harness.Main(m))
}

func exec(t *testing.T, env *harness.Env, pod string, cmd ...string) (string, error) {
	t.Helper()
	req := env.Client.CoreV1().RESTClient().Post().Resource("pods").Namespace(env.Namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "web", Command: cmd, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(env.Config, "POST", req.URL())
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer // two buffers: the streams are copied concurrently
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	return stdout.String() + stderr.String(), err
}

// A StatefulSet behind a headless Service: its pods spread over the Nodes, find
// each other by their stable DNS names, and a killed pod's container is restarted
// in place.
func TestStatefulSetAcrossNodes(t *testing.T) {
	if os.Getenv("LOCALKUBE_KUBELET_E2E") == "" {
		t.Skip("set LOCALKUBE_KUBELET_E2E=1 to run it against a localkube cluster")
	}
	env := harness.Cluster(t)
	ns := env.Namespace
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	labels := map[string]string{"app": "web"}
	if _, err := env.Client.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: labels, PublishNotReadyAddresses: true,
			Ports: []corev1.ServicePort{{Name: "http", Port: 8080}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To(int32(3)), ServiceName: "web", PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To(int64(5)),
					Volumes: []corev1.Volume{{Name: "testbin", VolumeSource: corev1.VolumeSource{
						HostPath: &corev1.HostPathVolumeSource{Path: filepath.Dir(exe)}}}},
					Containers: []corev1.Container{{
						Name: "web", Image: "debian:12", Command: []string{"/testbin/" + filepath.Base(exe)},
						Env:          []corev1.EnvVar{{Name: "LOCALKUBE_TEST_SERVE", Value: ":8080"}},
						VolumeMounts: []corev1.VolumeMount{{Name: "testbin", MountPath: "/testbin", ReadOnly: true}},
					}},
				},
			},
		},
	}
	if _, err := env.Client.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ready := func() (map[string]*corev1.Pod, bool) {
		pods, err := env.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return nil, false
		}
		out := map[string]*corev1.Pod{}
		for i := range pods.Items {
			p := &pods.Items[i]
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					out[p.Name] = p
				}
			}
		}
		return out, len(out) == 3
	}
	var pods map[string]*corev1.Pod
	for {
		var ok bool
		if pods, ok = ready(); ok {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("StatefulSet not ready: %d of 3 pods", len(pods))
		}
		time.Sleep(500 * time.Millisecond)
	}
	nodes := map[string]bool{}
	for _, p := range pods {
		nodes[p.Spec.NodeName] = true
	}
	t.Logf("pods on %d nodes", len(nodes))
	for pid, rss := range kubeletRSS(env.Dir) {
		t.Logf("kubelet pid %d: %d KiB RSS", pid, rss)
	}

	// By stable DNS name, from one pod to another (CoreDNS and the bridge).
	bin := "/testbin/" + filepath.Base(exe)
	for _, target := range []string{"web-1", "web-2"} {
		url := fmt.Sprintf("http://%s.web.%s.svc.cluster.local:8080/", target, ns)
		var out string
		for i := 0; i < 30; i++ { // DNS records follow the pods by a moment
			out, err = exec(t, env, "web-0", "/usr/bin/env", "LOCALKUBE_TEST_SERVE=", "LOCALKUBE_TEST_GET="+url, bin)
			if err == nil && strings.Contains(out, "hello from "+target) {
				break
			}
			time.Sleep(time.Second)
		}
		if !strings.Contains(out, "hello from "+target) {
			t.Fatalf("web-0 to %s: %q %v", url, out, err)
		}
	}

	kubectlChecks(t, writeKubeconfig(t, env.Config), ns)

	// A killed container is restarted by its kubelet, in the same pod.
	uid := pods["web-1"].UID
	env.KillPod(t, ns, "web-1")
	for {
		p, err := env.Client.CoreV1().Pods(ns).Get(ctx, "web-1", metav1.GetOptions{})
		if err == nil && p.UID == uid && len(p.Status.ContainerStatuses) == 1 &&
			p.Status.ContainerStatuses[0].RestartCount >= 1 && p.Status.ContainerStatuses[0].Ready {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("web-1 was not restarted after its process was killed")
		}
		time.Sleep(500 * time.Millisecond)
	}
	b, err := env.Client.CoreV1().Pods(ns).GetLogs("web-1", &corev1.PodLogOptions{Previous: true}).DoRaw(ctx)
	if err != nil || !strings.Contains(string(b), "serving on :8080") {
		t.Fatalf("logs --previous of web-1: %q %v", b, err)
	}
}

// kubeletRSS finds the cluster's kubelet processes and their resident memory.
func kubeletRSS(dir string) map[int]int {
	out := map[int]int{}
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range cmdlines {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) < 3 || args[1] != "kubelet" || !strings.Contains(string(b), dir) {
			continue
		}
		var pid int
		_, _ = fmt.Sscanf(filepath.Base(filepath.Dir(f)), "%d", &pid)
		status, _ := os.ReadFile(filepath.Join(filepath.Dir(f), "status"))
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				var kib int
				_, _ = fmt.Sscanf(strings.TrimSpace(v), "%d", &kib)
				out[pid] = kib
			}
		}
	}
	return out
}

func get(url string) (string, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
