package kubelet

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A failed probe's output is what a kubelet reports: the dial error, the HTTP
// status, and the event wording "<Kind> probe failed: <output>".
func TestProbeOutput(t *testing.T) {
	ctx := context.Background()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	ok, out := tcpProbe(ctx, "127.0.0.1", port)
	if ok || !strings.Contains(out, "connection refused") || !strings.HasPrefix(out, "dial tcp 127.0.0.1:"+strconv.Itoa(port)) {
		t.Errorf("tcp probe of a closed port: %v %q", ok, out)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bad" {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("fine"))
	}))
	defer srv.Close()
	if ok, out := httpProbe(ctx, srv.URL+"/bad", nil); ok || out != "HTTP probe failed with statuscode: 503" {
		t.Errorf("http 503: %v %q", ok, out)
	}
	if ok, out := httpProbe(ctx, srv.URL+"/", nil); !ok || out != "fine" {
		t.Errorf("http 200: %v %q", ok, out)
	}
	if got := probeFailedMessage("Readiness", "not ready yet\n"); got != "Readiness probe failed: not ready yet\n" {
		t.Errorf("message %q", got)
	}
}

// An exec readiness probe's output reaches the pod's Unhealthy event.
func TestProbeFailureEvent(t *testing.T) {
	e := cluster(t)
	pod := shellPod("probe-output", "sleep 3600")
	pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{
		Command: []string{"/bin/sh", "-c", "echo replica set not initiated; exit 1"}}}, PeriodSeconds: 1}
	p := e.create(t, pod)
	want := "Readiness probe failed: replica set not initiated\n"
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		evs, err := e.cs.CoreV1().Events(testNS).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + p.Name})
		cancel()
		var seen []string
		if err == nil {
			for _, ev := range evs.Items {
				if ev.Reason == "Unhealthy" && ev.Type == corev1.EventTypeWarning {
					if ev.Message == want {
						return
					}
					seen = append(seen, ev.Message)
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no Unhealthy event %q; saw %q (%v)", want, seen, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
