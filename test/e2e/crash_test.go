package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgors/operator/actors"
	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/test/localkube/harness"
)

// hostOperator runs bin/mgors-operator on the host against the test's
// namespace only, with a file event store, until it exits or ctx ends.
type hostOperator struct {
	cmd    *exec.Cmd
	out    *bytes.Buffer
	exited chan struct{} // closed when the process has been waited for
	err    error         // its exit, once exited is closed
}

func startHostOperator(t *testing.T, env *harness.Env, storeDir, crashAfter string) *hostOperator {
	t.Helper()
	bin := crashableOperator(t)
	cmd := exec.Command(bin,
		"--kubeconfig", filepath.Join(env.Dir, "kubeconfig"),
		"--namespace", env.Namespace,
		"--event-store", "file", "--event-dir", storeDir,
		"--dns-server", "10.244.0.1:53",
		"--metrics-addr", "0", "--health-addr", "0",
		"--interval", "2s", "--identity", "e2e-host")
	cmd.Env = append(os.Environ(), "MGORS_CRASH_AFTER="+crashAfter)
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &hostOperator{cmd: cmd, out: out, exited: make(chan struct{})}
	go func() {
		h.err = cmd.Wait()
		close(h.exited)
	}()
	t.Cleanup(h.stop)
	return h
}

var (
	crashableOnce sync.Once
	crashableBin  string
	crashableErr  error
)

// crashableOperator builds the operator with -tags crashhook into .cache once
// per test binary: only that build reads MGORS_CRASH_AFTER (the production binary of
// make build has no test hook).
func crashableOperator(t *testing.T) string {
	t.Helper()
	crashableOnce.Do(func() {
		crashableBin = filepath.Join(repo(t), ".cache", "crashhook", "mgors-operator")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		build := exec.CommandContext(ctx, "go", "build", "-tags", "crashhook", "-o", crashableBin, "./cmd/mgors-operator")
		build.Dir = repo(t)
		if out, err := build.CombinedOutput(); err != nil {
			crashableErr = fmt.Errorf("go build -tags crashhook: %w\n%s", err, out)
		}
	})
	if crashableErr != nil {
		t.Fatal(crashableErr)
	}
	return crashableBin
}

// stop ends the process gracefully (SIGTERM, then SIGKILL); calling it again,
// or after the process died, is harmless.
func (h *hostOperator) stop() {
	select {
	case <-h.exited:
		return
	default:
	}
	_ = h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.exited:
	case <-time.After(15 * time.Second):
		_ = h.cmd.Process.Kill()
		<-h.exited
	}
}

// pauseInClusterOperator scales the operator deployed from deploy/ to zero for
// the test, so that only the host operator acts on the test's clusters.
func pauseInClusterOperator(t *testing.T, env *harness.Env) {
	out, err := kubectl(t, env, "", "-n", "mgors-system", "get", "deployment/mgors-operator", "-o", "jsonpath={.spec.replicas}")
	if err != nil {
		if strings.Contains(out, "NotFound") || strings.Contains(out, "not found") {
			return
		}
		t.Fatalf("kubectl get: %v\n%s", err, out)
	}
	replicas := strings.TrimSpace(out)
	mustKubectl(t, env, "", "-n", "mgors-system", "scale", "deployment/mgors-operator", "--replicas=0")
	t.Cleanup(func() {
		_, _ = kubectl(t, env, "", "-n", "mgors-system", "scale", "deployment/mgors-operator", "--replicas="+replicas)
	})
}

// The operator is SIGKILLed right after each kind of event on the way from
// apply to Healthy; a restarted operator converges with one initiate, two users,
// no reconfig, and a log that continues without gaps (issue: event-sourced
// clusters; invariant 1).
func TestOperatorKilledAfterEachEventConverges(t *testing.T) {
	env := harness.Cluster(t)
	installCRD(t, env)
	pauseInClusterOperator(t, env)
	ctx := context.Background()
	for i, crash := range []string{
		// ActionStarted 1 to 5: EnsureObjects, SetDisruptionBudget, Initiate,
		// CreateOperatorUser (as __system), CreateAdminUser (as that user).
		"SpecObserved:1", "MembersObserved:1", "ActionStarted:1", "ActionFinished:1",
		"ActionStarted:2", "PhaseChanged:1", "ActionStarted:3", "Initiated:1", "MembersObserved:3",
		"ActionStarted:4", "OperatorUserReady:1", "AuthSwitched:1",
		"ActionStarted:5", "AdminUserReady:1", "PhaseChanged:2",
	} {
		t.Run(crash, func(t *testing.T) {
			name := fmt.Sprintf("crash%d", i)
			store := t.TempDir()
			m := sample(t, env, "mgors-dev-1.yaml", func(m *v1alpha1.Mgors) {
				m.Name = name
				m.Spec.Members = 1
				m.Spec.Storage.Reclaim = v1alpha1.VolumeDelete
			})
			created, err := mgorsClient(t, env).Mgorses(env.Namespace).Create(ctx, m, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = mgorsClient(t, env).Mgorses(env.Namespace).Delete(context.Background(), name, metav1.DeleteOptions{})
			})
			first := startHostOperator(t, env, store, crash)
			select {
			case <-first.exited:
				if ws, ok := first.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
					t.Fatalf("the operator did not die by SIGKILL after %s: %v\n%s", crash, first.err, first.out)
				}
			case <-time.After(4 * time.Minute):
				t.Fatalf("the operator never reached %s\n%s", crash, first.out)
			}
			second := startHostOperator(t, env, store, "")
			waitMgors(t, env, name, "Healthy after a crash after "+crash, 4*time.Minute, func(m *v1alpha1.Mgors) bool {
				return m.Status.Phase == v1alpha1.PhaseHealthy && m.Status.Primary != ""
			})
			second.stop()

			recs, s := foldedLog(t, store, eventlog.Stream{Namespace: env.Namespace, Name: name, UID: string(created.UID)})
			// One initiate and two users (the operator's and the admin), all made
			// by the operator: a found config or user would mean an initiate or a
			// creation reached a cluster that already had one. No reconfig of a
			// 1-member set.
			if !s.Initiated || s.Initiates != 1 || s.UsersCreated != 2 || s.Reconfigs != 0 || s.ForcedReconfigs != 0 {
				t.Fatalf("after a crash after %s: %s (initiates %d, users %d, reconfigs %d)", crash, s, s.Initiates, s.UsersCreated, s.Reconfigs)
			}
			for _, r := range recs {
				e, _, _ := actors.Decode(r)
				switch e := e.(type) {
				case actors.Initiated:
					if e.Found {
						t.Fatalf("after a crash after %s: record %d found an existing config", crash, r.Seq)
					}
				case actors.AdminUserReady:
					if e.Found {
						t.Fatalf("after a crash after %s: record %d found an existing user", crash, r.Seq)
					}
				case actors.OperatorUserReady:
					if e.Found {
						t.Fatalf("after a crash after %s: record %d found an existing operator user", crash, r.Seq)
					}
				case actors.ActionStarted:
					if e.Action == actors.ActReconfig || e.Action == actors.ActForceReconfig {
						t.Fatalf("after a crash after %s: record %d started a reconfig", crash, r.Seq)
					}
				}
			}
		})
	}
}

// The same through a recovery: the member of a Healthy cluster stops answering,
// and the operator is SIGKILLed right after the first events of the recovery;
// once the member is back, a restarted operator brings the cluster to Healthy
// with no reconfig (a member that comes back needs none) and a gapless log.
func TestOperatorKilledDuringARecoveryConverges(t *testing.T) {
	env := harness.Cluster(t)
	installCRD(t, env)
	pauseInClusterOperator(t, env)
	ctx := context.Background()
	for i, crash := range []string{"MembersObserved:1", "PhaseChanged:1"} {
		t.Run(crash, func(t *testing.T) {
			name := fmt.Sprintf("recover%d", i)
			store := t.TempDir()
			m := sample(t, env, "mgors-dev-1.yaml", func(m *v1alpha1.Mgors) {
				m.Name = name
				m.Spec.Storage.Reclaim = v1alpha1.VolumeDelete
			})
			created, err := mgorsClient(t, env).Mgorses(env.Namespace).Create(ctx, m, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = mgorsClient(t, env).Mgorses(env.Namespace).Delete(context.Background(), name, metav1.DeleteOptions{})
			})
			healthy := func(m *v1alpha1.Mgors) bool { return m.Status.Phase == v1alpha1.PhaseHealthy && m.Status.Primary != "" }
			first := startHostOperator(t, env, store, "")
			before := waitMgors(t, env, name, "Healthy", 4*time.Minute, healthy)
			first.stop()

			// A new operator, armed, recovers the same log; then the member stops
			// answering (its processes frozen, as a hung node): a lost pod that comes
			// back in a second is healed by mongod alone and is no recovery at all.
			second := startHostOperator(t, env, store, crash)
			time.Sleep(2 * time.Second) // let it recover the log and see the cluster Healthy
			env.StopPod(t, env.Namespace, name+"-0")
			select {
			case <-second.exited:
				if ws, ok := second.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
					t.Fatalf("the operator did not die by SIGKILL after %s: %v\n%s", crash, second.err, second.out)
				}
			case <-time.After(3 * time.Minute):
				t.Fatalf("the operator never reached %s during the recovery\n%s", crash, second.out)
			}
			env.ResumePod(t, env.Namespace, name+"-0")
			third := startHostOperator(t, env, store, "")
			waitMgors(t, env, name, "Healthy again after a crash during the recovery", 4*time.Minute, func(m *v1alpha1.Mgors) bool {
				return healthy(m) && m.Status.EventLog.Sequence > before.Status.EventLog.Sequence
			})
			third.stop()

			recs, s := foldedLog(t, store, eventlog.Stream{Namespace: env.Namespace, Name: name, UID: string(created.UID)})
			recovered := false
			for _, r := range recs {
				e, _, _ := actors.Decode(r)
				if pc, ok := e.(actors.PhaseChanged); ok && pc.To == v1alpha1.PhaseRecovering {
					recovered = true
				}
				if st, ok := e.(actors.ActionStarted); ok && (st.Action == actors.ActReconfig || st.Action == actors.ActForceReconfig || st.Action == actors.ActInitiate && r.Seq > before.Status.EventLog.Sequence) {
					t.Fatalf("record %d: %s during the recovery", r.Seq, st.Action)
				}
			}
			if !recovered || s.Phase != v1alpha1.PhaseHealthy || s.Initiates != 1 || s.UsersCreated != 2 {
				t.Fatalf("after a crash after %s in a recovery: recovered %t, %s", crash, recovered, s)
			}
		})
	}
}

// foldedLog loads a host operator's whole event log from its file store (a
// short log: no snapshot), checks it has no gap, and folds it.
func foldedLog(t *testing.T, store string, stream eventlog.Stream) ([]eventlog.Record, actors.State) {
	t.Helper()
	fs, err := eventlog.NewFile(store)
	if err != nil {
		t.Fatal(err)
	}
	snap, recs, err := fs.Load(context.Background(), stream)
	if err != nil {
		t.Fatal(err)
	}
	if snap != nil {
		t.Fatalf("unexpected snapshot in a short log")
	}
	if err := eventlog.CheckSequence(0, recs); err != nil {
		t.Fatalf("the log has a gap: %v", err)
	}
	s, err := actors.Fold(actors.Initial(), recs)
	if err != nil {
		t.Fatal(err)
	}
	return recs, s
}
