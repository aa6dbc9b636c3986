package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/mgors/operator/test/localkube/kubelet"
)

// stopOrder is the reverse of the start order: kubelets first (they hold pods),
// then what depends on the API server, then the API server, then etcd.
func stopOrder(l layout) []string {
	recorded := recordedComponents(l)
	var kubelets []string
	for _, c := range recorded {
		if strings.HasPrefix(c, "kubelet-") {
			kubelets = append(kubelets, c)
		}
	}
	sort.Strings(kubelets)
	order := append(kubelets, "loadbalancer", "provisioner", "kube-proxy", "coredns", "kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd")
	// Anything else recorded (a component of a newer localkube) goes before the API server.
	known := map[string]bool{}
	for _, c := range order {
		known[c] = true
	}
	for _, c := range recorded {
		if !known[c] {
			order = append([]string{c}, order...)
		}
	}
	return order
}

// Down stops every process of the cluster in dir (pods included) and removes what
// it put on the host: mounts under dir, the pods' veths, the bridge, the nftables
// tables. dir itself stays unless purge is set.
func Down(ctx context.Context, dir string, purge bool, log zerolog.Logger) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	l := layout{dir: dir}
	if !fileExists(l.state()) && !fileExists(l.runDir()) {
		return fmt.Errorf("%s is not a localkube cluster directory", dir)
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return err
	}
	defer unlock()
	var errs []error
	for _, c := range stopOrder(l) {
		if _, ok := pidOf(l, c); ok {
			log.Info().Str("component", c).Msg("stopping")
		}
		if err := stop(l, c, 10*time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	// The kubelets' own teardown first (containers, network namespaces, veths),
	// then a sweep by what any pod process looks like, in case a pid file was
	// never written.
	if err := kubelet.KillAll(dir); err != nil {
		log.Warn().Err(err).Msg("kubelet teardown incomplete; sweeping")
	}
	if n := killPodProcesses(dir); n > 0 {
		log.Info().Int("processes", n).Msg("killed pod processes left by the kubelets")
	}
	if err := unmountUnder(dir); err != nil {
		errs = append(errs, err)
	}
	// The bridge and the tables are the machine's, not the directory's: leave them
	// to a cluster that still runs from another directory.
	if other := otherCluster(dir); other != "" {
		log.Warn().Str("running", other).Msg("another localkube cluster runs: its bridge and nftables tables stay")
	} else {
		if err := removeNetwork(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	log.Info().Str("dir", dir).Msg("cluster stopped")
	if purge {
		if mounts := mountsUnder(dir); len(mounts) > 0 {
			return fmt.Errorf("not purging %s: still mounted: %v", dir, mounts)
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		log.Info().Str("dir", dir).Msg("cluster directory removed")
	}
	return nil
}

// killPodProcesses SIGKILLs any process whose root directory lies under dir (a
// container's chroot) after kubelet.KillAll killed the recorded containers: a
// container whose pid file was never written. It returns how many it signalled.
func killPodProcesses(dir string) int {
	n := 0
	self := os.Getpid()
	for _, pid := range processesRootedUnder(dir) {
		if pid != self {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			n++
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && len(processesRootedUnder(dir)) > 0 {
		time.Sleep(50 * time.Millisecond)
	}
	return n
}

// processesRootedUnder lists live processes whose root directory is inside dir.
func processesRootedUnder(dir string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		root, err := os.Readlink(fmt.Sprintf("/proc/%d/root", pid))
		if err != nil || !strings.HasPrefix(root, dir+"/") || !alive(pid) {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

// mountsUnder lists the mount points inside dir, deepest first.
func mountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer func() { _ = f.Close() }()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space and so on).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unmountUnder detaches every mount inside dir (network namespace files, volume
// binds, overlays), deepest first, repeating while mounts stacked on the same
// point remain.
func unmountUnder(dir string) error {
	for round := 0; round < 10; round++ {
		mounts := mountsUnder(dir)
		if len(mounts) == 0 {
			return nil
		}
		for _, m := range mounts {
			_ = syscall.Unmount(m, syscall.MNT_DETACH)
		}
	}
	if m := mountsUnder(dir); len(m) > 0 {
		return fmt.Errorf("still mounted under %s: %v", dir, m)
	}
	return nil
}

// StopControlPlane stops etcd, the API server, the controller manager and the
// scheduler, keeping their data; pods, kubelets and CoreDNS keep running. Up
// starts them again.
func StopControlPlane(dir string) error {
	l := layout{dir: dir}
	var errs []error
	for i := len(controlPlane) - 1; i >= 0; i-- {
		if err := stop(l, controlPlane[i], 10*time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
