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

func TestHandlesTagged(t *testing.T) {
	listing := `table bridge localkube {
	chain partition { # handle 1
		ip saddr 10.244.1.5 ip daddr 10.244.2.5 drop comment "ns-a" # handle 4
		ip saddr 10.244.2.5 ip daddr 10.244.1.5 drop comment "ns-a" # handle 5
		ip saddr 10.244.1.6 ip daddr 10.244.2.6 drop comment "ns-ab" # handle 6
	}
}
`
	tests := []struct {
		tag  string
		want []string
	}{
		{"ns-a", []string{"4", "5"}},
		{"ns-ab", []string{"6"}},
		{"ns", nil},
	}
	for _, tt := range tests {
		if got := handlesTagged(listing, tt.tag); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("handlesTagged(%q) = %v, want %v", tt.tag, got, tt.want)
		}
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
