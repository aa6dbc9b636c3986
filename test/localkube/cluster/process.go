package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// component is one long-running process of the cluster.
type component struct {
	name string
	args []string // args[0] is the executable
}

// pidOf returns the pid recorded for a component if that process is still the one
// we started: alive, not a zombie, and running our executable with an argument that
// names the cluster directory. A pid file left by a crashed run, or a pid reused by
// an unrelated process, reads as not running.
func pidOf(l layout, name string) (int, bool) {
	b, err := os.ReadFile(l.pid(name))
	if err != nil {
		return 0, false
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return 0, false
	}
	pid, err := strconv.Atoi(fields[0])
	if err != nil || pid <= 1 {
		return 0, false
	}
	return pid, processMatches(pid, l.dir)
}

// processMatches reports whether pid is a live process whose command line mentions dir.
func processMatches(pid int, dir string) bool {
	if !alive(pid) {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	return bytes.Contains(cmdline, []byte(dir))
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name, which may itself hold spaces.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return false
	}
	state := stat[i+2]
	return state != 'Z' && state != 'X'
}

// start runs c detached from the caller: a new session (so a terminal's signals and
// the caller's exit do not reach it), stdin from /dev/null, output appended to its
// log. The pid is recorded under run/.
func start(l layout, c component) (int, error) {
	logf, err := os.OpenFile(l.log(c.name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer func() { _ = logf.Close() }()
	_, _ = fmt.Fprintf(logf, "---- localkube: starting %s at %s\n", c.name, time.Now().UTC().Format(time.RFC3339))
	cmd := exec.Command(c.args[0], c.args[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = l.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start %s: %w", c.name, err)
	}
	pid := cmd.Process.Pid
	// Reap the child if it exits while this process lives, so that it never lingers
	// as a zombie that still looks alive; once we exit, init adopts it.
	go func() { _ = cmd.Wait() }()
	if err := os.WriteFile(l.pid(c.name), []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		return pid, err
	}
	return pid, nil
}

// stop ends a component's whole process group: SIGTERM, then SIGKILL after grace.
// It returns once the leader is gone and removes the pid file.
func stop(l layout, name string, grace time.Duration) error {
	pid, ok := pidOf(l, name)
	if ok {
		if err := terminate(pid, grace); err != nil {
			return fmt.Errorf("stop %s: %w", name, err)
		}
	}
	err := os.Remove(l.pid(name))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// kill ends a component's process group at once with SIGKILL, as a crash of its
// machine would, and removes the pid file. It returns the pid it killed (0 when the
// component was not running).
func kill(l layout, name string) (int, error) {
	pid, ok := pidOf(l, name)
	if ok {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = syscall.Kill(pid, syscall.SIGKILL)
		deadline := time.Now().Add(5 * time.Second)
		for alive(pid) {
			if time.Now().After(deadline) {
				return pid, fmt.Errorf("kill %s: pid %d survived SIGKILL", name, pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	} else {
		pid = 0
	}
	if err := os.Remove(l.pid(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return pid, err
	}
	return pid, nil
}

// terminate signals the process group led by pid (and pid itself, in case it left
// its group), waiting up to grace before SIGKILL.
func terminate(pid int, grace time.Duration) error {
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	_ = syscall.Kill(pid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !alive(pid) {
			_ = syscall.Kill(-pid, syscall.SIGKILL) // stragglers in the group
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = syscall.Kill(pid, syscall.SIGKILL)
	deadline = time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if !alive(pid) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("pid %d survived SIGKILL", pid)
}

// logTail returns the last n lines of a component's log, for error messages.
func logTail(l layout, name string, n int) string {
	b, err := os.ReadFile(l.log(name))
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// recordedComponents lists the components with a pid file under run/.
func recordedComponents(l layout) []string {
	matches, _ := filepath.Glob(filepath.Join(l.runDir(), "*.pid"))
	names := make([]string, 0, len(matches))
	for _, m := range matches {
		names = append(names, strings.TrimSuffix(filepath.Base(m), ".pid"))
	}
	return names
}
