package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/mgors/operator/test/localkube/kubelet"
)

// A Node taken down by a fault is recorded in DIR/nodes/NODE/down, so that neither
// `up` nor a control-plane restart starts its kubelet again: only NodeUp does.
func (l layout) downMarker(node string) string { return filepath.Join(l.nodeDir(node), "down") }

// nodesDown reads which Nodes of the cluster are down.
func nodesDown(l layout) map[string]bool {
	down := map[string]bool{}
	markers, _ := filepath.Glob(filepath.Join(l.dir, "nodes", "*", "down"))
	for _, m := range markers {
		down[filepath.Base(filepath.Dir(m))] = true
	}
	return down
}

// NodesDown lists the Nodes of the cluster in dir that a fault took down.
func NodesDown(dir string) []string {
	var names []string
	for n := range nodesDown(layout{dir: dir}) {
		names = append(names, n)
	}
	return sortedNodes(names)
}

// nodesToRun lists the Nodes of an n-Node cluster whose kubelets run: all but the
// ones down.
func nodesToRun(n int, down map[string]bool) []int {
	var run []int
	for i := 1; i <= n; i++ {
		if !down[NodeName(i)] {
			run = append(run, i)
		}
	}
	return run
}

// nodeIndex finds Node name among the n Nodes of a cluster.
func nodeIndex(name string, n int) (int, error) {
	if s, ok := strings.CutPrefix(name, "localkube-"); ok {
		if i, err := strconv.Atoi(s); err == nil && i >= 1 && i <= n && NodeName(i) == name {
			return i, nil
		}
	}
	return 0, fmt.Errorf("no Node %q: the cluster has %s", name, strings.Join(nodeNames(n), ", "))
}

func nodeNames(n int) []string {
	names := make([]string, 0, n)
	for i := 1; i <= n; i++ {
		names = append(names, NodeName(i))
	}
	if n == 0 {
		names = append(names, "no Nodes")
	}
	return names
}

// sortedNodes orders Node names by number (localkube-2 before localkube-10).
func sortedNodes(names []string) []string {
	idx := func(s string) int { i, _ := strconv.Atoi(strings.TrimPrefix(s, "localkube-")); return i }
	sort.Slice(names, func(a, b int) bool { return idx(names[a]) < idx(names[b]) })
	return names
}

// clusterNodes reads the number of Nodes from cluster.json.
func clusterNodes(l layout) (int, error) {
	b, err := os.ReadFile(l.state())
	if err != nil {
		return 0, err
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return 0, fmt.Errorf("%s: %w", l.state(), err)
	}
	return st.Nodes, nil
}

// NodeDownResult is the evidence of NodeDown.
type NodeDownResult struct {
	// KubeletPID is the kubelet killed (0 if it was not running).
	KubeletPID int
	// PodPIDs are the container processes killed.
	PodPIDs []int
}

// NodeDown kills Node node as a power cut would: its kubelet (SIGKILL, so it
// neither reports nor cleans up) and then, through kubelet.KillNode, its pods'
// network and processes. The Node's Lease is no longer renewed, so the node
// lifecycle controller marks it NotReady after its grace period, as in a real
// cluster. The Node stays down, through `up` and control-plane restarts, until
// NodeUp.
func NodeDown(dir, node string) (NodeDownResult, error) {
	var res NodeDownResult
	l, unlock, err := lockedCluster(dir)
	if err != nil {
		return res, err
	}
	defer unlock()
	n, err := clusterNodes(l)
	if err != nil {
		return res, err
	}
	if _, err := nodeIndex(node, n); err != nil {
		return res, err
	}
	if fileExists(l.downMarker(node)) {
		return res, fmt.Errorf("node %s is already down (node-up brings it back)", node)
	}
	if err := os.WriteFile(l.downMarker(node), []byte(time.Now().UTC().Format(time.RFC3339Nano)+"\n"), 0o644); err != nil {
		return res, err
	}
	if res.KubeletPID, err = kill(l, "kubelet-"+node); err != nil {
		return res, err
	}
	res.PodPIDs, err = kubelet.KillNode(l.dir, node)
	return res, err
}

// NodeUp starts the kubelet of a Node that NodeDown took down and waits until the
// Node is Ready. The kubelet finds its pods' processes dead and recreates them.
func NodeUp(ctx context.Context, dir, node string, log zerolog.Logger) error {
	l, unlock, err := lockedCluster(dir)
	if err != nil {
		return err
	}
	defer unlock()
	opts, err := resolve(l, Options{Dir: l.dir, Nodes: -1})
	if err != nil {
		return err
	}
	i, err := nodeIndex(node, opts.Nodes)
	if err != nil {
		return err
	}
	if _, ok := pidOf(l, "kubelet-"+node); ok && !fileExists(l.downMarker(node)) {
		return fmt.Errorf("node %s is not down: its kubelet runs", node)
	}
	if err := os.Remove(l.downMarker(node)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	c, err := kubeletComponent(l, opts, i)
	if err != nil {
		return err
	}
	if err := ensureRunning(ctx, l, c, nil, log); err != nil {
		return err
	}
	return waitNodesReady(ctx, l, []string{node}, log)
}

// RestartControlPlane stops etcd, the API server, the controller manager and the
// scheduler and runs Up again, which starts them with their data (and leaves
// running parts alone, and down Nodes down). It returns when the cluster is ready.
func RestartControlPlane(ctx context.Context, dir string, log zerolog.Logger) error {
	l, unlock, err := lockedCluster(dir)
	if err != nil {
		return err
	}
	err = StopControlPlane(l.dir)
	unlock()
	if err != nil {
		return err
	}
	return Up(ctx, Options{Dir: l.dir, Nodes: -1}, log)
}

// lockedCluster checks that dir is a cluster directory and takes its lock.
func lockedCluster(dir string) (layout, func(), error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return layout{}, nil, err
	}
	l := layout{dir: abs}
	if !fileExists(l.state()) {
		return l, nil, fmt.Errorf("%s is not a localkube cluster directory (no cluster.json)", abs)
	}
	unlock, err := lockDir(abs)
	return l, unlock, err
}
