// Package recovery holds the end-to-end tests of the disaster recovery (issue
// 12) on a localkube cluster of their own, under the chaos suite's workload,
// samplers and checker: a majority lost under the Automatic policy, and a node
// lost with and without spec.recovery.nodeLossGracePeriod.
package recovery

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/mgors/operator/actors"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/test/chaos"
	"github.com/mgors/operator/test/localkube/harness"
)

// The clusters of the run: Run creates them in its namespace, in this order.
const (
	autoIdx   = 0 // recovery.majorityLoss Automatic, gracePeriod 30s
	manualIdx = 1 // recovery.majorityLoss Manual (the default)
	nodesIdx  = 2 // recovery.nodeLossGracePeriod 20s
)

var (
	gracePeriod     = 30 * time.Second
	lagFor          = 8 * time.Second // under the 10 s election timeout: the cut-off survivor stays SECONDARY
	nodeLossGrace   = 20 * time.Second
	healthyBound    = 4 * time.Minute
	actionBound     = 3 * time.Minute
	evidenceTimeout = 2 * time.Minute
)

// TestRecovery runs, on one cluster of its own and under one workload, the
// majority loss (Automatic) and then the node loss, and judges the whole run
// with the chaos checker: no acknowledged write lost except those recorded at
// risk, never two primaries in one term, every fault healed to Healthy, the
// event log replays.
func TestRecovery(t *testing.T) {
	endToEnd(t)
	repo, dir := upCluster(t)

	auto, manual, nodes := sampleMgors(t, repo), sampleMgors(t, repo), sampleMgors(t, repo)
	manual.Name = "manual"
	auto.Name = "auto"
	auto.Spec.Recovery.MajorityLoss = v1alpha1.RecoveryAutomatic
	auto.Spec.Recovery.GracePeriod = &metav1.Duration{Duration: gracePeriod}
	nodes.Name = "nodes"
	nodes.Spec.Recovery.NodeLossGracePeriod = &metav1.Duration{Duration: nodeLossGrace}

	ml := majorityLoss{idx: autoIdx, lag: true}
	mm := majorityLoss{idx: manualIdx, manual: true}
	var nl nodeLoss
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cfg := chaos.Config{Dir: dir, Repo: repo, Log: harness.Logger(t), Healthy: healthyBound,
		ReportDir: filepath.Join(repo, ".cache", "recovery"),
		Clusters:  []*v1alpha1.Mgors{auto, manual, nodes},
		Scenario: func(ctx context.Context, s *chaos.Scene) error {
			for _, step := range []func(context.Context, *chaos.Scene) error{ml.run, mm.run, nl.run} {
				if err := step(ctx, s); err != nil {
					return err
				}
			}
			return nil
		}}
	h, err := chaos.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	verdict(t, h, cfg.Healthy)

	autoKey, manualKey, nodesKey := h.Clusters[autoIdx], h.Clusters[manualIdx], h.Clusters[nodesIdx]
	t.Run("MajorityLossAutomatic", func(t *testing.T) { ml.judge(t, records(t, h.Logs["eventlog/"+autoKey]), h, autoKey) })
	t.Run("MajorityLossManual", func(t *testing.T) { mm.judge(t, records(t, h.Logs["eventlog/"+manualKey]), h, manualKey) })
	t.Run("NodeLoss", func(t *testing.T) {
		nl.judge(t, records(t, h.Logs["eventlog/"+nodesKey]), records(t, h.Logs["eventlog/"+autoKey]))
	})

	_ = os.MkdirAll(cfg.ReportDir, 0o755)
	for _, key := range []string{autoKey, manualKey} {
		out := replay(t, repo, dir, key)
		t.Logf("mgorsctl replay --cluster %s:\n%s", key, out)
		_ = os.WriteFile(filepath.Join(cfg.ReportDir, "replay-"+strings.ReplaceAll(key, "/", "_")+".txt"), []byte(out), 0o644)
	}
}

// upCluster starts a localkube cluster of the test's own (harness.Own),
// stopped and purged when the test ends.
func upCluster(t *testing.T) (repo, dir string) {
	repo, dir = harness.Own(t, "recovery")
	if _, err := os.Stat(filepath.Join(repo, "bin", "mgorsctl")); err != nil {
		t.Fatalf("bin/mgorsctl: %v (run `make build` first)", err)
	}
	return repo, dir
}

func sampleMgors(t *testing.T, repo string) *v1alpha1.Mgors {
	b, err := os.ReadFile(filepath.Join(repo, "deploy", "samples", "mgors-3.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m v1alpha1.Mgors
	if err := yaml.UnmarshalStrict(b, &m); err != nil {
		t.Fatal(err)
	}
	return &m
}

// record is one decoded event-log record.
type record struct {
	At    time.Time
	Type  string
	Event actors.Event
}

// records decodes the JSON lines of an event log as the chaos run collected it.
func records(t *testing.T, text string) []record {
	var out []record
	for _, w := range written(t, text) {
		out = append(out, w.record)
	}
	return out
}

// first is the first record at or after since that match says yes to.
func first(recs []record, since time.Time, match func(record) bool) (record, bool) {
	for _, r := range recs {
		if !r.At.Before(since) && match(r) {
			return r, true
		}
	}
	return record{}, false
}

// replay is `mgorsctl replay` of a cluster, as a person reads it.
func replay(t *testing.T, repo, dir, cluster string) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(repo, "bin", "mgorsctl"), "replay", "--cluster", cluster)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(dir, "kubeconfig"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Errorf("mgorsctl replay: %v\n%s", err, out.String())
	}
	return out.String()
}

// endToEnd skips, saying why, where a recovery run cannot start: -short, not
// root, outside the end-to-end environment of `make test`.
func endToEnd(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("the recovery run takes minutes")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: it starts a localkube cluster")
	}
	if os.Getenv("LOCALKUBE_KUBELET_E2E") == "" {
		t.Skip("LOCALKUBE_KUBELET_E2E is unset: the run needs the end-to-end environment of `make test`")
	}
}

// verdict judges a run with the chaos checker, logs its summary and every
// fault, fails on each violation whose property is not expected, and
// returns the judgement.
func verdict(t *testing.T, h *chaos.History, healthy time.Duration, expected ...string) chaos.Verdict {
	t.Helper()
	v := chaos.Check(h, chaos.Bounds{Healthy: healthy})
	var sum strings.Builder
	chaos.Summary(&sum, h, v)
	t.Log("\n" + sum.String())
	for _, f := range h.Faults {
		t.Logf("fault %d %s on %s: happened %t (%s); healed %s, Healthy after %s", f.ID, f.Kind, f.Cluster, f.Happened,
			f.Evidence, f.Healed.Format(time.RFC3339), f.HealthyAt.Sub(f.Healed).Round(time.Second))
	}
	for _, viol := range v.Violations {
		if !slices.Contains(expected, viol.Property) {
			t.Errorf("%+v", viol)
		}
	}
	return v
}
