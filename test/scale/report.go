package scale

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"
)

// Result is one row of the table: one implementation at one N.
type Result struct {
	Row     string `json:"row"`
	N       int    `json:"n"`
	Members int32  `json:"members"`
	// QPS is the row's client rate limit.
	QPS float32 `json:"qps"`
	// Healthy is how many clusters were Healthy when the wait ended, and
	// ToHealthy how long after the last create returned they all were
	// (the wait's bound when some never were).
	Healthy   int     `json:"healthy"`
	ToHealthy float64 `json:"toHealthySeconds"`
	// Kill and Spec are the reactions to a member killed and to a spec
	// change; WriteP50 is the harness's own fault write's round trip.
	Kill     Reaction `json:"kill"`
	Spec     Reaction `json:"spec"`
	WriteP50 float64  `json:"faultWriteP50Ms"`
	// KillDelivery is, for the kills, from the write's answer to the
	// harness's own watch of the pods seeing it: the API server's share
	// of a kill's reaction, the same for both rows.
	KillDelivery Reaction `json:"killDelivery"`
	// Observe is how long one World.Observe took in the steady window,
	// ObserveUnderFaults during the member kills.
	Observe            Reaction `json:"observe"`
	ObserveUnderFaults Reaction `json:"observeUnderFaults"`
	// Steady state, per cluster and minute over Window seconds.
	Window   float64 `json:"windowSeconds"`
	Reads    float64 `json:"readsPerClusterMinute"`
	Writes   float64 `json:"writesPerClusterMinute"`
	Appends  float64 `json:"appendsPerClusterMinute"`
	Commands float64 `json:"commandsPerClusterMinute"`
	// CPU is CPU milliseconds per cluster and minute; CPUCores the whole
	// process's cores in use.
	CPU      float64 `json:"cpuMsPerClusterMinute"`
	CPUCores float64 `json:"cpuCores"`
	// Heap is the live heap after GC per cluster (what the row added to
	// the harness's own), RSS the process's.
	Heap float64 `json:"heapKiBPerCluster"`
	RSS  float64 `json:"rssMiB"`
}

// Reaction summarises the reactions to one kind of fault, in milliseconds;
// Missed are faults with no reaction within the wait.
type Reaction struct {
	P50     float64 `json:"p50Ms"`
	P99     float64 `json:"p99Ms"`
	Max     float64 `json:"maxMs"`
	Samples int     `json:"samples"`
	Missed  int     `json:"missed"`
}

// Summarise is the reaction figures of the samples (nearest rank).
func Summarise(samples []time.Duration, missed int) Reaction {
	r := Reaction{Samples: len(samples), Missed: missed}
	if len(samples) == 0 {
		return r
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	r.P50, r.P99, r.Max = ms(Percentile(s, 50)), ms(Percentile(s, 99)), ms(s[len(s)-1])
	return r
}

// Percentile is the nearest-rank p-th percentile of sorted.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// AppendResult adds r to the JSON-lines file path.
func AppendResult(path string, r Result) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	b, err := json.Marshal(r)
	if err != nil {
		_ = f.Close()
		return err
	}
	_, err = f.Write(append(b, '\n'))
	return errors.Join(err, f.Close())
}

// ReadResults reads a JSON-lines file of results.
func ReadResults(r io.Reader) ([]Result, error) {
	var out []Result
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var res Result
		if err := json.Unmarshal(sc.Bytes(), &res); err != nil {
			return nil, err
		}
		out = append(out, res)
	}
	return out, sc.Err()
}

// Table writes the results as one markdown table, a row per result.
func Table(w io.Writer, rs []Result) error {
	var b strings.Builder
	b.WriteString("| row | N | Healthy after (s) | kill reaction p50 / p99 / max (ms) | spec reaction p50 / p99 / max (ms) | API reads / writes / log appends per cluster·min | mongod cmds per cluster·min | CPU ms per cluster·min (cores) | heap KiB per cluster | RSS MiB | observe p50 / p99 (ms), steady; under kills | kill delivered to a watch p50 / p99 (ms) |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, r := range rs {
		healthy := fmt.Sprintf("%.1f", r.ToHealthy)
		if r.Healthy < r.N {
			healthy = fmt.Sprintf(">%.0f (%d of %d)", r.ToHealthy, r.Healthy, r.N)
		}
		row := r.Row
		if r.QPS != OperatorQPS {
			row += fmt.Sprintf(" (qps %.0f)", r.QPS)
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s / %s / %s | %s | %s (%.2f) | %.1f | %.0f | %s / %s; %s / %s | %s |\n",
			row, r.N, healthy, reaction(r.Kill), reaction(r.Spec),
			num(r.Reads), num(r.Writes), num(r.Appends), num(r.Commands), num(r.CPU), r.CPUCores, r.Heap, r.RSS,
			num(r.Observe.P50), num(r.Observe.P99), num(r.ObserveUnderFaults.P50), num(r.ObserveUnderFaults.P99), delivery(r.KillDelivery))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// delivery is "—" for results from before it was measured.
func delivery(r Reaction) string {
	if r.Samples == 0 && r.Missed == 0 {
		return "—"
	}
	s := num(r.P50) + " / " + num(r.P99)
	if r.Missed > 0 {
		s += fmt.Sprintf(" (%d not seen)", r.Missed)
	}
	return s
}

func reaction(r Reaction) string {
	if r.Samples == 0 {
		return fmt.Sprintf("none (%d missed)", r.Missed)
	}
	s := fmt.Sprintf("%s / %s / %s", num(r.P50), num(r.P99), num(r.Max))
	if r.Missed > 0 {
		s += fmt.Sprintf(" (%d of %d missed)", r.Missed, r.Samples+r.Missed)
	}
	return s
}

// num prints a figure with about three significant digits.
func num(f float64) string {
	switch a := math.Abs(f); {
	case a == 0:
		return "0"
	case a >= 100:
		return fmt.Sprintf("%.0f", f)
	case a >= 10:
		return fmt.Sprintf("%.1f", f)
	default:
		return fmt.Sprintf("%.2f", f)
	}
}
