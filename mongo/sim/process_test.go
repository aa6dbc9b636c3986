package sim_test

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestBadMessageClosesOnlyItsConnection(t *testing.T) {
	m := newMember(t)
	good := m.client(t)
	mustRun(t, good, bson.D{{Key: "ping", Value: 1}})
	for _, junk := range [][]byte{
		{0xff, 0xff, 0xff, 0x7f, 1, 2, 3, 4},                                   // absurd length
		{20, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0xdd, 7, 0, 0, 0xff, 0xff, 0, 0}, // OP_MSG with unknown required flags
		{16, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0x39, 0x30, 0, 0},                // unknown opcode
	} {
		c, err := net.DialTimeout("tcp", m.host, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write(junk); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 1)
		if _, err := c.Read(buf); err == nil {
			t.Fatalf("connection not closed after %x", junk)
		} else if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("connection left open after %x", junk)
		}
		_ = c.Close()
	}
	mustRun(t, good, bson.D{{Key: "ping", Value: 1}})
	if _, err := run(good, bson.D{{Key: "noSuchCommand", Value: 1}}); !hasCode(err, 59) {
		t.Fatalf("unknown command: want 59, got %v", err)
	}
}

func TestDBPathLockAndVersion(t *testing.T) {
	m := newMember(t)
	cmd := exec.Command(simBin, "--replSet", "rs0", "--bind_ip", m.ip, "--port", "1", "--dbpath", m.dbpath)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 100 || !strings.Contains(string(out), "Unable to lock the lock file") {
		t.Fatalf("second process on a held dbpath: %v %s", err, out)
	}
	v, err := exec.Command(simBin, "--version").Output()
	if err != nil || !strings.HasPrefix(string(v), "db version v7.0.") {
		t.Fatalf("--version: %v %s", err, v)
	}
	out, err = exec.Command(simBin, "--bogus").CombinedOutput()
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "unrecognised option '--bogus'") {
		t.Fatalf("--bogus: %v %s", err, out)
	}
}

func TestAwaitableHelloWaits(t *testing.T) {
	m := newMember(t)
	c := m.client(t)
	h := mustRun(t, c, bson.D{{Key: "hello", Value: 1}})
	tv := h.Lookup("topologyVersion").Document()
	if tv.Lookup("counter").Type != bson.TypeInt64 {
		t.Fatalf("counter must be Int64: %v", tv)
	}
	// With the current topologyVersion the reply waits until maxAwaitTimeMS
	// or a change; initiate is a change, so it must wake the waiter.
	done := make(chan bson.Raw, 1)
	go func() {
		r, _ := run(c, bson.D{{Key: "hello", Value: 1}, {Key: "topologyVersion", Value: tv}, {Key: "maxAwaitTimeMS", Value: 60000}})
		done <- r
	}()
	select {
	case r := <-done:
		t.Fatalf("awaitable hello answered before any change: %v", r)
	case <-time.After(300 * time.Millisecond):
	}
	mustRun(t, c, bson.D{{Key: "replSetInitiate", Value: rsConfig([]*member{m}, nil)}})
	select {
	case r := <-done:
		if s, _ := r.Lookup("setName").StringValueOK(); s != "rs0" {
			t.Fatalf("woken hello: %v", r)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("awaitable hello not woken by initiate")
	}
	// single-node set elects itself at once
	waitFor(t, 10*time.Second, "single-node primary", func() bool { return state(t, m) == 1 })
	// a bad awaitable request
	if _, err := run(c, bson.D{{Key: "hello", Value: 1}, {Key: "maxAwaitTimeMS", Value: 10}}); !hasCode(err, 31368) {
		t.Fatalf("want 31368, got %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// persistence: restart on the same dbpath keeps config and data
	if _, err := c.Database("t").Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: "kept"}}); err != nil {
		t.Fatal(err)
	}
	m.kill()
	m.start()
	waitFor(t, 20*time.Second, "restarted single node primary again", func() bool { return state(t, m) == 1 })
	c2 := m.client(t)
	if n, err := c2.Database("t").Collection("c").CountDocuments(ctx, bson.D{{Key: "_id", Value: "kept"}}); err != nil || n != 1 {
		t.Fatalf("data after restart: %d %v", n, err)
	}
}

func TestForkLogpathAndShutdownFlag(t *testing.T) {
	ip, port := freeAddr(t)
	dbpath := t.TempDir()
	logf := dbpath + "/mongod.log"
	out, err := exec.Command(simBin, "--replSet", "rs0", "--bind_ip", ip, "--port", strconv.Itoa(port), "--dbpath", dbpath,
		"--fork", "--logpath", logf).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "child process started successfully, parent exiting") {
		t.Fatalf("--fork: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command(simBin, "--shutdown", "--dbpath", dbpath).Run() })
	m := &member{t: t, ip: ip, port: port, host: net.JoinHostPort(ip, strconv.Itoa(port))}
	if h := helloOf(m); h == nil {
		t.Fatal("forked member does not answer")
	}
	out, err = exec.Command(simBin, "--shutdown", "--dbpath", dbpath).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "killing process with pid") {
		t.Fatalf("--shutdown: %v %s", err, out)
	}
	if h := helloOf(m); h != nil {
		t.Fatal("member still answers after --shutdown")
	}
	b, _ := os.ReadFile(logf)
	if !strings.Contains(string(b), `"msg":"Waiting for connections"`) {
		t.Fatalf("log file: %s", b)
	}
}
