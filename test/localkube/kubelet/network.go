package kubelet

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ipam leases pod addresses from a node's PodCIDR. A lease is a file named after the
// address, created with O_EXCL, so two pods never get one address, also across a
// kubelet restart. Addresses are handed out round-robin from the one after the last
// leased (lastReserved), as the CNI host-local plugin does: a freed address is not
// given to the next pod at once, so a client or a DNS cache that still holds a
// deleted pod's address does not reach another pod there (the members of a set all
// deleted at once would otherwise come back with each other's addresses).
type ipam struct {
	dir    string
	prefix netip.Prefix
	gw     netip.Addr
}

func newIPAM(dir, podCIDR, gateway string) (*ipam, error) {
	p, err := netip.ParsePrefix(podCIDR)
	if err != nil {
		return nil, fmt.Errorf("podCIDR: %w", err)
	}
	gw, _ := netip.ParseAddr(gateway)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &ipam{dir: dir, prefix: p.Masked(), gw: gw}, nil
}

// candidates lists the assignable addresses of the range: not the network address,
// not the broadcast address, not the gateway; in the first /24 of the cluster (the
// gateway's) also not .0 and .1.
func (a *ipam) candidates() []netip.Addr {
	var out []netip.Addr
	first := a.prefix.Addr()
	for ip := first.Next(); a.prefix.Contains(ip); ip = ip.Next() {
		if !a.prefix.Contains(ip.Next()) { // broadcast
			break
		}
		if ip == a.gw {
			continue
		}
		out = append(out, ip)
	}
	return out
}

// lastReserved is the file holding the address leased last.
const lastReserved = "last_reserved_ip"

// Lease returns the address already leased to uid or leases a free one, the first
// free after the last leased.
func (a *ipam) Lease(uid string) (netip.Addr, error) {
	if ip, ok := a.Lookup(uid); ok {
		return ip, nil
	}
	all := a.candidates()
	if b, err := os.ReadFile(filepath.Join(a.dir, lastReserved)); err == nil {
		if last, err := netip.ParseAddr(strings.TrimSpace(string(b))); err == nil {
			if i := slices.Index(all, last); i >= 0 {
				all = append(all[i+1:], all[:i+1]...)
			}
		}
	}
	for _, ip := range all {
		f, err := os.OpenFile(filepath.Join(a.dir, ip.String()), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return netip.Addr{}, err
		}
		_, err = f.WriteString(uid)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = writeFileAtomic(filepath.Join(a.dir, lastReserved), []byte(ip.String()), 0o644)
		}
		return ip, err
	}
	return netip.Addr{}, fmt.Errorf("no free address in %s", a.prefix)
}

// Lookup finds the address leased to uid.
func (a *ipam) Lookup(uid string) (netip.Addr, bool) {
	entries, _ := os.ReadDir(a.dir)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(a.dir, e.Name()))
		if err == nil && string(b) == uid {
			if ip, err := netip.ParseAddr(e.Name()); err == nil {
				return ip, true
			}
		}
	}
	return netip.Addr{}, false
}

// Release frees every address leased to uid.
func (a *ipam) Release(uid string) {
	entries, _ := os.ReadDir(a.dir)
	for _, e := range entries {
		p := filepath.Join(a.dir, e.Name())
		if b, err := os.ReadFile(p); err == nil && string(b) == uid {
			_ = os.Remove(p)
		}
	}
}

// vethName is the host end of a pod's veth pair: derived from the UID so that it is
// stable across kubelet restarts, and within the 15 bytes an interface name may have.
func vethName(uid string) string {
	h := sha256.Sum256([]byte(uid))
	return "lkv" + hex.EncodeToString(h[:])[:11]
}

// newNetns creates a network namespace and pins it by bind-mounting it onto path,
// like `ip netns add` does under /run/netns, but inside the kubelet's directory.
func newNetns(path string) error {
	if err := os.WriteFile(path, nil, 0o444); err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() {
		// This thread changes its network namespace and is never given back to the
		// scheduler: the goroutine ends locked, and the runtime ends the thread.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("unshare net: %w", err)
			return
		}
		src := fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid())
		if err := unix.Mount(src, path, "", unix.MS_BIND, ""); err != nil {
			errc <- fmt.Errorf("pin netns: %w", err)
			return
		}
		errc <- nil
	}()
	return <-errc
}

// withNetns runs fn on an OS thread that is inside the network namespace at path.
// Processes started by fn (exec.Cmd.Start) are forked from that thread and so start
// inside the namespace too.
func withNetns(path string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		f, err := os.Open(path)
		if err != nil {
			errc <- err
			return
		}
		defer func() { _ = f.Close() }()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns %s: %w", path, err)
			return
		}
		// Still locked: the thread dies with the goroutine and never serves another.
		errc <- fn()
	}()
	return <-errc
}

func runIP(ctx context.Context, netnsPath string, batch string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "ip", "-batch", "-")
	cmd.Stdin = strings.NewReader(batch)
	cmd.Stdout, cmd.Stderr = &out, &out
	var err error
	if netnsPath == "" {
		err = cmd.Run()
	} else {
		err = withNetns(netnsPath, cmd.Run)
	}
	if err != nil {
		return fmt.Errorf("ip: %w: %s", err, strings.TrimSpace(out.String()))
	}
	return nil
}

// podNetwork is what setupNetwork needs: which bridge and gateway, and the prefix
// length of the cluster network, so that pods of all nodes on the bridge reach
// each other directly.
type podNetwork struct {
	Bridge    string
	Gateway   netip.Addr
	PrefixLen int
}

// setupNetwork gives the namespace at netnsPath an eth0 with ip, lo up and a default
// route via the gateway, plugged into the bridge through the host end veth.
func setupNetwork(ctx context.Context, n podNetwork, netnsPath, veth string, ip netip.Addr) error {
	_ = runIP(ctx, "", "link del "+veth+"\n") // a leftover of a crashed attempt
	host := fmt.Sprintf("link add %s type veth peer name eth0 netns %s\nlink set %s master %s\nlink set %s up\n",
		veth, netnsPath, veth, n.Bridge, veth)
	if err := runIP(ctx, "", host); err != nil {
		return err
	}
	pod := fmt.Sprintf("link set lo up\naddr add %s/%d dev eth0\nlink set eth0 up\nroute add default via %s\n",
		ip, n.PrefixLen, n.Gateway)
	return runIP(ctx, netnsPath, pod)
}

// teardownNetwork removes a pod's veth and its namespace pin. The namespace itself
// goes away with its last process.
func teardownNetwork(podDir, veth string) error {
	var errs []error
	if veth != "" {
		if _, err := os.Stat("/sys/class/net/" + veth); err == nil {
			if err := runIP(context.Background(), "", "link del "+veth+"\n"); err != nil {
				errs = append(errs, err)
			}
		}
	}
	ns := filepath.Join(podDir, "netns")
	if err := unmountIfMounted(ns); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// ensureBridge creates the bridge with the gateway address when it is missing (tests
// and a kubelet run by hand; `localkube up` normally creates it). It reports whether
// it created it.
func ensureBridge(ctx context.Context, bridge string, gw netip.Addr, prefixLen int) (bool, error) {
	if _, err := os.Stat("/sys/class/net/" + bridge); err == nil {
		return false, nil
	}
	err := runIP(ctx, "", fmt.Sprintf("link add %s type bridge\naddr add %s/%d dev %s\nlink set %s up\n",
		bridge, gw, prefixLen, bridge, bridge))
	return err == nil, err
}
