package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/mgors/operator/actors"
	"github.com/mgors/operator/kube/api/v1alpha1"
)

func TestFlagsRejectBadInputNamingTheFlag(t *testing.T) {
	for args, want := range map[string]string{
		"--event-store=etcd":        "--event-store must be kube, file or memory",
		"--interval=0s":             "--interval, --observe-timeout and --act-timeout must be positive",
		"--no-such-flag":            "no-such-flag",
		"--shards=3":                `--shards must be "auto" or empty`,
		"--shards=auto --identity=": "--shards=auto needs an --identity",
	} {
		_, err := parseFlags(strings.Fields(args))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want it to say %q", args, err, want)
		}
	}
	o, err := parseFlags([]string{"--namespace=db", "--leader-elect"})
	if err != nil || o.namespace != "db" || !o.leaderElect || o.interval != time.Minute || o.shards != "" || !o.installCRD {
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

// The members' health: states, lag, votes, and elections counted from the
// term's increases, never from the first term seen; a member that left the
// config loses its series.
func TestHealthMetrics(t *testing.T) {
	m := newMetrics(prometheus.NewRegistry())
	three := actors.Health{Primary: true, Voters: 3, VotersAnswering: 3, Majority: 2, Term: 7, Members: []actors.MemberHealth{
		{Name: "demo-0", State: "PRIMARY", HasLag: true},
		{Name: "demo-1", State: "SECONDARY", Lag: 4, HasLag: true},
		{Name: "demo-2", State: "SECONDARY", Lag: 1, HasLag: true},
	}}
	m.Health("db/demo", three)
	if got := testutil.ToFloat64(m.elections.WithLabelValues("db/demo")); got != 0 {
		t.Errorf("elections after the first observation = %v, want 0", got)
	}
	if got := testutil.ToFloat64(m.memberState.WithLabelValues("db/demo", "demo-1", "SECONDARY")); got != 1 {
		t.Errorf("demo-1 SECONDARY = %v", got)
	}
	if got := testutil.ToFloat64(m.lag.WithLabelValues("db/demo", "demo-1")); got != 4 {
		t.Errorf("demo-1 lag = %v", got)
	}
	lost := actors.Health{Voters: 3, VotersAnswering: 1, Majority: 2, Term: 9, Members: []actors.MemberHealth{
		{Name: "demo-0", State: "SECONDARY"},
		{Name: "demo-1", State: "DOWN"},
	}}
	m.Health("db/demo", lost)
	if got := testutil.ToFloat64(m.elections.WithLabelValues("db/demo")); got != 2 {
		t.Errorf("elections after term 7 → 9 = %v, want 2", got)
	}
	if got := testutil.ToFloat64(m.primary.WithLabelValues("db/demo")); got != 0 {
		t.Errorf("primary = %v, want 0", got)
	}
	if got := testutil.ToFloat64(m.answering.WithLabelValues("db/demo")); got != 1 {
		t.Errorf("voters answering = %v, want 1", got)
	}
	if n := testutil.CollectAndCount(m.lag); n != 0 {
		t.Errorf("%d lag series without a primary, want 0", n)
	}
	if n := testutil.CollectAndCount(m.memberState); n != 2*len(memberStates) {
		t.Errorf("%d member state series for 2 members, want %d (demo-2 left)", n, 2*len(memberStates))
	}
	m.Health("db/demo", actors.Health{Term: 0})
	m.Health("db/demo", actors.Health{Term: 9})
	if got := testutil.ToFloat64(m.elections.WithLabelValues("db/demo")); got != 2 {
		t.Errorf("elections after an observation without status = %v, want 2", got)
	}
	m.Forget("db/demo")
	if n := testutil.CollectAndCount(m.memberState) + testutil.CollectAndCount(m.elections); n != 0 {
		t.Errorf("a forgotten cluster still has %d health series", n)
	}
}

// Every series the alerts and the dashboard in deploy/monitoring name is one
// the operator exports: a renamed metric cannot leave an alert that never fires.
func TestMonitoringNamesExportedMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newMetrics(reg)
	m.Phase("db/demo", v1alpha1.PhaseHealthy)
	m.Transition("db/demo", v1alpha1.PhaseInitiating, v1alpha1.PhaseHealthy)
	m.Observed("db/demo", time.Millisecond, nil)
	m.Acted("db/demo", actors.ActInitiate, time.Millisecond, errors.New("x"))
	m.mailboxStats("db/demo").MessagePosted(nil)
	m.Health("db/demo", actors.Health{Primary: true, Voters: 1, VotersAnswering: 1, Majority: 1, Term: 1, LastBackup: time.Unix(1e9, 0),
		Members: []actors.MemberHealth{{Name: "demo-0", State: "PRIMARY", HasLag: true}}})
	m.apiResults.WithLabelValues("GET", "200").Inc()
	m.apiLatency.WithLabelValues("GET").Observe(0.01)
	m.mongoCalls.WithLabelValues("hello").Observe(0.01)
	m.mongoErrors.WithLabelValues("hello").Inc()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, f := range families {
		exported[f.GetName()] = true
		if f.GetType() == dto.MetricType_HISTOGRAM {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				exported[f.GetName()+suffix] = true
			}
		}
	}
	files, err := filepath.Glob("../../deploy/monitoring/*")
	if err != nil || len(files) == 0 {
		t.Fatalf("no files in deploy/monitoring: %v", err)
	}
	named := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(f, ".json") && !json.Valid(b) {
			t.Errorf("%s is not valid JSON", f)
		}
		for _, name := range regexp.MustCompile(`\bmgors_[a-z_]+`).FindAllString(string(b), -1) {
			named++
			if !exported[name] {
				t.Errorf("%s names %s, which the operator does not export", filepath.Base(f), name)
			}
		}
	}
	if named == 0 {
		t.Fatal("deploy/monitoring names no metric")
	}
}
