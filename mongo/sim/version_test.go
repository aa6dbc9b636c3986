package sim_test

import (
	"os/exec"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestVersionFollowsImage starts members as the images mongo:8.0,
// mongo:7.0.14 and mongo:6.0 would (MONGO_VERSION in the environment) and
// checks every place the version shows.
func TestVersionFollowsImage(t *testing.T) {
	for _, tc := range []struct {
		env, version, fcv string
		wire              int32
		array             []int32
	}{
		{"8.0", "8.0.4", "8.0", 25, []int32{8, 0, 4, 0}},
		{"7.0.14", "7.0.14", "7.0", 21, []int32{7, 0, 14, 0}},
		{"6.0", "6.0.19", "6.0", 17, []int32{6, 0, 19, 0}},
	} {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv("MONGO_VERSION", tc.env)
			out, err := exec.Command(simBin, "--version").Output()
			if err != nil || !strings.HasPrefix(string(out), "db version v"+tc.version+"\n") {
				t.Fatalf("--version: %v\n%s", err, out)
			}
			m := newMember(t)
			c := m.client(t)
			bi := mustRun(t, c, bson.D{{Key: "buildInfo", Value: 1}})
			if v := bi.Lookup("version").StringValue(); v != tc.version {
				t.Errorf("buildInfo.version %q", v)
			}
			var arr []int32
			if err := bi.Lookup("versionArray").Unmarshal(&arr); err != nil || len(arr) != 4 || arr[0] != tc.array[0] || arr[1] != tc.array[1] || arr[2] != tc.array[2] {
				t.Errorf("versionArray %v (%v)", arr, err)
			}
			if g := bi.Lookup("gitVersion").StringValue(); len(g) != 40 {
				t.Errorf("gitVersion %q", g)
			}
			// the 8.0 image is built on Ubuntu 24.04 with OpenSSL 3.0.13, the others on 22.04
			if d := bi.Lookup("buildEnvironment", "distmod").StringValue(); (tc.fcv == "8.0") != (d == "ubuntu2404") || !strings.Contains(string(out), `"distmod": "`+d+`"`) {
				t.Errorf("distmod %q, --version:\n%s", d, out)
			}
			hello := mustRun(t, c, bson.D{{Key: "hello", Value: 1}})
			if w := hello.Lookup("maxWireVersion").Int32(); w != tc.wire {
				t.Errorf("maxWireVersion %d, want %d", w, tc.wire)
			}
			ss := mustRun(t, c, bson.D{{Key: "serverStatus", Value: 1}})
			if v := ss.Lookup("version").StringValue(); v != tc.version {
				t.Errorf("serverStatus.version %q", v)
			}
			p := mustRun(t, c, bson.D{{Key: "getParameter", Value: 1}, {Key: "featureCompatibilityVersion", Value: 1}})
			if v := p.Lookup("featureCompatibilityVersion", "version").StringValue(); v != tc.fcv {
				t.Errorf("fcv %q", v)
			}
		})
	}
}

func TestUnknownVersionRefused(t *testing.T) {
	cmd := exec.Command(simBin, "--version")
	cmd.Env = append(cmd.Environ(), "MONGO_VERSION=5.0.3")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "unsupported MONGO_VERSION") {
		t.Fatalf("%v: %s", err, out)
	}
}
