// Package conformance runs the same driver-level scenarios against mongod-sim
// and, when MONGOD_BIN names a real mongod, against that too: what an
// application does through the official Go driver must give the same answers
// on both. Each scenario asserts what mongod's manual says the answer is.
package conformance

import (
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
)

// simBin is mongod-sim, built once for this test binary.
var simBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "conformance")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	simBin = filepath.Join(dir, "mongod-sim")
	build := exec.Command("go", "build", "-o", simBin, "github.com/mgors/operator/cmd/mongod-sim")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building mongod-sim:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// eachServer runs fn once per server binary: mongod-sim always, and the real
// mongod named by MONGOD_BIN (skipped, saying so, when it names none).
func eachServer(t *testing.T, fn func(t *testing.T, bin string)) {
	t.Run("mongod-sim", func(t *testing.T) { fn(t, simBin) })
	t.Run("mongod", func(t *testing.T) {
		bin := os.Getenv("MONGOD_BIN")
		if bin == "" {
			t.Skip("MONGOD_BIN is not set: no real mongod to compare with (set it to a mongod 7.0 or 8.0 binary)")
		}
		fn(t, bin)
	})
}

var (
	ipMu   sync.Mutex
	nextIP = 1
)

// freeAddr picks an address in 127.0.5.0/24 and a free port on it.
func freeAddr(t *testing.T) (string, int) {
	t.Helper()
	ipMu.Lock()
	ip := fmt.Sprintf("127.0.5.%d", nextIP)
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

// server is one member's process.
type server struct {
	host string
	cmd  *exec.Cmd
	out  *logBuffer
	done chan struct{}
}

type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func startServer(t *testing.T, bin string, extra ...string) *server {
	t.Helper()
	ip, port := freeAddr(t)
	s := &server{host: fmt.Sprintf("%s:%d", ip, port), out: &logBuffer{}, done: make(chan struct{})}
	args := append([]string{"--replSet", "rs0", "--bind_ip", ip, "--port", fmt.Sprint(port), "--dbpath", t.TempDir()}, extra...)
	s.cmd = exec.Command(bin, args...)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		_ = s.cmd.Process.Signal(syscall.SIGCONT)
		_ = s.cmd.Process.Kill()
		<-s.done
		if t.Failed() {
			t.Logf("log of %s (last lines):\n%s", s.host, lastLines(s.out.String(), 30))
		}
	})
	waitUntil(t, 30*time.Second, "listening on "+s.host, func() bool {
		c, err := net.DialTimeout("tcp", s.host, 200*time.Millisecond)
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	})
	return s
}

// stop freezes the process (SIGSTOP) until the test ends or resume is called.
func (s *server) stop()   { _ = s.cmd.Process.Signal(syscall.SIGSTOP) }
func (s *server) resume() { _ = s.cmd.Process.Signal(syscall.SIGCONT) }

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// replSet is a three-member replica set with short election timers.
type replSet struct {
	members []*server
	client  *mongo.Client // replica-set client, as an application connects
}

func startReplSet(t *testing.T, bin string) *replSet {
	t.Helper()
	rs := &replSet{}
	for range 3 {
		rs.members = append(rs.members, startServer(t, bin))
	}
	arr := bson.A{}
	for i, m := range rs.members {
		arr = append(arr, bson.D{{Key: "_id", Value: i}, {Key: "host", Value: m.host}, {Key: "priority", Value: 3 - i}})
	}
	cfg := bson.D{{Key: "_id", Value: "rs0"}, {Key: "members", Value: arr},
		{Key: "settings", Value: bson.D{{Key: "electionTimeoutMillis", Value: 2000}, {Key: "heartbeatIntervalMillis", Value: 500}}}}
	first := connect(t, "mongodb://"+rs.members[0].host+"/?directConnection=true")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := first.Database("admin").RunCommand(ctx, bson.D{{Key: "replSetInitiate", Value: cfg}}).Err(); err != nil {
		t.Fatalf("replSetInitiate: %v", err)
	}
	hosts := make([]string, len(rs.members))
	for i, m := range rs.members {
		hosts[i] = m.host
	}
	rs.client = connect(t, fmt.Sprintf("mongodb://%s/?replicaSet=rs0&serverSelectionTimeoutMS=20000", strings.Join(hosts, ",")))
	waitUntil(t, 60*time.Second, "every member SECONDARY or PRIMARY with a primary", func() bool {
		var st struct {
			Members []struct {
				State int `bson:"state"`
			} `bson:"members"`
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := first.Database("admin").RunCommand(ctx, bson.D{{Key: "replSetGetStatus", Value: 1}}).Decode(&st); err != nil {
			return false
		}
		primaries := 0
		for _, m := range st.Members {
			if m.State != 1 && m.State != 2 {
				return false
			}
			if m.State == 1 {
				primaries++
			}
		}
		return primaries == 1 && len(st.Members) == 3
	})
	// A first majority write proves the set is writable end to end.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel2()
	if _, err := rs.client.Database("conformance").Collection("ready").InsertOne(ctx2, bson.D{{Key: "ok", Value: 1}}); err != nil {
		t.Fatalf("first write: %v", err)
	}
	return rs
}

func connect(t *testing.T, uri string) *mongo.Client {
	t.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = c.Disconnect(ctx)
	})
	return c
}

func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("gave up after %v waiting for %s", d, what)
}

// ctx is a deadline for one driver call.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}
