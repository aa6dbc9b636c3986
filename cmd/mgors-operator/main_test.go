package main

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mgors/operator/actors"
	"github.com/mgors/operator/kube/api/v1alpha1"
)

func TestFlagsRejectBadInputNamingTheFlag(t *testing.T) {
	for args, want := range map[string]string{
		"--event-store=etcd": "--event-store must be kube, file or memory",
		"--interval=0s":      "--interval, --observe-timeout and --act-timeout must be positive",
		"--no-such-flag":     "no-such-flag",
	} {
		_, err := parseFlags(strings.Fields(args))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want it to say %q", args, err, want)
		}
	}
	o, err := parseFlags([]string{"--namespace=db", "--leader-elect"})
	if err != nil || o.namespace != "db" || !o.leaderElect || o.interval != 10*time.Second || !o.installCRD {
		t.Fatalf("defaults: %+v %v", o, err)
	}
	// The namespaced install's operator may not write the CRD.
	if o, err := parseFlags([]string{"--install-crd=false"}); err != nil || o.installCRD {
		t.Fatalf("--install-crd=false: %+v %v", o, err)
	}
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newMetrics(reg)
	var _ actors.Metrics = m
	m.Phase("db/demo", v1alpha1.PhaseHealthy)
	m.Transition("db/demo", v1alpha1.PhaseInitiating, v1alpha1.PhaseHealthy)
	m.Observed("db/demo", 20*time.Millisecond, nil)
	m.Acted("db/demo", actors.ActInitiate, time.Second, nil)
	box := m.mailboxStats("db/demo")
	box.MessagePosted(nil)
	box.MessagePosted(nil)
	box.MessageReceived(nil)
	if got := testutil.ToFloat64(m.phase.WithLabelValues("db/demo", "Healthy")); got != 1 {
		t.Errorf("phase Healthy = %v", got)
	}
	if got := testutil.ToFloat64(m.phase.WithLabelValues("db/demo", "Initiating")); got != 0 {
		t.Errorf("phase Initiating = %v", got)
	}
	if got := testutil.ToFloat64(m.mailbox.WithLabelValues("db/demo")); got != 1 {
		t.Errorf("mailbox depth = %v, want 1", got)
	}
	m.Forget("db/demo")
	if n := testutil.CollectAndCount(m.phase); n != 0 {
		t.Errorf("a forgotten cluster still has %d phase series", n)
	}
}
