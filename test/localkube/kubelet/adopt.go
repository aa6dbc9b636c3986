package kubelet

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// adopt watches a container process left running by a previous kubelet. It is not
// our child, so its exit status cannot be waited for; the kubelet learns it as a
// runtime would report it: from the kernel's pidfd exit information (Linux 6.15+,
// once the process is reaped) or, while it is still a zombie, from its
// /proc/PID/stat. Only when neither tells (an old kernel, a process reaped and
// gone before it was looked at) is it reported as Kubernetes reports a container
// whose status was lost: exit 137, ContainerStatusUnknown.
func adopt(dir, logPath string, pid int, id string, startedAt time.Time) *proc {
	p := &proc{pid: pid, done: make(chan struct{}), detach: func() {}}
	detach, drain, err := openOutput(dir, logPath)
	if err != nil {
		drain = func() {}
	} else {
		p.detach = detach
	}
	pidFile := filepath.Join(dir, "pid")
	ticks, _ := procStartTicks(pid)
	fd, err := unix.PidfdOpen(pid, 0)
	if err == nil {
		if live, ok := readLivePID(pidFile); !ok || live != pid {
			// It ended (and its PID may be another's) before the pidfd was open.
			_ = unix.Close(fd)
			fd = -1
		}
	} else {
		fd = -1
	}
	go func() {
		status, known := -1, false
		if fd >= 0 {
			waitPidfd(fd)
			status, known = exitStatusOf(fd, pid, ticks)
			_ = unix.Close(fd)
		} else {
			for {
				if _, ok := readLivePID(pidFile); !ok {
					break
				}
				time.Sleep(500 * time.Millisecond)
			}
		}
		if known {
			p.exit = exitFromStatus(syscall.WaitStatus(status))
			p.exit.StartedAt, p.exit.FinishedAt, p.exit.ID = startedAt, time.Now(), id
		} else {
			p.exit = termination{ExitCode: 137, Reason: "ContainerStatusUnknown",
				Message:   "The container could not be located when the pod was terminated",
				StartedAt: startedAt, FinishedAt: time.Now(), ID: id}
		}
		drain()
		_ = os.Remove(pidFile)
		close(p.done)
	}()
	return p
}

// waitPidfd blocks until the process behind a pidfd has exited.
func waitPidfd(fd int) {
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n > 0 {
			return
		}
	}
}

// pidfdInfo is the first published layout of struct pidfd_info (linux/pidfd.h,
// PIDFD_INFO_SIZE_VER0 = 64 bytes).
type pidfdInfo struct {
	Mask                                                              uint64
	CgroupID                                                          uint64
	PID, TGID, PPID, RUID, RGID, EUID, EGID, SUID, SGID, FSUID, FSGID uint32
	ExitCode                                                          int32
}

const (
	pidfdInfoExit = 1 << 3 // PIDFD_INFO_EXIT
	// pidfdGetInfo is PIDFD_GET_INFO: _IOWR(PIDFS_IOCTL_MAGIC 0xFF, 11, 64 bytes).
	pidfdGetInfo = 0xC0000000 | 64<<16 | 0xFF<<8 | 11
)

// exitStatusOf finds the wait status of an exited process: through its pidfd
// once it has been reaped, or from /proc/PID/stat while it is a zombie (field 52,
// exit_code). It keeps looking for two seconds, the time a reaper may take.
func exitStatusOf(fd, pid int, ticks uint64) (int, bool) {
	deadline := time.Now().Add(2 * time.Second)
	for {
		var info pidfdInfo
		info.Mask = pidfdInfoExit
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), pidfdGetInfo, uintptr(unsafe.Pointer(&info)))
		if errno == 0 && info.Mask&pidfdInfoExit != 0 {
			return int(info.ExitCode), true
		}
		if status, ok := zombieStatus(pid, ticks); ok {
			return status, true
		}
		if time.Now().After(deadline) {
			return 0, false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// zombieStatus reads the wait status of process pid from /proc/PID/stat if it is
// the process that started at ticks and is now a zombie.
func zombieStatus(pid int, ticks uint64) (int, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state), f[19] field 22 (starttime), f[49] field 52 (exit_code).
	if len(f) < 50 || f[0] != "Z" || f[19] != strconv.FormatUint(ticks, 10) {
		return 0, false
	}
	status, err := strconv.Atoi(f[49])
	return status, err == nil
}

// exitFromStatus is the termination a wait status describes, as exitOf words it.
func exitFromStatus(ws syscall.WaitStatus) termination {
	t := termination{Reason: "Error"}
	if ws.Signaled() {
		t.ExitCode = 128 + int32(ws.Signal())
		t.Signal = int32(ws.Signal())
	} else {
		t.ExitCode = int32(ws.ExitStatus())
	}
	if t.ExitCode == 0 {
		t.Reason = "Completed"
	}
	return t
}
