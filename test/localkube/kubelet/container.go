package kubelet

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

// identity is who a container's process runs as.
type identity struct {
	UID, GID     uint32
	Groups       []uint32
	ReadOnlyRoot bool
}

// resolveIdentity merges the pod's and the container's securityContext with the
// image user, and refuses runAsNonRoot for a process that would run as root, as a
// kubelet does (CreateContainerConfigError).
func resolveIdentity(pod *corev1.Pod, c *corev1.Container, img *Image) (identity, error) {
	var id identity
	psc := pod.Spec.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	csc := c.SecurityContext
	if csc == nil {
		csc = &corev1.SecurityContext{}
	}
	runAsUser, runAsGroup, nonRoot := psc.RunAsUser, psc.RunAsGroup, psc.RunAsNonRoot
	if csc.RunAsUser != nil {
		runAsUser = csc.RunAsUser
	}
	if csc.RunAsGroup != nil {
		runAsGroup = csc.RunAsGroup
	}
	if csc.RunAsNonRoot != nil {
		nonRoot = csc.RunAsNonRoot
	}
	imageUser, imageGroup := "", ""
	if img != nil {
		imageUser, imageGroup = img.User, img.Group
	}
	switch {
	case runAsUser != nil:
		id.UID = uint32(*runAsUser)
	case imageUser != "":
		u, err := strconv.ParseUint(imageUser, 10, 32)
		if err != nil {
			if nonRoot != nil && *nonRoot {
				return id, &configError{fmt.Sprintf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root (pod: %q, container: %s)", imageUser, pod.Name+"_"+pod.Namespace+"("+string(pod.UID)+")", c.Name)}
			}
			return id, &configError{fmt.Sprintf("image user %q is not numeric", imageUser)}
		}
		id.UID = uint32(u)
	}
	if nonRoot != nil && *nonRoot && id.UID == 0 {
		return id, &configError{fmt.Sprintf("container has runAsNonRoot and image will run as root (pod: %q, container: %s)", pod.Name+"_"+pod.Namespace+"("+string(pod.UID)+")", c.Name)}
	}
	switch {
	case runAsGroup != nil:
		id.GID = uint32(*runAsGroup)
	case runAsUser == nil && imageGroup != "":
		g, _ := strconv.ParseUint(imageGroup, 10, 32)
		id.GID = uint32(g)
	}
	if psc.FSGroup != nil {
		id.Groups = append(id.Groups, uint32(*psc.FSGroup))
	}
	for _, g := range psc.SupplementalGroups {
		id.Groups = append(id.Groups, uint32(g))
	}
	id.ReadOnlyRoot = csc.ReadOnlyRootFilesystem != nil && *csc.ReadOnlyRootFilesystem
	return id, nil
}

// proc is a running container process the kubelet watches.
type proc struct {
	pid    int
	done   chan struct{} // closed after exit is set
	exit   termination
	detach func() // stop copying output, leaving the process running
}

func newContainerID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "localkube://" + hex.EncodeToString(b)
}

// launch is one container start, fully resolved.
type launch struct {
	Dir      string // containers/NAME
	LogPath  string
	Netns    string // empty: the host network
	PID      pidMode
	PausePID string // with PID pidPod: the pause process's pid file
	Spec     initSpec
	ID       string
	Executor string // the kubelet binary, re-executed as the init helper
}

func mkfifo(path string) error {
	if st, err := os.Lstat(path); err == nil {
		if st.Mode()&os.ModeNamedPipe != 0 {
			return nil
		}
		_ = os.Remove(path)
	}
	return unix.Mkfifo(path, 0o600)
}

// openOutput opens the container's output FIFOs for the kubelet to read and starts
// copying them into the log. Read-write, so the kubelet's read never sees an end of
// file before the container opened them.
func openOutput(dir, logPath string) (detach func(), drain func(), err error) {
	l, err := openLog(logPath)
	if err != nil {
		return nil, nil, err
	}
	var files []*os.File
	copied := make(chan struct{}, 2)
	for _, s := range []string{"stdout", "stderr"} {
		p := filepath.Join(dir, s)
		if err := mkfifo(p); err != nil {
			return nil, nil, err
		}
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			return nil, nil, err
		}
		files = append(files, f)
		go func(f *os.File, stream string) {
			copyLines(f, stream, l)
			copied <- struct{}{}
		}(f, s)
	}
	// detach stops reading without waiting: the kubelet is going away and leaves
	// the output in the FIFOs for its successor.
	detach = func() {
		for _, f := range files {
			_ = f.SetReadDeadline(time.Now())
		}
	}
	// drain reads what the container left in the FIFOs after its exit, then stops.
	drain = func() {
		for _, f := range files {
			_ = f.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		}
		<-copied
		<-copied
		for _, f := range files {
			_ = f.Close()
		}
		_ = l.Close()
	}
	return detach, drain, nil
}

// start runs the container's init helper in the pod's namespaces and waits until it
// has executed the container's command (or failed to).
func start(l launch) (*proc, error) {
	specPath := filepath.Join(l.Dir, "spec.json")
	b, err := json.Marshal(l.Spec)
	if err != nil {
		return nil, err
	}
	if err := writeFileAtomic(specPath, b, 0o600); err != nil {
		return nil, err
	}
	for _, d := range []string{l.Spec.Root, l.Spec.Scratch} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	detach, drain, err := openOutput(l.Dir, l.LogPath)
	if err != nil {
		return nil, err
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		drain()
		return nil, err
	}
	cmd := exec.Command(l.Executor)
	cmd.Args = []string{"localkube-container-init"}
	cmd.Env = []string{initEnv + "=" + specPath}
	cmd.ExtraFiles = []*os.File{statusW}
	flags := uintptr(syscall.CLONE_NEWNS | syscall.CLONE_NEWUTS | syscall.CLONE_NEWIPC)
	pauseFile := ""
	switch l.PID {
	case pidOwn:
		flags |= syscall.CLONE_NEWPID
	case pidPod:
		pauseFile = l.PausePID
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Cloneflags: flags}
	err = inNamespaces(l.Netns, pauseFile, cmd.Start)
	_ = statusW.Close() // the child holds its own copy
	if err != nil {
		_ = statusR.Close()
		drain()
		return nil, err
	}
	startedAt := time.Now()
	msg, _ := io.ReadAll(statusR)
	_ = statusR.Close()
	p := &proc{pid: cmd.Process.Pid, done: make(chan struct{}), detach: detach}
	if len(msg) == 0 {
		if err := writePIDFile(filepath.Join(l.Dir, "pid"), p.pid); err != nil {
			// The command ran and ended already; Wait below reports it.
			_ = err
		}
	}
	go func() {
		err := cmd.Wait()
		// What the command left behind in its process group goes with it, as with a
		// runtime that kills the container's cgroup. The group's ID cannot have been
		// reused while members remain.
		_ = syscall.Kill(-p.pid, syscall.SIGKILL)
		p.exit = exitOf(cmd.ProcessState, err)
		p.exit.StartedAt, p.exit.FinishedAt, p.exit.ID = startedAt, time.Now(), l.ID
		if len(msg) > 0 {
			p.exit = termination{ExitCode: 128, Reason: "StartError", Message: strings.TrimSpace(string(msg)),
				StartedAt: time.Unix(0, 0).UTC(), FinishedAt: time.Now(), ID: l.ID}
		}
		drain()
		_ = os.Remove(filepath.Join(l.Dir, "pid"))
		close(p.done)
	}()
	if len(msg) > 0 {
		<-p.done
		return p, errStartFailed
	}
	return p, nil
}

var errStartFailed = errors.New("container start failed")

func exitOf(ps *os.ProcessState, err error) termination {
	t := termination{Reason: "Error", ExitCode: 255}
	if ps == nil {
		t.Message = fmt.Sprint(err)
		return t
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	switch {
	case ok && ws.Signaled():
		t.ExitCode = 128 + int32(ws.Signal())
		t.Signal = int32(ws.Signal())
	default:
		t.ExitCode = int32(ps.ExitCode())
	}
	if t.ExitCode == 0 {
		t.Reason = "Completed"
	}
	return t
}

// stopProcess sends SIGTERM to a container's process group, waits up to grace, then
// sends SIGKILL, and waits for the end.
func stopProcess(p *proc, grace time.Duration) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.pid, syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-time.After(grace):
	}
	_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	_ = syscall.Kill(p.pid, syscall.SIGKILL)
	<-p.done
}
