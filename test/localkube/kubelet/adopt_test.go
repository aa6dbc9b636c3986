package kubelet

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A container process that is not the kubelet's child (left by a previous kubelet)
// still reports its real exit status when it ends.
func TestAdoptedProcessReportsItsExit(t *testing.T) {
	for _, tc := range []struct {
		script     string
		code       int32
		reason     string
		signal     int32
		killWithIt bool
	}{
		{"exit 7", 7, "Error", 0, false},
		{"exit 0", 0, "Completed", 0, false},
		{"", 137, "Error", 9, true},
	} {
		dir := t.TempDir()
		script := "sleep 0.5; " + tc.script
		if tc.killWithIt {
			script = "exec sleep 30"
		}
		// The shell's background child outlives it: an orphan, as a container is
		// after its kubelet has gone.
		out, err := exec.Command("/bin/sh", "-c", "/bin/sh -c '"+script+"' >/dev/null 2>&1 & echo $!").Output()
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(out)))
		if err := writePIDFile(filepath.Join(dir, "pid"), pid); err != nil {
			t.Fatal(err)
		}
		p := adopt(dir, filepath.Join(dir, "0.log"), pid, "localkube://x", time.Now())
		if tc.killWithIt {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("%q: the end of the adopted process was not seen", tc.script)
		}
		if p.exit.ExitCode != tc.code || p.exit.Reason != tc.reason || p.exit.Signal != tc.signal {
			t.Errorf("%q: exit %+v, want code %d reason %s signal %d", tc.script, p.exit, tc.code, tc.reason, tc.signal)
		}
		if _, err := os.Stat(filepath.Join(dir, "pid")); !os.IsNotExist(err) {
			t.Errorf("pid file left behind: %v", err)
		}
	}
}
