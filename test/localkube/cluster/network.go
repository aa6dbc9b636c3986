package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Table names of the nftables tables localkube owns. kube-proxy keeps its own
// tables ("kube-proxy" in the ip and ip6 families); Down removes those too.
const (
	filterTable = "localkube" // family inet: what pods may reach
	bridgeTable = "localkube" // family bridge: partitions between pods on lk0
)

// run executes a host tool with a deadline and returns its combined output.
func run(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// runInput is run with stdin.
func runInput(ctx context.Context, input, name string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = strings.NewReader(input)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// linkExists reports whether a network interface with this name exists.
func linkExists(name string) bool {
	_, err := os.Stat("/sys/class/net/" + name)
	return err == nil
}

// ensureBridge creates lk0 with the gateway address, or completes a half-made one
// left by a crashed run.
func ensureBridge(ctx context.Context) error {
	if !linkExists(Bridge) {
		if _, err := run(ctx, "ip", "link", "add", Bridge, "type", "bridge"); err != nil {
			return err
		}
	}
	// Pods get IPv4 only; without IPv6 on the bridge no link-local path leads from
	// a pod to the host around the IPv4 rules below.
	_ = os.WriteFile("/proc/sys/net/ipv6/conf/"+Bridge+"/disable_ipv6", []byte("1"), 0o644)
	// Forwarding for packets entering the bridge only (IPv4 decides by the input
	// interface): kube-proxy's DNAT of a pod's Service traffic to another pod is
	// routed back out of lk0. The host-wide net.ipv4.ip_forward stays as it is, and
	// the setting goes away with the bridge.
	if err := os.WriteFile("/proc/sys/net/ipv4/conf/"+Bridge+"/forwarding", []byte("1"), 0o644); err != nil {
		return fmt.Errorf("enable forwarding on %s: %w", Bridge, err)
	}
	out, err := run(ctx, "ip", "-j", "addr", "show", "dev", Bridge)
	if err != nil {
		return err
	}
	var links []struct {
		AddrInfo []struct {
			Local     string `json:"local"`
			PrefixLen int    `json:"prefixlen"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal([]byte(out), &links); err != nil {
		return fmt.Errorf("ip -j addr: %w", err)
	}
	has := false
	for _, l := range links {
		for _, a := range l.AddrInfo {
			if a.Local == Gateway && a.PrefixLen == 16 {
				has = true
			}
		}
	}
	if !has {
		if _, err := run(ctx, "ip", "addr", "add", Gateway+"/16", "dev", Bridge); err != nil {
			return err
		}
	}
	_, err = run(ctx, "ip", "link", "set", Bridge, "up")
	return err
}

// rules is localkube's own nftables state, applied atomically and idempotently:
// "add" of an existing table or chain is a no-op and the base chains are flushed
// and refilled, so a second `up` neither duplicates rules nor drops the partition
// chains' rules of tests running against the cluster.
func rules() string {
	return fmt.Sprintf(`add table inet %[1]s
add chain inet %[1]s input { type filter hook input priority filter; policy accept; }
flush chain inet %[1]s input
# Pods reach the host only at the bridge addresses (API server, CoreDNS, kubelets).
add rule inet %[1]s input iifname "%[3]s" ip daddr != %[4]s drop
add rule inet %[1]s input iifname "%[3]s" meta nfproto ipv6 drop
# The bridge addresses and the API server answer only on lo and the bridge.
add rule inet %[1]s input iifname != { "lo", "%[3]s" } ip daddr %[4]s drop
add rule inet %[1]s input iifname != { "lo", "%[3]s" } tcp dport %[5]d drop
# Filled by the test harness (Partition) and emptied by Heal.
add chain inet %[1]s partition
add chain inet %[1]s forward { type filter hook forward priority filter; policy accept; }
flush chain inet %[1]s forward
add rule inet %[1]s forward jump partition
# Routed pod traffic stays inside the pod network; nothing leaves the machine.
add rule inet %[1]s forward ip saddr %[4]s ip daddr %[4]s accept
add rule inet %[1]s forward iifname "%[3]s" drop
add rule inet %[1]s forward oifname "%[3]s" drop
add table bridge %[2]s
add chain bridge %[2]s partition
add chain bridge %[2]s forward { type filter hook forward priority filter; policy accept; }
flush chain bridge %[2]s forward
add rule bridge %[2]s forward jump partition
`, filterTable, bridgeTable, Bridge, PodNetwork, APIServerPort)
}

// ensureFirewall (re)applies localkube's nftables tables.
func ensureFirewall(ctx context.Context) error {
	return runInput(ctx, rules(), "nft", "-f", "-")
}

// removeNetwork deletes everything localkube put into the host's network stack:
// its nftables tables (and kube-proxy's), every veth left on the bridge, and the
// bridge. Missing pieces are not an error.
func removeNetwork(ctx context.Context) error {
	var errs []string
	for _, t := range []string{"inet " + filterTable, "bridge " + bridgeTable, "ip kube-proxy", "ip6 kube-proxy"} {
		if tableExists(ctx, t) {
			if _, err := run(ctx, "nft", "delete", "table", t); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	if linkExists(Bridge) {
		ports, _ := os.ReadDir("/sys/class/net/" + Bridge + "/brif")
		for _, p := range ports {
			if _, err := run(ctx, "ip", "link", "del", p.Name()); err != nil && linkExists(p.Name()) {
				errs = append(errs, err.Error())
			}
		}
		if _, err := run(ctx, "ip", "link", "del", Bridge); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("remove network: %s", strings.Join(errs, "; "))
	}
	return nil
}

// tableExists reports whether "family name" is a current nftables table.
func tableExists(ctx context.Context, familyName string) bool {
	out, err := run(ctx, "nft", "list", "tables")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) == "table "+familyName {
			return true
		}
	}
	return false
}

// Partition drops IPv4 traffic between two pod addresses in both directions: in the
// bridge family for pods that talk across lk0 directly, and in the inet forward
// chain for traffic routed through the host (Service cluster IPs, after DNAT and
// before masquerading). The rules carry tag (a test's namespace) so that Heal of
// one test leaves another test's partitions alone.
func Partition(ctx context.Context, a, b, tag string) error {
	for _, ip := range []string{a, b} {
		if net.ParseIP(ip).To4() == nil {
			return fmt.Errorf("partition: %q is not an IPv4 address", ip)
		}
	}
	if !validTag(tag) {
		return fmt.Errorf("partition: tag %q: letters, digits, '-' and '.' only", tag)
	}
	var script strings.Builder
	for _, t := range []string{"inet " + filterTable, "bridge " + bridgeTable} {
		fmt.Fprintf(&script, "add rule %s partition ip saddr %s ip daddr %s drop comment \"%s\"\n", t, a, b, tag)
		fmt.Fprintf(&script, "add rule %s partition ip saddr %s ip daddr %s drop comment \"%s\"\n", t, b, a, tag)
	}
	return runInput(ctx, script.String(), "nft", "-f", "-")
}

// Heal removes the partitions made with tag, or every partition when tag is "".
func Heal(ctx context.Context, tag string) error {
	if tag == "" {
		return runInput(ctx, fmt.Sprintf("flush chain inet %s partition\nflush chain bridge %s partition\n", filterTable, bridgeTable), "nft", "-f", "-")
	}
	var script strings.Builder
	for _, t := range []string{"inet " + filterTable, "bridge " + bridgeTable} {
		out, err := run(ctx, "nft", "-a", "list", "chain", strings.Fields(t)[0], strings.Fields(t)[1], "partition")
		if err != nil {
			return err
		}
		for _, h := range handlesTagged(out, tag) {
			fmt.Fprintf(&script, "delete rule %s partition handle %s\n", t, h)
		}
	}
	if script.Len() == 0 {
		return nil
	}
	return runInput(ctx, script.String(), "nft", "-f", "-")
}

// handlesTagged picks the handles of the rules with comment tag from `nft -a list`.
func handlesTagged(listing, tag string) []string {
	var handles []string
	for _, line := range strings.Split(listing, "\n") {
		if !strings.Contains(line, `comment "`+tag+`"`) {
			continue
		}
		if i := strings.LastIndex(line, "# handle "); i >= 0 {
			handles = append(handles, strings.TrimSpace(line[i+len("# handle "):]))
		}
	}
	return handles
}

func validTag(tag string) bool {
	if tag == "" || len(tag) > 100 {
		return false
	}
	for _, r := range tag {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.'
		if !ok {
			return false
		}
	}
	return true
}
