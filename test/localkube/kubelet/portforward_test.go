package kubelet

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// portForwardGet forwards a local port to the pod's port, as `kubectl
// port-forward` does, and GETs / through it.
func (e *sharedEnv) portForwardGet(t *testing.T, pod string, port int) string {
	t.Helper()
	rt, upgrader, err := spdy.RoundTripperFor(e.rest)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(e.rest.Host)
	u.Path = fmt.Sprintf("/api/v1/namespaces/%s/pods/%s/portforward", testNS, pod)
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, http.MethodPost, u)
	stop, ready := make(chan struct{}), make(chan struct{})
	defer close(stop)
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", port)}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- fw.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-errc:
		t.Fatalf("port-forward: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("port-forward not ready")
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) != 1 {
		t.Fatalf("forwarded ports: %v %v", ports, err)
	}
	got, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/", ports[0].Local))
	if err != nil {
		t.Fatalf("GET through port-forward: %v", err)
	}
	return strings.TrimSpace(got)
}
