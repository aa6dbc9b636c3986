package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Exclusive gives a test the machine's localkube network plan (the lk0 bridge, the
// fixed ports) for itself, to start and stop clusters of its own: it waits until no
// test binary uses the shared cluster, stops that cluster if it is idle, and keeps
// other binaries from starting one until the test ends. It returns the localkube
// binary to run. A test that calls it must not also use Shared. When LOCALKUBE_DIR
// names a cluster someone else runs, the test is skipped: two clusters cannot share
// one machine.
func Exclusive(tb testing.TB) string {
	tb.Helper()
	if os.Getenv("LOCALKUBE_DIR") != "" {
		tb.Skip("LOCALKUBE_DIR is set: this test needs the machine without a running cluster")
	}
	repo, err := repoRoot()
	if err != nil {
		tb.Fatal(err)
	}
	root := filepath.Join(repo, ".cache", "localkube", "harness")
	if err := os.MkdirAll(root, 0o755); err != nil {
		tb.Fatal(err)
	}
	s := &shared{repo: repo, localkube: filepath.Join(root, "localkube")}
	// Other test binaries may hold the shared cluster for as long as their tests
	// run: wait until shortly before this test's own deadline.
	deadline := time.Now().Add(30 * time.Minute)
	if t, ok := tb.(interface{ Deadline() (time.Time, bool) }); ok {
		if d, ok := t.Deadline(); ok {
			deadline = d.Add(-5 * time.Minute)
		}
	}
	for {
		lock, err := lockFile(filepath.Join(root, "lock"), syscall.LOCK_EX)
		if err != nil {
			tb.Fatal(err)
		}
		free, dir := sharedIdle(root)
		if free {
			if dir != "" {
				if err := s.buildLocalkube(); err != nil {
					_ = lock.Close()
					tb.Fatal(err)
				}
				if err := s.localkubeCmd("down", "--dir", dir, "--purge"); err != nil {
					_ = lock.Close()
					tb.Fatal(err)
				}
				_ = os.Remove(filepath.Join(root, "current"))
			}
			tb.Cleanup(func() { _ = lock.Close() })
			if err := s.buildLocalkube(); err != nil {
				tb.Fatal(err)
			}
			return s.localkube
		}
		_ = lock.Close()
		if time.Now().After(deadline) {
			tb.Fatal("the shared cluster stayed in use until this test's deadline")
		}
		time.Sleep(time.Second)
	}
}

// sharedIdle reports whether no test binary uses the shared cluster, and its
// directory if one exists. Called with the setup lock held.
func sharedIdle(root string) (bool, string) {
	b, err := os.ReadFile(filepath.Join(root, "current"))
	if err != nil {
		return true, ""
	}
	dir := strings.TrimSpace(string(b))
	f, err := os.OpenFile(filepath.Join(dir, "run", "users.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return true, dir
	}
	defer func() { _ = f.Close() }()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return false, dir
	}
	return true, dir
}

// Own starts a localkube cluster of the test's own (under Exclusive), in a new
// directory named after prefix under .cache/localkube/harness, and stops and
// purges it when the test ends. It sets LOCALKUBE_CMD for the test and returns
// the repository root and the cluster's directory. LOCALKUBE_BIN and
// LOCALKUBE_BIN_DIR, when set, name the prebuilt control plane and the
// workload binaries, as for the shared cluster.
func Own(t *testing.T, prefix string) (repo, dir string) {
	t.Helper()
	localkube := Exclusive(t)
	t.Setenv("LOCALKUBE_CMD", localkube)
	repo, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir, err = os.MkdirTemp(filepath.Join(repo, ".cache", "localkube", "harness"), prefix+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		out, err := exec.Command(localkube, "down", "--dir", dir, "--purge").CombinedOutput()
		if err != nil {
			t.Errorf("localkube down: %v\n%s", err, out)
		}
		_ = os.Remove(dir)
	})
	args := []string{"up", "--dir", dir}
	if b := os.Getenv("LOCALKUBE_BIN"); b != "" {
		args = append(args, "--bin", b)
	}
	if b := os.Getenv("LOCALKUBE_BIN_DIR"); b != "" {
		args = append(args, "--workload-bin", b)
	}
	up := exec.Command(localkube, args...)
	up.Dir = repo
	if out, err := up.CombinedOutput(); err != nil {
		t.Fatalf("localkube up: %v\n%s", err, out)
	}
	return repo, dir
}
