package sim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKeyFileRules(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", "c2VjcmV0LWtleQ==\n", 0o400)
	spaced := write("spaced", "  c2Vj cmV0\n\tLWtl eQ==  \n", 0o600)
	rotation := write("rotation", "- c2VjcmV0LWtleQ==\n- bmV3LWtleS12YWx1ZQ==\n", 0o400)
	three := write("three", "- c2VjcmV0\n- c2VjcmV1\n- c2VjcmV2\n", 0o400)
	empty := write("empty", "", 0o400)
	short := write("short", "abc", 0o400)
	long := write("long", strings.Repeat("a", 1025), 0o400)
	badChar := write("badchar", "abc-defgh", 0o400)
	mapping := write("mapping", "key: c2VjcmV0LWtleQ==\n", 0o400)
	group := write("group", "c2VjcmV0LWtleQ==", 0o440)
	others := write("others", "c2VjcmV0LWtleQ==", 0o444)

	for _, tc := range []struct {
		args    []string
		keys    int
		wantErr string
	}{
		{args: []string{"--keyFile", good}, keys: 1},
		{args: []string{"--keyFile", spaced}, keys: 1},
		{args: []string{"--keyFile", rotation}, keys: 2},
		{args: []string{"--keyFile", three}, wantErr: "Only two keys are supported in the security key file"},
		{args: []string{"--keyFile", empty}, wantErr: " security key in " + empty + " has length 0, must be between 6 and 1024 chars"},
		{args: []string{"--keyFile", short}, wantErr: " security key in " + short + " has length 3, must be between 6 and 1024 chars"},
		{args: []string{"--keyFile", long}, wantErr: "has length 1025, must be between 6 and 1024 chars"},
		{args: []string{"--keyFile", badChar}, wantErr: "invalid char in key file " + badChar + ": -"},
		{args: []string{"--keyFile", mapping}, wantErr: "must contain a YAML string or a sequence of strings"},
		{args: []string{"--keyFile", filepath.Join(dir, "missing")}, wantErr: "Error reading file " + filepath.Join(dir, "missing") + ": No such file or directory"},
		{args: []string{"--keyFile", group}, wantErr: "permissions on " + group + " are too open"},
		{args: []string{"--keyFile", others, "--relaxPermChecks"}, wantErr: "permissions on " + others + " are too open"},
	} {
		c, err := ParseArgs(tc.args)
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		_, err = loadKeyFile(c.KeyFile, c.RelaxPermChecks)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%v: err %v, want %q", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if keys, err := loadKeyFile(c.KeyFile, c.RelaxPermChecks); err != nil || len(keys) != tc.keys {
			t.Errorf("%v: keys %v %v", tc.args, keys, err)
		}
	}
	if keys, _ := readKeyFile(spaced); keys[0] != "c2VjcmV0LWtleQ==" {
		t.Errorf("whitespace kept: %q", keys[0])
	}

	// With --relaxPermChecks a root-owned, group-readable keyfile is accepted;
	// one owned by another user is not.
	if os.Geteuid() != 0 {
		t.Skip("the relaxPermChecks ownership cases need root")
	}
	load := func(args []string) error {
		c, err := ParseArgs(args)
		if err != nil {
			return err
		}
		if !c.RelaxPermChecks {
			t.Errorf("%v: relaxPermChecks not set", args)
		}
		_, err = loadKeyFile(c.KeyFile, c.RelaxPermChecks)
		return err
	}
	for _, form := range [][]string{{"--keyFile", group, "--relaxPermChecks"}, {"--keyFile=" + group, "--relaxPermChecks=true"}} {
		if err := load(form); err != nil {
			t.Errorf("%v: %v", form, err)
		}
	}
	yml := write("relax.conf", "security:\n  keyFile: "+group+"\n  relaxPermChecks: true\n", 0o600)
	if err := load([]string{"--config", yml}); err != nil {
		t.Errorf("security.relaxPermChecks in YAML: %v", err)
	}
	if err := os.Chown(group, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := load([]string{"--keyFile", group, "--relaxPermChecks"}); err == nil || !strings.Contains(err.Error(), "are too open") {
		t.Errorf("group-readable keyfile not owned by root accepted: %v", err)
	}
}
