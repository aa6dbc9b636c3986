package mongo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

func TestClassify(t *testing.T) {
	if err := classify("h:1", "ping", nil); err != nil {
		t.Fatal(err)
	}
	other := errors.New("boom")
	if err := classify("h:1", "ping", other); !errors.Is(err, other) || IsUnreachable(err) {
		t.Fatalf("plain error: %v", err)
	}
	if err := classify("h:1", "ping", context.DeadlineExceeded); !errors.Is(err, ErrTimeout) {
		t.Fatalf("deadline: %v", err)
	}
	se := &ServerError{Code: CodeNotYetInitialized, Name: "NotYetInitialized", Message: "no replset config has been received"}
	wrapped := fmt.Errorf("status: %w", se)
	if !errors.Is(wrapped, ErrNotYetInitialized) || !IsCode(wrapped, 94) || errors.Is(wrapped, ErrAlreadyInitialized) {
		t.Fatalf("server error matching: %v", wrapped)
	}
}

func TestCredentialsNeverPrintSecrets(t *testing.T) {
	for _, c := range []Credentials{AdminUser("admin", "s3cret"), KeyfileAuth([]byte("s3cret"))} {
		for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%v %+v %#v %s", c, c, c, c), fmt.Sprintf("%+v", Options{Credentials: c})} {
			if strings.Contains(s, "s3cret") {
				t.Errorf("secret printed: %s", s)
			}
		}
	}
	if got := KeyfilePassword([]byte(" abc\n def\t=\n")); got != "abcdef=" {
		t.Errorf("keyfile password %q", got)
	}
}

func TestClientUnreachable(t *testing.T) {
	// A port nobody listens on: the call fails fast as unreachable, within the
	// call's own deadline.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skip("no loopback:", err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	c := NewClient(Options{Timeout: 500 * time.Millisecond})
	defer func() { _ = c.Close(context.Background()) }()
	if _, err := c.Hello(context.Background(), addr); !IsUnreachable(err) {
		t.Fatalf("hello to a closed port: %v", err)
	}
	// Options.Dial is used for every connection.
	dialed := make(chan string, 8)
	c2 := NewClient(Options{Timeout: 500 * time.Millisecond, Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
		select {
		case dialed <- address:
		default:
		}
		return nil, errors.New("no route")
	}})
	defer func() { _ = c2.Close(context.Background()) }()
	if err := c2.Ping(context.Background(), "member-0.svc:27017"); !IsUnreachable(err) {
		t.Fatalf("ping through failing dialer: %v", err)
	}
	if got := <-dialed; got != "member-0.svc:27017" {
		t.Fatalf("dialed %q", got)
	}
}

// simSet starts n mongod-sim members on 127.0.5.1..n with a shared keyfile
// and returns their hosts. It skips the test when the simulator does not build.
func simSet(t *testing.T, n int, keyfile []byte) []string {
	t.Helper()
	hosts, _ := simProcs(t, n, keyfile)
	return hosts
}

// simProcs is simSet that also returns the members' processes, by host, for
// tests that kill some.
func simProcs(t *testing.T, n int, keyfile []byte) ([]string, map[string]*os.Process) {
	t.Helper()
	procs := map[string]*os.Process{}
	if testing.Short() {
		t.Skip("integration test against mongod-sim; -short skips it")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "mongod-sim")
	build := exec.Command("go", "build", "-o", bin, "github.com/mgors/operator/cmd/mongod-sim")
	if out, err := build.CombinedOutput(); err != nil {
		t.Skipf("mongod-sim does not build, skipping the integration test: %v\n%s", err, out)
	}
	kf := filepath.Join(dir, "keyfile")
	if err := os.WriteFile(kf, keyfile, 0o600); err != nil {
		t.Fatal(err)
	}
	port := freePort(t, n)
	var hosts []string
	for i := 1; i <= n; i++ {
		ip := fmt.Sprintf("127.0.5.%d", i)
		db := filepath.Join(dir, fmt.Sprintf("db%d", i))
		if err := os.MkdirAll(db, 0o700); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "--replSet", "rs0", "--bind_ip", ip, "--port", strconv.Itoa(port), "--dbpath", db, "--keyFile", kf)
		log, err := os.Create(filepath.Join(dir, fmt.Sprintf("m%d.log", i)))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			_ = log.Close()
			if t.Failed() {
				out, _ := os.ReadFile(log.Name())
				if len(out) > 4000 {
					out = out[len(out)-4000:]
				}
				t.Logf("%s log tail:\n%s", ip, out)
			}
		})
		hosts = append(hosts, net.JoinHostPort(ip, strconv.Itoa(port)))
		procs[hosts[len(hosts)-1]] = cmd.Process
	}
	return hosts, procs
}

// freePort is a port free on 127.0.5.1..n.
func freePort(t *testing.T, n int) int {
	t.Helper()
	for range 50 {
		l, err := net.Listen("tcp", "127.0.5.1:0")
		if err != nil {
			t.Skip("cannot listen on 127.0.5.1:", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		ok := true
		for i := 2; i <= n; i++ {
			l2, err := net.Listen("tcp", fmt.Sprintf("127.0.5.%d:%d", i, port))
			if err != nil {
				ok = false
				break
			}
			_ = l2.Close()
		}
		if ok {
			return port
		}
	}
	t.Fatal("no free port")
	return 0
}

// eventually polls f until it returns nil or the bound passes; the bound only
// stops a broken test, no timing is asserted.
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

func TestClientAgainstMongodSim(t *testing.T) {
	keyfile := []byte("c2VjcmV0LWtleS1mb3ItdGhlLXNldA\n")
	hosts := simSet(t, 4, keyfile)
	spare := hosts[3]
	hosts = hosts[:3]
	ctx := context.Background()
	c := NewClient(Options{Timeout: 5 * time.Second, Credentials: KeyfileAuth(keyfile), Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)})
	defer func() { _ = c.Close(ctx) }()

	for _, h := range hosts {
		eventually(t, "hello "+h, func() error {
			r, err := c.Hello(ctx, h)
			if err == nil && (r.HasConfig() || !r.IsReplicaSet) {
				return fmt.Errorf("uninitialized member says %+v", r)
			}
			return err
		})
	}
	if _, err := c.Status(ctx, hosts[0]); !errors.Is(err, ErrNotYetInitialized) {
		t.Fatalf("status before initiate: %v", err)
	}

	desired := []DesiredMember{}
	for i, h := range hosts {
		desired = append(desired, DesiredMember{Ordinal: int32(i), Name: fmt.Sprint("m", i), Host: h, Votes: 1, Priority: 1})
	}
	settings := v1alpha1.ReplicaSetSettings{ElectionTimeoutMillis: new(int32(5000)), HeartbeatIntervalMillis: new(int32(200))} // 5 s: a loaded machine must not lose the primary between two steps
	initial := InitialConfig("rs0", desired, settings)
	if err := c.Initiate(ctx, hosts[0], initial); err != nil {
		t.Fatalf("initiate: %v", err)
	}
	if err := c.Initiate(ctx, hosts[0], initial); !errors.Is(err, ErrAlreadyInitialized) {
		t.Fatalf("second initiate: %v", err)
	}
	// Elsewhere it is refused too: 23 once the member has the config, 103
	// (someone else has one) while it has not heard of it yet.
	if err := c.Initiate(ctx, hosts[1], initial); !errors.Is(err, ErrAlreadyInitialized) && !errors.Is(err, ErrIncompatibleConfig) {
		t.Fatalf("second initiate elsewhere: %v", err)
	}

	var primary string
	eventually(t, "a primary", func() error {
		st, err := c.Status(ctx, hosts[0])
		if err != nil {
			return err
		}
		p := st.Primary()
		if p == nil {
			return errors.New("no primary yet")
		}
		for _, m := range st.Members {
			if !m.State.Healthy() {
				return fmt.Errorf("%s is %s", m.Name, m.State)
			}
		}
		// A member is PRIMARY before it accepts writes (catch-up, then the
		// drain): replSetReconfig waits for isWritablePrimary, as with mongod.
		h, err := c.Hello(ctx, p.Name)
		if err != nil {
			return err
		}
		if !h.IsWritablePrimary {
			return fmt.Errorf("%s is PRIMARY, not yet writable", p.Name)
		}
		primary = p.Name
		return nil
	})

	cfg, err := c.Config(ctx, primary)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ID != "rs0" || len(cfg.Members) != 3 || cfg.Settings == nil || cfg.Settings.ReplicaSetID == nil || *cfg.Settings.ElectionTimeoutMillis != 5000 {
		t.Fatalf("config %+v settings %+v", cfg, cfg.Settings)
	}
	st, err := c.Status(ctx, primary)
	if err != nil {
		t.Fatal(err)
	}
	if st.Set != "rs0" || st.MyState != StatePrimary || st.Term < 1 || st.Self() == nil || st.Self().Optime.IsZero() {
		t.Fatalf("status %+v", st)
	}

	// A planned step, sent as the actor will.
	want := append([]DesiredMember(nil), desired...)
	want[2].Priority = 5
	step := Plan(cfg, st, want, NewHosts(hosts...), settings)
	if step.Kind != ChangePriority {
		t.Fatalf("plan: %+v", step)
	}
	if err := c.Reconfig(ctx, primary, step.Config, false); err != nil {
		t.Fatalf("reconfig: %v", err)
	}
	after, err := c.Config(ctx, primary)
	if err != nil || after.Version != cfg.Version+1 || after.Member(hosts[2]).Priority != 5 || *after.Settings.ReplicaSetID != *cfg.Settings.ReplicaSetID {
		t.Fatalf("after reconfig %+v %v", after, err)
	}
	two := after.Next()
	two.Members = two.Members[:1]
	if err := c.Reconfig(ctx, primary, two, false); !errors.Is(err, ErrIncompatibleConfig) {
		t.Fatalf("two voting changes: %v", err)
	}
	var secondary string
	for _, h := range hosts {
		if !SameHost(h, primary) {
			secondary = h
			break
		}
	}
	if err := c.Reconfig(ctx, secondary, after.Next(), false); !errors.Is(err, ErrNotWritablePrimary) {
		t.Fatalf("reconfig on a secondary: %v", err)
	}

	// Users: the admin user, then a client that logs in as it.
	if err := c.CreateUser(ctx, primary, "admin", "pw-for-test", []Role{{Role: "root", DB: "admin"}}); err != nil {
		t.Fatalf("createUser: %v", err)
	}
	if err := c.CreateUser(ctx, primary, "admin", "pw-for-test", nil); !errors.Is(err, ErrDuplicateUser) {
		t.Fatalf("duplicate user: %v", err)
	}
	if ok, err := c.UserExists(ctx, primary, "admin"); !ok || err != nil {
		t.Fatalf("user exists: %v %v", ok, err)
	}
	admin := NewClient(Options{Credentials: AdminUser("admin", "pw-for-test")})
	defer func() { _ = admin.Close(ctx) }()
	if _, err := admin.Status(ctx, primary); err != nil {
		t.Fatalf("status as admin: %v", err)
	}
	wrong := NewClient(Options{Credentials: AdminUser("admin", "wrong")})
	defer func() { _ = wrong.Close(ctx) }()
	if _, err := wrong.Status(ctx, primary); !errors.Is(err, ErrAuthenticationFailed) {
		t.Fatalf("wrong password: %v", err)
	}
	none := NewClient(Options{})
	defer func() { _ = none.Close(ctx) }()
	if _, err := none.Status(ctx, primary); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("no credentials: %v", err)
	}

	// Step down: someone else becomes primary.
	if err := c.StepDown(ctx, primary, 30); err != nil {
		t.Fatalf("stepdown: %v", err)
	}
	eventually(t, "a new primary", func() error {
		st, err := c.Status(ctx, hosts[2])
		if err != nil {
			return err
		}
		if p := st.Primary(); p == nil || SameHost(p.Name, primary) {
			return errors.New("no new primary yet")
		}
		return nil
	})
	if err := c.Freeze(ctx, primary, 0); err != nil {
		t.Fatalf("unfreeze the old primary: %v", err)
	}

	// Scale 3 → 4 → 3 with the planner, as the actor will.
	grown := append(want, DesiredMember{Ordinal: 3, Name: "m3", Host: spare, Votes: 0, Priority: 0})
	steps := convergeLive(t, c, grown, append(hosts, spare), settings)
	if len(steps) != 1 || steps[0].Kind != AddMember {
		t.Fatalf("3→4: %+v", steps)
	}
	steps = convergeLive(t, c, want, append(hosts, spare), settings)
	if len(steps) != 1 || steps[0].Kind != RemoveMember || !SameHost(steps[0].Host, spare) {
		t.Fatalf("4→3: %+v", steps)
	}
}

// convergeLive observes through the primary, plans, and sends steps until Done.
func convergeLive(t *testing.T, c *Client, desired []DesiredMember, hosts []string, settings v1alpha1.ReplicaSetSettings) []Step {
	t.Helper()
	ctx := context.Background()
	var steps []Step
	for range 20 {
		var cfg Config
		var st *Status
		reachable := Hosts{}
		eventually(t, "observe", func() error {
			var primary string
			for _, h := range hosts {
				if r, err := c.Hello(ctx, h); err == nil {
					reachable[NormalizeHost(h)] = true
					if r.IsWritablePrimary {
						primary = h
					}
				}
			}
			if primary == "" {
				return errors.New("no primary")
			}
			var err error
			if cfg, err = c.Config(ctx, primary); err != nil {
				return err
			}
			st, err = c.Status(ctx, primary)
			return err
		})
		s := Plan(cfg, st, desired, reachable, settings)
		switch s.Kind {
		case Done:
			return steps
		case Wait:
			time.Sleep(200 * time.Millisecond)
			continue
		case StepDown:
			if err := c.StepDown(ctx, s.Host, 30); err != nil {
				t.Fatalf("%s: %v", s.Reason, err)
			}
		default:
			if err := c.Reconfig(ctx, st.Primary().Name, s.Config, false); err != nil {
				t.Fatalf("%s: %v", s.Reason, err)
			}
		}
		steps = append(steps, s)
	}
	t.Fatalf("no Done after %d steps: %+v", len(steps), steps)
	return nil
}

// Retain closes the connections to hosts no longer kept (a scale-down's
// removed members) and keeps the others, authenticated or not.
func TestRetainClosesTheConnectionsOfHostsNotKept(t *testing.T) {
	c := NewClient(Options{Changed: func(string) {}})
	defer func() { _ = c.Close(context.Background()) }()
	for _, host := range []string{"a:27017", "b:27017"} {
		for _, auth := range []bool{false, true} {
			if _, err := c.conn(host, auth); err != nil {
				t.Fatal(err)
			}
		}
	}
	c.Retain([]string{"a"})
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, m := range map[string]int{"plain": len(c.plain), "authed": len(c.authed), "watch": len(c.watch)} {
		if m != 1 {
			t.Errorf("%s connections after Retain(a): %d, want 1", name, m)
		}
	}
	if c.plain["a:27017"] == nil || c.authed["a:27017"] == nil {
		t.Errorf("the kept host lost its connections: plain %v, authed %v", c.plain, c.authed)
	}
}
