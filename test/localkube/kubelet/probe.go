package kubelet

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// prober runs a container's startup, readiness and liveness probes until stopped.
type prober struct {
	cancel context.CancelFunc
	mu     sync.Mutex
	ready  bool
	start  bool
}

func (p *prober) stop() { p.cancel() }

func (p *prober) results() (ready, started bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ready, p.start
}

// probeCounter applies successThreshold and failureThreshold to single results.
type probeCounter struct {
	success, failure int32
	okRun, failRun   int32
}

// observe records one result and reports the probe's verdict and whether it changed.
func (c *probeCounter) observe(ok bool, current bool) bool {
	if ok {
		c.okRun++
		c.failRun = 0
		if c.okRun >= c.success {
			return true
		}
		return current
	}
	c.failRun++
	c.okRun = 0
	if c.failRun >= c.failure {
		return false
	}
	return current
}

func thresholds(p *corev1.Probe) (success, failure int32) {
	success, failure = p.SuccessThreshold, p.FailureThreshold
	if success <= 0 {
		success = 1
	}
	if failure <= 0 {
		failure = 3
	}
	return
}

func newProber(w *podWorker, pod *corev1.Pod, c *corev1.Container, p *proc) *prober {
	ctx, cancel := context.WithCancel(context.Background())
	pr := &prober{cancel: cancel, ready: c.ReadinessProbe == nil, start: c.StartupProbe == nil}
	t := &probeTarget{pod: pod, c: c, pid: p.pid, ip: w.ip, dir: w.containerDir(c.Name)}
	// Every failed run is an Unhealthy event carrying the probe's output, as a
	// kubelet records it ("Readiness probe failed: <output>").
	unhealthy := func(kind string) func(string) {
		return func(output string) {
			w.k.events.Eventf(pod, corev1.EventTypeWarning, "Unhealthy", "%s", probeFailedMessage(kind, output))
		}
	}
	go func() {
		started := c.StartupProbe == nil
		if !started {
			started = loopProbe(ctx, c.StartupProbe, t, true, unhealthy("Startup"), func(ok bool) bool {
				if ok {
					pr.mu.Lock()
					pr.start = true
					pr.mu.Unlock()
					w.wake()
					return false // done
				}
				return true
			}, func() {
				w.k.events.Eventf(pod, corev1.EventTypeNormal, "Killing", "Container %s failed startup probe, will be restarted", c.Name)
				w.log.Info().Str("container", c.Name).Msg("startup probe failed: restarting container")
				go w.killForRestart(pod, c, p)
			})
			if !started {
				return
			}
		}
		var wg sync.WaitGroup
		if c.ReadinessProbe != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				loopProbe(ctx, c.ReadinessProbe, t, false, unhealthy("Readiness"), func(ok bool) bool {
					pr.mu.Lock()
					changed := pr.ready != ok
					pr.ready = ok
					pr.mu.Unlock()
					if changed {
						w.wake()
					}
					return true
				}, nil)
			}()
		}
		if c.LivenessProbe != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				loopProbe(ctx, c.LivenessProbe, t, true, unhealthy("Liveness"), func(ok bool) bool { return true }, func() {
					w.k.events.Eventf(pod, corev1.EventTypeNormal, "Killing", "Container %s failed liveness probe, will be restarted", c.Name)
					w.log.Info().Str("container", c.Name).Msg("liveness probe failed: restarting container")
					go w.killForRestart(pod, c, p)
				})
			}()
		}
		wg.Wait()
	}()
	go func() { <-p.done; cancel() }()
	return pr
}

func gracePeriod(pod *corev1.Pod) time.Duration {
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	return 30 * time.Second
}

// loopProbe runs a probe every period after the initial delay. failed gets the
// output of every failed run; onVerdict gets the thresholded verdict and says
// whether to go on; onFail (for liveness and startup) is called once when the
// verdict turns to failure. It reports whether the last verdict was a success.
func loopProbe(ctx context.Context, p *corev1.Probe, t *probeTarget, initial bool, failed func(string), onVerdict func(bool) bool, onFail func()) bool {
	period := time.Duration(p.PeriodSeconds) * time.Second
	if period <= 0 {
		period = 10 * time.Second
	}
	timeout := time.Duration(p.TimeoutSeconds) * time.Second
	if timeout <= 0 {
		timeout = time.Second
	}
	s, f := thresholds(p)
	counter := &probeCounter{success: s, failure: f}
	verdict := initial
	select {
	case <-ctx.Done():
		return false
	case <-time.After(time.Duration(p.InitialDelaySeconds) * time.Second):
	}
	for {
		ok, output := t.check(ctx, &p.ProbeHandler, timeout)
		if ctx.Err() != nil {
			return false
		}
		if !ok {
			failed(output)
		}
		verdict = counter.observe(ok, verdict)
		if !verdict && onFail != nil {
			onFail()
			return false
		}
		if !onVerdict(verdict) {
			return verdict
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(period):
		}
	}
}

// probeTarget is where a probe looks: the container's process (for exec) and the
// pod's address (for tcpSocket and httpGet, dialled from the node as a kubelet does).
type probeTarget struct {
	pod *corev1.Pod
	c   *corev1.Container
	pid int
	ip  string
	dir string
}

func (t *probeTarget) port(p intstr.IntOrString) (int, error) {
	if p.Type == intstr.Int {
		return p.IntValue(), nil
	}
	for _, cp := range t.c.Ports {
		if cp.Name == p.StrVal {
			return int(cp.ContainerPort), nil
		}
	}
	if n, err := strconv.Atoi(p.StrVal); err == nil {
		return n, nil
	}
	return 0, fmt.Errorf("port %q not found", p.StrVal)
}

// probeFailedMessage is the Unhealthy event's message, as a kubelet words it.
func probeFailedMessage(kind, output string) string {
	return fmt.Sprintf("%s probe failed: %s", kind, output)
}

// maxProbeOutput is how much of an exec probe's output a kubelet keeps (10 KiB).
const maxProbeOutput = 10 * 1024

// check runs a probe once and returns its result and output: an exec probe's
// combined stdout and stderr, or the error or status a kubelet reports.
func (t *probeTarget) check(ctx context.Context, h *corev1.ProbeHandler, timeout time.Duration) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case h.Exec != nil:
		cmd, err := containerCommand(ctx, t.dir, t.pid, h.Exec.Command)
		if err != nil {
			return false, err.Error()
		}
		out, err := cmd.CombinedOutput()
		if len(out) > maxProbeOutput {
			out = out[:maxProbeOutput]
		}
		if ctx.Err() == context.DeadlineExceeded {
			return false, fmt.Sprintf("command %q timed out", strings.Join(h.Exec.Command, " "))
		}
		return err == nil, string(out)
	case h.TCPSocket != nil:
		port, err := t.port(h.TCPSocket.Port)
		if err != nil {
			return false, err.Error()
		}
		host := h.TCPSocket.Host
		if host == "" {
			host = t.ip
		}
		return tcpProbe(ctx, host, port)
	case h.HTTPGet != nil:
		g := h.HTTPGet
		port, err := t.port(g.Port)
		if err != nil {
			return false, err.Error()
		}
		host := g.Host
		if host == "" {
			host = t.ip
		}
		scheme := "http"
		if g.Scheme == corev1.URISchemeHTTPS {
			scheme = "https"
		}
		return httpProbe(ctx, fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(host, strconv.Itoa(port)), g.Path), g.HTTPHeaders)
	case h.GRPC != nil:
		return false, "gRPC probes are not supported by localkube"
	}
	return false, "no probe handler"
}

func tcpProbe(ctx context.Context, host string, port int) (bool, string) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return false, err.Error()
	}
	_ = conn.Close()
	return true, ""
}

func httpProbe(ctx context.Context, url string, headers []corev1.HTTPHeader) (bool, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err.Error()
	}
	req.Header.Set("User-Agent", "kube-probe/1.37")
	for _, hd := range headers {
		req.Header.Set(hd.Name, hd.Value)
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // kubelets do not verify probe targets
	resp, err := client.Do(req)
	if err != nil {
		return false, err.Error()
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxProbeOutput))
	_ = resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 400 {
		return true, string(body)
	}
	return false, fmt.Sprintf("HTTP probe failed with statuscode: %d", resp.StatusCode)
}

// containerCommand prepares a command that runs inside a running container: in its
// mount, UTS, IPC, network and PID namespaces, its root, as its user, with its
// environment and working directory (nsenter does the joining, which a
// multi-threaded Go process cannot do for a mount namespace).
func containerCommand(ctx context.Context, containerDir string, pid int, argv []string) (*exec.Cmd, error) {
	b, err := os.ReadFile(filepath.Join(containerDir, "spec.json"))
	if err != nil {
		return nil, err
	}
	var s initSpec
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("no command")
	}
	wd := s.WorkingDir
	if wd == "" {
		wd = "/"
	}
	// --pid: the command runs in the container's PID namespace (nsenter forks
	// it there), so it sees and signals the container's processes only.
	args := []string{"--target", strconv.Itoa(pid), "--mount", "--uts", "--ipc", "--net", "--pid", "--root", "--wdns=" + wd}
	if s.UID != 0 || s.GID != 0 {
		args = append(args, "--setuid", strconv.Itoa(int(s.UID)), "--setgid", strconv.Itoa(int(s.GID)))
	}
	args = append(args, "--")
	bin := argv[0]
	args = append(args, bin)
	args = append(args, argv[1:]...)
	cmd := exec.CommandContext(ctx, "nsenter", args...)
	cmd.Env = s.Env
	// A group of its own, ended whole on timeout: the command nsenter forked into
	// the container must not outlive it there (runWithTTY makes it a session,
	// which is a group too).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	return cmd, nil
}
