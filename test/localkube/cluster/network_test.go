package cluster

import (
	"context"
	"os/exec"
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
