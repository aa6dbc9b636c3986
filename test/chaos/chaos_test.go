package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"

	"github.com/mgors/operator/test/localkube/harness"
)

// shortSeed is the fixed seed of the short run in `make test`.
const shortSeed = 11

// shortKinds are the kinds the short run covers: every one.
var shortKinds = FaultKinds

// TestChaosShort is the short chaos run of `make test`: a cluster of its own,
// the operator with two replicas, two replica sets under load, every fault kind
// once from a fixed seed, psa's data restored to a moment inside the faults
// (Config.Restore), and the checker's verdict; the report goes to
// .cache/chaos/.
func TestChaosShort(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos run takes minutes")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: it starts a localkube cluster")
	}
	if os.Getenv("LOCALKUBE_KUBELET_E2E") == "" {
		t.Skip("LOCALKUBE_KUBELET_E2E is unset: the chaos run needs the end-to-end environment of `make test`")
	}
	repo, dir := harness.Own(t, "chaos")
	if _, err := os.Stat(filepath.Join(repo, "bin", "mgorsctl")); err != nil {
		t.Fatalf("bin/mgorsctl: %v (run `make build` first)", err)
	}
	report := filepath.Join(repo, ".cache", "chaos", "short")
	_ = os.RemoveAll(report)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cfg := Config{Dir: dir, Repo: repo, Seed: shortSeed, Duration: 3 * time.Minute, Kinds: shortKinds,
		ReportDir: report, Log: harness.Logger(t), Healthy: 2 * time.Minute, Restore: RestoreCluster}
	h, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	v := Check(h, Bounds{Healthy: cfg.Healthy})
	var sum strings.Builder
	Summary(&sum, h, v)
	t.Log("\n" + sum.String())
	if err := WriteReport(report, h, v); err != nil {
		t.Error(err)
	}
	t.Logf("report in %s; %s", report, tally(h))
	for _, d := range h.Deletions {
		t.Logf("pod deletion %+v", d)
	}
	for _, f := range h.Faults {
		if !f.Happened {
			t.Logf("fault %d %s did not happen: %s", f.ID, f.Kind, f.Evidence)
		}
	}
	for _, viol := range v.Violations {
		t.Errorf("%+v", viol)
	}
}

func TestClassifyOutcome(t *testing.T) {
	selection := topology.ServerSelectionError{Wrapped: context.DeadlineExceeded}
	for _, c := range []struct {
		name string
		kind OpKind
		err  error
		want Outcome
	}{
		{"ok", Insert, nil, OK},
		{"no server selected: nothing sent", Insert, selection, Failed},
		{"no server selected, wrapped", Write, fmt.Errorf("insert: %w", selection), Failed},
		{"write concern error", Insert, mongo.WriteException{WriteConcernError: &mongo.WriteConcernError{Code: 64, Message: "waiting for replication timed out"}}, Unknown},
		{"not writable primary after a retry", Write, mongo.CommandError{Code: 10107, Labels: []string{"RetryableWriteError"}}, Unknown},
		{"duplicate key: an earlier attempt applied", Insert, mongo.WriteException{WriteErrors: []mongo.WriteError{{Code: 11000}}}, Unknown},
		{"timeout", Insert, context.DeadlineExceeded, Unknown},
		{"network error", Write, errors.New("connection reset by peer"), Unknown},
		{"read error", Read, context.DeadlineExceeded, Failed},
	} {
		if got := classify(c.kind, c.err); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

func TestLeaseOperatorDown(t *testing.T) {
	t0 := time.Unix(1000, 0)
	l := &leaseLog{}
	l.add(leaseObservation{At: t0, Holder: "a", Valid: true})
	l.add(leaseObservation{At: t0.Add(2 * time.Second), Holder: "a", Valid: false})
	l.add(leaseObservation{At: t0.Add(4 * time.Second), Holder: "b", Valid: true})
	for _, c := range []struct {
		at   time.Duration
		down bool
	}{{-time.Second, false}, {time.Second, false}, {3 * time.Second, true}, {5 * time.Second, false}} {
		if got := l.operatorDown(t0.Add(c.at)); got != c.down {
			t.Errorf("at %s: operatorDown %t, want %t", c.at, got, c.down)
		}
	}
	if l.holder() != "b" {
		t.Errorf("holder %q, want b", l.holder())
	}
}

// tally counts what a history holds, for the test log.
func tally(h *History) string {
	out := map[Outcome]int{}
	kinds := map[OpKind]int{}
	for _, o := range h.Ops {
		out[o.Outcome]++
		kinds[o.Kind]++
	}
	errs := 0
	for _, s := range h.Members {
		if s.Error != "" {
			errs++
		}
	}
	happened := 0
	for _, f := range h.Faults {
		if f.Happened {
			happened++
		}
	}
	present, lost := 0, 0
	byCluster := map[string]Final{}
	for _, f := range h.Final {
		present += len(f.Present)
		byCluster[f.Cluster] = f
	}
	for _, o := range h.Ops {
		if o.Kind == Insert && o.Outcome == OK && !byCluster[o.Cluster].Present[o.Value] {
			lost++
		}
	}
	return fmt.Sprintf("ops %d (ok %d, failed %d, unknown %d; inserts %d, writes %d, reads %d); member samples %d (%d unanswered); "+
		"phase samples %d; faults %d (%d happened); pod deletions %d; forced reconfigs %d; present ids %d, acknowledged but absent %d; logs %d; secrets %d",
		len(h.Ops), out[OK], out[Failed], out[Unknown], kinds[Insert], kinds[Write], kinds[Read], len(h.Members), errs,
		len(h.Phases), len(h.Faults), happened, len(h.Deletions), len(h.Forced), present, lost, len(h.Logs), len(h.Secrets))
}
