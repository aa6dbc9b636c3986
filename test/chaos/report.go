package chaos

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mgors/operator/test/secretscan"
)

// Rerun is the command that repeats a run's schedule: the same seed, duration
// and fault kinds give the same schedule.
func Rerun(h *History) string {
	cmd := fmt.Sprintf("CHAOS_SEED=%d CHAOS_DURATION=%s", h.Seed, h.Duration)
	if len(h.Kinds) > 0 && len(h.Kinds) < len(FaultKinds) {
		kinds := make([]string, len(h.Kinds))
		for i, k := range h.Kinds {
			kinds[i] = string(k)
		}
		cmd += " CHAOS_FAULTS=" + strings.Join(kinds, ",")
	}
	return cmd + " make chaos"
}

// Summary writes the human summary of a run: how to rerun it, the faults, the
// operations, the safety figures, the times to Healthy and the write gaps per
// fault kind, and each violation with the operations it names.
func Summary(w io.Writer, h *History, v Verdict) {
	var b strings.Builder
	summary(&b, h, v)
	_, _ = io.WriteString(w, b.String()) // a terminal that fails to show it changes no verdict
}

func summary(w *strings.Builder, h *History, v Verdict) {
	verdict := "PASS"
	if !v.OK() {
		verdict = fmt.Sprintf("FAIL (%d violations)", len(v.Violations))
	}
	fmt.Fprintf(w, "chaos %s: seed %d, %s, clusters %s\n", verdict, h.Seed, h.Ended.Sub(h.Started).Round(time.Second), strings.Join(clusters(h), ", "))
	fmt.Fprintf(w, "rerun: %s\n", Rerun(h))

	byKind := map[FaultKind]int{}
	for _, f := range h.Faults {
		byKind[f.Kind]++
	}
	fmt.Fprintf(w, "faults: %d", len(h.Faults))
	for _, k := range kindsOf(h, byKind) {
		fmt.Fprintf(w, ", %s %d", k, byKind[k])
	}
	fmt.Fprintln(w)

	var rows strings.Builder
	rows.WriteString("ops\tok\tfailed\tunknown\t\n")
	for _, k := range []OpKind{Insert, Write, Read} {
		n := v.Ops[k]
		fmt.Fprintf(&rows, "%s\t%d\t%d\t%d\t\n", k, n[OK], n[Failed], n[Unknown])
	}
	table(w, rows.String(), tabwriter.AlignRight)

	lin := make([]string, 0, len(v.Linearizable))
	for _, c := range sortedKeys(v.Linearizable) {
		lin = append(lin, fmt.Sprintf("%s %s", c, yesNo(v.Linearizable[c])))
	}
	fmt.Fprintf(w, "lost %d, phantom %d, split-brain %d; linearizable: %s\n", v.Lost, v.Phantom, v.SplitBrain, strings.Join(lin, ", "))
	w.WriteString(restoreLine(h, v))

	rows.Reset()
	rows.WriteString("fault kind\tto Healthy p50 / p99 / max (n)\twrite gap p50 / p99 / max (n)\n")
	for _, k := range kindsOf(h, byKind) {
		fmt.Fprintf(&rows, "%s\t%s\t%s\n", k, v.Heal[k], v.WriteGap[k])
	}
	table(w, rows.String(), 0)

	if v.OK() {
		fmt.Fprintln(w, "violations: none")
		return
	}
	fmt.Fprintf(w, "violations: %d\n", len(v.Violations))
	for i, x := range v.Violations {
		fmt.Fprintf(w, "%d. [%s] %s\n", i+1, x.Property, x.Detail)
		if x.Fault != 0 {
			for _, f := range h.Faults {
				if f.ID == x.Fault {
					fmt.Fprintf(w, "   fault %d: %s on %v, %s to %s, evidence %q\n", f.ID, f.Kind, f.Targets, at(h, f.Start), at(h, f.Healed), f.Evidence)
				}
			}
		}
		const show = 20
		for j, k := range x.Ops {
			if j == show {
				fmt.Fprintf(w, "   … and %d more ops (history.ndjson has them all)\n", len(x.Ops)-show)
				break
			}
			fmt.Fprintf(w, "   %s\n", describeOp(h, k))
		}
	}
}

// table aligns tab-separated rows.
func table(w *strings.Builder, rows string, flags uint) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', flags)
	_, _ = tw.Write([]byte(rows)) // into a strings.Builder: cannot fail
	_ = tw.Flush()
}

// String shows percentiles as the summary does.
func (p Percentiles) String() string {
	if p.N == 0 {
		return "-"
	}
	r := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	return fmt.Sprintf("%s / %s / %s (%d)", r(p.P50), r(p.P99), r(p.Max), p.N)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}

// kindsOf lists the kinds a run could use or used, in FaultKinds' order,
// then the kinds a Scenario recorded (ScenarioKinds, then any other by
// name), so each has its row in the summary.
func kindsOf(h *History, used map[FaultKind]int) []FaultKind {
	var out []FaultKind
	for _, k := range FaultKinds {
		if used[k] > 0 || len(h.Kinds) == 0 || slices.Contains(h.Kinds, k) {
			out = append(out, k)
		}
	}
	for _, k := range ScenarioKinds {
		if used[k] > 0 {
			out = append(out, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(used)) {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// report is report.json: the History's JSON fields and the Verdict.
type report struct {
	*History
	Rerun   string  `json:"rerun"`
	Verdict Verdict `json:"verdict"`
}

// WriteReport writes a run's files into dir:
//   - report.json: the History's JSON fields, how to rerun it, and the Verdict;
//   - history.ndjson: every Op, one JSON object a line;
//   - members.ndjson and phases.ndjson: every member and Mgors sample;
//   - present.json: per cluster the ids the final read found;
//   - timeline.html: the run on one page (timeline.html.tmpl);
//   - linearizability-<ns>_<name>.html: porcupine's own view of each register
//     history it rejected.
//
// Every file is scrubbed of the run's Secrets before it is written.
func WriteReport(dir string, h *History, v Verdict) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	r := secretscan.New(h.Secrets)
	write := func(name string, fill func(w io.Writer) error) error {
		var b bytes.Buffer
		if err := fill(&b); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return os.WriteFile(filepath.Join(dir, name), []byte(r.Redact(b.String())), 0o644)
	}
	if err := write("report.json", func(w io.Writer) error {
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		return e.Encode(report{History: h, Rerun: Rerun(h), Verdict: v})
	}); err != nil {
		return err
	}
	if err := write("history.ndjson", func(w io.Writer) error { return lines(w, h.Ops) }); err != nil {
		return err
	}
	if err := write("members.ndjson", func(w io.Writer) error { return lines(w, h.Members) }); err != nil {
		return err
	}
	if err := write("phases.ndjson", func(w io.Writer) error { return lines(w, h.Phases) }); err != nil {
		return err
	}
	if err := write("present.json", func(w io.Writer) error { return json.NewEncoder(w).Encode(presentIDs(h)) }); err != nil {
		return err
	}
	if err := write("timeline.html", func(w io.Writer) error { return renderTimeline(w, h, v) }); err != nil {
		return err
	}
	names := sortedKeys(v.lin)
	for _, c := range names {
		lin := v.lin[c]
		name := "linearizability-" + strings.ReplaceAll(c, "/", "_") + ".html"
		if err := write(name, func(w io.Writer) error { return visualize(w, lin) }); err != nil {
			return err
		}
	}
	return nil
}

func lines[T any](w io.Writer, items []T) error {
	bw := bufio.NewWriter(w)
	e := json.NewEncoder(bw)
	for _, it := range items {
		if err := e.Encode(it); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// sortedFaults lists the faults by start.
func sortedFaults(h *History) []Fault {
	f := append([]Fault(nil), h.Faults...)
	sort.SliceStable(f, func(i, j int) bool { return f[i].Start.Before(f[j].Start) })
	return f
}
