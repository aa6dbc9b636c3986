package kubelet

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// PodProcesses finds a pod's container processes from the layout alone, and KillAll
// ends them with everything they started.
func TestPodProcessesAndKillAll(t *testing.T) {
	dir := t.TempDir()
	podDir := filepath.Join(dir, "nodes", "n1", "pods", "uid-1")
	ctrDir := filepath.Join(podDir, "containers", "main")
	if err := os.MkdirAll(ctrDir, 0o755); err != nil {
		t.Fatal(err)
	}
	meta, _ := json.Marshal(podMeta{Namespace: "ns", Name: "db-0", UID: "uid-1"})
	if err := os.WriteFile(filepath.Join(podDir, "pod.json"), meta, 0o644); err != nil {
		t.Fatal(err)
	}
	// A container: a session leader with a child of its own.
	cmd := exec.Command("/bin/sh", "-c", "sleep 600 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	if err := writePIDFile(filepath.Join(ctrDir, "pid"), cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	pids, err := PodProcesses(dir, "ns", "db-0")
	if err != nil || len(pids) != 1 || pids[0] != cmd.Process.Pid {
		t.Fatalf("PodProcesses = %v, %v; want [%d]", pids, err, cmd.Process.Pid)
	}
	if _, err := PodProcesses(dir, "ns", "other"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an unknown pod: %v, want ErrNotExist", err)
	}
	// A stale pid file (a recycled PID) does not count.
	if err := os.WriteFile(filepath.Join(ctrDir, "pid2"), []byte("1 12345\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := readLivePID(filepath.Join(ctrDir, "pid2")); ok {
		t.Fatal("a pid file whose start time does not match was taken as live")
	}
	if err := KillAll(dir); err != nil {
		t.Fatalf("KillAll: %v", err)
	}
	<-done
	// Killed children linger as zombies until init reaps them: count the living.
	deadline := time.Now().Add(10 * time.Second)
	for groupAlive(cmd.Process.Pid) {
		if time.Now().After(deadline) {
			t.Fatal("the container's process group survived KillAll")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// groupAlive reports whether a process group has a member that is not a zombie.
func groupAlive(pgid int) bool {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(s[i+1:])
		if len(fields) > 2 && fields[0] != "Z" && fields[2] == strconv.Itoa(pgid) {
			return true
		}
	}
	return false
}
