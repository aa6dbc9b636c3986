package cluster

import (
	"context"
	"encoding/json"
	"errors"
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

// partitionTables are the two tables holding a chain "partition": pods on the
// bridge talk at layer 2 (bridge family); Service traffic is routed through the host
// (inet forward, after DNAT, before masquerading).
var partitionTables = []string{"inet " + filterTable, "bridge " + bridgeTable}

// Partition drops IPv4 traffic in both directions between every address of isolate
// and every address of from, in both partition chains. Each rule counts what it
// drops (Drops reads the counters) and carries tag as its comment, so that Heal(tag)
// removes exactly these rules and leaves other partitions alone. The rules name
// addresses: a pod that gets a new address (recreated) is no longer cut off.
func Partition(ctx context.Context, tag string, isolate, from []string) error {
	script, err := partitionScript(tag, isolate, from)
	if err != nil {
		return err
	}
	return runInput(ctx, script, "nft", "-f", "-")
}

// partitionScript is the nft script of Partition: two rules per table, each with
// anonymous sets of addresses.
func partitionScript(tag string, isolate, from []string) (string, error) {
	if !validTag(tag) {
		return "", fmt.Errorf("partition: tag %q: letters, digits, '-' and '.' only", tag)
	}
	if len(isolate) == 0 || len(from) == 0 {
		return "", errors.New("partition: needs addresses on both sides")
	}
	isolate, from = distinct(isolate), distinct(from)
	seen := map[string]bool{}
	for _, ip := range isolate {
		seen[ip] = true
	}
	for _, ip := range append(append([]string{}, isolate...), from...) {
		if a := net.ParseIP(ip); a == nil || a.To4() == nil {
			return "", fmt.Errorf("partition: %q is not an IPv4 address", ip)
		}
	}
	for _, ip := range from {
		if seen[ip] {
			return "", fmt.Errorf("partition: %s is on both sides", ip)
		}
	}
	a, b := "{ "+strings.Join(isolate, ", ")+" }", "{ "+strings.Join(from, ", ")+" }"
	var script strings.Builder
	for _, t := range partitionTables {
		fmt.Fprintf(&script, "add rule %s partition ip saddr %s ip daddr %s counter drop comment \"%s\"\n", t, a, b, tag)
		fmt.Fprintf(&script, "add rule %s partition ip saddr %s ip daddr %s counter drop comment \"%s\"\n", t, b, a, tag)
	}
	return script.String(), nil
}

// distinct drops repeated entries, keeping the order (nft refuses an anonymous set
// that names an element twice).
func distinct(list []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range list {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// Heal removes the partitions made with tag, or every partition when tag is "". It
// returns how many rules it removed.
func Heal(ctx context.Context, tag string) (int, error) {
	rules, err := partitionRules(ctx)
	if err != nil {
		return 0, err
	}
	var script strings.Builder
	n := 0
	for _, r := range rules {
		if tag == "" || r.Comment == tag {
			fmt.Fprintf(&script, "delete rule %s %s partition handle %d\n", r.Family, r.Table, r.Handle)
			n++
		}
	}
	if n == 0 {
		return 0, nil
	}
	return n, runInput(ctx, script.String(), "nft", "-f", "-")
}

// Drops returns the packets dropped so far by the partition rules of tag (every
// partition when tag is "") and how many such rules there are.
func Drops(ctx context.Context, tag string) (packets int64, rules int, err error) {
	all, err := partitionRules(ctx)
	if err != nil {
		return 0, 0, err
	}
	for _, r := range all {
		if tag == "" || r.Comment == tag {
			packets += r.Packets
			rules++
		}
	}
	return packets, rules, nil
}

// nftRule is one rule of a partition chain as `nft -j` shows it.
type nftRule struct {
	Family, Table, Comment string
	Handle                 int64
	Packets                int64
}

// partitionRules lists the rules of both partition chains.
func partitionRules(ctx context.Context) ([]nftRule, error) {
	var all []nftRule
	for _, t := range partitionTables {
		f := strings.Fields(t)
		out, err := run(ctx, "nft", "-j", "list", "chain", f[0], f[1], "partition")
		if err != nil {
			return nil, err
		}
		rules, err := parseRules([]byte(out))
		if err != nil {
			return nil, fmt.Errorf("nft -j list chain %s partition: %w", t, err)
		}
		all = append(all, rules...)
	}
	return all, nil
}

// parseRules reads the rules of an `nft -j list` document, with the packet count of
// their counter statement (0 without one).
func parseRules(doc []byte) ([]nftRule, error) {
	var listing struct {
		Nftables []struct {
			Rule *struct {
				Family  string            `json:"family"`
				Table   string            `json:"table"`
				Handle  int64             `json:"handle"`
				Comment string            `json:"comment"`
				Expr    []json.RawMessage `json:"expr"`
			} `json:"rule"`
		} `json:"nftables"`
	}
	if err := json.Unmarshal(doc, &listing); err != nil {
		return nil, err
	}
	var rules []nftRule
	for _, o := range listing.Nftables {
		if o.Rule == nil {
			continue
		}
		r := nftRule{Family: o.Rule.Family, Table: o.Rule.Table, Handle: o.Rule.Handle, Comment: o.Rule.Comment}
		for _, e := range o.Rule.Expr {
			var stmt struct {
				Counter *struct {
					Packets int64 `json:"packets"`
				} `json:"counter"`
			}
			if json.Unmarshal(e, &stmt) == nil && stmt.Counter != nil {
				r.Packets += stmt.Counter.Packets
			}
		}
		rules = append(rules, r)
	}
	return rules, nil
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
