package kubelet

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// initEnv names the environment variable that turns a re-executed kubelet binary into
// a container's init helper: it holds the path of the container's spec.json.
const initEnv = "LOCALKUBE_CONTAINER_INIT"

// mountSpec is one bind mount into a container's root.
type mountSpec struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"readOnly,omitempty"`
}

// initSpec is what the init helper sets up before it executes the container's
// command. The helper starts in fresh mount, UTS and IPC namespaces, in the pod's
// network namespace and in its PID namespace (pidns.go); everything else it does
// itself.
type initSpec struct {
	Root         string      `json:"root"`
	Scratch      string      `json:"scratch"`
	ImageDir     string      `json:"imageDir,omitempty"`
	Hide         []string    `json:"hide,omitempty"`
	Mounts       []mountSpec `json:"mounts"`
	Hostname     string      `json:"hostname"`
	ReadOnlyRoot bool        `json:"readOnlyRoot,omitempty"`
	Argv         []string    `json:"argv"`
	Env          []string    `json:"env"`
	WorkingDir   string      `json:"workingDir"`
	UID          uint32      `json:"uid"`
	GID          uint32      `json:"gid"`
	Groups       []uint32    `json:"groups,omitempty"`
	Stdout       string      `json:"stdout"`
	Stderr       string      `json:"stderr"`
}

func init() {
	if dir := os.Getenv(pauseEnv); dir != "" {
		runPause(dir)
		os.Exit(0)
	}
	path := os.Getenv(initEnv)
	if path == "" {
		return
	}
	err := containerInit(path)
	// Only a failure comes back: report it on the status pipe and exit like a shell
	// that could not run a command.
	status := os.NewFile(3, "status")
	_, _ = fmt.Fprint(status, err) // nothing else to tell it with
	os.Exit(127)
}

func containerInit(specPath string) error {
	b, err := os.ReadFile(specPath)
	if err != nil {
		return err
	}
	var s initSpec
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	unix.CloseOnExec(3)
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if err := unix.Mount("tmpfs", s.Scratch, "tmpfs", 0, "mode=0755"); err != nil {
		return fmt.Errorf("scratch tmpfs: %w", err)
	}
	upper, work := filepath.Join(s.Scratch, "upper"), filepath.Join(s.Scratch, "work")
	for _, d := range []string{upper, work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
	}
	opts := fmt.Sprintf("lowerdir=/,upperdir=%s,workdir=%s", upper, work)
	if err := unix.Mount("overlay", s.Root, "overlay", 0, opts); err != nil {
		return fmt.Errorf("overlay root: %w", err)
	}
	in := func(p string) string { return filepath.Join(s.Root, p) }
	for _, h := range s.Hide {
		if _, err := os.Stat(resolveIn(s.Root, h)); err == nil {
			if err := unix.Mount("tmpfs", resolveIn(s.Root, h), "tmpfs", unix.MS_RDONLY, "size=4k,mode=0755"); err != nil {
				return fmt.Errorf("hide %s: %w", h, err)
			}
		}
	}
	if s.ImageDir != "" {
		if err := mountImage(s.ImageDir, s.Root); err != nil {
			return fmt.Errorf("image: %w", err)
		}
	}
	if err := unix.Mount("proc", in("/proc"), "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("proc: %w", err)
	}
	if err := unix.Mount("/sys", in("/sys"), "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("/sys: %w", err)
	}
	if err := mountDev(in("/dev")); err != nil {
		return fmt.Errorf("/dev: %w", err)
	}
	if err := unix.Mount("tmpfs", in("/tmp"), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
		return fmt.Errorf("tmp: %w", err)
	}
	for _, m := range s.Mounts {
		if err := bindInto(s.Root, m); err != nil {
			return err
		}
	}
	if s.ReadOnlyRoot {
		// /tmp is part of the root filesystem in a real container: read-only too.
		for _, m := range []string{s.Root, in("/tmp")} {
			if err := unix.Mount("", m, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
				return fmt.Errorf("read-only root: %w", err)
			}
		}
	}
	for fd, p := range map[int]string{1: s.Stdout, 2: s.Stderr} {
		// Read-write: the container then always holds a reader of its own output
		// FIFO, so a kubelet restart never gives it SIGPIPE; output waits in the
		// pipe until the new kubelet reads on.
		f, err := unix.Open(p, unix.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("open %s: %w", p, err)
		}
		if err := unix.Dup3(f, fd, 0); err != nil {
			return err
		}
		_ = unix.Close(f)
	}
	if null, err := unix.Open("/dev/null", unix.O_RDONLY, 0); err == nil {
		_ = unix.Dup3(null, 0, 0)
		_ = unix.Close(null)
	}
	if s.Hostname != "" { // empty for hostNetwork pods, which keep the node's name
		if err := unix.Sethostname([]byte(s.Hostname)); err != nil {
			return fmt.Errorf("hostname: %w", err)
		}
	}
	if err := unix.Chroot(s.Root); err != nil {
		return fmt.Errorf("chroot: %w", err)
	}
	wd := s.WorkingDir
	if wd == "" {
		wd = "/"
	}
	if err := os.MkdirAll(wd, 0o755); err != nil {
		return fmt.Errorf("workingDir: %w", err)
	}
	if err := unix.Chdir(wd); err != nil {
		return fmt.Errorf("workingDir: %w", err)
	}
	groups := make([]int, len(s.Groups))
	for i, g := range s.Groups {
		groups[i] = int(g)
	}
	if err := syscall.Setgroups(groups); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setgid(int(s.GID)); err != nil {
		return fmt.Errorf("setgid: %w", err)
	}
	if err := syscall.Setuid(int(s.UID)); err != nil {
		return fmt.Errorf("setuid: %w", err)
	}
	if len(s.Argv) == 0 {
		return fmt.Errorf("no command specified")
	}
	bin, err := lookPath(s.Argv[0], s.Env)
	if err != nil {
		return err
	}
	return fmt.Errorf("exec %s: %w", s.Argv[0], unix.Exec(bin, s.Argv, s.Env))
}

// lookPath finds a command the way execvp does, with the container's PATH.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path := defaultPath
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("exec: %q: executable file not found in $PATH", name)
}

// ensureTarget makes the mount point for a bind of src exist under root: a directory
// for a directory, an empty file for a file, replacing a symlink (which would lead
// the mount out of the container's root).
func ensureTarget(target string, dir bool) error {
	if st, err := os.Lstat(target); err == nil {
		if st.Mode()&fs.ModeSymlink == 0 {
			return nil
		}
		if err := os.Remove(target); err != nil {
			return err
		}
	}
	if dir {
		return os.MkdirAll(target, 0o755)
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	return os.WriteFile(target, nil, 0o644)
}

// resolveIn resolves a path inside root as the container will see it: symlinks,
// absolute ones included, are followed within root, never out to the host. The last
// component is not followed, so that a mount replaces a symlink rather than
// landing where it points.
func resolveIn(root, p string) string {
	parts := strings.Split(filepath.Clean("/"+p), "/")
	last := parts[len(parts)-1]
	parts = parts[:len(parts)-1]
	cur := "/"
	links := 0
	for i := 0; i < len(parts); i++ {
		part := parts[i]
		switch part {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, part)
		host := filepath.Join(root, next)
		if fi, err := os.Lstat(host); err == nil && fi.Mode()&fs.ModeSymlink != 0 && links < 40 {
			target, err := os.Readlink(host)
			if err == nil {
				links++
				if filepath.IsAbs(target) {
					cur = "/"
				}
				parts = append(strings.Split(target, "/"), parts[i+1:]...)
				i = -1
				continue
			}
		}
		cur = next
	}
	return filepath.Join(root, cur, last)
}

func bindInto(root string, m mountSpec) error {
	st, err := os.Stat(m.Source)
	if err != nil {
		return fmt.Errorf("mount %s: %w", m.Target, err)
	}
	target := resolveIn(root, m.Target)
	if err := ensureTarget(target, st.IsDir()); err != nil {
		return fmt.Errorf("mount point %s: %w", m.Target, err)
	}
	if err := unix.Mount(m.Source, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("mount %s: %w", m.Target, err)
	}
	if m.ReadOnly {
		if err := unix.Mount("", target, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
			return fmt.Errorf("read-only %s: %w", m.Target, err)
		}
	}
	return nil
}

// mountImage stacks an image directory over the root: where the image and the root
// both have a directory it descends, anything else of the image (a file, a
// directory the root lacks, a symlink's target) is bind-mounted read-only in place.
func mountImage(imageDir, root string) error {
	entries, err := os.ReadDir(imageDir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		src := filepath.Join(imageDir, e.Name())
		dst := filepath.Join(root, e.Name())
		sst, err := os.Stat(src)
		if err != nil {
			continue // a dangling link: the binary is not built
		}
		if dstInfo, err := os.Lstat(dst); err == nil && sst.IsDir() && dstInfo.IsDir() && e.Type()&fs.ModeSymlink == 0 {
			if err := mountImage(src, filepath.Join(root, e.Name())); err != nil {
				return err
			}
			continue
		}
		if err := bindInto(root, mountSpec{Source: src, Target: strings.TrimPrefix(dst, root), ReadOnly: true}); err != nil {
			return err
		}
	}
	return nil
}

// mountDev gives the container a /dev of its own, as container runtimes do: a tmpfs
// with the harmless device nodes bound from the host, a private devpts and /dev/shm,
// and the usual links. The host's disks and other devices stay out of reach.
func mountDev(dev string) error {
	if err := unix.Mount("tmpfs", dev, "tmpfs", unix.MS_NOSUID, "mode=0755,size=65536k"); err != nil {
		return err
	}
	for _, d := range []string{"null", "zero", "full", "random", "urandom", "tty"} {
		p := filepath.Join(dev, d)
		if err := os.WriteFile(p, nil, 0o666); err != nil {
			return err
		}
		if err := unix.Mount("/dev/"+d, p, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("%s: %w", d, err)
		}
	}
	for _, d := range []string{"pts", "shm", "mqueue"} {
		if err := os.Mkdir(filepath.Join(dev, d), 0o755); err != nil {
			return err
		}
	}
	if err := unix.Mount("devpts", filepath.Join(dev, "pts"), "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return fmt.Errorf("devpts: %w", err)
	}
	if err := unix.Mount("shm", filepath.Join(dev, "shm"), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777,size=65536k"); err != nil {
		return fmt.Errorf("shm: %w", err)
	}
	if err := unix.Mount("mqueue", filepath.Join(dev, "mqueue"), "mqueue", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mqueue: %w", err)
	}
	for name, target := range map[string]string{
		"ptmx": "pts/ptmx", "fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2", "core": "/proc/kcore",
	} {
		if err := os.Symlink(target, filepath.Join(dev, name)); err != nil {
			return err
		}
	}
	return nil
}
