package kubelet

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
)

// exec runs cmd in a container through the API server, as `kubectl exec` does;
// env entries (NAME=VALUE) are set with env(1).
func (e *sharedEnv) exec(t *testing.T, pod, container string, cmd []string, env ...string) (string, error) {
	t.Helper()
	if len(env) > 0 {
		cmd = append(append([]string{"/usr/bin/env"}, env...), cmd...)
	}
	req := e.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(testNS).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: cmd, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(e.rest, "POST", req.URL())
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &errb})
	return out.String() + errb.String(), err
}

// Logs (with follow and tail), exec with and without a TTY, and port-forward all go
// through the API server to the kubelet's HTTPS endpoint.
func TestLogsExecPortForward(t *testing.T) {
	e := cluster(t)
	p := e.create(t, servePod(t, "streams", "127.0.0.1:8080"))
	e.waitPod(t, p.Name, 60*time.Second, "Running", isRunningReady)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tail := int64(1)
	var b []byte
	var err error
	for i := 0; i < 100; i++ { // Running does not mean the first line is written yet
		b, err = e.cs.CoreV1().Pods(testNS).GetLogs(p.Name, &corev1.PodLogOptions{TailLines: &tail, Timestamps: true}).DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if f := strings.SplitN(string(b), " ", 2); len(f) != 2 || f[1] != "serving on 127.0.0.1:8080\n" {
		t.Fatalf("logs --tail=1 --timestamps: %q", b)
	} else if _, err := time.Parse(time.RFC3339Nano, f[0]); err != nil {
		t.Fatalf("timestamp %q: %v", f[0], err)
	}

	// The container has a /dev of its own: no host disks.
	if out, err := e.exec(t, p.Name, "web", []string{"/bin/sh", "-c", "ls /dev | tr '\\n' ' '"}); err != nil ||
		out != "core fd full mqueue null ptmx pts random shm stderr stdin stdout termination-log tty urandom zero " {
		t.Fatalf("/dev holds %q (%v)", out, err)
	}
	out, err := e.exec(t, p.Name, "web", []string{"/bin/sh", "-c", "hostname; cat /etc/resolv.conf; exit 7"})
	if err == nil || !strings.Contains(err.Error(), "exit code 7") {
		t.Fatalf("exec exit status: %v, want exit code 7", err)
	}
	wantResolv := "search kt.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n"
	if out != "streams\n"+wantResolv {
		t.Fatalf("exec output %q, want hostname and resolv.conf %q", out, wantResolv)
	}

	// exec -t: the command gets a terminal.
	req := e.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(testNS).Name(p.Name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "web", Command: []string{"/bin/sh", "-c", "test -t 0 && test -t 1 && echo tty"}, Stdin: true, Stdout: true, TTY: true}, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(e.rest, "POST", req.URL())
	if err != nil {
		t.Fatal(err)
	}
	var ttyOut bytes.Buffer
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: strings.NewReader(""), Stdout: &ttyOut, Tty: true}); err != nil || strings.TrimSpace(ttyOut.String()) != "tty" {
		t.Fatalf("exec -t: %q %v", ttyOut.String(), err)
	}

	// Port-forward reaches the pod's own loopback.
	got := e.portForwardGet(t, p.Name, 8080)
	if got != "hello from streams" {
		t.Fatalf("port-forward answered %q", got)
	}
}

// logs -f streams lines as the container writes them.
func TestLogsFollow(t *testing.T) {
	e := cluster(t)
	p := e.create(t, shellPod("ticker", "i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.2; done"))
	e.waitPod(t, p.Name, 60*time.Second, "Running", isRunningReady)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stream, err := e.cs.CoreV1().Pods(testNS).GetLogs(p.Name, &corev1.PodLogOptions{Follow: true}).Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stream.Close() }()
	sc := bufio.NewScanner(stream)
	first := -1
	for sc.Scan() {
		var n int
		if _, err := fmt.Sscanf(sc.Text(), "tick %d", &n); err != nil {
			t.Fatalf("unexpected log line %q", sc.Text())
		}
		if first < 0 {
			first = n
		}
		if n >= first+10 {
			return
		}
	}
	t.Fatalf("follow ended early: %v", sc.Err())
}
