package fault

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mgors/operator/test/localkube/cluster"
)

// NodeDown kills the node's kubelet and every process of its pods; the node stays
// down (a later `localkube up` must NOT restart it) until NodeUp. The pods' network
// goes first, so their peers see silence rather than a closed connection. Nothing
// tells the API server: the Node's Lease stops being renewed, and the node
// lifecycle controller marks it NotReady after its grace period (50 s by default),
// then its pods' Ready condition False; the pods stay in the API until someone
// deletes them, as with a real Node.
func (i *Injector) NodeDown(ctx context.Context, node string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	res, err := cluster.NodeDown(i.Dir, node)
	if err != nil {
		return "", fmt.Errorf("node-down %s: %w", node, err)
	}
	kubelet := "kubelet was not running"
	if res.KubeletPID != 0 {
		kubelet = fmt.Sprintf("SIGKILL to kubelet pid %d", res.KubeletPID)
	}
	ev := fmt.Sprintf("node %s down: %s; SIGKILL to %d container process(es) %v; pod networks removed", node, kubelet, len(res.PodPIDs), res.PodPIDs)
	i.Log.Info().Str("event", "fault.node-down").Str("node", node).Int("kubelet", res.KubeletPID).Ints("pids", res.PodPIDs).Msg(ev)
	return ev, nil
}

// NodeUp starts the kubelet of a Node taken down by NodeDown and returns when the
// Node is Ready. The kubelet recreates the sandboxes of its pods and runs them
// again; pods deleted while it was down are cleaned up.
func (i *Injector) NodeUp(ctx context.Context, node string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	began := time.Now()
	if err := cluster.NodeUp(ctx, i.Dir, node, i.Log); err != nil {
		return fmt.Errorf("node-up %s: %w", node, err)
	}
	i.Log.Info().Str("event", "fault.node-up").Str("node", node).Dur("took", time.Since(began)).Msg("node Ready again")
	return nil
}

// RestartControlPlane stops etcd, the API server, controller manager and scheduler
// and starts them again with their data (in this process, as `localkube up` would),
// returning when the API answers. Pods and kubelets keep running; a Node that is
// down stays down. The evidence is each component's old and new pid.
func (i *Injector) RestartControlPlane(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	before, err := cluster.Status(i.Dir)
	if err != nil {
		return "", err
	}
	began := time.Now()
	if err := cluster.RestartControlPlane(ctx, i.Dir, i.Log); err != nil {
		return "", fmt.Errorf("restart-control-plane: %w", err)
	}
	took := time.Since(began)
	after, err := cluster.Status(i.Dir)
	if err != nil {
		return "", err
	}
	ev := fmt.Sprintf("control plane restarted in %s: %s", took.Round(time.Millisecond), pidChanges(before, after))
	i.Log.Info().Str("event", "fault.restart-control-plane").Dur("took", took).Msg(ev)
	return ev, nil
}

// controlPlane are the components RestartControlPlane restarts.
var controlPlane = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// pidChanges renders "etcd pid 10 -> 20, ..." for the control-plane components.
func pidChanges(before, after []cluster.ComponentStatus) string {
	pid := func(list []cluster.ComponentStatus, name string) string {
		for _, c := range list {
			if c.Name == name && c.Running {
				return fmt.Sprint(c.PID)
			}
		}
		return "none"
	}
	parts := make([]string, 0, len(controlPlane))
	for _, c := range controlPlane {
		parts = append(parts, fmt.Sprintf("%s pid %s -> %s", c, pid(before, c), pid(after, c)))
	}
	return strings.Join(parts, ", ")
}
