// Command mgors-chaos runs Mgors' chaos suite against a running localkube
// cluster: it deploys the operator with two replicas, creates two replica sets,
// drives a workload through a seeded schedule of faults, checks the history,
// prints the summary, writes the report, and exits non-zero on any violation.
//
//	mgors-chaos --dir DIR [--report DIR]
//
// CHAOS_DURATION (default 10m), CHAOS_SEED (default from the clock; printed at
// the start) and CHAOS_FAULTS (a comma list of kinds, default all) plan the run;
// the same seed, duration and kinds give the same schedule.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/mgors/operator/test/chaos"
	"github.com/mgors/operator/test/localkube/cluster"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "mgors-chaos:", err)
		os.Exit(1)
	}
}

func run() error {
	dir := flag.String("dir", "", "a running localkube cluster (required)")
	report := flag.String("report", "", "report directory (default <repo>/.run/chaos-report)")
	healthy := flag.Duration("healthy", 2*time.Minute, "bound on the time to Healthy after each fault")
	flag.Parse()
	if *dir == "" {
		return errors.New("--dir is required: a cluster of `localkube up --dir DIR`")
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	repo, err := cluster.FindRepo(wd)
	if err != nil {
		return err
	}
	if *report == "" {
		*report = filepath.Join(repo, ".run", "chaos-report")
	}
	cfg, err := config(os.Getenv)
	if err != nil {
		return err
	}
	cfg.Dir, cfg.Repo, cfg.ReportDir, cfg.Healthy = *dir, repo, *report, *healthy
	cfg.Log = zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: "15:04:05"}).With().Timestamp().Logger()
	var kinds []string
	for _, k := range cfg.Kinds {
		kinds = append(kinds, string(k))
	}
	fmt.Printf("chaos: seed %d, duration %s, faults %s (reproduce with CHAOS_SEED=%d CHAOS_DURATION=%s CHAOS_FAULTS=%s)\n",
		cfg.Seed, cfg.Duration, strings.Join(kinds, ","), cfg.Seed, cfg.Duration, strings.Join(kinds, ","))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration*3+20*time.Minute)
	defer cancel()
	h, err := chaos.Run(ctx, cfg)
	if err != nil {
		return err
	}
	v := chaos.Check(h, chaos.Bounds{Healthy: cfg.Healthy})
	chaos.Summary(os.Stdout, h, v)
	if err := chaos.WriteReport(*report, h, v); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	fmt.Printf("chaos: report in %s\n", *report)
	if !v.OK() {
		return fmt.Errorf("%d violations (seed %d)", len(v.Violations), cfg.Seed)
	}
	return nil
}

// config reads the run's plan from the environment.
func config(getenv func(string) string) (chaos.Config, error) {
	cfg := chaos.Config{Duration: 10 * time.Minute, Seed: time.Now().UnixNano() % 1_000_000, Kinds: chaos.FaultKinds,
		Restore: chaos.RestoreCluster}
	if s := getenv("CHAOS_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return cfg, fmt.Errorf("CHAOS_DURATION=%q: a duration such as 10m", s)
		}
		cfg.Duration = d
	}
	if s := getenv("CHAOS_SEED"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return cfg, fmt.Errorf("CHAOS_SEED=%q: an integer", s)
		}
		cfg.Seed = n
	}
	if s := getenv("CHAOS_FAULTS"); s != "" {
		kinds, err := parseKinds(s)
		if err != nil {
			return cfg, err
		}
		cfg.Kinds = kinds
	}
	return cfg, nil
}

// parseKinds reads a comma list of fault kinds.
func parseKinds(s string) ([]chaos.FaultKind, error) {
	var out []chaos.FaultKind
	for _, k := range strings.Split(s, ",") {
		k = strings.TrimSpace(k)
		if k == "" {
			continue
		}
		known := false
		for _, f := range chaos.FaultKinds {
			known = known || string(f) == k
		}
		if !known {
			var all []string
			for _, f := range chaos.FaultKinds {
				all = append(all, string(f))
			}
			return nil, fmt.Errorf("CHAOS_FAULTS: unknown kind %q (kinds: %s)", k, strings.Join(all, ","))
		}
		out = append(out, chaos.FaultKind(k))
	}
	if len(out) == 0 {
		return nil, errors.New("CHAOS_FAULTS names no kind")
	}
	return out, nil
}
