package sim

import "testing"

func TestResolveVersion(t *testing.T) {
	for in, want := range map[string]string{"8.0": "8.0.4", "7.0.14": "7.0.14", "6.0": "6.0.19", "8.0.1": "8.0.1"} {
		if got, err := ResolveVersion(in); err != nil || got != want {
			t.Errorf("ResolveVersion(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"5.0", "9.0.1", "7", "seven", "7.0.x"} {
		if _, err := ResolveVersion(bad); err == nil {
			t.Errorf("ResolveVersion(%q) accepted", bad)
		}
	}
}
