package kubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// ctr is the worker's record of one container.
type ctr struct {
	obs     observed
	proc    *proc
	probe   *prober
	adopted bool // running when the kubelet started: probes still to be set up
}

// podWorker owns one pod: its sandbox, its containers and its status. Informer
// events only replace the pod it reads and wake it; all decisions happen in its
// own goroutine.
type podWorker struct {
	k   *Kubelet
	uid string
	dir string
	log zerolog.Logger

	mu   sync.Mutex
	pod  *corev1.Pod
	gone bool // the pod object no longer exists
	view map[string]containerView

	kick chan struct{}

	ctrs         map[string]*ctr
	sandboxReady bool
	// recovered is set when containers were restored from disk and none was
	// still running: the sandbox must be recreated and the pod run anew.
	recovered  bool
	ip         string
	startTime  time.Time
	volumes    map[string]string
	volumesAt  time.Time
	lastStatus *corev1.PodStatus
	tornDown   bool
	attach     attachWait // while a volume is attached to another node
}

func (w *podWorker) update(pod *corev1.Pod, gone bool) {
	w.mu.Lock()
	if pod != nil {
		w.pod = pod
	}
	w.gone = w.gone || gone
	w.mu.Unlock()
	w.wake()
}

func (w *podWorker) wake() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

func (w *podWorker) latest() (*corev1.Pod, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pod, w.gone
}

func (w *podWorker) containerDir(name string) string {
	return filepath.Join(w.dir, "containers", name)
}

func (w *podWorker) logPath(name string, restart int32) string {
	return filepath.Join(w.dir, "logs", name, strconv.Itoa(int(restart))+".log")
}

// run is the worker's loop; it returns once the pod is gone and cleaned up.
func (w *podWorker) run(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		done := w.sync(ctx)
		w.publish()
		if done {
			return
		}
		select {
		case <-ctx.Done():
			// The kubelet stops; its pods do not. Leave their output to the next one.
			for _, c := range w.ctrs {
				if c.proc != nil {
					c.proc.detach()
				}
				if c.probe != nil {
					c.probe.stop()
				}
			}
			return
		case <-w.kick:
		case <-tick.C:
		}
	}
}

// recover restores the worker from disk after a kubelet restart: the pod's address,
// its network namespace, and container processes that still run.
func (w *podWorker) recover() {
	m, err := readPodMeta(w.dir)
	if err != nil {
		return
	}
	w.ip = m.IP
	w.sandboxReady = m.IP != "" && isMountPoint(filepath.Join(w.dir, "netns"))
	if b, err := os.ReadFile(filepath.Join(w.dir, "start-time")); err == nil {
		w.startTime, _ = time.Parse(time.RFC3339Nano, string(b))
	}
	entries, _ := os.ReadDir(filepath.Join(w.dir, "containers"))
	for _, e := range entries {
		var o observed
		b, err := os.ReadFile(filepath.Join(w.containerDir(e.Name()), "state.json"))
		if err != nil || json.Unmarshal(b, &o) != nil {
			continue
		}
		c := &ctr{obs: o}
		pid, alive := readLivePID(filepath.Join(w.containerDir(e.Name()), "pid"))
		if !alive && o.ID != "" && o.Current == nil {
			// It ran and ended while no kubelet watched: its exit status is lost.
			c.obs.Current = &termination{ExitCode: 137, Reason: "ContainerStatusUnknown",
				Message:   "The container could not be located when the pod was terminated",
				StartedAt: o.StartedAt, FinishedAt: time.Now(), ID: o.ID}
		}
		if alive {
			c.obs.Running = true
			c.adopted = true
			c.proc = adopt(w.containerDir(e.Name()), w.logPath(e.Name(), o.RestartCount), pid, o.ID, o.StartedAt)
			w.log.Info().Str("container", e.Name()).Int("pid", pid).Msg("re-adopted running container")
		}
		w.ctrs[e.Name()] = c
	}
	w.recovered = len(w.ctrs) > 0
	for _, c := range w.ctrs {
		if c.obs.Running {
			w.recovered = false
		}
	}
}

func (w *podWorker) saveState(name string) {
	c := w.ctrs[name]
	b, _ := json.Marshal(c.obs)
	_ = os.MkdirAll(w.containerDir(name), 0o755)
	_ = writeFileAtomic(filepath.Join(w.containerDir(name), "state.json"), b, 0o644)
}

// sync is one pass of the pod worker; it reports whether the worker is finished.
func (w *podWorker) sync(ctx context.Context) bool {
	pod, gone := w.latest()
	w.collectExits()
	if gone || pod.DeletionTimestamp != nil {
		// The last object seen says the grace period: a force delete reaches the
		// kubelet as deletionGracePeriodSeconds 0 just before the object goes.
		w.terminate(podKillGrace(pod, nil))
		w.teardown()
		w.cleanupDisk()
		if !gone {
			w.writeStatus(ctx, pod)
			dctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			err := w.k.cs.CoreV1().Pods(pod.Namespace).Delete(dctx, pod.Name, metav1.DeleteOptions{
				GracePeriodSeconds: ptr.To(int64(0)),
				Preconditions:      &metav1.Preconditions{UID: &pod.UID},
			})
			cancel()
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				w.log.Warn().Err(err).Msg("delete pod")
				return false
			}
		}
		w.log.Info().Msg("pod removed")
		return true
	}
	if len(w.ctrs) == 0 && (pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed) {
		// A pod that finished before this kubelet knew it: never run it again.
		w.tornDown = true
	}
	if w.tornDown {
		return false
	}
	if !w.sandboxReady {
		if w.attachBlocked(ctx, pod) {
			w.writeStatus(ctx, pod)
			return false
		}
		if err := w.setupSandbox(ctx, pod); err != nil {
			w.log.Warn().Err(err).Msg("set up pod sandbox")
			w.writeStatus(ctx, pod)
			return false
		}
		if w.recovered {
			// A recreated sandbox (fresh emptyDirs, namespaces, mounts) runs the pod
			// from the start, init containers first, as a real kubelet does.
			for _, c := range w.ctrs {
				if !c.obs.Running {
					c.obs.Rerun = true
				}
			}
			w.recovered = false
			w.log.Info().Msg("pod sandbox recreated: its containers run again from the start")
		}
	}
	if err := w.refreshVolumes(pod, false); err != nil {
		w.log.Warn().Err(err).Msg("refresh volumes")
	}
	now := time.Now()
	p := decide(&pod.Spec, w.observedMap(), now)
	for _, name := range p.Start {
		w.startContainer(ctx, pod, name)
	}
	w.markBackOff(pod, p.BackOff)
	for _, c := range allContainers(pod) {
		x := w.ctrs[c.Name]
		if x == nil || !x.adopted || x.proc == nil {
			continue
		}
		x.adopted = false
		x.obs.Ready, x.obs.Started = c.ReadinessProbe == nil, c.StartupProbe == nil
		if (!isInit(pod, c.Name) || isSidecar(c)) && (c.ReadinessProbe != nil || c.LivenessProbe != nil || c.StartupProbe != nil) {
			x.probe = newProber(w, pod, c, x.proc)
		}
		go func(p *proc) { <-p.done; w.wake() }(x.proc)
	}
	for _, x := range w.ctrs {
		if x.probe != nil && x.obs.Running {
			x.obs.Ready, x.obs.Started = x.probe.results()
		}
	}
	if appsFinished(&pod.Spec, w.observedMap()) {
		// The app containers are done for good: their sidecars stop too.
		for _, c := range pod.Spec.InitContainers {
			if x := w.ctrs[c.Name]; x != nil && x.proc != nil && isSidecar(&c) {
				stopProcess(x.proc, containerKillGrace(gracePeriod(pod), 0))
			}
		}
		w.collectExits()
	}
	st := w.writeStatus(ctx, pod)
	if st != nil && (st.Phase == corev1.PodSucceeded || st.Phase == corev1.PodFailed) && !w.anyRunning() {
		// A finished pod keeps its object and logs, not its network.
		w.teardown()
		w.tornDown = true
	}
	return false
}

// markBackOff shows CrashLoopBackOff on exactly the containers that wait in
// back-off, as a kubelet's reason cache does: a container restarted at once
// never shows it, and one let through loses it.
func (w *podWorker) markBackOff(pod *corev1.Pod, held map[string]time.Duration) {
	for name, x := range w.ctrs {
		d, waiting := held[name]
		if !waiting {
			if x.obs.WaitReason == "CrashLoopBackOff" {
				x.obs.WaitReason, x.obs.WaitMessage = "", ""
			}
			continue
		}
		if x.obs.WaitReason != "CrashLoopBackOff" {
			w.k.events.Eventf(pod, corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s_%s(%s)", name, pod.Name, pod.Namespace, pod.UID)
		}
		x.obs.WaitReason = "CrashLoopBackOff"
		x.obs.WaitMessage = fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", d, name, pod.Name, pod.Namespace, pod.UID)
	}
}

func allContainers(pod *corev1.Pod) []*corev1.Container {
	var out []*corev1.Container
	for i := range pod.Spec.InitContainers {
		out = append(out, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}

func isInit(pod *corev1.Pod, name string) bool {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return true
		}
	}
	return false
}

func (w *podWorker) anyRunning() bool {
	for _, c := range w.ctrs {
		if c.obs.Running {
			return true
		}
	}
	return false
}

func (w *podWorker) observedMap() map[string]*observed {
	m := map[string]*observed{}
	for name, c := range w.ctrs {
		if retriedEachPass(c.obs.WaitReason) {
			continue // retried on every pass, like a kubelet
		}
		m[name] = &c.obs
	}
	return m
}

// collectExits moves the ends of container processes into their records.
func (w *podWorker) collectExits() {
	for name, c := range w.ctrs {
		if c.proc == nil {
			continue
		}
		select {
		case <-c.proc.done:
		default:
			continue
		}
		if c.probe != nil {
			c.probe.stop()
			c.probe = nil
		}
		exit := c.proc.exit
		if exit.Message == "" {
			exit.Message = w.terminationMessage(name, exit.ExitCode, c.obs.RestartCount)
		}
		c.proc = nil
		c.obs.Running, c.obs.Ready, c.obs.Started = false, false, false
		if c.obs.Current != nil {
			c.obs.Last = c.obs.Current
		}
		c.obs.Current = &exit
		w.log.Info().Str("container", name).Int32("exitCode", exit.ExitCode).Str("reason", exit.Reason).Msg("container exited")
		w.saveState(name)
	}
}
