package sim_test

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func fcvOf(t *testing.T, m *member) bson.Raw {
	t.Helper()
	r, err := run(m.shortClient(), bson.D{{Key: "getParameter", Value: 1}, {Key: "featureCompatibilityVersion", Value: 1}})
	if err != nil {
		return nil
	}
	return r.Lookup("featureCompatibilityVersion").Document()
}

// setFeatureCompatibilityVersion as mongod 7.0: confirm required, only the
// current or previous version, replicated and kept across a restart.
func TestFeatureCompatibilityVersion(t *testing.T) {
	ms, p := initiated(t, 2, fastSettings)
	c := ms[p].client(t)
	if v := fcvOf(t, ms[p]).Lookup("version").StringValue(); v != "7.0" {
		t.Fatalf("default FCV %q", v)
	}
	ce := cmdErr(t, c, "admin", bson.D{{Key: "setFeatureCompatibilityVersion", Value: "6.0"}})
	if ce.Code != 7369100 || !strings.HasPrefix(ce.Message, "Once you have downgraded the FCV, if you choose to downgrade the binary version, it will require support assistance.") {
		t.Errorf("downgrade without confirm: %v", ce)
	}
	if ce := cmdErr(t, c, "admin", bson.D{{Key: "setFeatureCompatibilityVersion", Value: "8.0"}, {Key: "confirm", Value: true}}); ce.Code != 2 ||
		!strings.Contains(ce.Message, "Invalid feature compatibility version value '8.0'") {
		t.Errorf("upgrade past the binary: %v", ce)
	}
	if ce := cmdErr(t, c, "app", bson.D{{Key: "setFeatureCompatibilityVersion", Value: "6.0"}, {Key: "confirm", Value: true}}); ce.Code != 13 {
		t.Errorf("outside admin: %v", ce)
	}
	mustRun(t, c, bson.D{{Key: "setFeatureCompatibilityVersion", Value: "6.0"}, {Key: "confirm", Value: true}})
	if v := fcvOf(t, ms[p]).Lookup("version").StringValue(); v != "6.0" {
		t.Errorf("after downgrade %q", v)
	}
	// through the transitional document, in the oplog like any write
	entries := mustRunDB(t, c, "local", bson.D{{Key: "find", Value: "oplog.rs"}, {Key: "filter", Value: bson.D{{Key: "ns", Value: "admin.system.version"}}}})
	vals, _ := entries.Lookup("cursor", "firstBatch").Array().Values()
	// the first is the initiate's own FCV document
	if len(vals) != 3 || vals[0].Document().Lookup("o", "version").StringValue() != "7.0" {
		t.Fatalf("oplog of admin.system.version: %v", vals)
	}
	vals = vals[1:]
	if vals[0].Document().Lookup("o", "targetVersion").StringValue() != "6.0" || vals[0].Document().Lookup("o", "previousVersion").StringValue() != "7.0" ||
		vals[1].Document().Lookup("o", "targetVersion").Type != 0 {
		t.Errorf("oplog of the downgrade: %v", vals)
	}
	// majority-acknowledged: the secondary has it already
	if v := fcvOf(t, ms[1-p]); v == nil || v.Lookup("version").StringValue() != "6.0" {
		t.Errorf("secondary FCV %v", v)
	}
	ce = cmdErr(t, c, "admin", bson.D{{Key: "setFeatureCompatibilityVersion", Value: "7.0"}})
	if ce.Code != 7369100 || !strings.HasPrefix(ce.Message, "Once you have upgraded to 7.0, you will not be able to downgrade FCV and binary version without support assistance.") {
		t.Errorf("upgrade without confirm: %v", ce)
	}
	// it survives a restart
	ms[1-p].kill()
	ms[1-p].start()
	waitFor(t, 20*time.Second, "FCV 6.0 after restart", func() bool {
		v := fcvOf(t, ms[1-p])
		return v != nil && v.Lookup("version").StringValue() == "6.0"
	})
	// A primary of two members steps down while the other is away
	// (electionTimeoutMillis 1 s): ask the primary there is now.
	p = waitPrimary(t, ms, 30*time.Second)
	c = ms[p].client(t)
	mustRun(t, c, bson.D{{Key: "setFeatureCompatibilityVersion", Value: "7.0"}, {Key: "confirm", Value: true}})
	if v := fcvOf(t, ms[p]); v.Lookup("version").StringValue() != "7.0" || v.Lookup("targetVersion").Type != 0 {
		t.Errorf("after upgrade %v", v)
	}
}

// 6.0 has no confirm field; an 8.0 FCV on disk stops a 7.0 binary (exit 62).
func TestFCVAcrossVersions(t *testing.T) {
	t.Setenv("MONGO_VERSION", "6.0")
	old := newMember(t)
	if ce := cmdErr(t, old.client(t), "admin", bson.D{{Key: "setFeatureCompatibilityVersion", Value: "5.0"}, {Key: "confirm", Value: true}}); ce.Code != 40415 {
		t.Errorf("6.0 confirm: %v", ce)
	}

	t.Setenv("MONGO_VERSION", "8.0")
	ms, p := initiated(t, 1, fastSettings)
	c := ms[p].client(t)
	mustRun(t, c, bson.D{{Key: "setFeatureCompatibilityVersion", Value: "7.0"}, {Key: "confirm", Value: true}})
	if v := fcvOf(t, ms[p]).Lookup("version").StringValue(); v != "7.0" {
		t.Fatalf("8.0 downgraded to %q", v)
	}
	mustRun(t, c, bson.D{{Key: "setFeatureCompatibilityVersion", Value: "8.0"}, {Key: "confirm", Value: true}})
	ms[p].kill()
	t.Setenv("MONGO_VERSION", "7.0")
	out, err := exec.Command(simBin, ms[p].args()...).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 62 || !strings.Contains(string(out), "UPGRADE PROBLEM: Found an invalid featureCompatibilityVersion document") {
		t.Fatalf("7.0 on 8.0 data: %v\n%s", err, out)
	}
}

// A set initiated by 6.0 keeps FCV 6.0 when its binary becomes 7.0, until
// setFeatureCompatibilityVersion; an 8.0 binary refuses 6.0 data (one line
// at a time), and a 6.0 binary refuses it once its FCV is 7.0 (exit 62).
func TestFCVFollowsTheDataNotTheBinary(t *testing.T) {
	t.Setenv("MONGO_VERSION", "6.0")
	ms, p := initiated(t, 1, fastSettings)
	m := ms[p]
	if v := fcvOf(t, m).Lookup("version").StringValue(); v != "6.0" {
		t.Fatalf("6.0 initiated with FCV %q", v)
	}
	m.kill()
	refused := func(version string) {
		t.Helper()
		t.Setenv("MONGO_VERSION", version)
		out, err := exec.Command(simBin, m.args()...).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 62 || !strings.Contains(string(out), "UPGRADE PROBLEM: Found an invalid featureCompatibilityVersion document") {
			t.Fatalf("%s on this data: %v\n%s", version, err, out)
		}
	}
	refused("8.0")
	t.Setenv("MONGO_VERSION", "7.0")
	m.start()
	waitFor(t, 20*time.Second, "the 7.0 binary up", func() bool { return fcvOf(t, m) != nil })
	c := m.client(t)
	if v := mustRun(t, c, bson.D{{Key: "buildInfo", Value: 1}}).Lookup("version").StringValue(); v != "7.0.14" {
		t.Errorf("buildInfo.version %q", v)
	}
	if v := fcvOf(t, m).Lookup("version").StringValue(); v != "6.0" {
		t.Errorf("FCV after the binary upgrade %q, want 6.0 until it is set", v)
	}
	waitFor(t, 20*time.Second, "primary again", func() bool {
		r, err := run(m.shortClient(), bson.D{{Key: "hello", Value: 1}})
		return err == nil && r.Lookup("isWritablePrimary").Boolean()
	})
	mustRun(t, c, bson.D{{Key: "setFeatureCompatibilityVersion", Value: "7.0"}, {Key: "confirm", Value: true}})
	if v := fcvOf(t, m).Lookup("version").StringValue(); v != "7.0" {
		t.Errorf("FCV %q after setFeatureCompatibilityVersion", v)
	}
	m.kill()
	refused("6.0")
}
