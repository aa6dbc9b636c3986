package localkube_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/mgors/operator/test/localkube/cluster"
	"github.com/mgors/operator/test/localkube/harness"
)

func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }

// eventually polls cond; the deadline bounds waiting for controllers and kubelets,
// it is not what the tests assert.
func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// webServer serves /data over HTTP on 8080 with the host's python3: an image the
// kubelet does not know runs on the host's root, seen through the pod's overlay.
func webServer() corev1.Container {
	return corev1.Container{
		Name:    "web",
		Image:   "python:3",
		Command: []string{"python3", "-m", "http.server", "8080", "--directory", "/data"},
		Ports:   []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}},
			PeriodSeconds: 1,
		},
		VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
	}
}

func kubectl(t *testing.T, env *harness.Env, args ...string) string {
	t.Helper()
	out, err := tryKubectl(env, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tryKubectl is kubectl whose failure is the caller's to judge.
func tryKubectl(env *harness.Env, args ...string) (string, error) {
	args = append([]string{"--kubeconfig", filepath.Join(env.Dir, "kubeconfig"), "-n", env.Namespace}, args...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(env.Dir, "bin", "kubectl"), args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %v: %w\n%s", args, err, out)
	}
	return string(out), nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func TestStatefulSetWithVolumesServesThroughServices(t *testing.T) {
	env := harness.Cluster(t)
	ctx := ctxFor(t)
	cs, ns := env.Client, env.Namespace
	labels := map[string]string{"app": "web"}
	replicas := int32(2)

	if _, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: labels,
			Ports: []corev1.ServicePort{{Port: 8080}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web-ip"},
		Spec: corev1.ServiceSpec{Selector: labels,
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := cs.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.StatefulSetSpec{
			ServiceName: "web",
			Replicas:    &replicas,
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{webServer()}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < int(replicas); i++ {
		name := fmt.Sprintf("web-%d", i)
		eventually(t, name+" Ready", func() error {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !podReady(p) {
				return fmt.Errorf("phase %s, not Ready", p.Status.Phase)
			}
			return nil
		})
	}

	// Each pod writes into its own volume; the file lands in the PV's directory.
	kubectl(t, env, "exec", "web-0", "--", "sh", "-c", "echo hello-from-web-0 > /data/index.html")
	pvc, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-web-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pv.Spec.StorageClassName != cluster.StorageClass || pv.Spec.HostPath == nil {
		t.Fatalf("PV %s: class %q, hostPath %v", pv.Name, pv.Spec.StorageClassName, pv.Spec.HostPath)
	}
	onHost, err := os.ReadFile(filepath.Join(pv.Spec.HostPath.Path, "index.html"))
	if err != nil || strings.TrimSpace(string(onHost)) != "hello-from-web-0" {
		t.Fatalf("volume content on the host: %q, %v", onHost, err)
	}

	// Pod to pod by the headless Service's DNS name, and through the cluster IP.
	got := kubectl(t, env, "exec", "web-1", "--", "python3", "-c",
		"import urllib.request as u; print(u.urlopen('http://web-0.web:8080/index.html', timeout=10).read().decode())")
	if strings.TrimSpace(got) != "hello-from-web-0" {
		t.Errorf("web-1 fetching web-0 by name got %q", got)
	}
	got = kubectl(t, env, "exec", "web-0", "--", "python3", "-c",
		"import urllib.request as u, socket; print(socket.gethostbyname('web-ip'))")
	svc, err := cs.CoreV1().Services(ns).Get(ctx, "web-ip", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(got) != svc.Spec.ClusterIP {
		t.Errorf("web-ip resolved to %q in a pod, want %s", got, svc.Spec.ClusterIP)
	}
	// Through the cluster IP (kube-proxy's DNAT, routed back onto the bridge), from
	// a pod that is itself one of the endpoints, several times so that both are hit.
	// kube-proxy programs the Service once the endpoints are Ready, a moment
	// after the pods are, as in any cluster: wait for its first answer.
	eventually(t, "web-ip answering through kube-proxy", func() error {
		_, err := tryKubectl(env, "exec", "web-1", "--", "python3", "-c",
			"import urllib.request as u; u.urlopen('http://web-ip/', timeout=3)")
		return err
	})
	got = kubectl(t, env, "exec", "web-1", "--", "python3", "-c",
		"import urllib.request as u\nfor i in range(6): print(u.urlopen('http://web-ip/', timeout=10).status)")
	if strings.Fields(got)[0] != "200" || strings.Count(got, "200") != 6 {
		t.Errorf("requests through the cluster IP answered %q", got)
	}

	// Logs through the API server and the kubelet.
	eventually(t, "web-0 log shows the request", func() error {
		b, err := cs.CoreV1().Pods(ns).GetLogs("web-0", &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			return err
		}
		if !strings.Contains(string(b), "GET /index.html") {
			return fmt.Errorf("log: %q", b)
		}
		return nil
	})

	// Port-forward through the API server.
	pf := exec.Command(filepath.Join(env.Dir, "bin", "kubectl"), "--kubeconfig", filepath.Join(env.Dir, "kubeconfig"),
		"-n", ns, "port-forward", "--address", "127.0.0.1", "pod/web-0", ":8080") // a random local port
	stdout, err := pf.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := pf.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pf.Process.Kill(); _ = pf.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n') // "Forwarding from 127.0.0.1:PORT -> 8080"
	if err != nil {
		t.Fatalf("port-forward: %v", err)
	}
	fields := strings.Fields(line)
	if len(fields) < 3 {
		t.Fatalf("port-forward said %q", line)
	}
	client := http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + fields[2] + "/index.html")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if strings.TrimSpace(string(body)) != "hello-from-web-0" {
		t.Errorf("port-forward answered %q", body)
	}
}

func TestKilledPodIsRestartedAndReclaimDeletesVolume(t *testing.T) {
	env := harness.Cluster(t)
	ctx := ctxFor(t)
	cs, ns := env.Client, env.Namespace
	if _, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{webServer()},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "web Ready", func() error {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !podReady(p) {
			return fmt.Errorf("not Ready")
		}
		return nil
	})

	env.KillPod(t, ns, "web")
	eventually(t, "web restarted after SIGKILL", func() error {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].RestartCount < 1 || !podReady(p) {
			return fmt.Errorf("statuses %+v", p.Status.ContainerStatuses)
		}
		return nil
	})

	pvc, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	path := pv.Spec.HostPath.Path
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("volume directory: %v", err)
	}
	zero := int64(0)
	if err := cs.CoreV1().Pods(ns).Delete(ctx, "web", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "released volume deleted (reclaimPolicy Delete)", func() error {
		_, err := cs.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("PV %s still there (get: %w)", pv.Name, err)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			return fmt.Errorf("directory %s still there (stat: %w)", path, err)
		}
		return nil
	})
}

func TestPartitionCutsOnlyTheTwoPods(t *testing.T) {
	env := harness.Cluster(t)
	ctx := ctxFor(t)
	cs, ns := env.Client, env.Namespace
	for _, name := range []string{"a", "b", "c"} {
		c := webServer()
		c.VolumeMounts = nil
		c.Command = []string{"python3", "-m", "http.server", "8080", "--directory", "/"}
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{c}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ips := map[string]string{}
	for _, name := range []string{"a", "b", "c"} {
		eventually(t, name+" Ready", func() error {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !podReady(p) {
				return fmt.Errorf("not Ready")
			}
			ips[name] = p.Status.PodIP
			return nil
		})
	}
	reach := func(from, to string) bool {
		out, err := exec.Command(filepath.Join(env.Dir, "bin", "kubectl"), "--kubeconfig", filepath.Join(env.Dir, "kubeconfig"),
			"-n", ns, "exec", from, "--", "python3", "-c",
			"import urllib.request as u; u.urlopen('http://"+ips[to]+":8080/', timeout=2); print('ok')").CombinedOutput()
		return err == nil && strings.Contains(string(out), "ok")
	}
	if !reach("a", "b") {
		t.Fatal("a cannot reach b before the partition")
	}
	env.Partition(t, "a", "b")
	if reach("a", "b") || reach("b", "a") {
		t.Error("a and b still reach each other across the partition")
	}
	if !reach("a", "c") || !reach("c", "b") {
		t.Error("the partition between a and b cut c off too")
	}
	env.Heal(t)
	if !reach("a", "b") {
		t.Error("a cannot reach b after Heal")
	}
}

func TestStoppedPodTurnsUnreadyAndResumes(t *testing.T) {
	env := harness.Cluster(t)
	ctx := ctxFor(t)
	cs, ns := env.Client, env.Namespace
	c := webServer()
	c.VolumeMounts = nil
	c.Command = []string{"python3", "-m", "http.server", "8080", "--directory", "/"}
	// An HTTP probe: a frozen process still completes TCP handshakes (the kernel
	// does them) but never answers a request.
	c.ReadinessProbe = &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)}},
		PeriodSeconds:    1,
		TimeoutSeconds:   1,
		FailureThreshold: 1,
	}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{c}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	readiness := func(want bool) func() error {
		return func() error {
			p, err := cs.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if podReady(p) != want {
				return fmt.Errorf("Ready=%v, want %v", podReady(p), want)
			}
			return nil
		}
	}
	eventually(t, "web Ready", readiness(true))
	env.StopPod(t, ns, "web")
	eventually(t, "web unready while stopped", readiness(false))
	env.ResumePod(t, ns, "web")
	eventually(t, "web Ready after resume", readiness(true))
	p, err := cs.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := p.Status.ContainerStatuses[0].RestartCount; n != 0 {
		t.Errorf("a stopped and resumed container was restarted %d times", n)
	}
}

// TestPodReachesAPIServerWithItsToken is what an in-cluster operator does:
// KUBERNETES_SERVICE_HOST/PORT, the projected service-account token and CA.
func TestPodReachesAPIServerWithItsToken(t *testing.T) {
	env := harness.Cluster(t)
	ctx := ctxFor(t)
	cs, ns := env.Client, env.Namespace
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "client"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "client", Image: "python:3", Command: []string{"sleep", "3600"},
		}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "client Ready", func() error {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "client", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !podReady(p) {
			return fmt.Errorf("not Ready")
		}
		return nil
	})
	// The default ServiceAccount may not list pods: 403 proves the API server
	// authenticated the pod's token (a bad token would be 401).
	got := kubectl(t, env, "exec", "client", "--", "python3", "-c", `
import os, ssl, urllib.request, urllib.error
sa = "/var/run/secrets/kubernetes.io/serviceaccount/"
host, port = os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"]
ctx = ssl.create_default_context(cafile=sa + "ca.crt")
ns = open(sa + "namespace").read()
req = urllib.request.Request("https://%s:%s/api/v1/namespaces/%s/pods" % (host, port, ns),
    headers={"Authorization": "Bearer " + open(sa + "token").read()})
try:
    print(urllib.request.urlopen(req, context=ctx, timeout=10).status)
except urllib.error.HTTPError as e:
    print(e.code)
`)
	if strings.TrimSpace(got) != "403" {
		t.Errorf("pod listing pods with its token answered %q, want 403 (authenticated, not authorized)", got)
	}
}
