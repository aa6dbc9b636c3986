package kubelet

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

// PID namespaces are a container runtime's: every container gets one of its own
// (CLONE_NEWPID; its command is PID 1 there and /proc shows only its processes),
// unless the pod sets shareProcessNamespace, when all its containers join the one
// that the pod's sandbox process, pause, holds as PID 1 (as the pause container
// does under containerd or CRI-O), or hostPID, when they stay in the node's.
//
// As in any PID namespace, PID 1 gets only the signals it handles from inside
// its namespace (`kill 1`, even `kill -9 1`, does nothing to a shell or a sleep),
// SIGKILL and SIGSTOP always from the node; and when PID 1 ends, the kernel kills
// everything else in its namespace.

// pauseEnv names the environment variable that turns a re-executed kubelet binary
// into a pod's pause process.
const pauseEnv = "LOCALKUBE_PAUSE"

// pidMode is how a container's PID namespace is chosen.
type pidMode int

const (
	pidOwn  pidMode = iota // a namespace of its own
	pidPod                 // the pod's, held by pause
	pidHost                // the node's
)

// podPIDMode is the PID namespace mode of a pod's containers.
func podPIDMode(spec *corev1.PodSpec) pidMode {
	switch {
	case spec.HostPID:
		return pidHost
	case spec.ShareProcessNamespace != nil && *spec.ShareProcessNamespace:
		return pidPod
	}
	return pidOwn
}

// sandboxDir is pods/UID/sandbox: the pause process's pid file and, as its root
// directory, where `localkube down` finds it by its chroot.
func sandboxDir(podDir string) string { return filepath.Join(podDir, "sandbox") }

// ensurePause starts the pod's pause process unless it runs already, and returns
// its pid file.
func (w *podWorker) ensurePause() (string, error) {
	dir := sandboxDir(w.dir)
	pidFile := filepath.Join(dir, "pid")
	if _, ok := readLivePID(pidFile); ok {
		return pidFile, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	cmd := exec.Command(w.k.self)
	cmd.Args = []string{"/pause"}
	cmd.Env = []string{pauseEnv + "=" + dir}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Cloneflags: syscall.CLONE_NEWPID}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start pause: %w", err)
	}
	go func() { _ = cmd.Wait() }() // reap it when it ends
	if err := writePIDFile(pidFile, cmd.Process.Pid); err != nil {
		_ = cmd.Process.Kill()
		return "", fmt.Errorf("pause pid file: %w", err)
	}
	w.log.Info().Int("pid", cmd.Process.Pid).Msg("pod PID namespace ready")
	return pidFile, nil
}

// stopPause ends the pod's pause process, if any, and waits for its end.
func stopPause(podDir string) {
	pidFile := filepath.Join(sandboxDir(podDir), "pid")
	pid, ok := readLivePID(pidFile)
	if ok {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			if _, ok := readLivePID(pidFile); !ok {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	_ = os.Remove(pidFile)
}

// killPauses ends the pause processes of every pod of every node under dir.
func killPauses(dir string) {
	dirs, _ := filepath.Glob(filepath.Join(dir, "nodes", "*", "pods", "*"))
	for _, d := range dirs {
		stopPause(d)
	}
}

// runPause is the pause process: PID 1 of its pod's PID namespace, chrooted into
// its sandbox directory. It reaps the orphans of the pod's containers and ends
// on SIGTERM or SIGINT.
func runPause(dir string) {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGCHLD, syscall.SIGTERM, syscall.SIGINT)
	_ = unix.Chroot(dir)
	_ = unix.Chdir("/")
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}

// inNamespaces runs fn on an OS thread inside the network namespace at netns and
// with the PID namespace of the live process in pidFile for its children, so that
// processes fn starts (exec.Cmd.Start) start in both. Empty arguments leave a
// namespace as it is.
func inNamespaces(netns, pidFile string, fn func() error) error {
	if netns == "" && pidFile == "" {
		return fn()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// Still locked at the end: the thread dies with the goroutine and never
		// serves another, whatever namespaces it was moved into.
		if netns != "" {
			f, err := os.Open(netns)
			if err != nil {
				errc <- err
				return
			}
			err = unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
			_ = f.Close()
			if err != nil {
				errc <- fmt.Errorf("setns %s: %w", netns, err)
				return
			}
		}
		if pidFile != "" {
			pid, ok := readLivePID(pidFile)
			if !ok {
				errc <- fmt.Errorf("the pod's pause process is not running")
				return
			}
			f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/ns/pid")
			if err != nil {
				errc <- err
				return
			}
			if again, ok := readLivePID(pidFile); !ok || again != pid {
				_ = f.Close()
				errc <- fmt.Errorf("the pod's pause process ended")
				return
			}
			err = unix.Setns(int(f.Fd()), unix.CLONE_NEWPID)
			_ = f.Close()
			if err != nil {
				errc <- fmt.Errorf("join the pod's PID namespace: %w", err)
				return
			}
		}
		errc <- fn()
	}()
	return <-errc
}
