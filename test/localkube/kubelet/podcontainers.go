package kubelet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/labels"
)

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
	if restarted && !x.obs.Rerun {
		x.obs.Backoff = w.k.backoff.next(x.obs.Backoff, x.obs.Current.FinishedAt, time.Now())
	}
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
			stopProcess(p, containerKillGrace(gracePeriod(pod), 0))
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
	l.PID = podPIDMode(&pod.Spec)
	if l.PID == pidPod {
		if l.PausePID, err = w.ensurePause(); err != nil {
			return launch{}, err
		}
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

// terminate stops every container: its preStop hook, SIGTERM to its process
// group, SIGKILL after what is left of grace (podKillGrace), never sooner than
// minKillGrace after SIGTERM.
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
				stopProcess(p, containerKillGrace(grace, time.Since(start)))
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
	stopProcess(p, containerKillGrace(grace, time.Since(start)))
}
