package sim

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// hostPort is how serverStatus and $collStats name this member: host name and port.
func (n *Node) hostPort() string {
	h, _ := os.Hostname()
	return fmt.Sprintf("%s:%d", h, n.cfg.Port)
}

func (c *conn) cmdBuildInfo(*Request) (bson.D, error) { return c.n.cfg.buildInfo(), nil }

func (c *conn) cmdGetCmdLineOpts(req *Request) (bson.D, error) {
	if e := requireAdmin(req, "getCmdLineOpts"); e != nil {
		return nil, e
	}
	return bson.D{{Key: "argv", Value: c.n.cfg.Argv}, {Key: "parsed", Value: c.n.cfg.Parsed}}, nil
}

// cmdHostInfo reports the machine as mongod does on Linux, read from /proc,
// uname and os-release.
func (c *conn) cmdHostInfo(*Request) (bson.D, error) {
	h, _ := os.Hostname()
	memKB := procValue("/proc/meminfo", "MemTotal")
	cpuModel, cpuMHz := cpuInfo()
	var u syscall.Utsname
	_ = syscall.Uname(&u)
	var lim syscall.Rlimit
	_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	osName, osVersion := osRelease()
	memMB := memKB / 1024
	return bson.D{
		{Key: "system", Value: bson.D{{Key: "currentTime", Value: bson.NewDateTimeFromTime(time.Now())}, {Key: "hostname", Value: h},
			{Key: "cpuAddrSize", Value: int32(64)}, {Key: "memSizeMB", Value: memMB}, {Key: "memLimitMB", Value: memMB},
			{Key: "numCores", Value: int32(runtime.NumCPU())}, {Key: "numCoresAvailableToProcess", Value: int32(runtime.NumCPU())},
			{Key: "numPhysicalCores", Value: int32(runtime.NumCPU())}, {Key: "numCpuSockets", Value: int32(1)},
			{Key: "cpuArch", Value: map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[runtime.GOARCH]},
			{Key: "numaEnabled", Value: false}, {Key: "numNumaNodes", Value: int32(1)}}},
		{Key: "os", Value: bson.D{{Key: "type", Value: "Linux"}, {Key: "name", Value: osName}, {Key: "version", Value: osVersion}}},
		{Key: "extra", Value: bson.D{{Key: "versionString", Value: "Linux version " + utsString(u.Release[:])},
			{Key: "libcVersion", Value: "2.35"}, {Key: "kernelVersion", Value: utsString(u.Release[:])},
			{Key: "cpuString", Value: cpuModel}, {Key: "cpuFrequencyMHz", Value: cpuMHz},
			{Key: "pageSize", Value: int64(os.Getpagesize())}, {Key: "numPages", Value: int32(memKB * 1024 / int64(os.Getpagesize()))},
			{Key: "maxOpenFiles", Value: int32(lim.Cur)}, {Key: "physicalCores", Value: int32(runtime.NumCPU())}}},
	}, nil
}

func utsString(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}

// procValue reads "Key: N kB" from a /proc file.
func procValue(path, key string) int64 {
	b, _ := os.ReadFile(path)
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == key {
			n, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return n
		}
	}
	return 0
}

func cpuInfo() (model, mhz string) {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "", ""
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch {
		case !ok:
		case k == "model name" && model == "":
			model = v
		case k == "cpu MHz" && mhz == "":
			mhz = v
		}
	}
	return model, mhz
}

func osRelease() (name, version string) {
	b, _ := os.ReadFile("/etc/os-release")
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, "=")
		v = strings.Trim(v, `"`)
		switch k {
		case "NAME":
			name = v
		case "VERSION_ID":
			version = v
		}
	}
	return name, version
}

// ramLog keeps the last lines of the process's log, as mongod's RamLogs do
// for getLog: "global" (everything) and "startupWarnings" (lines tagged so).
type ramLog struct {
	mu       sync.Mutex
	global   []string
	warnings []string
	total    int64
}

const ramLogLines = 1024

// RAMLog receives a copy of the log (cmd/mongod-sim writes the log to it too).
var RAMLog = &ramLog{}

func (r *ramLog) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, line := range bytes.Split(bytes.TrimRight(p, "\n"), []byte("\n")) {
		s := string(line)
		r.total++
		r.global = append(r.global, s)
		if len(r.global) > ramLogLines {
			r.global = r.global[len(r.global)-ramLogLines:]
		}
		if strings.Contains(s, `"tags":["startupWarnings"]`) && len(r.warnings) < ramLogLines {
			r.warnings = append(r.warnings, s)
		}
	}
	return len(p), nil
}

func (c *conn) cmdGetLog(req *Request) (bson.D, error) {
	if e := requireAdmin(req, "getLog"); e != nil {
		return nil, e
	}
	v := req.Body.Lookup("getLog")
	name, ok := v.StringValueOK()
	if !ok {
		return nil, cerr(14, "Argument to getLog must be of type String; found %s of type %s", v.String(), typeName(v.Type))
	}
	r := RAMLog
	r.mu.Lock()
	defer r.mu.Unlock()
	switch name {
	case "*":
		return bson.D{{Key: "names", Value: bson.A{"global", "startupWarnings"}}}, nil
	case "global":
		return bson.D{{Key: "totalLinesWritten", Value: int32(r.total)}, {Key: "log", Value: append([]string{}, r.global...)}}, nil
	case "startupWarnings":
		return bson.D{{Key: "totalLinesWritten", Value: int32(len(r.warnings))}, {Key: "log", Value: append([]string{}, r.warnings...)}}, nil
	}
	return nil, cerr(96, "no RamLog named: %s", name)
}

// startupWarnings logs mongod's start-up warnings, tagged so getLog's
// startupWarnings (and the shell's greeting) shows them.
func (n *Node) startupWarnings() {
	warn := func(id int, msg string) {
		n.log.Log().Dict("t", zerolog.Dict().Str("$date", time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00"))).
			Str("s", "W").Str("c", "CONTROL").Int("id", id).Str("ctx", "initandlisten").Str("msg", msg).
			Strs("tags", []string{"startupWarnings"}).Send()
	}
	if !n.cfg.Auth {
		warn(22120, "Access control is not enabled for the database. Read and write access to data and configuration is unrestricted")
	}
	local := !n.cfg.BindIPAll
	for _, ip := range n.cfg.BindIP {
		if ip != "127.0.0.1" && ip != "localhost" && ip != "::1" {
			local = false
		}
	}
	if local {
		warn(22140, "This server is bound to localhost. Remote systems will be unable to connect to this server. Start the server with --bind_ip <address> to specify which IP addresses it should serve responses from, or with --bind_ip_all to bind to all interfaces. If this behavior is desired, start the server with --bind_ip 127.0.0.1 to disable this warning")
	}
}
