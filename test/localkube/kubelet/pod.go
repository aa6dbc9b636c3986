package kubelet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/retry"
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

func isMountPoint(p string) bool {
	var st, parent unixStat
	if statDev(p, &st) != nil || statDev(filepath.Dir(p), &parent) != nil {
		return false
	}
	return st.dev != parent.dev
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
		grace := time.Duration(0)
		if !gone && pod.DeletionGracePeriodSeconds != nil {
			grace = time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
		}
		w.terminate(grace)
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
	p := decide(&pod.Spec, w.observedMap(), now, w.k.backoff)
	for _, name := range p.Start {
		w.startContainer(ctx, pod, name)
	}
	// Waiting reasons of containers in back-off.
	for _, c := range allContainers(pod) {
		x := w.ctrs[c.Name]
		if x == nil || x.obs.Running || x.obs.Current == nil {
			continue
		}
		if retriedEachPass(x.obs.WaitReason) {
			continue
		}
		policy := pod.Spec.RestartPolicy
		plainInit := isInit(pod, c.Name) && !isSidecar(c)
		switch {
		case isSidecar(c):
			policy = corev1.RestartPolicyAlways
			if appsFinished(&pod.Spec, w.observedMap()) {
				continue
			}
		case plainInit && policy == corev1.RestartPolicyAlways:
			policy = corev1.RestartPolicyOnFailure
		}
		if wantsRestart(policy, x.obs.Current) && (!plainInit || x.obs.Current.ExitCode != 0) {
			if x.obs.WaitReason != "CrashLoopBackOff" {
				w.k.events.Eventf(pod, corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s_%s(%s)", c.Name, pod.Name, pod.Namespace, pod.UID)
			}
			x.obs.WaitReason = "CrashLoopBackOff"
			x.obs.WaitMessage = fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)",
				crashBackoff(w.k.backoff, x.obs.RestartCount), c.Name, pod.Name, pod.Namespace, pod.UID)
		}
	}
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
				stopProcess(x.proc, gracePeriod(pod))
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

func (w *podWorker) setupSandbox(ctx context.Context, pod *corev1.Pod) error {
	if err := os.MkdirAll(w.dir, 0o755); err != nil {
		return err
	}
	meta := podMeta{Namespace: pod.Namespace, Name: pod.Name, UID: string(pod.UID)}
	if pod.Spec.HostNetwork {
		meta.IP = w.k.cfg.NodeIP
	} else {
		ip, err := w.k.ipam.Lease(string(pod.UID))
		if err != nil {
			return err
		}
		meta.IP, meta.Veth = ip.String(), vethName(string(pod.UID))
	}
	b, _ := json.Marshal(meta)
	if err := writeFileAtomic(filepath.Join(w.dir, "pod.json"), b, 0o644); err != nil {
		return err
	}
	if !pod.Spec.HostNetwork {
		nsPath := filepath.Join(w.dir, "netns")
		_ = teardownNetwork(w.dir, meta.Veth)
		if err := newNetns(nsPath); err != nil {
			return err
		}
		ip, _ := netip.ParseAddr(meta.IP)
		if err := setupNetwork(ctx, w.k.net, nsPath, meta.Veth, ip); err != nil {
			_ = teardownNetwork(w.dir, meta.Veth)
			return err
		}
	}
	w.ip = meta.IP
	host := containerHostname(pod, w.k.cfg.ClusterDomain)
	hosts := renderHosts(pod, meta.IP, w.k.cfg.ClusterDomain)
	if pod.Spec.HostNetwork {
		// A pod on the node's network sees the node's hosts file, as with a kubelet.
		b, _ := os.ReadFile("/etc/hosts")
		hosts = string(b)
	}
	files := map[string]string{
		"etc-hosts":   hosts,
		"resolv.conf": renderResolvConf(pod, w.k.cfg.ClusterDNS, w.k.cfg.ClusterDomain, hostResolvConf()),
		"hostname":    host + "\n",
	}
	for name, content := range files {
		if err := writeFileAtomic(filepath.Join(w.dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	if err := w.refreshVolumes(pod, true); err != nil {
		return err
	}
	if w.startTime.IsZero() {
		w.startTime = time.Now()
		_ = os.WriteFile(filepath.Join(w.dir, "start-time"), []byte(w.startTime.UTC().Format(time.RFC3339Nano)), 0o644)
	}
	w.sandboxReady = true
	w.log.Info().Str("ip", meta.IP).Msg("pod sandbox ready")
	return nil
}

// refreshVolumes prepares the pod's volumes at setup and rewrites content volumes
// (Secrets, ConfigMaps, tokens) every minute so that they follow their sources.
func (w *podWorker) refreshVolumes(pod *corev1.Pod, force bool) error {
	if !force && time.Since(w.volumesAt) < time.Minute {
		return nil
	}
	hostIP := w.k.cfg.NodeIP
	view := pod.DeepCopy()
	view.Status.PodIP = w.ip
	vols := map[string]string{}
	var fsGroup *int64
	if pod.Spec.SecurityContext != nil {
		fsGroup = pod.Spec.SecurityContext.FSGroup
	}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		dir := filepath.Join(w.dir, "volumes", volumeDirName(v.Name))
		switch {
		case v.HostPath != nil:
			p, err := hostPathFor(v.HostPath)
			if err != nil {
				return err
			}
			vols[v.Name] = p
		case v.PersistentVolumeClaim != nil:
			p, err := w.k.api.ClaimPath(pod.Namespace, v.PersistentVolumeClaim.ClaimName)
			if err != nil {
				return err
			}
			if force && fsGroup != nil {
				if err := applyFSGroup(p, *fsGroup); err != nil {
					return err
				}
			}
			vols[v.Name] = p
		case v.EmptyDir != nil:
			if err := os.MkdirAll(dir, 0o777); err != nil {
				return err
			}
			if v.EmptyDir.Medium == corev1.StorageMediumMemory && !isMountPoint(dir) {
				// Shared by the pod's containers, so mounted on the node, under Dir.
				opts := "mode=0777"
				if l := v.EmptyDir.SizeLimit; l != nil && !l.IsZero() {
					opts += ",size=" + strconv.FormatInt(l.Value(), 10)
				}
				if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
					return fmt.Errorf("emptyDir %s in memory: %w", v.Name, err)
				}
			}
			_ = os.Chmod(dir, 0o777)
			if force && fsGroup != nil {
				if err := applyFSGroup(dir, *fsGroup); err != nil {
					return err
				}
			}
			vols[v.Name] = dir
		case isContentVolume(v):
			files, _, err := volumeContent(view, v, w.k.api, w.k.cfg.NodeName, hostIP)
			if err != nil {
				return err
			}
			if err := writeVolumeFiles(dir, files, fsGroup); err != nil {
				return err
			}
			vols[v.Name] = dir
		default:
			w.log.Warn().Str("volume", v.Name).Msg("unsupported volume type: an empty directory stands in")
			_ = os.MkdirAll(dir, 0o777)
			vols[v.Name] = dir
		}
	}
	w.volumes = vols
	w.volumesAt = time.Now()
	return nil
}

func (w *podWorker) startContainer(ctx context.Context, pod *corev1.Pod, name string) {
	var c *corev1.Container
	for _, x := range allContainers(pod) {
		if x.Name == name {
			c = x
		}
	}
	x := w.ctrs[name]
	if x == nil {
		x = &ctr{}
		w.ctrs[name] = x
	}
	l, err := w.prepare(pod, c, x)
	var cfgErr *configError
	if errors.As(err, &cfgErr) {
		if x.obs.WaitMessage != cfgErr.Error() {
			w.k.events.Eventf(pod, corev1.EventTypeWarning, "Failed", "Error: %s", cfgErr.Error())
		}
		x.obs.WaitReason, x.obs.WaitMessage = "CreateContainerConfigError", cfgErr.Error()
		return
	}
	var pullErr *pullError
	if errors.As(err, &pullErr) {
		// The first failure is ErrImagePull; later passes back off, as a kubelet does.
		if retriedEachPass(x.obs.WaitReason) && x.obs.WaitReason != "CreateContainerConfigError" {
			msg := fmt.Sprintf("Back-off pulling image %q", c.Image)
			if x.obs.WaitReason != "ImagePullBackOff" {
				w.k.events.Eventf(pod, corev1.EventTypeNormal, "BackOff", "%s", msg)
			}
			x.obs.WaitReason, x.obs.WaitMessage = "ImagePullBackOff", msg
			return
		}
		w.k.events.Eventf(pod, corev1.EventTypeWarning, "Failed", "Failed to pull image %q: %s", c.Image, pullErr.Error())
		w.k.events.Eventf(pod, corev1.EventTypeWarning, "Failed", "Error: ErrImagePull")
		x.obs.WaitReason, x.obs.WaitMessage = "ErrImagePull", pullErr.Error()
		return
	}
	if err != nil {
		x.obs.WaitReason, x.obs.WaitMessage = "CreateContainerError", err.Error()
		w.log.Warn().Err(err).Str("container", name).Msg("prepare container")
		return
	}
	restarted := x.obs.Current != nil
	if restarted {
		x.obs.RestartCount++
		l.LogPath = w.logPath(name, x.obs.RestartCount)
		// Like a kubelet, keep the logs of the current and the previous run only.
		if old := x.obs.RestartCount - 2; old >= 0 {
			stale, _ := filepath.Glob(w.logPath(name, old) + "*")
			for _, f := range stale {
				_ = os.Remove(f)
			}
		}
	}
	x.obs.WaitReason, x.obs.WaitMessage = "", ""
	x.obs.Rerun = false
	x.obs.ID = l.ID
	w.k.events.Eventf(pod, corev1.EventTypeNormal, "Pulled", "Container image %q already present on machine", c.Image)
	w.k.events.Eventf(pod, corev1.EventTypeNormal, "Created", "Created container: %s", name)
	p, err := start(l)
	if err != nil && p == nil {
		x.obs.WaitReason, x.obs.WaitMessage = "RunContainerError", err.Error()
		w.log.Warn().Err(err).Str("container", name).Msg("start container")
		if restarted {
			x.obs.RestartCount--
		}
		return
	}
	if errors.Is(err, errStartFailed) {
		w.k.events.Eventf(pod, corev1.EventTypeWarning, "Failed", "Error: %s", p.exit.Message)
		if x.obs.Current != nil {
			x.obs.Last = x.obs.Current
		}
		x.obs.Current = &p.exit
		w.log.Warn().Str("container", name).Str("err", p.exit.Message).Msg("container failed to start")
		w.saveState(name)
		return
	}
	if x.obs.Current != nil {
		x.obs.Last = x.obs.Current
	}
	x.obs.Current = nil
	x.obs.Running = true
	x.obs.StartedAt = time.Now()
	x.proc = p
	x.obs.Ready = c.ReadinessProbe == nil
	x.obs.Started = c.StartupProbe == nil
	w.saveState(name)
	if (!isInit(pod, name) || isSidecar(c)) && (c.ReadinessProbe != nil || c.LivenessProbe != nil || c.StartupProbe != nil) {
		x.probe = newProber(w, pod, c, p)
	}
	go func() { <-p.done; w.wake() }()
	w.k.events.Eventf(pod, corev1.EventTypeNormal, "Started", "Started container %s", name)
	if c.Lifecycle != nil && c.Lifecycle.PostStart != nil {
		// Like a kubelet, the pod worker waits for postStart; a failure kills the
		// container and the restart policy decides.
		if !w.runHook(pod, c, p, c.Lifecycle.PostStart, gracePeriod(pod), "PostStart") {
			stopProcess(p, gracePeriod(pod))
		}
	}
	w.log.Info().Str("container", name).Int("pid", p.pid).Int32("restartCount", x.obs.RestartCount).Msg("container started")
}

// prepare resolves everything a container start needs.
func (w *podWorker) prepare(pod *corev1.Pod, c *corev1.Container, x *ctr) (launch, error) {
	img := w.k.images.Lookup(c.Image)
	id, err := resolveIdentity(pod, c, img)
	if err != nil {
		return launch{}, err
	}
	var imgEnv []envVar
	if img != nil {
		for _, e := range img.Env {
			imgEnv = append(imgEnv, envVar{e.Name, e.Value})
		}
		if len(img.Versions) > 0 {
			v, err := imageVersion(c.Image, img.Versions)
			if err != nil {
				return launch{}, err
			}
			imgEnv = append(imgEnv, versionEnv(v)...)
		}
	}
	if len(imgEnv) == 0 || !hasEnv(imgEnv, "PATH") {
		imgEnv = append([]envVar{{"PATH", defaultPath}}, imgEnv...)
	}
	imgEnv = append(imgEnv, envVar{"HOSTNAME", containerHostname(pod, w.k.cfg.ClusterDomain)})
	view := pod.DeepCopy()
	view.Status.PodIP = w.ip
	// The API server's variables are set whatever enableServiceLinks says, as a
	// kubelet does; those of the namespace's Services only with service links on.
	var svc []envVar
	if (pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks) && w.k.services != nil {
		list, _ := w.k.services.Services(pod.Namespace).List(labels.Everything())
		var others []*corev1.Service
		for _, s := range list {
			if s.Namespace != metav1.NamespaceDefault || s.Name != "kubernetes" {
				others = append(others, s)
			}
		}
		svc = serviceLinkEnv(others)
	}
	svc = append(svc, serviceEnv(w.k.cfg.APIServerHost, w.k.cfg.APIServerPort)...)
	env, err := containerEnv(view, c, imgEnv, svc, w.k.api, w.k.cfg.NodeName, w.k.cfg.NodeIP)
	if err != nil {
		return launch{}, err
	}
	mounts := []mountSpec{
		{Source: filepath.Join(w.dir, "etc-hosts"), Target: "/etc/hosts"},
		{Source: filepath.Join(w.dir, "resolv.conf"), Target: "/etc/resolv.conf"},
		{Source: filepath.Join(w.dir, "hostname"), Target: "/etc/hostname"},
	}
	vm, err := containerMounts(c, w.volumes)
	if err != nil {
		return launch{}, err
	}
	mounts = append(mounts, vm...)
	// The termination message file: a host file per container, read when it ends.
	termPath := c.TerminationMessagePath
	if termPath == "" {
		termPath = corev1.TerminationMessagePathDefault
	}
	if err := os.MkdirAll(w.containerDir(c.Name), 0o755); err != nil {
		return launch{}, err
	}
	termFile := filepath.Join(w.containerDir(c.Name), "termination-log")
	if err := os.WriteFile(termFile, nil, 0o666); err != nil {
		return launch{}, err
	}
	_ = os.Chmod(termFile, 0o666)
	mounts = append(mounts, mountSpec{Source: termFile, Target: termPath})
	var envList []string
	for _, e := range env {
		envList = append(envList, e.Name+"="+e.Value)
	}
	wd := c.WorkingDir
	if wd == "" && img != nil {
		wd = img.WorkingDir
	}
	dir := w.containerDir(c.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return launch{}, err
	}
	l := launch{
		Dir:      dir,
		LogPath:  w.logPath(c.Name, x.obs.RestartCount),
		ID:       newContainerID(),
		Executor: w.k.self,
		Spec: initSpec{
			Root: filepath.Join(dir, "root"), Scratch: filepath.Join(dir, "scratch"),
			Hide: []string{w.k.cfg.Dir}, Mounts: mounts, Hostname: containerHostname(pod, w.k.cfg.ClusterDomain),
			ReadOnlyRoot: id.ReadOnlyRoot, Argv: commandLine(c, img, env), Env: envList,
			WorkingDir: wd, UID: id.UID, GID: id.GID, Groups: id.Groups,
			Stdout: filepath.Join(dir, "stdout"), Stderr: filepath.Join(dir, "stderr"),
		},
	}
	if img != nil {
		l.Spec.ImageDir = w.k.imageDir(img)
	}
	if pod.Spec.HostNetwork {
		l.Spec.Hostname = ""
	} else {
		l.Netns = filepath.Join(w.dir, "netns")
	}
	return l, nil
}

func hasEnv(env []envVar, name string) bool {
	for _, e := range env {
		if e.Name == name {
			return true
		}
	}
	return false
}

// terminate stops every container: SIGTERM to each process group, SIGKILL after grace.
func (w *podWorker) terminate(grace time.Duration) {
	pod, _ := w.latest()
	start := time.Now()
	// App containers first, then their sidecars, as a kubelet stops them.
	w.stopContainers(pod, grace, func(name string) bool { return !w.sidecar(pod, name) })
	left := grace - time.Since(start)
	if left < 0 {
		left = 0
	}
	w.stopContainers(pod, left, func(name string) bool { return w.sidecar(pod, name) })
	w.collectExits()
}

func (w *podWorker) sidecar(pod *corev1.Pod, name string) bool {
	c := containerSpec(pod, name)
	return c != nil && isInit(pod, name) && isSidecar(c)
}

// stopContainers stops the chosen containers at once, each with its preStop hook.
func (w *podWorker) stopContainers(pod *corev1.Pod, grace time.Duration, which func(string) bool) {
	var wg sync.WaitGroup
	for name, c := range w.ctrs {
		if !which(name) {
			continue
		}
		if c.proc != nil && pod != nil {
			w.k.events.Eventf(pod, corev1.EventTypeNormal, "Killing", "Stopping container %s", name)
		}
		if c.probe != nil {
			c.probe.stop()
			c.probe = nil
		}
		if c.proc != nil {
			wg.Add(1)
			spec := containerSpec(pod, name)
			go func(p *proc) {
				defer wg.Done()
				start := time.Now()
				if spec != nil && spec.Lifecycle != nil && spec.Lifecycle.PreStop != nil {
					w.runHook(pod, spec, p, spec.Lifecycle.PreStop, grace, "PreStop")
				}
				left := grace - time.Since(start)
				if left < 0 {
					left = 0
				}
				stopProcess(p, left)
			}(c.proc)
		}
	}
	wg.Wait()
}

// containerSpec finds a container of the pod by name.
func containerSpec(pod *corev1.Pod, name string) *corev1.Container {
	if pod == nil {
		return nil
	}
	for _, c := range allContainers(pod) {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// runHook runs a postStart or preStop handler against a running container within
// timeout, reporting a failure as an Event as a kubelet does.
func (w *podWorker) runHook(pod *corev1.Pod, c *corev1.Container, p *proc, h *corev1.LifecycleHandler, timeout time.Duration, kind string) bool {
	if timeout <= 0 {
		timeout = time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	ok := true
	switch {
	case h.Sleep != nil:
		select {
		case <-ctx.Done():
		case <-p.done:
		case <-time.After(time.Duration(h.Sleep.Seconds) * time.Second):
		}
	default:
		t := &probeTarget{pod: pod, c: c, pid: p.pid, ip: w.ip, dir: w.containerDir(c.Name)}
		ok, _ = t.check(ctx, &corev1.ProbeHandler{Exec: h.Exec, HTTPGet: h.HTTPGet, TCPSocket: h.TCPSocket}, timeout)
	}
	if !ok {
		w.k.events.Eventf(pod, corev1.EventTypeWarning, "Failed"+kind+"Hook", "%s hook of container %s failed", kind, c.Name)
		w.log.Warn().Str("container", c.Name).Str("hook", kind).Msg("lifecycle hook failed")
	}
	return ok
}

// teardown removes the pod's network: veth, namespace pin and address lease.
func (w *podWorker) teardown() {
	m, _ := readPodMeta(w.dir)
	if err := teardownNetwork(w.dir, m.Veth); err != nil {
		w.log.Warn().Err(err).Msg("tear down network")
	}
	w.k.ipam.Release(w.uid)
	w.sandboxReady = false
}

// cleanupDisk removes the pod's directory once the pod is deleted.
func (w *podWorker) cleanupDisk() {
	// Volumes that are the pod's own (emptyDir, content) go with it; PVC and hostPath
	// directories live elsewhere and are never touched.
	if err := unmountVolumes(w.dir); err != nil {
		w.log.Warn().Err(err).Msg("unmount volumes")
		return // never remove what may still be mounted
	}
	if err := os.RemoveAll(w.dir); err != nil {
		w.log.Warn().Err(err).Msg("remove pod directory")
	}
}

// writeStatus computes the pod status and writes it through the status subresource
// when it changed.
func (w *podWorker) writeStatus(ctx context.Context, pod *corev1.Pod) *corev1.PodStatus {
	st := computeStatus(statusInput{
		Pod: pod, Obs: w.observedWithWaits(), PodIP: w.ip, HostIP: w.k.cfg.NodeIP,
		StartTime: w.startTime, SandboxReady: w.sandboxReady, Now: time.Now(),
		Image: func(ref string) (string, string) {
			return normalizeReference(ref), imageID(ref, w.k.images.Lookup(ref))
		},
	})
	if pod.Spec.HostNetwork && w.ip == "" {
		st.PodIP = ""
	}
	if w.lastStatus != nil && equality.Semantic.DeepEqual(*w.lastStatus, st) {
		return &st
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		cur, err := w.k.cs.CoreV1().Pods(pod.Namespace).Get(cctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != pod.UID {
			return nil
		}
		cur.Status = mergeForeignConditions(st, cur.Status)
		_, err = w.k.cs.CoreV1().Pods(pod.Namespace).UpdateStatus(cctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		if !apierrors.IsNotFound(err) {
			w.log.Warn().Err(err).Msg("update pod status")
		}
		return &st
	}
	w.lastStatus = &st
	return &st
}

// mergeForeignConditions keeps conditions that others own (readiness gates,
// DisruptionTarget) next to the kubelet's.
func mergeForeignConditions(st corev1.PodStatus, cur corev1.PodStatus) corev1.PodStatus {
	mine := map[corev1.PodConditionType]bool{}
	for _, c := range st.Conditions {
		mine[c.Type] = true
	}
	for _, c := range cur.Conditions {
		if !mine[c.Type] {
			st.Conditions = append(st.Conditions, c)
		}
	}
	if st.QOSClass == "" {
		st.QOSClass = cur.QOSClass
	}
	return st
}

// observedWithWaits includes config errors that observedMap hides from decide.
func (w *podWorker) observedWithWaits() map[string]*observed {
	m := map[string]*observed{}
	for name, c := range w.ctrs {
		o := c.obs
		m[name] = &o
	}
	return m
}

// terminationMessage is what a container left in its termination message file or,
// with FallbackToLogsOnError after a failure, the end of its log, bounded as a
// kubelet bounds them.
func (w *podWorker) terminationMessage(name string, exitCode int32, restart int32) string {
	b, _ := os.ReadFile(filepath.Join(w.containerDir(name), "termination-log"))
	if len(b) > 4096 {
		b = b[:4096]
	}
	if len(b) > 0 || exitCode == 0 {
		return string(b)
	}
	pod, _ := w.latest()
	if pod == nil {
		return ""
	}
	for _, c := range allContainers(pod) {
		if c.Name == name && c.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError {
			out := renderLog(readLogFiles(w.logPath(name, restart)), logOptions{TailLines: 80})
			if len(out) > 2048 {
				out = out[len(out)-2048:]
			}
			return string(out)
		}
	}
	return ""
}

// containerHostname is the pod's hostname, or the node's for a pod on the node's
// network.
func containerHostname(pod *corev1.Pod, clusterDomain string) string {
	if pod.Spec.HostNetwork {
		if h, err := os.Hostname(); err == nil {
			return h
		}
	}
	host, _ := podHostname(pod, clusterDomain)
	return host
}

// killForRestart stops a container that failed its liveness or startup probe: its
// preStop hook, then SIGTERM, SIGKILL after what is left of the grace period. The
// restart policy then applies.
func (w *podWorker) killForRestart(pod *corev1.Pod, c *corev1.Container, p *proc) {
	grace := gracePeriod(pod)
	start := time.Now()
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		w.runHook(pod, c, p, c.Lifecycle.PreStop, grace, "PreStop")
	}
	left := grace - time.Since(start)
	if left < 0 {
		left = 0
	}
	stopProcess(p, left)
}
