package cluster

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ComponentStatus is one recorded process of the cluster.
type ComponentStatus struct {
	Name    string
	PID     int
	Running bool
}

// Status reports which recorded components of the cluster in dir run.
func Status(dir string) ([]ComponentStatus, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	l := layout{dir: dir}
	names := recordedComponents(l)
	sort.Strings(names)
	out := make([]ComponentStatus, 0, len(names))
	for _, n := range names {
		pid, ok := pidOf(l, n)
		out = append(out, ComponentStatus{Name: n, PID: pid, Running: ok})
	}
	return out, nil
}

// PrintStatus writes a human summary of the cluster in dir: processes, network,
// and, when the API server answers, the Nodes.
func PrintStatus(ctx context.Context, w io.Writer, dir string) error {
	comps, err := Status(dir)
	if err != nil {
		return err
	}
	if len(comps) == 0 {
		_, _ = fmt.Fprintf(w, "no localkube processes recorded in %s\n", dir)
	}
	for _, c := range comps {
		state := "stopped"
		if c.Running {
			state = "running"
		}
		_, _ = fmt.Fprintf(w, "%-28s %-8s pid %d\n", c.Name, state, c.PID)
	}
	for _, n := range NodesDown(dir) {
		_, _ = fmt.Fprintf(w, "node %s is down (localkube fault node-down); `localkube fault node-up %s` brings it back\n", n, n)
	}
	_, _ = fmt.Fprintf(w, "bridge %s present: %v\n", Bridge, linkExists(Bridge))
	_, _ = fmt.Fprintf(w, "nftables inet %s present: %v\n", filterTable, tableExists(ctx, "inet "+filterTable))
	abs, _ := filepath.Abs(dir)
	_, cs, err := Client(abs)
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		_, _ = fmt.Fprintf(w, "API server: %v\n", err)
		return nil
	}
	_, _ = fmt.Fprintf(w, "API server: ready; kubeconfig %s\n", layout{dir: abs}.kubeconfig())
	for _, n := range nodes.Items {
		_, _ = fmt.Fprintf(w, "node %-20s ready=%v\n", n.Name, nodeReady(&n))
	}
	return nil
}
