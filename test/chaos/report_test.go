package chaos

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// busy is good() with phases, a second cluster, a whole-cluster fault and a
// steady stream of writes, as a run's timeline would show them.
func busy() *History {
	h := good()
	cB := "chaos/b"
	h.Clusters = append(h.Clusters, cB)
	for i := 0; i < 600; i++ {
		s := float64(i) / 10
		if s > 30 && s < 36 { // the control plane's restart stops chaos/b's writes
			continue
		}
		h.Ops = append(h.Ops, Op{Index: len(h.Ops), Cluster: cB, Client: i % 4, Kind: Insert, Value: int64(i + 1), Start: sec(s), End: sec(s + 0.05), Outcome: OK})
	}
	present := map[int64]bool{}
	for _, op := range h.Ops {
		if op.Cluster == cB {
			present[op.Value] = true
		}
	}
	h.Final = append(h.Final, Final{Cluster: cB, Present: present, Registers: map[string]int64{}})
	for i := 0; i < 60; i++ {
		phase := "Healthy"
		if i >= 10 && i < 19 {
			phase = "Recovering"
		}
		h.Phases = append(h.Phases, PhaseSample{At: sec(float64(i)), Cluster: cA, Phase: phase, Current: true},
			PhaseSample{At: sec(float64(i)), Cluster: cB, Phase: "Healthy", Current: true})
		h.Members = append(h.Members, MemberSample{At: sec(float64(i)), Cluster: cB, Member: "b-0.b:27017", State: "PRIMARY", Term: 1},
			MemberSample{At: sec(float64(i)), Cluster: cB, Member: "b-1.b:27017", Error: "connection refused"})
	}
	h.Faults = append(h.Faults, Fault{ID: 2, Kind: RestartControlPlane, Targets: []string{"apiserver", "etcd"}, Start: sec(30), Healed: sec(35),
		Happened: true, Evidence: "apiserver pid 100→200", HealthyAt: sec(38)})
	return h
}

func TestReportWritesEveryFile(t *testing.T) {
	h := busy()
	h.Ops[9].Value = 10 // a stale linearizable read: porcupine rejects chaos/a
	h.Ops[0].Error = "auth failed for " + secret
	v := Check(h, Bounds{})
	if v.Linearizable["chaos/a"] || !v.Linearizable["chaos/b"] {
		t.Fatalf("linearizable %v", v.Linearizable)
	}
	dir := t.TempDir()
	if err := WriteReport(dir, h, v); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"report.json", "history.ndjson", "members.ndjson", "phases.ndjson", "timeline.html", "linearizability-chaos_a.html"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(secret)) || bytes.Contains(b, []byte(base64.StdEncoding.EncodeToString([]byte(secret))[:12])) {
			t.Errorf("%s holds the secret", name)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "linearizability-chaos_b.html")); err == nil {
		t.Errorf("a visualization for a linearizable cluster")
	}

	var r struct {
		Seed    int64   `json:"seed"`
		Rerun   string  `json:"rerun"`
		Faults  []Fault `json:"faults"`
		Verdict struct {
			Violations   []Violation                `json:"violations"`
			Ops          map[OpKind]map[Outcome]int `json:"ops"`
			Linearizable map[string]bool            `json:"linearizable"`
			Heal         map[FaultKind]Percentiles  `json:"heal"`
		} `json:"verdict"`
	}
	b, _ := os.ReadFile(filepath.Join(dir, "report.json"))
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Seed != 7 || len(r.Faults) != 2 || len(r.Verdict.Violations) == 0 || r.Verdict.Linearizable["chaos/a"] ||
		r.Verdict.Ops[Insert][OK] != v.Ops[Insert][OK] || v.Ops[Insert][OK] < 500 || r.Verdict.Heal[KillMongod].Max != 9*time.Second || !strings.Contains(r.Rerun, "CHAOS_SEED=7") {
		t.Fatalf("report.json: %s", b)
	}

	f, _ := os.Open(filepath.Join(dir, "history.ndjson"))
	defer func() { _ = f.Close() }()
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); n++ {
		var op Op
		if err := json.Unmarshal(sc.Bytes(), &op); err != nil || op.Index != h.Ops[n].Index || op.Kind != h.Ops[n].Kind {
			t.Fatalf("line %d: %s (%v)", n+1, sc.Text(), err)
		}
	}
	if n != len(h.Ops) {
		t.Fatalf("%d lines for %d ops", n, len(h.Ops))
	}
}

func TestReportTimelineShowsTheRun(t *testing.T) {
	h := busy()
	v := Check(h, Bounds{})
	if !v.OK() {
		t.Fatalf("%+v", v.Violations)
	}
	var b bytes.Buffer
	if err := renderTimeline(&b, h, v); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	count := func(s string) int { return strings.Count(page, s) }
	for want, n := range map[string]int{
		`<rect class="fault"`:          2, // one band per fault
		`#1 kill-mongod chaos/a-0`:     1, // labelled with kind and targets
		`#2 restart-control-plane`:     1,
		`<rect class="member primary"`: 3, // a-0 in term 1, a-1 in term 2, b-0
		`<rect class="phase"`:          4, // chaos/a Healthy, Recovering, Healthy; chaos/b Healthy
		`<line class="healthy"`:        2,
		`chaos/b (linearizable: yes)`:  1,
		`>b-1</text>`:                  1, // a member row, named by its pod
		`Mgors phase`:                  2,
	} {
		if got := count(want); got != n {
			t.Errorf("%q: %d times, want %d", want, got, n)
		}
	}
	if count(`<rect class="writes"`) < 50 {
		t.Errorf("only %d bars of writes", count(`<rect class="writes"`))
	}
	// chaos/b's gap around the restart (30 s to 36 s) is marked.
	if !strings.Contains(page, `<rect class="gap"`) || !strings.Contains(page, "fault 2 restart-control-plane: no acknowledged write for 6") {
		t.Errorf("no write gap marked")
	}
	if !strings.Contains(page, `<rect class="member" x="`) || !strings.Contains(page, `fill="#e0413a"`) {
		t.Errorf("the unreachable member is not drawn")
	}
	if strings.Contains(page, "http://") && strings.Count(page, "http://") != strings.Count(page, "http://www.w3.org/2000/svg") {
		t.Errorf("the page refers to the network")
	}
	if strings.Contains(page, "ZgotmplZ") {
		t.Errorf("html/template refused a value")
	}
}

func TestReportTimelineStaysReadableWithFiftyFaults(t *testing.T) {
	h := busy()
	h.Faults = nil
	for i := 0; i < 50; i++ {
		s := float64(i) * 1.1
		h.Faults = append(h.Faults, Fault{ID: i + 1, Kind: FaultKinds[i%len(FaultKinds)], Cluster: cA, Targets: []string{"chaos/a-1"},
			Start: sec(s), Healed: sec(s + 0.5), Happened: true, Evidence: "x", HealthyAt: sec(s + 1)})
	}
	v := Check(h, Bounds{})
	var b bytes.Buffer
	if err := renderTimeline(&b, h, v); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), `class="fault-label"`); n != 50 {
		t.Fatalf("%d fault labels", n)
	}
	// Labels share at most maxLanes lanes: the picture does not grow with the faults.
	m := regexp.MustCompile(`<svg [^>]*height="([0-9.]+)"`).FindStringSubmatch(b.String())
	if m == nil {
		t.Fatal("no svg")
	}
	if height, _ := strconv.ParseFloat(m[1], 64); height > 20+laneH*maxLanes+300 {
		t.Fatalf("svg %s high", m[1])
	}
}

func TestSummaryNamesSeedFiguresAndOps(t *testing.T) {
	h := good()
	h.Kinds = []FaultKind{KillMongod, DeletePod}
	var b bytes.Buffer
	Summary(&b, h, Check(h, Bounds{}))
	out := b.String()
	for _, want := range []string{"chaos PASS", "seed 7", "CHAOS_SEED=7 CHAOS_DURATION=1m0s CHAOS_FAULTS=kill-mongod,delete-pod make chaos",
		"faults: 1, kill-mongod 1, delete-pod 0", "lost 0, phantom 0, split-brain 0", "chaos/a yes", "9s / 9s / 9s (1)", "16s / 16s / 16s (1)", "violations: none"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}

	delete(h.Final[0].Present, 2)
	h.Faults[0].Happened = false
	b.Reset()
	Summary(&b, h, Check(h, Bounds{}))
	out = b.String()
	for _, want := range []string{"chaos FAIL (2 violations)", "[lost]", "op 1 client 1 insert 2 ok [+2s, +2.1s]", "[fault-happened]", "fault 1: kill-mongod on [chaos/a-0]"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

// A kind only a Scenario records (ScenarioKinds, or a test's own) has its
// row in the summary after the schedule's kinds, with its time to Healthy.
func TestSummaryListsScenarioKinds(t *testing.T) {
	h := good()
	h.Kinds = []FaultKind{KillMongod}
	h.Faults = append(h.Faults,
		Fault{ID: 2, Kind: KeyfileRotation, Cluster: cA, Targets: []string{"a-keyfile"}, Start: sec(30), Healed: sec(50), Happened: true, HealthyAt: sec(52)},
		Fault{ID: 3, Kind: "whole-set-restart", Cluster: cA, Targets: []string{"a-0"}, Start: sec(53), Healed: sec(53), Happened: true, HealthyAt: sec(56)})
	var b bytes.Buffer
	Summary(&b, h, Check(h, Bounds{}))
	out := b.String()
	for _, want := range []string{"faults: 3, kill-mongod 1, keyfile-rotation 1, whole-set-restart 1", "keyfile-rotation   2s / 2s / 2s (1)",
		"whole-set-restart  3s / 3s / 3s (1)"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	var tl bytes.Buffer
	if err := renderTimeline(&tl, h, Check(h, Bounds{})); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tl.String(), string(KeyfileRotation)) {
		t.Error("the timeline lacks keyfile-rotation")
	}
}

func TestReportReadBackJudgesTheSame(t *testing.T) {
	h := busy()
	h.Logs, h.Secrets = nil, nil // never written, so not read back
	h.Ops[9].Value = 10          // a stale read
	delete(h.Final[0].Present, 2)
	h.Faults[1].Happened = false
	want := Check(h, Bounds{})
	dir := t.TempDir()
	if err := WriteReport(dir, h, want); err != nil {
		t.Fatal(err)
	}
	back, err := ReadReport(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := Check(back, Bounds{})
	if len(got.Violations) != 3 || !reflect.DeepEqual(got.Violations, want.Violations) {
		t.Fatalf("read back:\n%+v\nwant\n%+v", got.Violations, want.Violations)
	}
	if !reflect.DeepEqual(got.Heal, want.Heal) || !reflect.DeepEqual(got.WriteGap, want.WriteGap) || !reflect.DeepEqual(got.Ops, want.Ops) {
		t.Fatalf("figures differ: %+v vs %+v", got, want)
	}
}
