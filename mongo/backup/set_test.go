package backup_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
	"github.com/mgors/operator/mongo/backup/store"
	"github.com/mgors/operator/mongo/sim"
	"github.com/mgors/operator/test/localkube/s3"
)

var (
	netMu   sync.Mutex
	nextNet = 1
)

// simSet starts an n-member mongod-sim replica set in this process on
// 127.0.<8+k>.1..n (one port), initiates it, and returns the hosts and the
// primary once it takes writes. The members stop at the test's end.
func simSet(t *testing.T, name string, n int) ([]string, string) {
	t.Helper()
	return simSetWith(t, name, n, nil)
}

// simSetWith is simSet with each member's configuration changed by edit.
func simSetWith(t *testing.T, name string, n int, edit func(*sim.Config)) ([]string, string) {
	t.Helper()
	if testing.Short() {
		t.Skip("mongod-sim set; -short skips it")
	}
	netMu.Lock()
	octet := 8 + nextNet
	nextNet++
	netMu.Unlock()
	port := freePort(t, octet, n)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	var hosts []string
	for i := 1; i <= n; i++ {
		cfg := sim.DefaultConfig()
		cfg.ReplSet = name
		cfg.BindIP = []string{fmt.Sprintf("127.0.%d.%d", octet, i)}
		cfg.Port = port
		cfg.DBPath = t.TempDir()
		if edit != nil {
			edit(&cfg)
		}
		node, err := sim.NewNode(cfg, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { _ = node.Run(ctx) })
		hosts = append(hosts, net.JoinHostPort(cfg.BindIP[0], strconv.Itoa(port)))
	}
	c := mongo.NewClient(mongo.Options{Timeout: 5 * time.Second, Log: zerolog.Nop()})
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	var desired []mongo.DesiredMember
	for i, h := range hosts {
		eventually(t, "hello "+h, func() error { _, err := c.Hello(ctx, h); return err })
		desired = append(desired, mongo.DesiredMember{Ordinal: int32(i), Name: fmt.Sprint("m", i), Host: h, Votes: 1, Priority: 1})
	}
	settings := v1alpha1.ReplicaSetSettings{ElectionTimeoutMillis: new(int32(5000)), HeartbeatIntervalMillis: new(int32(200))} // 5 s: no election while a loaded machine runs the test
	if err := c.Initiate(ctx, hosts[0], mongo.InitialConfig(name, desired, settings)); err != nil {
		t.Fatal(err)
	}
	var primary string
	eventually(t, "a writable primary and healthy secondaries", func() error {
		st, err := c.Status(ctx, hosts[0])
		if err != nil {
			return err
		}
		for _, m := range st.Members {
			if !m.State.Healthy() {
				return fmt.Errorf("%s is %s", m.Name, m.State)
			}
		}
		p := st.Primary()
		if p == nil {
			return errors.New("no primary yet")
		}
		if r, err := c.Hello(ctx, p.Name); err != nil || !r.IsWritablePrimary {
			return fmt.Errorf("%s not writable yet: %w", p.Name, err)
		}
		primary = p.Name
		return nil
	})
	return hosts, primary
}

func freePort(t *testing.T, octet, n int) int {
	t.Helper()
	for range 50 {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.%d.1:0", octet))
		if err != nil {
			t.Skip("cannot listen on a loopback address: ", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		ok := true
		for i := 2; i <= n && ok; i++ {
			l2, err := net.Listen("tcp", fmt.Sprintf("127.0.%d.%d:%d", octet, i, port))
			if ok = err == nil; ok {
				_ = l2.Close()
			}
		}
		if ok {
			return port
		}
	}
	t.Fatal("no free port")
	return 0
}

// direct is a driver client connected to host alone.
func direct(t *testing.T, host string) *driver.Client {
	t.Helper()
	c, err := driver.Connect(options.Client().SetHosts([]string{host}).SetDirect(true).SetTimeout(30 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c
}

// store starts the S3 server in this process and returns a client of its bucket.
func newStore(t *testing.T) *store.Client {
	t.Helper()
	const access, secret = "backup-test", "c2VjcmV0LWtleS1vZi10aGUtc3RvcmU"
	h, err := s3.Handler(s3.Options{Dir: t.TempDir(), AccessKey: access, SecretKey: secret, Buckets: []string{"backups"}, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := store.New(store.Config{Endpoint: srv.URL, Bucket: "backups", AccessKey: access, SecretKey: secret, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err = f(); err == nil {
			return
		}
	}
	t.Fatalf("%s: %v", what, err)
}
