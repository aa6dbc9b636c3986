package chaos

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 4, 0, 0, 0, time.UTC)

func sec(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

const (
	cA = "chaos/a"
	m0 = "a-0.a:27017"
	m1 = "a-1.a:27017"
	m2 = "a-2.a:27017"
)

const secret = "s3cr3t-admin-password-42"

// good is a small run that breaks nothing: inserts, register writes and reads,
// one fault that happened and healed, members that agree.
func good() *History {
	h := &History{Seed: 7, Duration: time.Minute, Kinds: FaultKinds, Clusters: []string{cA}, Started: t0, Ended: sec(60)}
	op := func(k OpKind, key string, v int64, concern string, start, end float64, o Outcome) {
		h.Ops = append(h.Ops, Op{Index: len(h.Ops), Cluster: cA, Client: len(h.Ops) % 3, Kind: k, Key: key, Value: v,
			Concern: concern, Start: sec(start), End: sec(end), Outcome: o})
	}
	op(Insert, "", 1, "", 1, 1.1, OK)             // 0
	op(Insert, "", 2, "", 2, 2.1, OK)             // 1
	op(Insert, "", 3, "", 3, 30, Unknown)         // 2: maybe
	op(Insert, "", 4, "", 4, 4.1, Failed)         // 3: did not happen
	op(Write, "r", 10, "", 5, 5.1, OK)            // 4
	op(Read, "r", 10, "linearizable", 6, 6.1, OK) // 5
	op(Write, "r", 11, "", 7, 20, Unknown)        // 6: nobody saw it
	op(Read, "r", 10, "majority", 8, 8.1, OK)     // 7
	op(Write, "r", 12, "", 21, 21.1, OK)          // 8
	op(Read, "r", 12, "linearizable", 22, 22.2, OK)
	op(Insert, "", 5, "", 25, 25.1, OK)
	h.Final = []Final{{Cluster: cA, Present: map[int64]bool{1: true, 2: true, 5: true}, Registers: map[string]int64{"r": 12},
		PVCStart: map[string]string{"data-a-0": "u0", "data-a-1": "u1"}, PVCEnd: map[string]string{"data-a-0": "u0", "data-a-1": "u1"}}}
	for i := 0; i < 10; i++ {
		term := int64(1)
		primary := m0
		if i >= 5 {
			term, primary = 2, m1
		}
		for _, m := range []string{m0, m1, m2} {
			s := MemberSample{At: sec(float64(i)), Cluster: cA, Member: m, State: "SECONDARY", Term: term,
				ReplicaSetID: "rs1", ConfigVersion: 1, ConfigTerm: term}
			if m == primary {
				s.State, s.ElectionID = "PRIMARY", "7fffffff000000000000000"+string(rune('0'+term))
			}
			h.Members = append(h.Members, s)
		}
	}
	h.Faults = []Fault{{ID: 1, Kind: KillMongod, Cluster: cA, Targets: []string{"chaos/a-0"}, Start: sec(10), Healed: sec(10),
		Happened: true, Evidence: "restartCount 0→1", HealthyAt: sec(19)}}
	h.Deletions = []PodDeletion{{At: sec(12), Pod: "chaos/a-0", Fault: 1}}
	h.Forced = []ForcedReconfig{{At: sec(40), Cluster: cA}}
	h.Logs = map[string]string{
		"operator/mgors-0": `{"level":"info","cluster":"chaos/a","event":"MembersObserved","msg":"panic button not pressed"}` + "\n" +
			`{"level":"warn","cmd":"fatal","msg":"ok"}` + "\n" +
			"I1201 04:00:01.123456       1 leaderelection.go:257] fatal words in a klog info line, panic: not at the start",
		"member/chaos/a-0": `{"t":{"$date":"2026-12-01T04:00:00Z"},"s":"I","c":"CONTROL","msg":"fatal words in an info line"}`,
	}
	h.Secrets = []string{secret, "short"}
	return h
}

func properties(v Verdict) []string {
	var out []string
	for _, x := range v.Violations {
		out = append(out, x.Property)
	}
	return out
}

func TestCheckGoodHistoryPasses(t *testing.T) {
	h := good()
	v := Check(h, Bounds{})
	if !v.OK() {
		t.Fatalf("violations in a good history: %+v", v.Violations)
	}
	if !v.Linearizable[cA] || v.Lost != 0 || v.Phantom != 0 || v.SplitBrain != 0 {
		t.Fatalf("figures: %+v", v)
	}
	if got := v.Ops[Insert]; got[OK] != 3 || got[Unknown] != 1 || got[Failed] != 1 {
		t.Fatalf("insert counts %v", got)
	}
	if p := v.Heal[KillMongod]; p.N != 1 || p.Max != 9*time.Second {
		t.Fatalf("heal %+v", p)
	}
	// The fault's window is 10..19 s; the acknowledged writes around it end at
	// 5.1 s and 21.1 s.
	if p := v.WriteGap[KillMongod]; p.N != 1 || p.Max != 16*time.Second {
		t.Fatalf("write gap %+v, gaps %+v", p, v.Gaps)
	}
}

// TestCheckViolations breaks the good history one property at a time.
func TestCheckViolations(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(h *History)
		want  string
		ops   []int // the ops the violation must name, when it names some
		fault int
	}{
		{"lost insert", func(h *History) { delete(h.Final[0].Present, 2) }, PropertyLost, []int{1}, 0},
		{"final read failed", func(h *History) { h.Final[0].ReadError = "no primary" }, PropertyLost, nil, 0},
		{"no final read", func(h *History) { h.Final = nil }, PropertyLost, nil, 0},
		{"register went back", func(h *History) { h.Final[0].Registers["r"] = 10 }, PropertyLost, []int{4, 8}, 0},
		{"register vanished", func(h *History) { delete(h.Final[0].Registers, "r") }, PropertyLost, []int{4, 8}, 0},
		{"phantom insert", func(h *History) { h.Final[0].Present[99] = true }, PropertyPhantom, nil, 0},
		{"failed insert present", func(h *History) { h.Final[0].Present[4] = true }, PropertyPhantom, []int{3}, 0},
		{"register never written", func(h *History) { h.Final[0].Registers["r"] = 77 }, PropertyPhantom, nil, 0},
		{"majority read of nothing written", func(h *History) { h.Ops[7].Value = 55 }, PropertyPhantom, []int{7}, 0},
		{"majority read from the future", func(h *History) {
			h.Ops[7].Value = 12 // op 8 writes 12 from 21 s, the read ended at 8.1 s
		}, PropertyPhantom, []int{7, 8}, 0},
		{"stale linearizable read", func(h *History) {
			h.Ops[9].Value = 10 // read at 22 s after write 12 was acknowledged at 21.1 s
		}, PropertyLinearizable, []int{9}, 0},
		{"non-linearizable flip-flop", func(h *History) {
			h.Ops = append(h.Ops,
				Op{Cluster: cA, Client: 4, Kind: Write, Key: "q", Value: 1, Start: sec(40), End: sec(41), Outcome: OK},
				Op{Cluster: cA, Client: 5, Kind: Write, Key: "q", Value: 2, Start: sec(40), End: sec(41), Outcome: OK},
				Op{Cluster: cA, Client: 6, Kind: Read, Key: "q", Value: 1, Concern: "linearizable", Start: sec(42), End: sec(43), Outcome: OK},
				Op{Cluster: cA, Client: 7, Kind: Read, Key: "q", Value: 2, Concern: "linearizable", Start: sec(44), End: sec(45), Outcome: OK},
			)
			h.Final[0].Registers["q"] = 2
		}, PropertyLinearizable, []int{14}, 0},
		{"two primaries in one term", func(h *History) {
			h.Members = append(h.Members, MemberSample{At: sec(3.5), Cluster: cA, Member: m2, State: "PRIMARY", Term: 1, ReplicaSetID: "rs1", ConfigVersion: 1, ConfigTerm: 1})
		}, PropertySplitBrain, nil, 0},
		{"two primaries with one electionId", func(h *History) {
			h.Members = append(h.Members, MemberSample{At: sec(3.5), Cluster: cA, Member: m2, State: "PRIMARY", Term: 3, ElectionID: "7fffffff0000000000000001"})
		}, PropertySplitBrain, nil, 0},
		{"term went back", func(h *History) {
			h.Members = append(h.Members, MemberSample{At: sec(9.5), Cluster: cA, Member: m2, State: "SECONDARY", Term: 1})
		}, PropertySplitBrain, nil, 0},
		{"replicaSetId changed", func(h *History) { h.Members[len(h.Members)-1].ReplicaSetID = "rs2" }, PropertyInitiatedOnce, nil, 0},
		{"config version went back", func(h *History) {
			h.Members = append(h.Members, MemberSample{At: sec(9.5), Cluster: cA, Member: m2, State: "SECONDARY", Term: 2, ConfigVersion: 1, ConfigTerm: 1, ReplicaSetID: "rs1"})
		}, PropertyInitiatedOnce, nil, 0},
		{"slow heal", func(h *History) { h.Faults[0].HealthyAt = sec(10 + 200) }, PropertyHealthy, nil, 1},
		{"never healthy", func(h *History) { h.Faults[0].HealthyAt = time.Time{} }, PropertyHealthy, nil, 1},
		{"replay error", func(h *History) { h.Final[0].ReplayError = "gap after seq 41" }, PropertyReplay, nil, 0},
		{"PVC replaced", func(h *History) { h.Final[0].PVCEnd["data-a-1"] = "u9" }, PropertyDestroyed, nil, 0},
		{"PVC gone", func(h *History) { delete(h.Final[0].PVCEnd, "data-a-0") }, PropertyDestroyed, nil, 0},
		{"forced reconfig with a majority", func(h *History) { h.Forced[0].MajorityAnswered = true }, PropertyDestroyed, nil, 0},
		{"deletion while the operator was down", func(h *History) {
			h.Deletions = append(h.Deletions, PodDeletion{At: sec(30), Pod: "chaos/a-2", OperatorDown: true})
		}, PropertyDestroyed, nil, 0},
		{"fault not happened", func(h *History) { h.Faults[0].Happened = false }, PropertyFaultHappened, nil, 1},
		{"go panic", func(h *History) {
			h.Logs["operator/mgors-1"] = "starting\npanic: runtime error: index out of range [3] with length 3\n\ngoroutine 1 [running]:"
		}, PropertyPanic, nil, 0},
		{"go panic after a kubectl timestamp", func(h *History) {
			h.Logs["operator/mgors-1"] = "2026-12-01T04:00:01.123456789Z fatal error: concurrent map writes"
		}, PropertyPanic, nil, 0},
		{"klog fatal", func(h *History) {
			h.Logs["operator/mgors-1"] = "F1201 04:00:01.123456    4242 leaderelection.go:123] lost it"
		}, PropertyPanic, nil, 0},
		{"zerolog fatal", func(h *History) { h.Logs["operator/mgors-1"] = `{"level":"fatal","err":"x","msg":"cannot start"}` }, PropertyPanic, nil, 0},
		{"recovered goroutine panic", func(h *History) {
			h.Logs["operator/mgors-1"] = `{"level":"warn","err":"panic: nil map\ngoroutine 5","msg":"persisting events failed"}`
		}, PropertyPanic, nil, 0},
		{"mongod fatal", func(h *History) {
			h.Logs["member/chaos/a-1"] = `{"t":{"$date":"2026-12-01T04:00:00Z"},"s":"F","c":"CONTROL","id":20557,"msg":"Fatal error; exiting"}`
		}, PropertyPanic, nil, 0},
		{"mongod-sim exit line", func(h *History) {
			h.Logs["member/chaos/a-1"] = `{"s":"F","c":"CONTROL","id":20557,"msg":"Fatal error; exiting","attr":{"err":"dbpath","exitCode":100}}`
		}, PropertyPanic, nil, 0},
		{"secret in plain text", func(h *History) { h.Logs["events"] = "Warning auth failed for " + secret }, PropertySecret, nil, 0},
		{"secret base64", func(h *History) {
			h.Logs["status/chaos/a"] = `{"data":"` + base64.StdEncoding.EncodeToString([]byte(secret)) + `"}`
		}, PropertySecret, nil, 0},
		{"secret base64 inside a longer blob", func(h *History) {
			h.Logs["eventlog/chaos/a"] = base64.StdEncoding.EncodeToString([]byte("user=admin;pass=" + secret + ";"))
		}, PropertySecret, nil, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := good()
			c.edit(h)
			v := Check(h, Bounds{})
			if v.OK() {
				t.Fatalf("no violation")
			}
			var found *Violation
			for i, x := range v.Violations {
				if x.Property == c.want {
					found = &v.Violations[i]
					break
				}
			}
			if found == nil {
				t.Fatalf("want %s, got %v: %+v", c.want, properties(v), v.Violations)
			}
			for _, i := range c.ops {
				if !slices.Contains(found.Ops, i) {
					t.Errorf("violation names ops %v, want %d among them: %s", found.Ops, i, found.Detail)
				}
			}
			if found.Fault != c.fault {
				t.Errorf("fault %d, want %d", found.Fault, c.fault)
			}
			for _, x := range v.Violations {
				if strings.Contains(x.Detail, secret) || strings.Contains(x.Detail, base64.StdEncoding.EncodeToString([]byte(secret))[:10]) {
					t.Errorf("a Detail shows the secret: %s", x.Detail)
				}
			}
		})
	}
}

func TestCheckSecretInAPanicLineIsBlanked(t *testing.T) {
	h := good()
	h.Logs["operator/mgors-1"] = "panic: login failed with password " + secret
	v := Check(h, Bounds{})
	if got := properties(v); !slices.Contains(got, PropertyPanic) || !slices.Contains(got, PropertySecret) {
		t.Fatalf("got %v", got)
	}
	for _, x := range v.Violations {
		if strings.Contains(x.Detail, secret) {
			t.Fatalf("secret shown: %s", x.Detail)
		}
	}
}

func TestCheckUnknownOutcomesMayGoEitherWay(t *testing.T) {
	for _, present := range []bool{false, true} {
		h := good()
		h.Final[0].Present[3] = present // op 2, an unknown insert
		if v := Check(h, Bounds{}); !v.OK() {
			t.Fatalf("present=%v: %+v", present, v.Violations)
		}
	}
	// The unknown write of 11 (op 6) may take effect late: a read of 11 after
	// the write of 12 is then linearizable, and so is 11 as the final value.
	h := good()
	h.Ops[9].Value = 11
	h.Final[0].Registers["r"] = 11
	if v := Check(h, Bounds{}); !v.OK() {
		t.Fatalf("late unknown write: %+v", v.Violations)
	}
}

func TestCheckForcedReconfigWithoutTermComparesVersions(t *testing.T) {
	h := good()
	// A forced reconfig writes a config without a term and a higher version: not a step back.
	h.Members = append(h.Members, MemberSample{At: sec(9.6), Cluster: cA, Member: m2, State: "SECONDARY", Term: 2, ConfigVersion: 100001, ConfigTerm: -1, ReplicaSetID: "rs1"})
	if v := Check(h, Bounds{}); !v.OK() {
		t.Fatalf("%+v", v.Violations)
	}
}

func TestCheckPercentilesNearestRank(t *testing.T) {
	var d []time.Duration
	for i := 100; i >= 1; i-- {
		d = append(d, time.Duration(i)*time.Second)
	}
	p := percentiles(d)
	if p.P50 != 50*time.Second || p.P99 != 99*time.Second || p.Max != 100*time.Second || p.N != 100 {
		t.Fatalf("%+v", p)
	}
	if p := percentiles(nil); p != (Percentiles{}) {
		t.Fatalf("empty: %+v", p)
	}
	if p := percentiles([]time.Duration{3, 1, 2}); p.P50 != 2 || p.P99 != 3 {
		t.Fatalf("three: %+v", p)
	}
}

// A replica set initiated afresh (every volume lost, a person approved) starts
// at term 1 again: a changed replicaSetId, not two primaries in one term.
func TestSplitBrainIsJudgedWithinOneReplicaSet(t *testing.T) {
	h := good()
	h.Members = append(h.Members,
		MemberSample{At: sec(50), Cluster: cA, Member: m2, State: "PRIMARY", Term: 1, ElectionID: "7fffffff0000000000000001", ReplicaSetID: "rs2", ConfigVersion: 1, ConfigTerm: 1},
		MemberSample{At: sec(51), Cluster: cA, Member: m2, State: "PRIMARY", Term: 1})
	v := Check(h, Bounds{})
	if got := properties(v); !slices.Contains(got, PropertyInitiatedOnce) || slices.Contains(got, PropertySplitBrain) {
		t.Fatalf("want initiated-once and no split-brain, got %v: %+v", got, v.Violations)
	}
}
