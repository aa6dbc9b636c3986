package fault

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/mgors/operator/test/localkube/kubelet"
)

// Kill SIGKILLs the processes of one container of a pod ("" = every container). It
// returns evidence (the pids killed). The kubelet is not told: it sees the
// container die, as it would on a real Node.
func (i *Injector) Kill(ctx context.Context, namespace, pod, container string) (string, error) {
	procs, err := i.containers(ctx, namespace, pod, container)
	if err != nil {
		return "", err
	}
	for _, c := range procs {
		// The main process leads its container's process group: -pid reaches
		// every process of the container.
		_ = syscall.Kill(-c.PID, syscall.SIGKILL)
		_ = syscall.Kill(c.PID, syscall.SIGKILL)
	}
	ev := fmt.Sprintf("pod %s/%s: SIGKILL to %s", namespace, pod, describe(procs, nil))
	i.Log.Info().Str("event", "fault.kill").Str("pod", namespace+"/"+pod).Ints("pids", pidsOf(procs)).Msg(ev)
	return ev, nil
}

// Pause freezes every container process of the pod with SIGSTOP: it keeps its
// connections and answers nothing, like a hung process or a long GC pause. The
// evidence is each process's state from /proc, which must read T (stopped).
func (i *Injector) Pause(ctx context.Context, namespace, pod string) (string, error) {
	return i.signalAll(ctx, namespace, pod, syscall.SIGSTOP, "SIGSTOP", "fault.pause", func(s byte) bool { return s == 'T' })
}

// Resume continues a pod frozen by Pause (SIGCONT); the evidence is the process
// states, no longer T.
func (i *Injector) Resume(ctx context.Context, namespace, pod string) (string, error) {
	return i.signalAll(ctx, namespace, pod, syscall.SIGCONT, "SIGCONT", "fault.resume", func(s byte) bool { return s != 'T' })
}

// signalAll signals every container's process group and waits (at most 5 s) until
// every process of those groups is in a state that satisfies want.
func (i *Injector) signalAll(ctx context.Context, namespace, pod string, sig syscall.Signal, sigName, event string, want func(byte) bool) (string, error) {
	procs, err := i.containers(ctx, namespace, pod, "")
	if err != nil {
		return "", err
	}
	for _, c := range procs {
		if err := syscall.Kill(-c.PID, sig); err != nil {
			return "", fmt.Errorf("pod %s/%s: %s to container %s (pid %d): %w", namespace, pod, sigName, c.Name, c.PID, err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	var states map[int]string
	for {
		var ok bool
		states, ok = groupStates(procs, want)
		if ok {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return "", fmt.Errorf("pod %s/%s: after %s: %s", namespace, pod, sigName, describe(procs, states))
		}
		time.Sleep(20 * time.Millisecond)
	}
	ev := fmt.Sprintf("pod %s/%s: %s to %s", namespace, pod, sigName, describe(procs, states))
	i.Log.Info().Str("event", event).Str("pod", namespace+"/"+pod).Ints("pids", pidsOf(procs)).Msg(ev)
	return ev, nil
}

// containerProc is the main process of one running container.
type containerProc struct {
	Name string
	PID  int
}

// containers finds the running containers of a pod (one when container is set)
// through the kubelet's on-disk layout, for the pod UID the API server names.
func (i *Injector) containers(ctx context.Context, namespace, pod, container string) ([]containerProc, error) {
	p, err := i.pod(ctx, namespace, pod)
	if err != nil {
		return nil, err
	}
	if container != "" && !hasContainer(p, container) {
		return nil, fmt.Errorf("pod %s/%s has no container %q (it has %s)", namespace, pod, container, strings.Join(containerNames(p), ", "))
	}
	live, err := kubelet.PodProcesses(i.Dir, namespace, pod)
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s on Node %s: %w", namespace, pod, p.Spec.NodeName, err)
	}
	dir := filepath.Join(i.Dir, "nodes", p.Spec.NodeName, "pods", string(p.UID))
	procs := containerPIDs(dir, live)
	if container != "" {
		var one []containerProc
		for _, c := range procs {
			if c.Name == container {
				one = append(one, c)
			}
		}
		procs = one
	}
	if len(procs) == 0 {
		what := "no container"
		if container != "" {
			what = "container " + container + " not"
		}
		return nil, fmt.Errorf("pod %s/%s: %s running on Node %s: %w", namespace, pod, what, p.Spec.NodeName, errNoFault)
	}
	return procs, nil
}

// containerPIDs reads which container each live main pid belongs to from the pod
// directory's containers/NAME/pid files ("PID STARTTICKS"). The kubelet package
// decides liveness (live); the file only names the container.
func containerPIDs(podDir string, live []int) []containerProc {
	isLive := map[int]bool{}
	for _, p := range live {
		isLive[p] = true
	}
	files, _ := filepath.Glob(filepath.Join(podDir, "containers", "*", "pid"))
	var out []containerProc
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		fields := strings.Fields(string(b))
		if len(fields) == 0 {
			continue
		}
		if pid, err := strconv.Atoi(fields[0]); err == nil && isLive[pid] {
			out = append(out, containerProc{Name: filepath.Base(filepath.Dir(f)), PID: pid})
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out
}

func hasContainer(p *corev1.Pod, name string) bool {
	for _, n := range containerNames(p) {
		if n == name {
			return true
		}
	}
	return false
}

func containerNames(p *corev1.Pod) []string {
	var names []string
	for _, c := range p.Spec.InitContainers {
		names = append(names, c.Name)
	}
	for _, c := range p.Spec.Containers {
		names = append(names, c.Name)
	}
	return names
}

func pidsOf(procs []containerProc) []int {
	pids := make([]int, 0, len(procs))
	for _, c := range procs {
		pids = append(pids, c.PID)
	}
	return pids
}

// describe renders the containers for a person: "container mongod pid 1234 (state
// T)" when the group's states are known.
func describe(procs []containerProc, states map[int]string) string {
	parts := make([]string, 0, len(procs))
	for _, c := range procs {
		s := fmt.Sprintf("container %s pid %d", c.Name, c.PID)
		if st, ok := states[c.PID]; ok {
			s += " (" + st + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// groupStates reads the state of every process in each container's process group
// and reports whether all satisfy want. Per container it renders "state T" or, for
// a group of several processes, "states T T".
func groupStates(procs []containerProc, want func(byte) bool) (map[int]string, bool) {
	members := processGroups()
	out := map[int]string{}
	all := true
	for _, c := range procs {
		var states []string
		for _, m := range members[c.PID] {
			states = append(states, string(m.state))
			if !want(m.state) {
				all = false
			}
		}
		if len(states) == 0 {
			out[c.PID] = "gone"
			all = false
			continue
		}
		label := "state "
		if len(states) > 1 {
			label = "states "
		}
		out[c.PID] = label + strings.Join(states, " ")
	}
	return out, all
}

// procStat is what /proc/PID/stat says about one process.
type procStat struct {
	pid   int
	state byte
	pgrp  int
}

// processGroups reads every live process's state, grouped by process group.
func processGroups() map[int][]procStat {
	entries, _ := os.ReadDir("/proc")
	groups := map[int][]procStat{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		if s, ok := parseStat(pid, string(b)); ok && s.state != 'Z' && s.state != 'X' {
			groups[s.pgrp] = append(groups[s.pgrp], s)
		}
	}
	for _, g := range groups {
		sort.Slice(g, func(a, b int) bool { return g[a].pid < g[b].pid })
	}
	return groups
}

// parseStat reads the state (field 3) and process group (field 5) of a
// /proc/PID/stat line; the command name before them may hold spaces and ')'.
func parseStat(pid int, stat string) (procStat, bool) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(stat[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return procStat{}, false
	}
	pgrp, err := strconv.Atoi(f[2])
	if err != nil {
		return procStat{}, false
	}
	return procStat{pid: pid, state: f[0][0], pgrp: pgrp}, true
}
