package sim

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseArgs(t *testing.T) {
	dir := t.TempDir()
	kf := filepath.Join(dir, "key")
	if err := os.WriteFile(kf, []byte("abcdefgh"), 0o600); err != nil {
		t.Fatal(err)
	}
	yml := filepath.Join(dir, "mongod.conf")
	if err := os.WriteFile(yml, []byte(`
net:
  port: 27018
  bindIp: "0.0.0.0,::"
storage:
  dbPath: /var/lib/mongo
  wiredTiger:
    engineConfig:
      cacheSizeGB: 1
replication:
  replSetName: rsY
security:
  authorization: enabled
setParameter:
  enableLocalhostAuthBypass: false
operationProfiling:
  slowOpThresholdMs: 200
`), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.conf")
	if err := os.WriteFile(bad, []byte("net:\n  portt: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		check   func(t *testing.T, c Config)
		wantErr string
	}{
		{name: "defaults", args: nil, check: func(t *testing.T, c Config) {
			if c.Port != 27017 || !reflect.DeepEqual(c.BindIP, []string{"127.0.0.1"}) || c.DBPath != "/data/db" || c.Auth {
				t.Fatalf("%+v", c)
			}
		}},
		{name: "space and equals forms", args: []string{"--replSet", "rs0", "--port=27019", "--bind_ip", "a,b", "--dbpath=/d", "--auth"},
			check: func(t *testing.T, c Config) {
				if c.ReplSet != "rs0" || c.Port != 27019 || !reflect.DeepEqual(c.BindIP, []string{"a", "b"}) || c.DBPath != "/d" || !c.Auth {
					t.Fatalf("%+v", c)
				}
			}},
		{name: "keyFile implies auth", args: []string{"--keyFile", kf, "--clusterAuthMode=keyFile"}, check: func(t *testing.T, c Config) {
			if !c.Auth || c.KeyFile != kf {
				t.Fatalf("%+v", c)
			}
		}},
		{name: "setParameter and ignored", args: []string{"--setParameter", "a=b", "--wiredTigerCacheSizeGB", "0.25", "--bind_ip_all", "--oplogSize=50"},
			check: func(t *testing.T, c Config) {
				if c.SetParameters["a"] != "b" || !c.BindIPAll || c.OplogSizeMB != 50 || !reflect.DeepEqual(c.Ignored, []string{"--wiredTigerCacheSizeGB"}) {
					t.Fatalf("%+v", c)
				}
			}},
		{name: "unknown flag", args: []string{"--nope"}, wantErr: "Error parsing command line: unrecognised option '--nope'"},
		{name: "missing value", args: []string{"--port"}, wantErr: "the required argument for option '--port' is missing"},
		{name: "bad tls mode", args: []string{"--tlsMode", "sometimes"}, wantErr: "Unsupported value for tlsMode sometimes"},
		{name: "tls without cert", args: []string{"--tlsMode", "requireTLS"}, wantErr: "need tlsCertificateKeyFile"},
		{name: "yaml config, command line wins", args: []string{"--config", yml, "--port", "27020"}, check: func(t *testing.T, c Config) {
			if c.Port != 27020 || c.ReplSet != "rsY" || c.DBPath != "/var/lib/mongo" || !c.Auth ||
				c.SetParameters["enableLocalhostAuthBypass"] != "false" || !reflect.DeepEqual(c.BindIP, []string{"0.0.0.0", "::"}) {
				t.Fatalf("%+v", c)
			}
			if lookupParsed(c.Parsed, "setParameter.enableLocalhostAuthBypass") != "false" {
				t.Fatalf("setParameter from YAML in parsed: %#v", c.Parsed["setParameter"])
			}
			if len(c.Ignored) != 2 {
				t.Fatalf("ignored: %v", c.Ignored)
			}
		}},
		{name: "yaml unknown key", args: []string{"-f", bad}, wantErr: "Unrecognized option: net.portt"},
		{name: "version", args: []string{"--version"}, check: func(t *testing.T, c Config) {
			if !c.ShowVersion {
				t.Fatal("no version")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseArgs(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrBadOptions) {
					t.Fatalf("want error %q, got %v", tt.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

func TestBindIPs(t *testing.T) {
	cases := []struct {
		bind []string
		all  bool
		want string
	}{
		{[]string{"127.0.0.1"}, false, "127.0.0.1"},
		{[]string{"localhost"}, false, "127.0.0.1"},
		{[]string{"127.0.0.1", "0.0.0.0"}, false, "0.0.0.0"},
		{[]string{"0.0.0.0", "::"}, false, "::"},
		{nil, true, "0.0.0.0"},
	}
	for _, c := range cases {
		ips, err := bindIPs(Config{BindIP: c.bind, BindIPAll: c.all})
		if err != nil {
			t.Fatal(err)
		}
		if ips[0].String() != c.want {
			t.Errorf("%v: first %v, want %s", c.bind, ips, c.want)
		}
	}
}
