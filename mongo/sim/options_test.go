package sim

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOptionsFromManual starts the parser, as each of mongod 6.0, 7.0 and
// 8.0, with every option of testdata/mongod-options.txt (taken from the
// manual): accepted where the release has it, in both command-line forms
// and in the config file, shown in getCmdLineOpts' parsed document; refused
// with mongod's wording where the release does not.
func TestOptionsFromManual(t *testing.T) {
	f, err := os.Open("testdata/mongod-options.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	dir := t.TempDir()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		form, accepted, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("bad testdata line %q", line)
		}
		n++
		for _, v := range []string{"6.0.19", "7.0.14", "8.0.4"} {
			want := accepted == "all" || strings.Contains(accepted, v[:3])
			var runs [][]string
			var yamlPath string
			if strings.HasPrefix(form, "-") {
				args := strings.Fields(form)
				runs = append(runs, args)
				if len(args) == 2 && !strings.HasPrefix(args[1], "-") {
					runs = append(runs, []string{args[0] + "=" + args[1]})
				}
			} else {
				path, val, _ := strings.Cut(form, ": ")
				yamlPath = path
				conf := filepath.Join(dir, "mongod.conf")
				if err := os.WriteFile(conf, []byte(nestYAML(path, val)), 0o600); err != nil {
					t.Fatal(err)
				}
				runs = append(runs, []string{"--config", conf})
			}
			for _, args := range runs {
				c, err := ParseArgsAs(v, args)
				switch {
				case want && err != nil:
					t.Errorf("%s %v: %v", v, args, err)
				case !want && err == nil:
					t.Errorf("%s %v: accepted, but mongod %s does not know it", v, args, v[:3])
				case !want && yamlPath == "" && !strings.Contains(err.Error(), "Error parsing command line: unrecognised option '"+strings.SplitN(args[0], "=", 2)[0]):
					t.Errorf("%s %v: %v", v, args, err)
				case !want && yamlPath != "" && !strings.Contains(err.Error(), "Unrecognized option: "+yamlPath):
					t.Errorf("%s %v: %v", v, args, err)
				case want && yamlPath != "" && lookupParsed(c.Parsed, yamlPath) == nil:
					t.Errorf("%s %s: not in getCmdLineOpts' parsed %v", v, yamlPath, c.Parsed)
				}
			}
		}
	}
	if n < 150 {
		t.Fatalf("only %d options in the testdata list", n)
	}
}

// nestYAML writes a.b.c: v as nested YAML.
func nestYAML(path, val string) string {
	parts := strings.Split(path, ".")
	var b strings.Builder
	for i, p := range parts {
		b.WriteString(strings.Repeat("  ", i) + p + ":")
		if i == len(parts)-1 {
			b.WriteString(" " + val)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func lookupParsed(m map[string]any, path string) any {
	var cur any = m
	for _, p := range strings.Split(path, ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[p]
	}
	return cur
}

// Options the simulator does not model are listed once for the log; secrets
// are shown as mongod shows them; YAML names and types are mongod's.
func TestOptionsParsedAndIgnored(t *testing.T) {
	c, err := ParseArgs([]string{"--replSet", "rs0", "--wiredTigerCacheSizeGB=0.5", "--tlsCertificateKeyFilePassword", "hunter2",
		"--sslAllowInvalidCertificates", "--tlsAllowInvalidCertificates", "--relaxPermChecks", "-vv", "--port", "27019", "--profile", "2", "--nounixsocket"})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]any{
		"replication.replSet": "rs0", "storage.wiredTiger.engineConfig.cacheSizeGB": 0.5, "net.tls.certificateKeyFilePassword": "<password>",
		"net.tls.allowInvalidCertificates": true, "security.relaxPermChecks": true, "systemLog.verbosity": 2, "net.port": 27019,
		"operationProfiling.mode": "all", "net.unixDomainSocket.enabled": false,
	} {
		if got := lookupParsed(c.Parsed, path); got != want {
			t.Errorf("parsed %s = %#v, want %#v", path, got, want)
		}
	}
	if strings.Contains(strings.Join(c.Argv, " "), "hunter2") {
		t.Errorf("argv shows the password: %v", c.Argv)
	}
	want := []string{"--nounixsocket", "--profile", "--tlsCertificateKeyFilePassword", "--vv", "--wiredTigerCacheSizeGB"} // allowInvalidCertificates is modelled (tlsconf.go)
	if strings.Join(c.Ignored, " ") != strings.Join(want, " ") {
		t.Errorf("ignored %v, want %v", c.Ignored, want)
	}
	if _, err := ParseArgsAs("8.0.4", []string{"--enableFreeMonitoring", "on"}); err == nil ||
		err.Error() != "Error parsing command line: unrecognised option '--enableFreeMonitoring'\ntry 'mongod --help' for more information" {
		t.Errorf("8.0 --enableFreeMonitoring: %v", err)
	}
	if _, err := ParseArgsAs("7.0.14", []string{"--nojournal"}); err == nil {
		t.Error("7.0 accepted --nojournal, removed in 6.1")
	}
	if _, err := ParseArgs([]string{"--port", "many"}); err == nil || !strings.Contains(err.Error(), "the argument ('many') for option '--port' is invalid") {
		t.Errorf("bad int: %v", err)
	}
	if _, err := ParseArgs([]string{"--setParameter", "clusterAuthMode=x509"}); err == nil || !strings.Contains(err.Error(), `Cannot use --setParameter to set "clusterAuthMode" at startup`) {
		t.Errorf("runtime-only parameter at startup: %v", err)
	}
	if _, err := ParseArgs([]string{"--setParameter", "scramIterationCount=many"}); err == nil || !strings.Contains(err.Error(), `Bad value for parameter "scramIterationCount"`) {
		t.Errorf("mistyped parameter: %v", err)
	}
	if c, err := ParseArgs([]string{"--setParameter", "someParameterOfAnotherRelease=1"}); err != nil || c.SetParameters["someParameterOfAnotherRelease"] != "1" {
		t.Errorf("unknown parameter refused: %v", err)
	}
	conf := filepath.Join(t.TempDir(), "c.conf")
	_ = os.WriteFile(conf, []byte("systemLog:\n  destination: file\n"), 0o600)
	if _, err := ParseArgs([]string{"-f", conf}); err == nil || !strings.Contains(err.Error(), "systemLog.path is required if systemLog.destination is to a file") {
		t.Errorf("destination file without path: %v", err)
	}
}

func TestHelpListsTheRelease(t *testing.T) {
	c70, _ := ParseArgsAs("7.0.14", nil)
	c80, _ := ParseArgsAs("8.0.4", nil)
	if h := c70.HelpText(); !strings.Contains(h, "  --port arg\n") || !strings.Contains(h, "  --enableFreeMonitoring arg\n") || !strings.Contains(h, "  --auth\n") {
		t.Errorf("7.0 help:\n%s", h)
	}
	if strings.Contains(c80.HelpText(), "enableFreeMonitoring") {
		t.Error("8.0 help lists --enableFreeMonitoring")
	}
}
