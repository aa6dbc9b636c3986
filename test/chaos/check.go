package chaos

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

// The properties the checker judges (Violation.Property). docs/design/chaos.md
// says what each would catch.
const (
	PropertyLost          = "lost"           // an acknowledged write missing at the end
	PropertyPhantom       = "phantom"        // a value no client (successfully or maybe) wrote
	PropertyLinearizable  = "linearizable"   // the register history has no linearization
	PropertySplitBrain    = "split-brain"    // two primaries in one term, or a term going back
	PropertyInitiatedOnce = "initiated-once" // replicaSetId changed or a config went back
	PropertyHealthy       = "healthy"        // a healed fault not followed by Healthy within the bound
	PropertyReplay        = "replay"         // mgorsctl replay --verify failed
	PropertyDestroyed     = "destroyed"      // a PVC replaced, a forced reconfig with a majority, a deletion while the operator was down
	PropertyFaultHappened = "fault-happened" // a fault without evidence that it took effect
	PropertyPanic         = "panic"          // a panic or fatal line in a log
	PropertySecret        = "secret"         // a Secret value in a log, an Event, an event log or a status
)

// Bounds are the limits a run is judged against.
type Bounds struct {
	// Healthy: a fault healed must see every Mgors Healthy and current within
	// this (default 3m).
	Healthy time.Duration
	// Linearizable is porcupine's time limit per cluster (default 2m); a history
	// it cannot decide in time fails the run, as it proves nothing.
	Linearizable time.Duration
}

func (b Bounds) withDefaults() Bounds {
	if b.Healthy <= 0 {
		b.Healthy = 3 * time.Minute
	}
	if b.Linearizable <= 0 {
		b.Linearizable = 2 * time.Minute
	}
	return b
}

// Violation is one broken property.
type Violation struct {
	Property string `json:"property"`
	// Detail is for a person: what, where, when. It never holds a secret.
	Detail string `json:"detail"`
	// Ops are indexes into History.Ops of the operations the failure names.
	Ops []int `json:"ops,omitempty"`
	// Fault is the ID of the fault involved, 0 if none.
	Fault int `json:"fault,omitempty"`
}

// Percentiles summarises durations by nearest rank; all zero when N is 0.
type Percentiles struct {
	P50 time.Duration `json:"p50"`
	P99 time.Duration `json:"p99"`
	Max time.Duration `json:"max"`
	N   int           `json:"n"`
}

// Gap is the longest stretch without an acknowledged write in one cluster
// around one fault (CloudNativePG's write gap, measured from the data itself).
type Gap struct {
	Fault   int       `json:"fault"`
	Kind    FaultKind `json:"kind"`
	Cluster string    `json:"cluster"`
	// From is the End of the last acknowledged write before the gap (the run's
	// start if none), To the End of the next one (the run's end if none).
	From time.Time     `json:"from"`
	To   time.Time     `json:"to"`
	Len  time.Duration `json:"len"`
}

// Verdict is the checker's judgement of a History and the figures of the report.
type Verdict struct {
	Violations []Violation `json:"violations"`

	Ops        map[OpKind]map[Outcome]int `json:"ops"`
	Lost       int                        `json:"lost"`       // acknowledged inserts missing, plus registers whose final value went back
	Phantom    int                        `json:"phantom"`    // values found that no client maybe wrote
	SplitBrain int                        `json:"splitBrain"` // terms (or electionIds) with two primaries
	// AtRisk counts the operations inside a window a forced reconfig recorded
	// at risk, judged as unknown (see History.AtRisk).
	AtRisk int `json:"atRisk,omitempty"`
	// Heal is the time from Healed to HealthyAt per fault kind.
	Heal map[FaultKind]Percentiles `json:"heal"`
	// WriteGap is the longest gap per fault (Gaps) summarised per kind.
	WriteGap map[FaultKind]Percentiles `json:"writeGap"`
	Gaps     []Gap                     `json:"gaps"`
	// Linearizable says per cluster whether porcupine found a linearization of
	// its register history.
	Linearizable map[string]bool `json:"linearizable"`
	// Restore is the figures of the point-in-time restore's check; nil
	// without a restore (or when it failed).
	Restore *RestoreCounts `json:"restore,omitempty"`

	// lin keeps porcupine's answer for the clusters it rejected, for WriteReport's
	// visualization.
	lin map[string]linResult
}

// OK is true when no property was violated.
func (v Verdict) OK() bool { return len(v.Violations) == 0 }

// Check judges a whole History against every property. It is pure: it reads h
// and returns the judgement (porcupine runs its own goroutines inside).
func Check(h *History, b Bounds) Verdict {
	b = b.withDefaults()
	h, excused := excuseAtRisk(h)
	v := Verdict{
		AtRisk:       excused,
		Ops:          countOps(h.Ops),
		Heal:         map[FaultKind]Percentiles{},
		WriteGap:     map[FaultKind]Percentiles{},
		Linearizable: map[string]bool{},
		lin:          map[string]linResult{},
	}
	checkSet(h, &v)
	checkRegisters(h, b, &v)
	checkMembers(h, &v)
	checkFaults(h, b, &v)
	checkOperator(h, &v)
	checkLogs(h, &v)
	checkRestore(h, &v)
	return v
}

func (v *Verdict) add(property string, fault int, ops []int, format string, args ...any) {
	v.Violations = append(v.Violations, Violation{Property: property, Detail: fmt.Sprintf(format, args...), Ops: ops, Fault: fault})
}

func countOps(ops []Op) map[OpKind]map[Outcome]int {
	n := map[OpKind]map[Outcome]int{}
	for _, op := range ops {
		if n[op.Kind] == nil {
			n[op.Kind] = map[Outcome]int{}
		}
		n[op.Kind][op.Outcome]++
	}
	return n
}

// clusters lists every cluster the history names, sorted.
func clusters(h *History) []string {
	seen := map[string]bool{}
	for _, c := range h.Clusters {
		seen[c] = true
	}
	for _, op := range h.Ops {
		seen[op.Cluster] = true
	}
	for _, f := range h.Final {
		seen[f.Cluster] = true
	}
	out := make([]string, 0, len(seen))
	for c := range seen {
		if c != "" {
			out = append(out, c)
		}
	}
	sort.Strings(out)
	return out
}

// percentiles by nearest rank: the p-th percentile of n sorted values is the
// value at rank ceil(p/100*n).
func percentiles(d []time.Duration) Percentiles {
	if len(d) == 0 {
		return Percentiles{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	rank := func(p int) time.Duration {
		r := (p*len(s) + 99) / 100
		return s[max(r, 1)-1]
	}
	return Percentiles{P50: rank(50), P99: rank(99), Max: s[len(s)-1], N: len(s)}
}

// at formats a time as an offset from the run's start, how the summary and
// the timeline show it.
func at(h *History, t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return "+" + t.Sub(h.Started).Round(time.Millisecond).String()
}

// opList names a few operations for a Detail.
func opList(h *History, idx []int) string {
	const show = 5
	s := ""
	for i, k := range idx {
		if i == show {
			s += fmt.Sprintf(", … %d more", len(idx)-show)
			break
		}
		if i > 0 {
			s += ", "
		}
		s += describeOp(h, k)
	}
	return s
}

func describeOp(h *History, k int) string {
	if k < 0 || k >= len(h.Ops) {
		return fmt.Sprintf("op %d", k)
	}
	op := h.Ops[k]
	what := fmt.Sprintf("%s %d", op.Kind, op.Value)
	if op.Kind != Insert {
		what = fmt.Sprintf("%s %s=%d", op.Kind, op.Key, op.Value)
		if op.Concern != "" {
			what += " (" + op.Concern + ")"
		}
	}
	return fmt.Sprintf("op %d client %d %s %s [%s, %s]", k, op.Client, what, op.Outcome, at(h, op.Start), at(h, op.End))
}
