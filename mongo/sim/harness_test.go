package sim_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
)

// simBin is the mongod-sim binary built once for this test binary.
var simBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mongod-sim-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	simBin = filepath.Join(dir, "mongod-sim")
	args := []string{"build", "-o", simBin}
	if raceBuild {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "github.com/mgors/operator/cmd/mongod-sim")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building mongod-sim:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

var ipMu sync.Mutex
var nextIP = 1

// freeAddr picks a loopback address in 127.0.3.0/24 and a free port on it.
func freeAddr(t testing.TB) (string, int) {
	t.Helper()
	ipMu.Lock()
	ip := fmt.Sprintf("127.0.3.%d", nextIP)
	nextIP = nextIP%250 + 1
	ipMu.Unlock()
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return ip, port
}

// member is one mongod-sim process.
type member struct {
	t      testing.TB
	ip     string
	port   int
	host   string
	dbpath string
	extra  []string
	cmd    *exec.Cmd
	out    *syncBuffer
	done   chan struct{}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newMember(t testing.TB, extra ...string) *member {
	ip, port := freeAddr(t)
	return newMemberAt(t, ip, port, extra...)
}

// sharedPortMembers starts n members on distinct addresses and one port,
// so finding "self" in a config needs mongod's _isSelf check.
func sharedPortMembers(t *testing.T, n int, extra ...string) []*member {
	t.Helper()
	for attempt := 0; attempt < 20; attempt++ {
		var ips []string
		for range n {
			ip, _ := freeAddr(t)
			ips = append(ips, ip)
		}
		_, port := freeAddr(t)
		free := true
		for _, ip := range ips {
			l, err := net.Listen("tcp", fmt.Sprintf("%s:%d", ip, port))
			if err != nil {
				free = false
				break
			}
			_ = l.Close()
		}
		if !free {
			continue
		}
		var ms []*member
		for _, ip := range ips {
			ms = append(ms, newMemberAt(t, ip, port, extra...))
		}
		return ms
	}
	t.Fatal("no shared free port")
	return nil
}

func newMemberAt(t testing.TB, ip string, port int, extra ...string) *member {
	m := &member{t: t, ip: ip, port: port, host: fmt.Sprintf("%s:%d", ip, port), dbpath: t.TempDir(), extra: extra}
	m.start()
	t.Cleanup(func() {
		m.kill()
		if strings.Contains(m.out.String(), "WARNING: DATA RACE") {
			t.Errorf("data race in mongod-sim %s:\n%s", m.host, m.out.String())
		}
		if t.Failed() {
			t.Logf("log of %s:\n%s", m.host, tail(m.out.String(), 60))
		}
	})
	return m
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (m *member) args() []string {
	a := []string{"--replSet", "rs0", "--bind_ip", m.ip, "--port", fmt.Sprint(m.port), "--dbpath", m.dbpath}
	return append(a, m.extra...)
}

func (m *member) start() {
	m.t.Helper()
	m.cmd = exec.Command(simBin, m.args()...)
	if m.out == nil {
		m.out = &syncBuffer{}
	}
	m.cmd.Stdout, m.cmd.Stderr = m.out, m.out
	if err := m.cmd.Start(); err != nil {
		m.t.Fatal(err)
	}
	m.done = make(chan struct{})
	go func(c *exec.Cmd, done chan struct{}) { _ = c.Wait(); close(done) }(m.cmd, m.done)
	waitFor(m.t, 20*time.Second, "listening "+m.host, func() bool {
		c, err := net.DialTimeout("tcp", m.host, 200*time.Millisecond)
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	})
}

// kill sends SIGKILL and waits for the process to be gone.
func (m *member) kill() {
	if m.cmd == nil || m.cmd.Process == nil {
		return
	}
	_ = m.cmd.Process.Signal(syscall.SIGKILL)
	<-m.done
	m.cmd = nil
}

func (m *member) client(t testing.TB, opts ...string) *mongo.Client {
	t.Helper()
	uri := fmt.Sprintf("mongodb://%s/?directConnection=true&serverSelectionTimeoutMS=5000", m.host)
	if len(opts) > 0 {
		uri = fmt.Sprintf("mongodb://%s%s/?directConnection=true&serverSelectionTimeoutMS=5000&%s", opts[0], m.host, strings.Join(opts[1:], "&"))
	}
	return connect(t, uri)
}

func connect(t testing.TB, uri string) *mongo.Client {
	t.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = c.Disconnect(ctx)
	})
	return c
}

// logged says whether every one of lines is in m's log, waiting up to 10 s: a
// log line reaches the test through the process's stdout pipe, maybe after a
// reply the member sent later.
func (m *member) logged(lines ...string) bool {
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, all := m.out.String(), true
		for _, l := range lines {
			all = all && strings.Contains(out, l)
		}
		if all || time.Now().After(deadline) {
			return all
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out after %v waiting for %s", d, what)
}

func run(c *mongo.Client, cmd bson.D) (bson.Raw, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return c.Database("admin").RunCommand(ctx, cmd, options.RunCmd().SetReadPreference(readpref.PrimaryPreferred())).Raw()
}

func mustRun(t testing.TB, c *mongo.Client, cmd bson.D) bson.Raw {
	t.Helper()
	r, err := run(c, cmd)
	if err != nil {
		t.Fatalf("%v: %v", cmd[0].Key, err)
	}
	return r
}

// fastSettings shrink the replica-set timers so tests run quickly.
var fastSettings = bson.D{{Key: "electionTimeoutMillis", Value: 1000}, {Key: "heartbeatIntervalMillis", Value: 200}}

func rsConfig(ms []*member, settings bson.D) bson.D {
	arr := bson.A{}
	for i, m := range ms {
		arr = append(arr, bson.D{{Key: "_id", Value: i}, {Key: "host", Value: m.host}})
	}
	cfg := bson.D{{Key: "_id", Value: "rs0"}, {Key: "members", Value: arr}}
	if settings != nil {
		cfg = append(cfg, bson.E{Key: "settings", Value: settings})
	}
	return cfg
}

// shortClient is a client for one poll; the caller disconnects it.
func (m *member) shortClient(creds ...string) *mongo.Client {
	uri := fmt.Sprintf("mongodb://%s/?directConnection=true&serverSelectionTimeoutMS=2000", m.host)
	if len(creds) > 0 {
		uri = fmt.Sprintf("mongodb://%s%s/?directConnection=true&serverSelectionTimeoutMS=2000&%s", creds[0], m.host, strings.Join(creds[1:], "&"))
	}
	c, _ := mongo.Connect(options.Client().ApplyURI(uri))
	return c
}

func state(t testing.TB, m *member, creds ...string) int {
	c := m.shortClient(creds...)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = c.Disconnect(ctx)
	}()
	r, err := run(c, bson.D{{Key: "replSetGetStatus", Value: 1}})
	if err != nil {
		return -1
	}
	v, _ := r.Lookup("myState").AsInt64OK()
	return int(v)
}

func helloOf(m *member) bson.Raw {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := mongo.Connect(options.Client().ApplyURI(fmt.Sprintf("mongodb://%s/?directConnection=true&serverSelectionTimeoutMS=2000", m.host)))
	if err != nil {
		return nil
	}
	defer func() { _ = c.Disconnect(ctx) }()
	r, err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Raw()
	if err != nil {
		return nil
	}
	return r
}

// primaryOf returns the index of the member whose hello says writable primary.
func primaryOf(ms []*member) int {
	for i, m := range ms {
		if m.cmd == nil {
			continue
		}
		if h := helloOf(m); h != nil {
			if b, _ := h.Lookup("isWritablePrimary").BooleanOK(); b {
				return i
			}
		}
	}
	return -1
}

func waitPrimary(t testing.TB, ms []*member, d time.Duration) int {
	t.Helper()
	p := -1
	waitFor(t, d, "a primary", func() bool { p = primaryOf(ms); return p >= 0 })
	return p
}

func rsURI(ms []*member, creds string) string {
	hosts := make([]string, len(ms))
	for i, m := range ms {
		hosts[i] = m.host
	}
	return fmt.Sprintf("mongodb://%s%s/?replicaSet=rs0&serverSelectionTimeoutMS=15000", creds, strings.Join(hosts, ","))
}
