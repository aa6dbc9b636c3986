package kubelet

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// kubeletVersion is what the Node reports; it matches the control plane built for
// localkube so that version-skew checks stay quiet.
const kubeletVersion = "v1.37.2"

// maxPods is the node's pod capacity, a kubelet's default.
const maxPods = 110

func nodeCPUs() int { return runtime.NumCPU() }

func nodeMemoryBytes() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer func() { _ = f.Close() }()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, _ := strconv.ParseInt(fields[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// nodeStatus is the Node's status as this kubelet reports it.
func nodeStatus(cfg Config, now time.Time, prev *corev1.NodeStatus) corev1.NodeStatus {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(int64(nodeCPUs()), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(nodeMemoryBytes(), resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(maxPods, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	conds := []corev1.NodeCondition{
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure"},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available"},
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"},
	}
	for i := range conds {
		conds[i].LastHeartbeatTime = metav1.NewTime(now)
		conds[i].LastTransitionTime = metav1.NewTime(now)
		if prev != nil {
			for _, p := range prev.Conditions {
				if p.Type == conds[i].Type && p.Status == conds[i].Status {
					conds[i].LastTransitionTime = p.LastTransitionTime
				}
			}
		}
	}
	return corev1.NodeStatus{
		Capacity:    capacity,
		Allocatable: capacity,
		Conditions:  conds,
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: cfg.NodeIP},
			{Type: corev1.NodeHostName, Address: cfg.NodeName},
		},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(cfg.Port)}},
		NodeInfo: corev1.NodeSystemInfo{
			MachineID: cfg.NodeName, SystemUUID: cfg.NodeName, BootID: bootID(),
			KernelVersion: kernelVersion(), OSImage: "localkube", ContainerRuntimeVersion: "localkube://1",
			KubeletVersion: kubeletVersion, OperatingSystem: "linux", Architecture: runtime.GOARCH,
		},
	}
}

func bootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}

func kernelVersion() string {
	b, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return strings.TrimSpace(string(b))
}

// registerNode creates the Node (or takes over an existing one of the same name)
// and writes its status.
func registerNode(ctx context.Context, cs kubernetes.Interface, cfg Config) (*corev1.Node, error) {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: cfg.NodeName,
			Labels: map[string]string{
				"kubernetes.io/hostname": cfg.NodeName,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     runtime.GOARCH,
				"beta.kubernetes.io/os":  "linux",
			},
		},
		Spec: corev1.NodeSpec{PodCIDR: cfg.PodCIDR, PodCIDRs: []string{cfg.PodCIDR}},
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	created, err := cs.CoreV1().Nodes().Create(cctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = cs.CoreV1().Nodes().Get(cctx, cfg.NodeName, metav1.GetOptions{})
		if err == nil && created.Spec.PodCIDR == "" {
			created.Spec.PodCIDR, created.Spec.PodCIDRs = cfg.PodCIDR, []string{cfg.PodCIDR}
			created, err = cs.CoreV1().Nodes().Update(cctx, created, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return nil, fmt.Errorf("register node: %w", err)
	}
	return updateNodeStatus(ctx, cs, cfg, created)
}

func updateNodeStatus(ctx context.Context, cs kubernetes.Interface, cfg Config, node *corev1.Node) (*corev1.Node, error) {
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if node == nil {
		n, err := cs.CoreV1().Nodes().Get(cctx, cfg.NodeName, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		node = n
	}
	node = node.DeepCopy()
	node.Status = nodeStatus(cfg, time.Now(), &node.Status)
	return cs.CoreV1().Nodes().UpdateStatus(cctx, node, metav1.UpdateOptions{})
}

// renewLease keeps the Node's Lease in kube-node-lease current: the node-lifecycle
// controller reads it as the heartbeat.
func renewLease(ctx context.Context, cs kubernetes.Interface, node *corev1.Node) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	leases := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	now := metav1.NewMicroTime(time.Now())
	l, err := leases.Get(cctx, node.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		l = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{
				Name: node.Name, Namespace: corev1.NamespaceNodeLease,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}},
			},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(node.Name), LeaseDurationSeconds: ptr.To(int32(40)), RenewTime: &now},
		}
		_, err = leases.Create(cctx, l, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	l.Spec.HolderIdentity = ptr.To(node.Name)
	l.Spec.LeaseDurationSeconds = ptr.To(int32(40))
	l.Spec.RenewTime = &now
	_, err = leases.Update(cctx, l, metav1.UpdateOptions{})
	return err
}

// heartbeat renews the Lease every 10 s and rewrites the Node status every minute
// until ctx ends.
func heartbeat(ctx context.Context, cs kubernetes.Interface, cfg Config, node *corev1.Node, log zerolog.Logger) {
	lease := time.NewTicker(10 * time.Second)
	defer lease.Stop()
	status := time.NewTicker(time.Minute)
	defer status.Stop()
	if err := renewLease(ctx, cs, node); err != nil {
		log.Warn().Err(err).Msg("renew lease")
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-lease.C:
			if err := renewLease(ctx, cs, node); err != nil {
				log.Warn().Err(err).Msg("renew lease")
			}
		case <-status.C:
			if n, err := updateNodeStatus(ctx, cs, cfg, nil); err != nil {
				log.Warn().Err(err).Msg("update node status")
			} else {
				node = n
			}
		}
	}
}
