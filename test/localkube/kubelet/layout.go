package kubelet

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// nodeDir is where one kubelet keeps everything (see the package doc).
func nodeDir(dir, node string) string { return filepath.Join(dir, "nodes", node) }

// podMeta is pod.json: who a pod directory belongs to, readable without the API server.
type podMeta struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	IP        string `json:"ip,omitempty"`
	Veth      string `json:"veth,omitempty"`
}

func readPodMeta(podDir string) (podMeta, error) {
	var m podMeta
	b, err := os.ReadFile(filepath.Join(podDir, "pod.json"))
	if err != nil {
		return m, err
	}
	return m, json.Unmarshal(b, &m)
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	if err := os.Chmod(tmp, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// procStartTicks is field 22 of /proc/PID/stat: with the PID it names one process
// for its whole life, so a recycled PID is never mistaken for a container.
func procStartTicks(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed stat of %d", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, fmt.Errorf("malformed stat of %d", pid)
	}
	if f[0] == "Z" || f[0] == "X" {
		return 0, fmt.Errorf("process %d is a zombie", pid)
	}
	return strconv.ParseUint(f[19], 10, 64)
}

func writePIDFile(path string, pid int) error {
	ticks, err := procStartTicks(pid)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, []byte(fmt.Sprintf("%d %d\n", pid, ticks)), 0o644)
}

// readLivePID returns the PID recorded in a pid file if that very process still runs.
func readLivePID(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, false
	}
	pid, err1 := strconv.Atoi(f[0])
	ticks, err2 := strconv.ParseUint(f[1], 10, 64)
	if err1 != nil || err2 != nil || pid <= 1 {
		return 0, false
	}
	now, err := procStartTicks(pid)
	if err != nil || now != ticks {
		return 0, false
	}
	return pid, true
}

// PodProcesses returns the main PIDs of the running containers of pod namespace/name,
// on whichever node of the cluster at dir runs it. Each PID is also the ID of the
// container's process group, so a harness can signal a whole container with -PID
// (SIGKILL to simulate a crash, SIGSTOP to freeze it).
func PodProcesses(dir, namespace, name string) ([]int, error) {
	pods, err := filepath.Glob(filepath.Join(dir, "nodes", "*", "pods", "*", "pod.json"))
	if err != nil {
		return nil, err
	}
	var pids []int
	found := false
	for _, p := range pods {
		m, err := readPodMeta(filepath.Dir(p))
		if err != nil || m.Namespace != namespace || m.Name != name {
			continue
		}
		found = true
		files, _ := filepath.Glob(filepath.Join(filepath.Dir(p), "containers", "*", "pid"))
		for _, f := range files {
			if pid, ok := readLivePID(f); ok {
				pids = append(pids, pid)
			}
		}
	}
	if !found {
		return nil, fmt.Errorf("pod %s/%s: %w", namespace, name, os.ErrNotExist)
	}
	return pids, nil
}

// KillAll kills every container process of every pod of every node under dir and
// removes what lives outside the processes: the network namespace mounts and the
// host ends of the veth pairs. `localkube down` calls it after stopping the kubelets
// so that nothing of the cluster survives it. It keeps going past errors and
// returns them joined.
func KillAll(dir string) error {
	var errs []error
	podDirs, _ := filepath.Glob(filepath.Join(dir, "nodes", "*", "pods", "*"))
	for _, pd := range podDirs {
		files, _ := filepath.Glob(filepath.Join(pd, "containers", "*", "pid"))
		for _, f := range files {
			if pid, ok := readLivePID(f); ok {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	// Give the kernel a moment to reap before tearing down namespaces.
	deadline := time.Now().Add(5 * time.Second)
	for _, pd := range podDirs {
		files, _ := filepath.Glob(filepath.Join(pd, "containers", "*", "pid"))
		for _, f := range files {
			for {
				if _, ok := readLivePID(f); !ok || time.Now().After(deadline) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		m, _ := readPodMeta(pd)
		if err := teardownNetwork(pd, m.Veth); err != nil {
			errs = append(errs, err)
		}
		if err := unmountVolumes(pd); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// unmountIfMounted detaches a mount point, ignoring "not mounted".
func unmountIfMounted(path string) error {
	err := unix.Unmount(path, unix.MNT_DETACH)
	if err == nil || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return fmt.Errorf("unmount %s: %w", path, err)
}

// unmountVolumes detaches the volumes the kubelet mounted on the node for a pod
// (emptyDir with medium Memory).
func unmountVolumes(podDir string) error {
	var errs []error
	dirs, _ := filepath.Glob(filepath.Join(podDir, "volumes", "*"))
	for _, d := range dirs {
		if isMountPoint(d) {
			if err := unmountIfMounted(d); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// KillNode does to the pods of one node what the node's sudden death does: each
// pod's veth goes first, so that no FIN or RST reaches its peers, then every
// container process group gets SIGKILL, then the pod's network namespace pin and
// in-memory volumes go. The state files stay: the node's kubelet, started again,
// finds its pods dead and recreates their sandboxes. Stop the kubelet first, or it
// restarts the containers. It returns the main PIDs it killed and keeps going past
// errors, returned joined.
func KillNode(dir, node string) ([]int, error) {
	var errs []error
	var killed []int
	podDirs, _ := filepath.Glob(filepath.Join(nodeDir(dir, node), "pods", "*"))
	for _, pd := range podDirs {
		m, _ := readPodMeta(pd)
		if err := teardownNetwork(pd, m.Veth); err != nil {
			errs = append(errs, err)
		}
		files, _ := filepath.Glob(filepath.Join(pd, "containers", "*", "pid"))
		for _, f := range files {
			if pid, ok := readLivePID(f); ok {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
				_ = syscall.Kill(pid, syscall.SIGKILL)
				killed = append(killed, pid)
			}
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pd := range podDirs {
		files, _ := filepath.Glob(filepath.Join(pd, "containers", "*", "pid"))
		for _, f := range files {
			for {
				pid, ok := readLivePID(f)
				if !ok {
					break
				}
				if time.Now().After(deadline) {
					errs = append(errs, fmt.Errorf("pid %d of %s survived SIGKILL", pid, f))
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		if err := unmountVolumes(pd); err != nil {
			errs = append(errs, err)
		}
	}
	return killed, errors.Join(errs...)
}
