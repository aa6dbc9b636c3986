package scale

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	var s []time.Duration
	for i := 1; i <= 100; i++ {
		s = append(s, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 50 * time.Millisecond}, {99, 99 * time.Millisecond}, {100, 100 * time.Millisecond}, {0, time.Millisecond}} {
		if got := Percentile(s, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if got := Percentile(nil, 50); got != 0 {
		t.Errorf("p50 of nothing = %v", got)
	}
}

func TestSummariseUnsorted(t *testing.T) {
	r := Summarise([]time.Duration{30 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond}, 2)
	if r.P50 != 20 || r.Max != 30 || r.P99 != 30 || r.Samples != 3 || r.Missed != 2 {
		t.Errorf("got %+v", r)
	}
}

func TestResultsRoundTripIntoTable(t *testing.T) {
	path := t.TempDir() + "/results.jsonl"
	in := []Result{
		{Row: RowMgors, N: 10, QPS: OperatorQPS, Healthy: 10, ToHealthy: 12.3, Kill: Reaction{P50: 4, P99: 9, Max: 9, Samples: 10}, Reads: 60, Heap: 40.5, RSS: 80},
		{Row: RowBaseline, N: 10, QPS: OperatorQPS, Healthy: 7, ToHealthy: 600, Spec: Reaction{Missed: 10}},
	}
	for _, r := range in {
		if err := AppendResult(path, r); err != nil {
			t.Fatal(err)
		}
	}
	var file bytes.Buffer
	b, err := readFile(path)
	if err != nil {
		t.Fatal(err)
	}
	file.Write(b)
	out, err := ReadResults(&file)
	if err != nil || len(out) != 2 || out[0].Kill.P99 != 9 || out[1].Healthy != 7 {
		t.Fatalf("read back %+v, %v", out, err)
	}
	var table strings.Builder
	if err := Table(&table, out); err != nil {
		t.Fatal(err)
	}
	got := table.String()
	for _, want := range []string{"| mgors | 10 | 12.3 | 4.00 / 9.00 / 9.00 |", "| baseline | 10 | >600 (7 of 10) |", "none (10 missed)"} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
}
