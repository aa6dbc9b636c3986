package sim

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ShutdownRunning is `mongod --shutdown`: it signals the process whose pid
// is in dbpath/mongod.lock and waits for it to exit. It returns the exit code.
func ShutdownRunning(dbpath string, out io.Writer) int {
	b, err := os.ReadFile(filepath.Join(dbpath, "mongod.lock"))
	pid, perr := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || perr != nil || pid <= 0 {
		_, _ = fmt.Fprintf(out, "There doesn't seem to be a server running with dbpath: %s\n", dbpath)
		return 1
	}
	_, _ = fmt.Fprintf(out, "killing process with pid: %d\n", pid)
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		_, _ = fmt.Fprintf(out, "failed to kill process: %v\n", err)
		return 1
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if syscall.Kill(pid, 0) != nil {
			return 0
		}
		time.Sleep(50 * time.Millisecond)
	}
	_, _ = fmt.Fprintf(out, "process %d did not exit within 60 seconds\n", pid)
	return 1
}

// Fork is `mongod --fork`: start the same command line without --fork in
// a new session, wait until it accepts connections, and let the parent exit.
func Fork(argv []string, cfg Config, out io.Writer) int {
	var args []string
	for _, a := range argv[1:] {
		if a == "--fork" || strings.HasPrefix(a, "--fork=") {
			continue
		}
		args = append(args, a)
	}
	self, err := os.Executable()
	if err != nil {
		self = argv[0]
	}
	_, _ = fmt.Fprintln(out, "about to fork child process, waiting until server is ready for connections.")
	cmd := exec.Command(self, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		_, _ = fmt.Fprintf(out, "ERROR: child process failed to start: %v\n", err)
		return 1
	}
	_, _ = fmt.Fprintf(out, "forked process: %d\n", cmd.Process.Pid)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	host := "127.0.0.1"
	if !cfg.BindIPAll && len(cfg.BindIP) > 0 && cfg.BindIP[0] != "0.0.0.0" {
		host = cfg.BindIP[0]
	}
	addr := net.JoinHostPort(host, strconv.Itoa(cfg.Port))
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			code := 1
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			}
			_, _ = fmt.Fprintf(out, "ERROR: child process failed, exited with %d\n", code)
			return code
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			_ = c.Close()
			_, _ = fmt.Fprintln(out, "child process started successfully, parent exiting")
			return 0
		}
		time.Sleep(50 * time.Millisecond)
	}
	_, _ = fmt.Fprintln(out, "ERROR: child process did not become ready within 60 seconds")
	return 1
}
