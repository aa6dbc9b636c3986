package recovery

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgors/operator/actors"
	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/test/chaos"
	"github.com/mgors/operator/test/localkube/harness"
)

// The clusters of TestRestarts, in the order Run creates them.
const (
	lostIdx   = 0 // case 7: the leader killed when MajorityLost is recorded
	forcedIdx = 1 // case 7: the leader killed when the ForceReconfig is started
	pausedIdx = 2 // case 7: the leader frozen past its Lease when MajorityLost is recorded
	wholeIdx  = 3 // case 6: every member pod deleted at once (WholeRestart=1 only)
)

// leaderPause bounds the freeze of the leader: the Lease (15 s) passes to the
// standby before it, the liveness probe (3 × 10 s) does not kill the frozen
// process.
const leaderPause = 25 * time.Second

// TestRestarts runs cases 6 and 7 of the recovery (docs/design/recovery.md)
// on one cluster of its own, under the chaos workload and checker: the whole
// replica set restarted with its volumes (no initiate, no write lost), then a
// majority loss under the Automatic policy during which the operator leader
// is SIGKILLed, once when the loss is recorded and once when the forced
// reconfig is started, and frozen past its Lease once (one force applied, the lost
// members re-added, Healthy; the deposed leader writes nothing).
func TestRestarts(t *testing.T) {
	endToEnd(t)
	repo, dir := upCluster(t)

	whole, lost, forced, paused := sampleMgors(t, repo), sampleMgors(t, repo), sampleMgors(t, repo), sampleMgors(t, repo)
	whole.Name, lost.Name, forced.Name, paused.Name = "whole", "lost", "forced", "paused"
	for _, m := range []*v1alpha1.Mgors{lost, forced, paused} {
		m.Spec.Recovery.MajorityLoss = v1alpha1.RecoveryAutomatic
		m.Spec.Recovery.GracePeriod = &metav1.Duration{Duration: gracePeriod}
	}

	wr := wholeRestart{idx: wholeIdx}
	kl := leaderKill{idx: lostIdx, on: "MajorityLost"}
	kf := leaderKill{idx: forcedIdx, on: "ActionStarted", act: actors.ActForceReconfig, fast: true}
	kp := leaderKill{idx: pausedIdx, on: "MajorityLost", pause: leaderPause}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cfg := chaos.Config{Dir: dir, Repo: repo, Log: harness.Logger(t), Healthy: healthyBound,
		ReportDir: filepath.Join(repo, ".cache", "recovery-restarts"),
		Clusters:  []*v1alpha1.Mgors{lost, forced, paused, whole},
		Scenario: func(ctx context.Context, s *chaos.Scene) error {
			for _, step := range []func(context.Context, *chaos.Scene) error{wr.run, kl.run, kf.run, kp.run} {
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

	lostKey, forcedKey, pausedKey := h.Clusters[lostIdx], h.Clusters[forcedIdx], h.Clusters[pausedIdx]
	keys := []string{lostKey, forcedKey, pausedKey}
	t.Run("WholeSetRestarted", func(t *testing.T) {
		wholeKey := h.Clusters[wholeIdx]
		keys = append(keys, wholeKey)
		wr.judge(t, written(t, h.Logs["eventlog/"+wholeKey]), h, wholeKey)
	})
	t.Run("LeaderKilledAtMajorityLost", func(t *testing.T) { kl.judge(t, written(t, h.Logs["eventlog/"+lostKey]), h, lostKey) })
	t.Run("LeaderKilledAtForceStarted", func(t *testing.T) {
		kf.judge(t, written(t, h.Logs["eventlog/"+forcedKey]), h, forcedKey)
	})
	t.Run("LeaderPausedAtMajorityLost", func(t *testing.T) {
		kp.judge(t, written(t, h.Logs["eventlog/"+pausedKey]), h, pausedKey)
	})

	_ = os.MkdirAll(cfg.ReportDir, 0o755)
	for _, key := range keys {
		out := replay(t, repo, dir, key)
		t.Logf("mgorsctl replay --cluster %s:\n%s", key, out)
		_ = os.WriteFile(filepath.Join(cfg.ReportDir, "replay-"+strings.ReplaceAll(key, "/", "_")+".txt"), []byte(out), 0o644)
	}
}

// wholeRestart deletes every member pod of a cluster at once with a short
// grace period, as a node drain or a cluster restart does: every mongod stops
// together and its pod is recreated on the same claim. It waits for the new
// pods and for Healthy.
type wholeRestart struct {
	idx int

	before           map[string]string // pod → UID before
	setID            string            // the replicaSetId seen before
	version          int64             // the newest config version seen before
	start, recreated time.Time
	healthy          time.Time
	why              string // why it was not Healthy in time
}

// restartGrace is the deletion's grace period: short, as in a drain that
// does not wait, but not 0 (the kubelet stops the containers).
const restartGrace = int64(1)

func (wr *wholeRestart) run(ctx context.Context, s *chaos.Scene) error {
	c := s.Clusters()[wr.idx]
	// The samplers may not have seen the new set answer yet (the run starts
	// its faults as soon as every cluster is Healthy): wait for a sample
	// that names the set, for the comparison after the restart.
	until(ctx, evidenceTimeout, func() bool {
		for _, m := range s.Samples(wr.idx, time.Time{}, time.Now()) {
			if m.Error == "" && m.ReplicaSetID != "" && m.ConfigVersion >= wr.version {
				wr.setID, wr.version = m.ReplicaSetID, m.ConfigVersion
			}
		}
		return wr.setID != ""
	})
	pods, err := list(ctx, s, c.Namespace, "mgors.io/cluster="+c.Name)
	if err != nil {
		return err
	}
	wr.before = map[string]string{}
	for _, p := range pods {
		wr.before[p.Name] = string(p.UID)
		s.ExpectDeletion(c.Namespace + "/" + p.Name)
	}
	wr.start = time.Now()
	grace := restartGrace
	for name := range wr.before {
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := s.Kube().CoreV1().Pods(c.Namespace).Delete(dctx, name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
		cancel()
		if err != nil {
			return fmt.Errorf("deleting %s: %w", name, err)
		}
	}
	var uids []string
	if until(ctx, actionBound, func() bool {
		uids = uids[:0]
		for name, old := range wr.before {
			p, err := getPod(ctx, s, c.Namespace, name)
			if err != nil || string(p.UID) == old || !ready(p) {
				return false
			}
			uids = append(uids, name+" "+old[:8]+"→"+string(p.UID)[:8])
		}
		return true
	}) {
		wr.recreated = time.Now()
	}
	at, err := s.WaitHealthy(ctx, wr.start)
	if err == nil {
		wr.healthy = at
	} else {
		wr.why = err.Error()
		log := s.Log()
		log.Warn().Err(err).Str("cluster", c.Namespace+"/"+c.Name).Msg("whole set restarted: not Healthy")
	}
	s.Record(chaos.Fault{Kind: "whole-set-restart", Cluster: c.Namespace + "/" + c.Name, Targets: keys(wr.before),
		Start: wr.start, Healed: wr.start, Happened: !wr.recreated.IsZero(), HealthyAt: at,
		Evidence: fmt.Sprintf("every member pod deleted (grace %ds); recreated and Ready %t: %s", restartGrace,
			!wr.recreated.IsZero(), strings.Join(uids, ", "))})
	return nil
}

// judge: the pods came back and the set is Healthy; its log after the fault
// shows no initiate and no forced reconfig; every member answers afterwards
// with the replica set's ID from before and its config (no older version).
func (wr *wholeRestart) judge(t *testing.T, recs []writtenRecord, h *chaos.History, key string) {
	t.Helper()
	if wr.recreated.IsZero() || wr.healthy.IsZero() {
		t.Errorf("whole set restarted: every pod recreated and Ready %t, Healthy %t (%s)", !wr.recreated.IsZero(), !wr.healthy.IsZero(), wr.why)
	}
	for _, r := range recs {
		if r.At.Before(wr.start) {
			continue
		}
		switch e := r.Event.(type) {
		case actors.ActionStarted:
			if e.Action == actors.ActInitiate || e.Action == actors.ActForceReconfig {
				t.Errorf("whole set restarted: %s at seq %d after the restart", e.Action, r.Seq)
			}
		case actors.Initiated:
			if !e.Found {
				t.Errorf("whole set restarted: Initiated %+v after the restart", e)
			}
		case actors.VolumesLost:
			t.Errorf("whole set restarted: VolumesLost at seq %d with every volume kept", r.Seq)
		}
	}
	// Each member's last sample after Healthy whose config was read, or
	// that says it has none. A replSetGetConfig that failed otherwise (a
	// timeout on a loaded machine) says nothing of the config; the sampler
	// used to leave such a sample looking like a member without one (CI at
	// 4e80144: "answers replicaSetId  config 0", while the member's own log
	// shows it in config 1 throughout).
	seen := map[string]chaos.MemberSample{}
	for _, m := range h.Members {
		known := m.ConfigErr == "" || strings.Contains(m.ConfigErr, "NotYetInitialized")
		if m.Cluster == key && m.Error == "" && known && !m.At.Before(wr.healthy) {
			seen[m.Member] = m
		}
	}
	if wr.setID == "" || len(seen) != 3 {
		t.Errorf("whole set restarted: replicaSetId before %q, %d members answered after Healthy", wr.setID, len(seen))
	}
	for host, m := range seen {
		if m.ReplicaSetID != wr.setID || m.ConfigVersion < wr.version {
			t.Errorf("whole set restarted: %s answers replicaSetId %q config %d (%s); before: %s config %d", host, m.ReplicaSetID, m.ConfigVersion, m.ConfigErr, wr.setID, wr.version)
		}
	}
	var phases []string
	for _, r := range recs {
		if e, ok := r.Event.(actors.PhaseChanged); ok && !r.At.Before(wr.start) {
			phases = append(phases, fmt.Sprintf("+%s %s→%s", since(wr.start, r.At), e.From, e.To))
		}
	}
	t.Logf("whole set restarted (3 pods deleted, grace %ds) at %s: pods recreated and Ready +%s; Healthy +%s; phases %s; replicaSetId %s config version %d kept",
		restartGrace, wr.start.UTC().Format(time.RFC3339), since(wr.start, wr.recreated), since(wr.start, wr.healthy),
		strings.Join(phases, ", "), wr.setID, wr.version)
}

// writtenRecord is one event-log record with who wrote it.
type writtenRecord struct {
	record
	Seq    int64
	Writer string
}

// written decodes the JSON lines of an event log as the chaos run collected
// it, keeping the sequence number and the writer of each record.
func written(t *testing.T, text string) []writtenRecord {
	var out []writtenRecord
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if line == "" {
			continue
		}
		var r eventlog.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Errorf("event log line %q: %v", line, err)
			continue
		}
		e, ok, err := actors.Decode(r)
		if err != nil || !ok {
			continue
		}
		out = append(out, writtenRecord{record: record{At: r.Time, Type: r.Type, Event: e}, Seq: r.Seq, Writer: r.Writer})
	}
	return out
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
