package localkube_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/mgors/operator/test/localkube/balancer"
	"github.com/mgors/operator/test/localkube/harness"
)

// A Service of type LoadBalancer gets an address of its own on the host's
// loopback and a host name, and the address forwards to the Service's pod; a
// Service of another load-balancer class is left pending; turning the Service
// into a ClusterIP one clears its status and closes the address, as deleting it
// does.
func TestLoadBalancerServiceForwardsToItsPod(t *testing.T) {
	env := harness.Cluster(t)
	ctx := ctxFor(t)
	cs, ns := env.Client, env.Namespace
	labels := map[string]string{"app": "web"}
	web := webServer()
	web.VolumeMounts = nil
	web.Command = []string{"python3", "-m", "http.server", "8080", "--directory", "/etc"}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{web}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lb := func(name string, class *string) *corev1.Service {
		svc, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: labels, LoadBalancerClass: class,
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return svc
	}
	lb("front", nil)
	lb("elsewhere", ptr.To("example.com/other"))

	var ingress corev1.LoadBalancerIngress
	eventually(t, "front's ingress", func() error {
		svc, err := cs.CoreV1().Services(ns).Get(ctx, "front", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(svc.Status.LoadBalancer.Ingress) != 1 {
			return fmt.Errorf("ingress %+v", svc.Status.LoadBalancer.Ingress)
		}
		ingress = svc.Status.LoadBalancer.Ingress[0]
		return nil
	})
	if ip := net.ParseIP(ingress.IP); ip == nil || !ip.IsLoopback() || ingress.Hostname != "front."+ns+".lb.localkube" ||
		ingress.IPMode == nil || *ingress.IPMode != corev1.LoadBalancerIPModeProxy {
		t.Fatalf("front's ingress %+v: want a loopback IP, front.%s.lb.localkube, ipMode Proxy", ingress, ns)
	}
	t.Logf("front: %s at %s", ingress.Hostname, ingress.IP)

	// A host client resolves the name to the ingress IP (nothing else resolves
	// it) and reaches the pod through the load balancer.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			if host == ingress.Hostname {
				host = ingress.IP
			}
			return (&net.Dialer{}).DialContext(ctx, network, net.JoinHostPort(host, port))
		}}}
	url := "http://" + ingress.Hostname + "/"
	eventually(t, "GET "+url, func() error {
		resp, err := client.Get(url)
		if err != nil {
			return err
		}
		defer func() { _ = resp.Body.Close() }()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "Directory listing for /") {
			return fmt.Errorf("%s: %q", resp.Status, body)
		}
		return nil
	})

	// Another class is another implementation's: no address from this one.
	if svc, err := cs.CoreV1().Services(ns).Get(ctx, "elsewhere", metav1.GetOptions{}); err != nil || len(svc.Status.LoadBalancer.Ingress) != 0 {
		t.Errorf("a Service of another class: %v %+v, want it pending", err, svc.Status.LoadBalancer)
	}

	// Type ClusterIP: the status is cleared and the address closed.
	patch := `{"spec":{"type":"ClusterIP","allocateLoadBalancerNodePorts":null,"ports":[{"name":"http","port":80,"targetPort":"http","nodePort":null}]}}`
	if _, err := cs.CoreV1().Services(ns).Patch(ctx, "front", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "front's ingress cleared and the address closed", func() error {
		svc, err := cs.CoreV1().Services(ns).Get(ctx, "front", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(svc.Status.LoadBalancer.Ingress) != 0 {
			return fmt.Errorf("ingress %+v", svc.Status.LoadBalancer.Ingress)
		}
		if c, err := net.DialTimeout("tcp", net.JoinHostPort(ingress.IP, "80"), time.Second); err == nil {
			_ = c.Close()
			return fmt.Errorf("%s:80 still accepts", ingress.IP)
		}
		return nil
	})
	if !strings.HasSuffix(ingress.Hostname, "."+balancer.HostSuffix) {
		t.Errorf("host name %s outside %s", ingress.Hostname, balancer.HostSuffix)
	}
}
