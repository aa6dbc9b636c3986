package cluster

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// PodProcesses returns the main PIDs of the running containers of pod
// namespace/name in the cluster at dir, read from the kubelets' on-disk layout
// (nodes/NODE/pods/UID/pod.json and containers/NAME/pid, see
// test/localkube/kubelet/layout.go). Each PID leads its container's process group.
func PodProcesses(dir, namespace, name string) ([]int, error) {
	metas, err := filepath.Glob(filepath.Join(dir, "nodes", "*", "pods", "*", "pod.json"))
	if err != nil {
		return nil, err
	}
	found := false
	var pids []int
	for _, p := range metas {
		var m struct {
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
		}
		b, err := os.ReadFile(p)
		if err != nil || json.Unmarshal(b, &m) != nil || m.Namespace != namespace || m.Name != name {
			continue
		}
		found = true
		files, _ := filepath.Glob(filepath.Join(filepath.Dir(p), "containers", "*", "pid"))
		for _, f := range files {
			if pid, ok := recordedPID(f); ok {
				pids = append(pids, pid)
			}
		}
	}
	if !found {
		return nil, fmt.Errorf("pod %s/%s has no directory under %s: %w", namespace, name, dir, os.ErrNotExist)
	}
	return pids, nil
}
