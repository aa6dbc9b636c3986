package balancer

import (
	"bufio"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// backend answers each connection with its name, then echoes a line.
func backend(t *testing.T, name string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				_, _ = io.WriteString(c, name+"\n")
				line, _ := bufio.NewReader(c).ReadString('\n')
				_, _ = io.WriteString(c, "echo "+line)
			}()
		}
	}()
	return ln.Addr().String()
}

// freeAddr is a loopback address and port nothing listens on.
func freeAddr(t *testing.T) netip.AddrPort {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := netip.MustParseAddrPort(ln.Addr().String())
	_ = ln.Close()
	return a
}

// exchange connects to addr, reads the backend's name, sends a line and reads
// the echo.
func exchange(t *testing.T, addr netip.AddrPort) (string, error) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr.String(), 5*time.Second)
	if err != nil {
		return "", err
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	name, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if _, err := io.WriteString(c, "hi\n"); err != nil {
		return "", err
	}
	echo, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if echo != "echo hi\n" {
		t.Errorf("echo %q", echo)
	}
	return strings.TrimSpace(name), nil
}

func TestForwarderSplicesRoundRobinAndSkipsDeadBackends(t *testing.T) {
	one, two := backend(t, "one"), backend(t, "two")
	dead := freeAddr(t).String()
	fw := NewForwarder(zerolog.Nop())
	defer fw.Close()
	at := freeAddr(t)
	if failed := fw.Apply([]Listener{{Service: "ns/a", UID: "u", Addr: at, Backends: []string{one, dead, two}}}); len(failed) != 0 {
		t.Fatal(failed)
	}
	seen := map[string]int{}
	for range 6 {
		name, err := exchange(t, at)
		if err != nil {
			t.Fatal(err)
		}
		seen[name]++
	}
	if seen["one"] == 0 || seen["two"] == 0 || seen["one"]+seen["two"] != 6 {
		t.Errorf("connections by backend %v: want both, none lost to the dead one", seen)
	}

	// New backends apply to new connections on the same listener.
	fw.Apply([]Listener{{Service: "ns/a", UID: "u", Addr: at, Backends: []string{two}}})
	for range 3 {
		if name, err := exchange(t, at); err != nil || name != "two" {
			t.Fatalf("after the change: %q %v, want two", name, err)
		}
	}

	// No backend: the connection is closed at once.
	fw.Apply([]Listener{{Service: "ns/a", UID: "u", Addr: at}})
	if name, err := exchange(t, at); err == nil {
		t.Errorf("with no backend a connection reached %q", name)
	}
}

func TestForwarderClosesListenersAndConnectionsNoLongerWanted(t *testing.T) {
	one := backend(t, "one")
	fw := NewForwarder(zerolog.Nop())
	defer fw.Close()
	at := freeAddr(t)
	fw.Apply([]Listener{{Service: "ns/a", UID: "u", Addr: at, Backends: []string{one}}})
	c, err := net.DialTimeout("tcp", at.String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	if name, err := r.ReadString('\n'); err != nil || name != "one\n" {
		t.Fatalf("%q %v", name, err)
	}
	fw.Apply(nil)
	if _, err := r.ReadString('\n'); err == nil {
		t.Error("a connection through a closed listener still reads")
	}
	if c2, err := net.DialTimeout("tcp", at.String(), 5*time.Second); err == nil {
		_ = c2.Close()
		t.Error("the closed listener still accepts")
	}

	// The same address for another Service (another UID) is a new listener.
	fw.Apply([]Listener{{Service: "ns/b", UID: "u2", Addr: at, Backends: []string{one}}})
	if name, err := exchange(t, at); err != nil || name != "one" {
		t.Errorf("reopened: %q %v", name, err)
	}
}

func TestForwarderReportsAListenerItCannotOpen(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = taken.Close() }()
	fw := NewForwarder(zerolog.Nop())
	defer fw.Close()
	failed := fw.Apply([]Listener{{Service: "ns/a", UID: "u", Addr: netip.MustParseAddrPort(taken.Addr().String())}})
	if failed["ns/a"] == nil {
		t.Errorf("failed %v: want ns/a's bind error", failed)
	}
}
