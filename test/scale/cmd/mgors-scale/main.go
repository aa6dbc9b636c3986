// Command mgors-scale runs one row of the scale benchmark (test/scale) on
// the API server of --kubeconfig and appends its result to --out; with
// --table it prints the results of a file as the markdown table of
// docs/performance.md. `make bench-scale` runs it for each N and row.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mgors/operator/test/scale"
)

func main() {
	// A flag set of its own: controller-runtime registers --kubeconfig on
	// the default one.
	flag := flag.NewFlagSet("mgors-scale", flag.ExitOnError)
	var (
		kubeconfig = flag.String("kubeconfig", "", "kubeconfig of the API server")
		row        = flag.String("row", scale.RowMgors, "mgors (the actors) or baseline (controller-runtime)")
		n          = flag.Int("n", 10, "number of Mgors")
		members    = flag.Int("members", 1, "members per Mgors")
		settle     = flag.Duration("settle", 15*time.Second, "quiet time after all are Healthy, before the steady window")
		window     = flag.Duration("window", time.Minute, "steady-state window")
		faults     = flag.Int("faults", 100, "clusters that get each fault (at most n)")
		spacing    = flag.Duration("spacing", 200*time.Millisecond, "time between two faults")
		wait       = flag.Duration("wait", 2*time.Minute, "how long a reaction may take")
		healthy    = flag.Duration("healthy-wait", 10*time.Minute, "bound of the wait for all to be Healthy")
		out        = flag.String("out", "bench-scale.jsonl", "results file (JSON lines), appended to")
		logFile    = flag.String("log", "", "the row's log (zerolog JSON); empty: none")
		qps        = flag.Float64("qps", scale.OperatorQPS, "the row's client rate limit (cmd/mgors-operator's: 50, burst twice it)")
		table      = flag.String("table", "", "print this results file as a markdown table and exit")
		heapProf   = flag.String("heap-profile", "", "write a heap profile (pprof) here when the heap figure is taken, and one to this path + .base before the row")
		cpuProf    = flag.String("cpu-profile", "", "write a CPU profile (pprof) of the kill faults here")
	)
	_ = flag.Parse(os.Args[1:])
	if *table != "" {
		if err := printTable(*table); err != nil {
			fmt.Fprintln(os.Stderr, "mgors-scale:", err)
			os.Exit(1)
		}
		return
	}
	if *row != scale.RowMgors && *row != scale.RowBaseline {
		fmt.Fprintf(os.Stderr, "mgors-scale: --row must be %s or %s\n", scale.RowMgors, scale.RowBaseline)
		os.Exit(2)
	}
	zerolog.TimeFieldFormat = time.RFC3339Nano
	log := zerolog.Nop()
	if *logFile != "" {
		f, err := os.Create(*logFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "mgors-scale:", err)
			os.Exit(1)
		}
		defer func() { _ = f.Close() }()
		log = zerolog.New(f).With().Timestamp().Str("component", "mgors-scale").Str("row", *row).Logger()
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mgors-scale: kubeconfig:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	c := scale.Config{Row: *row, N: *n, Members: int32(*members), Settle: *settle, Window: *window,
		Faults: *faults, Spacing: *spacing, Wait: *wait, HealthyWait: *healthy, QPS: float32(*qps), HeapProfile: *heapProf, CPUProfile: *cpuProf, Log: log}
	fmt.Fprintf(os.Stderr, "mgors-scale: %s, N=%d: creating, waiting for Healthy, %s steady, %d faults of each kind\n", *row, *n, *window, min(*faults, *n))
	res, err := scale.Run(ctx, cfg, c)
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "mgors-scale: interrupted; no result written")
		os.Exit(1)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mgors-scale:", err)
		os.Exit(1)
	}
	if err := scale.AppendResult(*out, res); err != nil {
		fmt.Fprintln(os.Stderr, "mgors-scale:", err)
		os.Exit(1)
	}
	_ = scale.Table(os.Stderr, []scale.Result{res})
}

func printTable(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	rs, err := scale.ReadResults(f)
	if err != nil {
		return err
	}
	return scale.Table(os.Stdout, rs)
}
