package kubelet

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/cri-streaming/pkg/streaming/portforward"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

// Streaming timeouts, as a kubelet's defaults.
const (
	streamIdleTimeout     = 4 * time.Hour
	streamCreationTimeout = 30 * time.Second
)

// containerView is what the HTTP side may know of a container, published by its
// pod worker after every pass.
type containerView struct {
	Restart int32
	Running bool
	PID     int
}

func (w *podWorker) publish() {
	v := map[string]containerView{}
	for name, c := range w.ctrs {
		cv := containerView{Restart: c.obs.RestartCount, Running: c.obs.Running}
		if c.proc != nil {
			cv.PID = c.proc.pid
		}
		v[name] = cv
	}
	w.mu.Lock()
	w.view = v
	w.mu.Unlock()
}

func (w *podWorker) container(name string) (containerView, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	v, ok := w.view[name]
	return v, ok
}

func (k *Kubelet) findPod(namespace, name string) *podWorker {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, w := range k.workers {
		if p, _ := w.latest(); p != nil && p.Namespace == namespace && p.Name == name {
			return w
		}
	}
	return nil
}

func (k *Kubelet) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.HandleFunc("GET /containerLogs/{ns}/{pod}/{container}", k.serveLogs)
	for _, p := range []string{"/exec/{ns}/{pod}/{container}", "/exec/{ns}/{pod}/{uid}/{container}"} {
		mux.HandleFunc(p, k.serveExec)
	}
	for _, p := range []string{"/attach/{ns}/{pod}/{container}", "/attach/{ns}/{pod}/{uid}/{container}"} {
		mux.HandleFunc(p, k.serveAttach)
	}
	for _, p := range []string{"/portForward/{ns}/{pod}", "/portForward/{ns}/{pod}/{uid}"} {
		mux.HandleFunc(p, k.servePortForward)
	}
	return mux
}

// serve runs the kubelet's HTTPS endpoint, through which the API server proxies
// logs, exec, attach and port-forward.
func (k *Kubelet) serve(ctx context.Context) error {
	cert, err := tls.LoadX509KeyPair(k.cfg.TLSCert, k.cfg.TLSKey)
	if err != nil {
		return err
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if k.cfg.ClientCA != "" {
		pem, err := os.ReadFile(k.cfg.ClientCA)
		if err != nil {
			return err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return errors.New("clientCA holds no certificate")
		}
		tc.ClientCAs, tc.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	srv := &http.Server{
		Addr:              net.JoinHostPort(k.cfg.NodeIP, strconv.Itoa(k.cfg.Port)),
		Handler:           k.handler(),
		TLSConfig:         tc,
		ReadHeaderTimeout: 30 * time.Second,
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	k.log.Info().Str("addr", srv.Addr).Msg("kubelet server listening")
	err = srv.ListenAndServeTLS("", "")
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

func parseLogOptions(r *http.Request) (logOptions, error) {
	q := r.URL.Query()
	o := logOptions{TailLines: -1}
	o.Follow, _ = strconv.ParseBool(q.Get("follow"))
	o.Previous, _ = strconv.ParseBool(q.Get("previous"))
	o.Timestamps, _ = strconv.ParseBool(q.Get("timestamps"))
	if s := q.Get("tailLines"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return o, err
		}
		o.TailLines = n
	}
	if s := q.Get("limitBytes"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return o, err
		}
		o.LimitBytes = n
	}
	if s := q.Get("sinceSeconds"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return o, err
		}
		o.Since = time.Now().Add(-time.Duration(n) * time.Second)
	}
	if s := q.Get("sinceTime"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return o, err
		}
		o.Since = t
	}
	return o, nil
}

func (k *Kubelet) serveLogs(rw http.ResponseWriter, r *http.Request) {
	w := k.findPod(r.PathValue("ns"), r.PathValue("pod"))
	name := r.PathValue("container")
	if w == nil {
		http.Error(rw, "pod not found", http.StatusNotFound)
		return
	}
	cv, ok := w.container(name)
	if !ok {
		http.Error(rw, fmt.Sprintf("container %q in pod %q is waiting to start", name, r.PathValue("pod")), http.StatusBadRequest)
		return
	}
	o, err := parseLogOptions(r)
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	restart := cv.Restart
	if o.Previous {
		if restart == 0 {
			http.Error(rw, fmt.Sprintf("previous terminated container %q in pod %q not found", name, r.PathValue("pod")), http.StatusBadRequest)
			return
		}
		restart--
		o.Follow = false
	}
	path := w.logPath(name, restart)
	rw.Header().Set("Content-Type", "text/plain")
	_, _ = rw.Write(renderLog(readLogFiles(path), o))
	if !o.Follow {
		return
	}
	if f, ok := rw.(http.Flusher); ok {
		f.Flush()
	}
	k.followLog(r.Context(), rw, w, name, restart, path, o)
}

// followLog streams new entries of one container run until the run ends or the
// client leaves.
func (k *Kubelet) followLog(ctx context.Context, rw http.ResponseWriter, w *podWorker, name string, restart int32, path string, o logOptions) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer func() { _ = f.Close() }()
	offset, _ := f.Seek(0, io.SeekEnd)
	br := bufio.NewReader(f)
	o.TailLines, o.Since = -1, time.Time{}
	var partial string
	for {
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				partial += line
				break
			}
			offset += int64(len(line))
			line = partial + line
			partial = ""
			if l, ok := parseLogLine(strings.TrimSuffix(line, "\n")); ok {
				_, _ = rw.Write(renderLog([]logLine{l}, o))
			}
		}
		if fl, ok := rw.(http.Flusher); ok {
			fl.Flush()
		}
		cv, _ := w.container(name)
		if cv.Restart != restart || !cv.Running {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
		if st, err := os.Stat(path); err == nil && st.Size() < offset {
			// Rotated: continue with the new file from its start.
			_ = f.Close()
			if f, err = os.Open(path); err != nil {
				return
			}
			br.Reset(f)
			offset, partial = 0, ""
		}
	}
}

func (k *Kubelet) serveExec(rw http.ResponseWriter, r *http.Request) {
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	cmd := r.URL.Query()["command"]
	remotecommand.ServeExec(rw, r, k, r.PathValue("pod"), r.PathValue("ns"), r.PathValue("container"), cmd,
		opts, streamIdleTimeout, streamCreationTimeout, remotecommand.SupportedStreamingProtocols)
}

func (k *Kubelet) serveAttach(rw http.ResponseWriter, r *http.Request) {
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	remotecommand.ServeAttach(rw, r, k, r.PathValue("pod"), r.PathValue("ns"), r.PathValue("container"),
		opts, streamIdleTimeout, streamCreationTimeout, remotecommand.SupportedStreamingProtocols)
}

func (k *Kubelet) servePortForward(rw http.ResponseWriter, r *http.Request) {
	opts, err := portforward.NewV4Options(r)
	if err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	portforward.ServePortForward(rw, r, k, r.PathValue("pod"), r.PathValue("ns"), opts,
		streamIdleTimeout, streamCreationTimeout, portforward.SupportedProtocols)
}

// The streaming handlers pass the pod name and, in the uid slot, its namespace.

// ExecInContainer runs cmd inside a running container (remotecommand.Executor).
func (k *Kubelet) ExecInContainer(ctx context.Context, name, namespace, container string, cmd []string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize, timeout time.Duration) error {
	w := k.findPod(namespace, name)
	if w == nil {
		return fmt.Errorf("pod %s/%s not found", namespace, name)
	}
	cv, ok := w.container(container)
	if !ok || !cv.Running {
		return fmt.Errorf("container %s is not running", container)
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	c, err := containerCommand(ctx, w.containerDir(container), cv.PID, cmd)
	if err != nil {
		return err
	}
	if tty {
		err = runWithTTY(c, in, out, resize)
	} else {
		c.Stdin, c.Stdout, c.Stderr = in, out, errw
		err = c.Run()
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return utilexec.CodeExitError{Err: err, Code: ee.ExitCode()}
	}
	return err
}

// AttachContainer streams a container's output (remotecommand.Attacher). Input is
// not supported: containers read /dev/null.
func (k *Kubelet) AttachContainer(ctx context.Context, name, namespace, container string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
	w := k.findPod(namespace, name)
	if w == nil {
		return fmt.Errorf("pod %s/%s not found", namespace, name)
	}
	cv, ok := w.container(container)
	if !ok || !cv.Running {
		return fmt.Errorf("container %s is not running", container)
	}
	rw := &attachWriter{out: out}
	k.followLog(ctx, rw, w, container, cv.Restart, w.logPath(container, cv.Restart), logOptions{TailLines: -1})
	return nil
}

type attachWriter struct {
	out    io.Writer
	header http.Header
}

func (a *attachWriter) Header() http.Header {
	if a.header == nil {
		a.header = http.Header{}
	}
	return a.header
}
func (a *attachWriter) Write(b []byte) (int, error) { return a.out.Write(b) }
func (a *attachWriter) WriteHeader(int)             {}

// PortForward connects stream to port on the pod's own localhost
// (portforward.PortForwarder).
func (k *Kubelet) PortForward(ctx context.Context, name, namespace string, port int32, stream io.ReadWriteCloser) error {
	w := k.findPod(namespace, name)
	if w == nil {
		return fmt.Errorf("pod %s/%s not found", namespace, name)
	}
	defer func() { _ = stream.Close() }()
	var conn net.Conn
	dial := func() error {
		d := net.Dialer{Timeout: 10 * time.Second}
		c, err := d.DialContext(ctx, "tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))))
		conn = c
		return err
	}
	var err error
	if p, _ := w.latest(); p != nil && p.Spec.HostNetwork {
		err = dial()
	} else {
		err = withNetns(w.dir+"/netns", dial)
	}
	if err != nil {
		return fmt.Errorf("port-forward to %d: %w", port, err)
	}
	defer func() { _ = conn.Close() }()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(conn, stream); done <- struct{}{} }()
	go func() { _, _ = io.Copy(stream, conn); done <- struct{}{} }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	return nil
}

// openPTY allocates a pseudo-terminal pair.
func openPTY() (master, slave *os.File, err error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		_ = m.Close()
		return nil, nil, err
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		_ = m.Close()
		return nil, nil, err
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		_ = m.Close()
		return nil, nil, err
	}
	return m, s, nil
}

func runWithTTY(c *exec.Cmd, in io.Reader, out io.Writer, resize <-chan remotecommand.TerminalSize) error {
	master, slave, err := openPTY()
	if err != nil {
		return err
	}
	defer func() { _ = master.Close() }()
	c.Stdin, c.Stdout, c.Stderr = slave, slave, slave
	c.SysProcAttr = &unix.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := c.Start(); err != nil {
		_ = slave.Close()
		return err
	}
	_ = slave.Close() // the child holds its own copy
	go func() {
		for s := range resize {
			_ = unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: s.Height, Col: s.Width})
		}
	}()
	if in != nil {
		go func() { _, _ = io.Copy(master, in) }()
	}
	_, _ = io.Copy(out, master) // ends with EIO when the terminal closes
	return c.Wait()
}
