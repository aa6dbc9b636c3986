package kube

import (
	"slices"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

func configured() *v1alpha1.Mgors {
	m := &v1alpha1.Mgors{}
	m.Name, m.Namespace = "demo", "db"
	m.Default()
	m.Spec.Config = &v1alpha1.MongodConfig{
		WiredTigerCacheSizeGB: "1.5",
		Profiling:             &v1alpha1.ProfilingConfig{Mode: "slowOp", SlowOpThresholdMs: ptr.To(int32(50))},
		SetParameter:          map[string]v1alpha1.ParameterValue{"logLevel": "1", "ttlMonitorSleepSecs": "30"},
	}
	return m
}

func hash(m *v1alpha1.Mgors) string {
	return StatefulSet(m, Options{}).Spec.Template.Annotations[TemplateHashAnnotation]
}

// spec.config is on mongod's command line, parameters in name order.
func TestConfigIsOnTheCommandLine(t *testing.T) {
	args := MongodArgs(configured())
	want := []string{"--wiredTigerCacheSizeGB", "1.5", "--profile", "1", "--slowms", "50",
		"--setParameter", "logLevel=1", "--setParameter", "ttlMonitorSleepSecs=30"}
	if i := slices.Index(args, "--wiredTigerCacheSizeGB"); i < 0 || !slices.Equal(args[i:], want) {
		t.Fatalf("mongod command %v, want it to end with %v", args, want)
	}
}

// What rolls the members and what does not: startup options and the set of
// runtime parameters change the template hash; a runtime parameter's value
// and the oplog size change the command only.
func TestTemplateHashCoversWhatNeedsARestart(t *testing.T) {
	base := hash(configured())
	for _, tc := range []struct {
		name   string
		change func(m *v1alpha1.Mgors)
		rolls  bool
	}{
		{"runtime parameter value", func(m *v1alpha1.Mgors) { m.Spec.Config.SetParameter["logLevel"] = "2" }, false},
		{"oplog size", func(m *v1alpha1.Mgors) { m.Spec.Storage.OplogSizeMB = ptr.To(int32(2048)) }, false},
		{"cache size", func(m *v1alpha1.Mgors) { m.Spec.Config.WiredTigerCacheSizeGB = "2" }, true},
		{"slowms", func(m *v1alpha1.Mgors) { m.Spec.Config.Profiling.SlowOpThresholdMs = ptr.To(int32(70)) }, true},
		{"startup-only parameter", func(m *v1alpha1.Mgors) { m.Spec.Config.SetParameter["ttlMonitorSleepSecs"] = "60" }, true},
		{"runtime parameter added", func(m *v1alpha1.Mgors) { m.Spec.Config.SetParameter["notablescan"] = "false" }, true},
		{"runtime parameter removed", func(m *v1alpha1.Mgors) { delete(m.Spec.Config.SetParameter, "logLevel") }, true},
	} {
		m := configured()
		before := MongodArgs(m)
		tc.change(m)
		if slices.Equal(before, MongodArgs(m)) {
			t.Errorf("%s: the command line did not change", tc.name)
		}
		if rolls := hash(m) != base; rolls != tc.rolls {
			t.Errorf("%s: template hash changed %v, want %v", tc.name, rolls, tc.rolls)
		}
	}
}

// A Mgors without spec.config keeps its command line and template hash.
func TestNoConfigAddsNothing(t *testing.T) {
	m := configured()
	m.Spec.Config = nil
	args := MongodArgs(m)
	if args[len(args)-1] != "shutdownTimeoutMillisForSignaledShutdown=20000" {
		t.Fatalf("mongod command %v changed", args)
	}
}
