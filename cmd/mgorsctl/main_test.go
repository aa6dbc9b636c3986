package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgors/operator/actors"
	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/kube/client/fake"
)

// storeDir lays the recorded log out as a file store.
func storeDir(t *testing.T) string {
	dir := t.TempDir()
	b, err := os.ReadFile("testdata/demo-log.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "db", "demo", "u-1")
	if err := os.MkdirAll(p, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p, "log.jsonl"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func mgorsctl(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	if err := run(args, strings.NewReader(stdin), &out); err != nil {
		t.Fatalf("mgorsctl %v: %v", args, err)
	}
	return out.String()
}

func TestReplayTimeline(t *testing.T) {
	out := mgorsctl(t, "", "replay", "--dir", storeDir(t), "--cluster", "db/demo")
	for _, want := range []string{
		"Provisioning → Initiating", "every member answers hello",
		"Initiate on demo-0.demo-svc.db.svc.cluster.local:27017 (config version 1)",
		"initiated on demo-0", "admin user created", "Initiating → Healthy",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("timeline lacks %q:\n%s", want, out)
		}
	}
}

func TestReplayAtAndJSON(t *testing.T) {
	out := mgorsctl(t, "", "replay", "--dir", storeDir(t), "--cluster", "db/demo", "--at", "9", "-o", "json")
	var s actors.State
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if s.Seq != 9 || !s.Initiated || s.AdminUser || s.Initiates != 1 {
		t.Fatalf("state at 9: %+v", s)
	}
}

// The operator's own log lines (as `kubectl logs` shows them) replay to the
// same final state as the store.
func TestReplayFromLogsMatchesTheStore(t *testing.T) {
	logs, err := os.ReadFile("testdata/operator.log")
	if err != nil {
		t.Fatal(err)
	}
	fromLogs := mgorsctl(t, string(logs), "replay", "--logs", "-", "--at", "14", "-o", "json")
	fromStore := mgorsctl(t, "", "replay", "--dir", storeDir(t), "--cluster", "db/demo", "--at", "14", "-o", "json")
	if fromLogs != fromStore {
		t.Fatalf("logs and store disagree:\n%s\n%s", fromLogs, fromStore)
	}
}

func TestVerify(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", t.TempDir())
	out := mgorsctl(t, "", "replay", "--dir", storeDir(t), "--cluster", "db/demo", "--verify")
	if !strings.Contains(out, "14 records, gapless, fold deterministic") {
		t.Fatal(out)
	}
	// A gap is caught.
	dir := storeDir(t)
	p := filepath.Join(dir, "db", "demo", "u-1", "log.jsonl")
	b, _ := os.ReadFile(p)
	lines := strings.SplitAfter(string(b), "\n")
	_ = os.WriteFile(p, []byte(strings.Join(append(lines[:3:3], lines[4:]...), "")), 0o600)
	var buf bytes.Buffer
	if err := run([]string{"replay", "--dir", dir, "--cluster", "db/demo", "--verify"}, nil, &buf); err == nil {
		t.Fatal("a log with a gap verified")
	}
}

func TestBadInputSaysWhat(t *testing.T) {
	for _, args := range [][]string{
		{"replay"},
		{"replay", "--cluster", "nonamespace"},
		{"replay", "--dir", t.TempDir(), "--cluster", "db/none"},
		{"replay", "-o", "yaml", "--logs", "-"},
		{"frobnicate"},
	} {
		var out bytes.Buffer
		if err := run(args, strings.NewReader(""), &out); err == nil {
			t.Errorf("mgorsctl %v succeeded", args)
		}
	}
}

func TestWaitShowsProgressUntilHealthy(t *testing.T) {
	m := &v1alpha1.Mgors{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "db", Generation: 1}}
	mc := fake.NewClientset(m)
	go func() {
		for _, p := range []v1alpha1.Phase{v1alpha1.PhaseProvisioning, v1alpha1.PhaseInitiating, v1alpha1.PhaseHealthy} {
			time.Sleep(50 * time.Millisecond)
			cur, _ := mc.Mgorses("db").Get(context.Background(), "demo", metav1.GetOptions{})
			cur.Status.Phase, cur.Status.ObservedGeneration = p, 1
			if p == v1alpha1.PhaseHealthy {
				cur.Status.Primary, cur.Status.Ready = "demo-0", "3/3"
			}
			_, _ = mc.Mgorses("db").UpdateStatus(context.Background(), cur, metav1.UpdateOptions{})
		}
	}()
	var out bytes.Buffer
	f := flags{namespace: "db", poll: 10 * time.Millisecond, timeout: 10 * time.Second}
	if err := waitHealthy(context.Background(), mc, f, "demo", &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"phase Initiating", "phase Healthy", "primary demo-0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, out.String())
		}
	}
	f.timeout = 50 * time.Millisecond
	m2 := &v1alpha1.Mgors{ObjectMeta: metav1.ObjectMeta{Name: "stuck", Namespace: "db"}}
	if err := waitHealthy(context.Background(), fake.NewClientset(m2), f, "stuck", &out); err == nil {
		t.Fatal("wait returned without the cluster being Healthy")
	}
}

// The recovery events say what happened, not an empty line.
func TestDescribeRecoveryEvents(t *testing.T) {
	since := time.Date(2026, 12, 1, 5, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		e    actors.Event
		want []string
	}{
		{actors.ForceDecided{Policy: "Automatic", Survivor: "db-2", SurvivorOptime: actors.OpTime{Secs: 10, Inc: 4, Term: 1},
			Kept: []string{"db-2"}, Dropped: []string{"db-0", "db-1"}, CommitPoint: actors.OpTime{Secs: 12, Term: 1}, MajorityWritesLost: true, LossSeen: since},
			[]string{"policy Automatic", "onto db-2", "drops db-0, db-1", "are lost", "before the loss was seen at 05:00:00.000"}},
		{actors.ForceDecided{Policy: "Manual", Approval: "db-2", Survivor: "db-2", Unknown: true}, []string{"approved: db-2", "unknown"}},
		{actors.ApprovalRefused{Annotation: "a", Value: "db-0", Reason: "does not answer"}, []string{"a=db-0 refused: does not answer"}},
		{actors.ApprovalAccepted{Annotation: "a", Value: "db-2"}, []string{"a=db-2 accepted"}},
		{actors.NodeLost{Node: "n1", Since: since, Pods: []string{"db-0"}}, []string{"node n1 NotReady since 2026-12-01T05:00:00Z: db-0"}},
		{actors.VolumesLost{Members: []string{"db-0"}}, []string{"without data: db-0"}},
		{actors.MemberResyncing{Member: "db-1", Evidence: "db-1 is STARTUP2", Progress: "initial sync: 10 of ~20 bytes copied"},
			[]string{"db-1 resyncs by itself: db-1 is STARTUP2; initial sync: 10 of ~20 bytes"}},
		{actors.MemberStuck{Member: "db-2", Kind: "TooStale", Evidence: "RECOVERING"}, []string{"db-2 stuck (TooStale): RECOVERING"}},
		{actors.MemberRecovered{Member: "db-2", Trouble: "Resyncing", Since: since, State: "SECONDARY"},
			[]string{"db-2 is SECONDARY (after Resyncing since 2026-12-01T05:00:00Z)"}},
		{actors.VersionsObserved{FCV: "6.0", Members: map[string]string{"db-1": "7.0.14", "db-0": "6.0.19"}},
			[]string{"featureCompatibilityVersion 6.0; db-0=6.0.19 db-1=7.0.14"}},
		{actors.UpgradeStarted{From: "6.0.19", To: "7.0.14", FCV: "6.0"}, []string{"upgrade 6.0.19 → 7.0.14 (featureCompatibilityVersion 6.0)"}},
		{actors.VersionRefused{Version: "6.0.19", Running: "7.0.14", FCV: "7.0", Reason: "spec.version 6.0.19 is below"}, []string{"spec.version 6.0.19 is below; the members keep 7.0.14"}},
		{actors.FCVSet{From: "6.0", To: "7.0"}, []string{"featureCompatibilityVersion 6.0 → 7.0"}},
		{actors.UpgradeFinished{Version: "7.0.14", FCV: "7.0"}, []string{"every member runs 7.0.14"}},
	} {
		got := describe(c.e)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%T: %q lacks %q", c.e, got, w)
			}
		}
	}
}

// The records a snapshot covers that the kube store kept are shown before the
// snapshot's line, as the story; the state is the snapshot's.
func TestReplayShowsTheHistoryKeptBeforeTheSnapshot(t *testing.T) {
	f, err := os.Open("testdata/demo-log.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	d, err := eventlog.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	recs := d.Records
	cut := len(recs) / 2
	s, err := actors.Fold(actors.Initial(), recs[:cut])
	if err != nil {
		t.Fatal(err)
	}
	l := loaded{stream: eventlog.Stream{Namespace: "db", Name: "demo", UID: "u-1"},
		snap: &eventlog.Snapshot{Seq: recs[cut-1].Seq, Time: recs[cut-1].Time}, recs: recs[cut:], before: recs[:cut]}
	var out bytes.Buffer
	if err := timeline(&out, l, s); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"# kept before the snapshot: seq 1 to", "Provisioning → Initiating", "# from the snapshot at seq"} {
		if !strings.Contains(text, want) {
			t.Errorf("timeline lacks %q:\n%s", want, text)
		}
	}
	if strings.Index(text, "Provisioning → Initiating") > strings.Index(text, "\n"+strconv.FormatInt(recs[cut].Seq, 10)+" ") {
		t.Errorf("the kept history is not before the records after the snapshot:\n%s", text)
	}
}
