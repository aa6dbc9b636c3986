package chaos

// A stand-in for the fault injector (package test/localkube/fault) over the
// harness's existing functions, until the injector is merged; it is deleted at
// the merge. Kill signals every container of the pod, Drops and NodeDown are
// not available.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/rs/zerolog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/mgors/operator/test/localkube/cluster"
	"github.com/mgors/operator/test/localkube/kubelet"
)

type tmpFaults struct {
	dir  string
	kube kubernetes.Interface
	log  zerolog.Logger
}

func newTmpFaults(dir string, log zerolog.Logger) (Faults, error) {
	_, cs, err := cluster.Client(dir)
	if err != nil {
		return nil, err
	}
	return &tmpFaults{dir: dir, kube: cs, log: log}, nil
}

func (f *tmpFaults) signal(namespace, pod string, sig syscall.Signal) (string, error) {
	pids, err := kubelet.PodProcesses(f.dir, namespace, pod)
	if err != nil {
		return "", err
	}
	if len(pids) == 0 {
		return "", fmt.Errorf("pod %s/%s has no running container", namespace, pod)
	}
	for _, pid := range pids {
		if err := syscall.Kill(-pid, sig); err != nil {
			return "", fmt.Errorf("pod %s/%s: %v to group %d: %w", namespace, pod, sig, pid, err)
		}
	}
	return fmt.Sprintf("%v to process groups %v", sig, pids), nil
}

func (f *tmpFaults) Kill(_ context.Context, namespace, pod, _ string) (string, error) {
	return f.signal(namespace, pod, syscall.SIGKILL)
}

func (f *tmpFaults) Pause(_ context.Context, namespace, pod string) (string, error) {
	return f.signal(namespace, pod, syscall.SIGSTOP)
}

func (f *tmpFaults) Resume(_ context.Context, namespace, pod string) (string, error) {
	return f.signal(namespace, pod, syscall.SIGCONT)
}

func (f *tmpFaults) Partition(ctx context.Context, tag, namespace string, isolate, from []string) error {
	ip := func(name string) (string, error) {
		p, err := f.kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		if p.Status.PodIP == "" {
			return "", fmt.Errorf("pod %s/%s has no IP", namespace, name)
		}
		return p.Status.PodIP, nil
	}
	for _, a := range isolate {
		ia, err := ip(a)
		if err != nil {
			return err
		}
		for _, b := range from {
			ib, err := ip(b)
			if err != nil {
				return err
			}
			if err := cluster.Partition(ctx, ia, ib, tag); err != nil {
				return err
			}
		}
	}
	return nil
}

func (f *tmpFaults) Heal(ctx context.Context, tag string) error { return cluster.Heal(ctx, tag) }

func (f *tmpFaults) Drops(context.Context, string) (int64, error) {
	return 0, errors.New("not yet: the partition rules count nothing before the fault injector")
}

func (f *tmpFaults) NodeDown(context.Context, string) (string, error) {
	return "", errors.New("not yet: node-down comes with the fault injector")
}

func (f *tmpFaults) NodeUp(context.Context, string) error {
	return errors.New("not yet: node-up comes with the fault injector")
}

func (f *tmpFaults) RestartControlPlane(ctx context.Context) (string, error) {
	before := pidFile(filepath.Join(f.dir, "run", "kube-apiserver.pid"))
	lk, err := localkubeBinary()
	if err != nil {
		return "", err
	}
	if err := cluster.StopControlPlane(f.dir); err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, lk, "up", "--dir", f.dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("localkube up: %w\n%s", err, out.String())
	}
	after := pidFile(filepath.Join(f.dir, "run", "kube-apiserver.pid"))
	return fmt.Sprintf("kube-apiserver pid %s → %s", before, after), nil
}

func pidFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "?"
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return "?"
}

// localkubeBinary finds the localkube command: $LOCALKUBE_CMD, the one of
// `make localkube-cmd`, or the harness's.
func localkubeBinary() (string, error) {
	if p := os.Getenv("LOCALKUBE_CMD"); p != "" {
		return p, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	repo, err := cluster.FindRepo(wd)
	if err != nil {
		return "", err
	}
	for _, p := range []string{".cache/localkube/localkube", ".cache/localkube/harness/localkube"} {
		if _, err := os.Stat(filepath.Join(repo, p)); err == nil {
			return filepath.Join(repo, p), nil
		}
	}
	return "", errors.New("no localkube command: run `make localkube-cmd` or set LOCALKUBE_CMD")
}
