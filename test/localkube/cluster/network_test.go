package cluster

import (
	"context"
	"os/exec"
	"reflect"
	"strings"
	"testing"
)

// TestRulesAreValid checks the ruleset with `nft -c`, which parses and validates
// against the kernel without changing anything.
func TestRulesAreValid(t *testing.T) {
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("nft not installed")
	}
	if err := runInput(context.Background(), rules(), "nft", "-c", "-f", "-"); err != nil {
		t.Fatal(err)
	}
}

func TestRulesConfinePods(t *testing.T) {
	r := rules()
	for _, want := range []string{
		`iifname "lk0" ip daddr != 10.244.0.0/16 drop`,
		`ip saddr 10.244.0.0/16 ip daddr 10.244.0.0/16 accept`,
		`iifname "lk0" drop`,
		`oifname "lk0" drop`,
		`tcp dport 6443 drop`,
	} {
		if !strings.Contains(r, want) {
			t.Errorf("ruleset lacks %q", want)
		}
	}
}

// TestPartitionScriptIsValid checks a partition against the ruleset with `nft -c`:
// the tables and chains are declared in the same (unapplied) batch.
func TestPartitionScriptIsValid(t *testing.T) {
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("nft not installed")
	}
	script, err := partitionScript("ns-a", []string{"10.244.1.5", "10.244.1.5"}, []string{"10.244.2.5", "10.244.3.7"})
	if err != nil {
		t.Fatal(err)
	}
	if err := runInput(context.Background(), rules()+script, "nft", "-c", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`add rule inet localkube partition ip saddr { 10.244.1.5 } ip daddr { 10.244.2.5, 10.244.3.7 } counter drop comment "ns-a"`,
		`add rule bridge localkube partition ip saddr { 10.244.2.5, 10.244.3.7 } ip daddr { 10.244.1.5 } counter drop comment "ns-a"`,
	} {
		if !strings.Contains(script, want) {
			t.Errorf("script lacks %q:\n%s", want, script)
		}
	}
}

func TestPartitionScriptRefuses(t *testing.T) {
	for name, c := range map[string]struct {
		tag           string
		isolate, from []string
	}{
		"bad tag":       {`x"; flush ruleset`, []string{"10.244.1.5"}, []string{"10.244.2.5"}},
		"empty side":    {"t", []string{"10.244.1.5"}, nil},
		"not IPv4":      {"t", []string{"fd00::1"}, []string{"10.244.2.5"}},
		"not an IP":     {"t", []string{"a"}, []string{"10.244.2.5"}},
		"on both sides": {"t", []string{"10.244.1.5"}, []string{"10.244.2.5", "10.244.1.5"}},
	} {
		if _, err := partitionScript(c.tag, c.isolate, c.from); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestParseRules reads what nftables 1.0.6 prints for `nft -j list chain`.
func TestParseRules(t *testing.T) {
	doc := `{"nftables": [{"metainfo": {"version": "1.0.6", "release_name": "Lester Gooch #5", "json_schema_version": 1}},
{"chain": {"family": "inet", "table": "localkube", "name": "partition", "handle": 1}},
{"rule": {"family": "inet", "table": "localkube", "chain": "partition", "handle": 3, "comment": "ns-a", "expr": [
 {"match": {"op": "==", "left": {"payload": {"protocol": "ip", "field": "saddr"}}, "right": {"set": ["10.244.1.2", "10.244.1.3"]}}},
 {"match": {"op": "==", "left": {"payload": {"protocol": "ip", "field": "daddr"}}, "right": "10.244.2.2"}},
 {"counter": {"packets": 7, "bytes": 420}}, {"drop": null}]}},
{"rule": {"family": "inet", "table": "localkube", "chain": "partition", "handle": 4, "expr": [{"drop": null}]}}]}`
	got, err := parseRules([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := []nftRule{
		{Family: "inet", Table: "localkube", Comment: "ns-a", Handle: 3, Packets: 7},
		{Family: "inet", Table: "localkube", Handle: 4},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseRules = %+v, want %+v", got, want)
	}
	if _, err := parseRules([]byte("table inet localkube {")); err == nil {
		t.Error("text listing parsed as JSON")
	}
}

func TestValidTag(t *testing.T) {
	for tag, want := range map[string]bool{
		"test-ns-abc12": true, "a.b": true, "": false, `x"; flush ruleset`: false, "a b": false,
	} {
		if got := validTag(tag); got != want {
			t.Errorf("validTag(%q) = %v, want %v", tag, got, want)
		}
	}
}
