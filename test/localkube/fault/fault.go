// Package fault injects into a running localkube cluster the faults a real cluster
// has: a container killed (SIGKILL), a pod frozen (SIGSTOP) and resumed, pods cut
// off from each other by the network, a Node dying and coming back, the control
// plane restarted. The chaos suite, the test harness and `localkube fault` use it.
// Every fault returns evidence that it happened (pids, process states, packet
// counters), because a fault that silently did nothing proves nothing. See the
// fault section of docs/design/localkube.md.
package fault

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/mgors/operator/test/localkube/cluster"
)

// apiTimeout bounds each API call a fault makes.
const apiTimeout = 10 * time.Second

// Injector injects faults into the localkube cluster in Dir.
type Injector struct {
	// Dir is the cluster directory (as given to `localkube up --dir`).
	Dir string
	// Client reaches the cluster's API server; pods are resolved through it.
	Client kubernetes.Interface
	// Log receives one line per fault.
	Log zerolog.Logger
}

// New returns an Injector for the cluster in dir, with a client from
// DIR/kubeconfig. It fails when dir is not a localkube cluster or its control
// plane does not run.
func New(dir string, log zerolog.Logger) (*Injector, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := running(abs); err != nil {
		return nil, err
	}
	_, cs, err := cluster.Client(abs)
	if err != nil {
		return nil, err
	}
	return &Injector{Dir: abs, Client: cs, Log: log}, nil
}

// running checks that dir holds a cluster whose etcd and API server run.
func running(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "cluster.json")); err != nil {
		return fmt.Errorf("%s is not a localkube cluster directory (no cluster.json)", dir)
	}
	comps, err := cluster.Status(dir)
	if err != nil {
		return err
	}
	up := map[string]bool{}
	for _, c := range comps {
		up[c.Name] = c.Running
	}
	var stopped []string
	for _, c := range []string{"etcd", "kube-apiserver"} {
		if !up[c] {
			stopped = append(stopped, c)
		}
	}
	if len(stopped) > 0 {
		return fmt.Errorf("the localkube cluster in %s is not running (%s stopped): start it with `localkube up --dir %s`",
			dir, strings.Join(stopped, ", "), dir)
	}
	return nil
}

// pod reads a pod through the API; a pod that does not exist or is not on a Node
// yet is an error naming it.
func (i *Injector) pod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	p, err := i.Client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("no pod %s/%s in the cluster", namespace, name)
	}
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w", namespace, name, err)
	}
	if p.Spec.NodeName == "" {
		return nil, fmt.Errorf("pod %s/%s is not scheduled to a Node yet", namespace, name)
	}
	return p, nil
}

// errNoFault is wrapped by the errors of a fault that found nothing to act on (no
// running container): the fault did not happen.
var errNoFault = errors.New("nothing to inject the fault into")
