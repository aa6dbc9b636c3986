// Package harness gives tests a real localkube cluster: one per `go test` run
// (shared by every test binary of the run through a file lock), a fresh namespace
// per test, and faults to inject (killing, freezing and partitioning pods,
// restarting the control plane).
//
// A package that uses it runs its tests through Main:
//
//	func TestMain(m *testing.M) { os.Exit(harness.Main(m)) }
//
// If LOCALKUBE_DIR names a running cluster, that cluster is used and never stopped.
// Otherwise the first test binary that needs a cluster starts one in a directory
// under <repo>/.cache/localkube/harness; later binaries reuse it, and the last
// binary to finish stops it. LOCALKUBE_NODES sets the number of Nodes of a cluster the
// harness starts (default 3).
package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/mgors/operator/test/localkube/cluster"
)

// Env is a cluster as a test sees it.
type Env struct {
	// Dir is the cluster directory.
	Dir string
	// Config and Client reach the API server as cluster admin.
	Config *rest.Config
	Client kubernetes.Interface
	// Namespace is the test's own namespace (empty for Shared).
	Namespace string

	shared *shared
}

// shared is the state of this test binary's cluster.
type shared struct {
	repo      string
	dir       string
	localkube string // the localkube binary this run built
	external  bool   // from LOCALKUBE_DIR: never stopped
	usersLock *os.File
	config    *rest.Config
	client    kubernetes.Interface
}

var (
	mu       sync.Mutex
	current  *shared
	setupErr error
	inMain   bool
)

// Main runs the tests and then, unless the cluster came from LOCALKUBE_DIR or
// another test binary still uses it, stops the cluster this run started.
func Main(m *testing.M) int {
	mu.Lock()
	inMain = true
	mu.Unlock()
	code := m.Run()
	mu.Lock()
	s := current
	mu.Unlock()
	if s != nil {
		if err := s.release(); err != nil {
			fmt.Fprintf(os.Stderr, "harness: stopping the cluster: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// Shared returns the test binary's cluster, starting or joining it on first use.
func Shared(tb testing.TB) *Env {
	tb.Helper()
	mu.Lock()
	defer mu.Unlock()
	if !inMain {
		tb.Fatal("harness: call harness.Main from TestMain so that the cluster is stopped at the end")
	}
	if current == nil && setupErr == nil {
		current, setupErr = acquire()
	}
	if setupErr != nil {
		tb.Fatalf("harness: no cluster: %v", setupErr)
	}
	return &Env{Dir: current.dir, Config: rest.CopyConfig(current.config), Client: current.client, shared: current}
}

// Cluster returns the shared cluster with a namespace of the test's own, deleted
// when the test ends, after the checks registered with CheckEachNamespace.
func Cluster(t testing.TB) *Env {
	t.Helper()
	env := Shared(t)
	env.Namespace = createNamespace(t, env.Client)
	// Cleanups run last-registered first: the checks see the namespace
	// before its deletion (registered by createNamespace) starts.
	t.Cleanup(func() {
		mu.Lock()
		checks := namespaceChecks
		mu.Unlock()
		for _, check := range checks {
			check(t, env)
		}
	})
	return env
}

var namespaceChecks []func(testing.TB, *Env)

// CheckEachNamespace registers check to run at the end of every test that
// called Cluster, before its namespace is deleted (the end-to-end tests scan
// it for Secret values). Call it from TestMain, before Main.
func CheckEachNamespace(check func(tb testing.TB, env *Env)) {
	mu.Lock()
	defer mu.Unlock()
	namespaceChecks = append(namespaceChecks, check)
}

func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return cluster.FindRepo(wd)
}

// acquire finds or starts the cluster and registers this binary as a user.
func acquire() (*shared, error) {
	repo, err := repoRoot()
	if err != nil {
		return nil, err
	}
	s := &shared{repo: repo}
	if dir := os.Getenv("LOCALKUBE_DIR"); dir != "" {
		s.dir, s.external = dir, true
		if s.config, s.client, err = cluster.Client(dir); err != nil {
			return nil, err
		}
		if err := waitAPI(s.client); err != nil {
			return nil, fmt.Errorf("LOCALKUBE_DIR=%s: %w", dir, err)
		}
		s.localkube = filepath.Join(repo, ".cache", "localkube", "harness", "localkube")
		return s, s.buildLocalkube()
	}
	root := filepath.Join(repo, ".cache", "localkube", "harness")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	lock, err := lockFile(filepath.Join(root, "lock"), syscall.LOCK_EX)
	if err != nil {
		return nil, err
	}
	defer func() { _ = lock.Close() }() // releases the setup lock
	s.localkube = filepath.Join(root, "localkube")
	if err := s.buildLocalkube(); err != nil {
		return nil, err
	}
	pointer := filepath.Join(root, "current")
	if b, err := os.ReadFile(pointer); err == nil {
		s.dir = strings.TrimSpace(string(b))
		// Resume it: a no-op when it runs, a restart with its data when a previous
		// run was killed before stopping it.
		if err := s.localkubeCmd("up", "--dir", s.dir); err != nil {
			_ = s.localkubeCmd("down", "--dir", s.dir, "--purge")
			_ = os.Remove(pointer)
			s.dir = ""
		}
	}
	if s.dir == "" {
		dir, err := os.MkdirTemp(root, "cluster-")
		if err != nil {
			return nil, err
		}
		s.dir = dir
		if err := os.WriteFile(pointer, []byte(dir+"\n"), 0o644); err != nil {
			return nil, err
		}
		args := []string{"up", "--dir", dir}
		if n := os.Getenv("LOCALKUBE_NODES"); n != "" {
			args = append(args, "--nodes", n)
		}
		// The pods' programs: LOCALKUBE_BIN_DIR, as for a cluster of a test's
		// own (Own); localkube's default is the repository's bin/.
		if b := os.Getenv("LOCALKUBE_BIN_DIR"); b != "" {
			args = append(args, "--workload-bin", b)
		}
		if err := s.localkubeCmd(args...); err != nil {
			return nil, err
		}
	}
	if s.usersLock, err = lockFile(filepath.Join(s.dir, "run", "users.lock"), syscall.LOCK_SH); err != nil {
		return nil, err
	}
	if s.config, s.client, err = cluster.Client(s.dir); err != nil {
		return nil, err
	}
	return s, nil
}

// release unregisters this binary and stops the cluster if no other binary uses it.
func (s *shared) release() error {
	if s.external {
		return nil
	}
	root := filepath.Join(s.repo, ".cache", "localkube", "harness")
	lock, err := lockFile(filepath.Join(root, "lock"), syscall.LOCK_EX)
	if err != nil {
		return err
	}
	defer func() { _ = lock.Close() }()
	_ = s.usersLock.Close() // drops this binary's shared lock
	probe, err := os.OpenFile(filepath.Join(s.dir, "run", "users.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer func() { _ = probe.Close() }()
	if err := syscall.Flock(int(probe.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return nil // another test binary still uses the cluster: it stops it
	}
	if err := s.localkubeCmd("down", "--dir", s.dir, "--purge"); err != nil {
		return err
	}
	return os.Remove(filepath.Join(root, "current"))
}

// lockFile opens path and takes a flock on it, waiting for it.
func lockFile(path string, how int) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// buildLocalkube builds the localkube command of this checkout: the kubelets and
// the provisioner run as its subcommands.
func (s *shared) buildLocalkube() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", s.localkube, "./cmd/localkube")
	cmd.Dir = s.repo
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build localkube: %w\n%s", err, out)
	}
	return nil
}

// localkubeCmd runs the localkube command (up may build the control plane first:
// minutes on a cold cache). Its output lands in the harness directory's log and,
// on failure, in the error.
func (s *shared) localkubeCmd(args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.localkube, args...)
	cmd.Dir = s.repo
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	logPath := filepath.Join(s.repo, ".cache", "localkube", "harness", "localkube.log")
	if f, ferr := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); ferr == nil {
		_, _ = fmt.Fprintf(f, "---- localkube %s\n%s", strings.Join(args, " "), out.Bytes())
		_ = f.Close()
	}
	if err != nil {
		return fmt.Errorf("localkube %s: %w\n%s", strings.Join(args, " "), err, tail(out.String(), 40))
	}
	return nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func waitAPI(cs kubernetes.Interface) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var last error
	for ctx.Err() == nil {
		_, last = cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if last == nil {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return errors.Join(errors.New("API server not ready"), last)
}

// Logger returns a zerolog logger writing into the test's log.
func Logger(tb testing.TB) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(tb)).With().Timestamp().Logger()
}

// Localkube returns the localkube binary the harness built for this run.
func Localkube(tb testing.TB) string {
	tb.Helper()
	env := Shared(tb)
	return env.shared.localkube
}
