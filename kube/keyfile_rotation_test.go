package kube

import (
	"context"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes/fake"
)

// The three writes of a rotation: [old, new], [new, old], [new]; each
// repeated is a no-op (a write whose result was lost), a Secret in another
// shape is refused by fingerprints, and every value reads back as mongod
// reads it (mongo/sim/keyfile.go parses the same YAML).
func TestRotateKeyfileSteps(t *testing.T) {
	ctx := context.Background()
	m := sample()
	c := fake.NewClientset()
	a := NewApplier(c)
	if _, err := a.EnsureKeyfile(ctx, m); err != nil {
		t.Fatal(err)
	}
	read := func() ([]string, []string) {
		t.Helper()
		s, err := a.Secret(ctx, "ns", m.KeyfileSecretName())
		if err != nil {
			t.Fatal(err)
		}
		keys, err := KeyfileKeys(s.Data["keyfile"])
		if err != nil {
			t.Fatal(err)
		}
		fps, _ := KeyfileFingerprints(s.Data["keyfile"])
		return keys, fps
	}
	oldKeys, fps := read()
	old := fps[0]
	if err := a.RotateKeyfile(ctx, m, 2, old, "whatever"); err == nil || !strings.Contains(err.Error(), old) {
		t.Fatalf("step 2 on a one-key Secret: %v", err)
	}
	next := "" // known once step 1 wrote it
	for step := 1; step <= KeyfileRotationSteps; step++ {
		for range 2 {
			if err := a.RotateKeyfile(ctx, m, step, old, next); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
		}
		keys, fps := read()
		if step == 1 {
			next = fps[1]
		}
		if !KeyfileStepShape(step, fps, old, next) {
			t.Fatalf("after step %d: %v", step, fps)
		}
		for _, k := range keys {
			if len(k) != 756 {
				t.Fatalf("after step %d a key of %d characters", step, len(k))
			}
		}
	}
	keys, fps := read()
	if len(keys) != 1 || keys[0] == oldKeys[0] || fps[0] == old || len(fps[0]) != 8 {
		t.Fatalf("after the rotation: %d keys, %v", len(keys), fps)
	}
	if n := writes(c, "secrets"); n["patch"] != 3 {
		t.Fatalf("writes %v: one update per step", n)
	}
}

func TestKeyfileKeys(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
		err  bool
	}{
		{"abc def\n", []string{"abcdef"}, false},
		{"- 'aaa'\n- 'bbb'\n", []string{"aaa", "bbb"}, false},
		{"['a a', \"b\"]", []string{"aa", "b"}, false},
		{"- a\n- b\n- c\n", nil, true},
		{"", nil, true},
		{"{a: b}", nil, true},
	} {
		got, err := KeyfileKeys([]byte(c.in))
		if (err != nil) != c.err || !slices.Equal(got, c.want) {
			t.Errorf("%q: %v %v", c.in, got, err)
		}
		if err != nil && strings.Contains(err.Error(), "a") && strings.Contains(err.Error(), c.in) && c.in != "" {
			t.Errorf("%q: the error quotes the data: %v", c.in, err)
		}
	}
	if got, _ := KeyfileKeys(keyfileData([]string{"k1+/=", "k2"})); !slices.Equal(got, []string{"k1+/=", "k2"}) {
		t.Errorf("round trip: %v", got)
	}
}
