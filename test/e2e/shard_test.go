package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgors/operator/actors"
	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/test/localkube/harness"
)

// The sharded mode's timings (cmd/mgors-operator/sharded.go): a replica's
// Lease lasts 15 s; the assigner passes every second.
const (
	shardLease = 15 * time.Second
	// moveSlack bounds what a move takes beyond the Lease: the assigner's
	// pass (one a second, a patch per Mgors), the new owner's watch and its
	// actor's spawn. On an idle machine that is 1-3 s; 10 s leaves room for
	// a loaded CI machine (on one with a load of 16 on 2 cores: up to 6.2 s).
	moveSlack = 10 * time.Second
	// shardClusters is how many 1-member clusters the replicas share.
	shardClusters = 30
)

// Issue 16 on the real control plane: several operator replicas (host
// processes, --shards=auto, the default 15 s Leases) share 30 one-member
// clusters (mongod-sim pods). Scaled 1 → 2 → 3 by the drain handshake (each
// replica's memory measured at each size); 3 → 4 → 3 (the joiner's share
// drained to it; its clean stop moves its clusters at once); a replica
// SIGKILLed: its clusters move within its Lease and a few seconds, and its
// restart takes a share again; a replica SIGSTOPped past its Lease and
// continued: its clusters moved without it, it writes nothing after the
// pause and exits. Throughout, every 100 ms, no cluster is owned (its actor
// running where the Lease allows writing: /owned) by two replicas; at the
// end, in every event log the writers (one per actor spawned, Writer#n)
// follow one another and none returns, and every set was initiated once.
func TestShardedOperatorReplicas(t *testing.T) {
	env := harness.Cluster(t)
	installCRD(t, env)
	withoutOperator(t, env) // the cluster-wide operator would run these Mgors too
	if _, err := os.Stat(filepath.Join(repo(t), "bin", "mgors-operator")); err != nil {
		t.Fatalf("bin/mgors-operator: %v (run `make build` first)", err)
	}
	ctx := context.Background()
	mc := mgorsClient(t, env)
	uids := map[string]string{}
	for i := range shardClusters {
		m := sample(t, env, "mgors-dev-1.yaml", func(m *v1alpha1.Mgors) {
			m.Name = fmt.Sprintf("s%02d", i)
			m.Spec.Storage.Reclaim = v1alpha1.VolumeDelete
		})
		created, err := mc.Mgorses(env.Namespace).Create(ctx, m, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		uids[env.Namespace+"/"+m.Name] = string(created.UID)
	}
	f := newFleet(t, env)
	var report []string
	measure := func(stage string) {
		owner, _ := f.snapshot()
		c := count(owner)
		ids := []string{"op-0", "op-1", "op-2"}
		lines := make([]string, len(ids))
		var wg sync.WaitGroup
		for i, id := range ids {
			if r := f.replica(id); r != nil {
				wg.Go(func() {
					heap, rss := f.memory(r)
					lines[i] = fmt.Sprintf("%s: %s owns %d: heap in use %.1f MiB, RSS %.1f MiB", stage, id, c[id], heap, rss)
				})
			}
		}
		wg.Wait()
		for _, l := range lines {
			if l != "" {
				report = append(report, l)
			}
		}
	}

	// 1 → 2 → 3 replicas.
	began := time.Now()
	f.start("op-0")
	d := f.waitFor("30 clusters Healthy, run by op-0", 8*time.Minute, func() bool {
		if !f.settled(shardClusters, "op-0")() {
			return false
		}
		list, err := mc.Mgorses(env.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, m := range list.Items {
			if m.Status.Phase != v1alpha1.PhaseHealthy {
				return false
			}
		}
		return true
	})
	t.Logf("1 replica: 30 clusters Healthy after %s", d.Round(time.Second))
	measure("1 replica")
	f.start("op-1")
	d = f.waitFor("2 replicas sharing", 2*time.Minute, f.settled(shardClusters, "op-0", "op-1"))
	t.Logf("2 replicas: settled after %s", d.Round(100*time.Millisecond))
	measure("2 replicas")
	f.start("op-2")
	d = f.waitFor("3 replicas sharing", 2*time.Minute, f.settled(shardClusters, "op-0", "op-1", "op-2"))
	owner, _ := f.snapshot()
	t.Logf("3 replicas: settled after %s: %v", d.Round(100*time.Millisecond), count(owner))
	measure("3 replicas")
	all := []string{"op-0", "op-1", "op-2"}
	for _, id := range all {
		if c := count(owner)[id]; c < shardClusters/10 {
			t.Errorf("not spread: %s owns %d of %d: %v", id, c, shardClusters, count(owner))
		}
	}

	// 3 → 4 → 3: the joiner takes its share by the drain handshake; its
	// clean stop (SIGTERM) releases its Lease and its clusters move at once.
	before, _ := f.snapshot()
	joinedAt := time.Now()
	f.start("op-3")
	d = f.waitFor("4 replicas sharing", 2*time.Minute, f.settled(shardClusters, append(all, "op-3")...))
	after, _ := f.snapshot()
	joined := ownedBy(after, "op-3")
	t.Logf("3 → 4: settled after %s, %d clusters drained to op-3: %v", d.Round(100*time.Millisecond), len(joined), count(after))
	f.checkDrained(before, after, joinedAt, "op-3")
	leftAt := time.Now()
	f.replica("op-3").stop()
	f.drop("op-3")
	d = f.waitFor("3 replicas sharing after op-3's clean stop", time.Minute, f.settled(shardClusters, all...))
	_, _, hi := spread(f.movedAfter(joined, leftAt, "op-3"))
	t.Logf("4 → 3: op-3's clusters moved in up to %s after its SIGTERM (settled after %s)", hi.Round(10*time.Millisecond), d.Round(100*time.Millisecond))
	if hi >= shardLease {
		t.Errorf("a clean stop moved its clusters in up to %s, no faster than its Lease expiring", hi)
	}

	// SIGKILL a replica (not the assigner: its death would also wait for
	// the leader Lease, as long as its own); restarted, it takes a share again.
	owner, _ = f.snapshot()
	victim := f.pick(all)
	keys := ownedBy(owner, victim)
	killedAt := time.Now()
	_ = f.replica(victim).cmd.Process.Kill()
	<-f.replica(victim).exited
	f.drop(victim)
	f.waitFor(victim+"'s clusters to run elsewhere", shardLease+moveSlack+10*time.Second, f.movedFrom(keys, victim))
	lo, mid, hi := spread(f.movedAfter(keys, killedAt, victim))
	t.Logf("SIGKILL of %s (%d clusters): moved in %s min, %s median, %s max (Lease %s)", victim, len(keys),
		lo.Round(10*time.Millisecond), mid.Round(10*time.Millisecond), hi.Round(10*time.Millisecond), shardLease)
	if hi > shardLease+moveSlack {
		t.Errorf("the killed replica's clusters moved in up to %s, beyond its Lease %s and %s", hi, shardLease, moveSlack)
	}
	f.start(victim)
	d = f.waitFor("the restarted "+victim+" to take a share again", 2*time.Minute, f.settled(shardClusters, all...))
	t.Logf("restarted %s: settled after %s", victim, d.Round(100*time.Millisecond))

	// SIGSTOP a replica past its Lease, then SIGCONT it: its clusters moved
	// without it; it writes nothing more and exits on its lost Lease.
	owner, _ = f.snapshot()
	frozen := f.pick(all)
	fr := f.replica(frozen)
	writer := f.writer(fr)
	keys = ownedBy(owner, frozen)
	pausedAt := time.Now()
	if err := fr.pause(); err != nil {
		t.Fatal(err)
	}
	f.waitFor(frozen+"'s clusters to run elsewhere while it is stopped", shardLease+moveSlack+10*time.Second, f.movedFrom(keys, frozen))
	_, _, hi = spread(f.movedAfter(keys, pausedAt, frozen))
	resumedAt := time.Now()
	if err := fr.resume(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-fr.exited:
	case <-time.After(time.Minute):
		t.Fatalf("%s, continued after its Lease was taken over, did not exit\n%s", frozen, tail(fr.logPath, 30))
	}
	f.drop(frozen)
	lostLease, fenced := false, 0
	for _, l := range fr.logLines() {
		if e, _ := l["error"].(string); strings.Contains(e, "Lease was taken over") {
			lostLease = true
		}
		if m, _ := l["message"].(string); strings.HasPrefix(m, "fenced") {
			fenced++
		}
	}
	if !lostLease {
		t.Errorf("%s did not end on its lost Lease:\n%s", frozen, tail(fr.logPath, 30))
	}
	t.Logf("SIGSTOP of %s (%d clusters) for %s: moved in up to %s; continued, it exited %s later on its lost Lease; %d of its actors were fenced on a write",
		frozen, len(keys), resumedAt.Sub(pausedAt).Round(100*time.Millisecond), hi.Round(10*time.Millisecond),
		time.Since(resumedAt).Round(100*time.Millisecond), fenced)

	// Throughout: never two owners; in the logs the writers follow one
	// another and none returns; none written by the paused writer after
	// the pause; every set initiated once.
	f.mu.Lock()
	doubles, polls, polling, missed := f.doubles, f.polls, f.polling, f.missed
	f.mu.Unlock()
	t.Logf("%d rounds of every running replica's /owned in %s (one every %s); %d answers later than 1 s", polls, polling.Round(time.Second),
		(polling / time.Duration(max(polls, 1))).Round(time.Millisecond), missed)
	for i, dbl := range doubles {
		if i == 10 {
			t.Errorf("... %d more", len(doubles)-10)
			break
		}
		t.Errorf("two owners: %s", dbl)
	}
	f.checkLogs(uids, writer, pausedAt)
	for _, line := range report {
		t.Log(line)
	}
	t.Logf("the whole run took %s", time.Since(began).Round(time.Second))
}

// pick is a replica among ids, not the assigner, that owns the most clusters.
func (f *fleet) pick(ids []string) string {
	f.t.Helper()
	owner, _ := f.snapshot()
	c := count(owner)
	assigner, best := f.assigner(), ""
	for _, id := range ids {
		if id != assigner && c[id] > 0 && (best == "" || c[id] > c[best]) {
			best = id
		}
	}
	if best == "" {
		f.t.Fatalf("no replica but the assigner %s owns a cluster: %v", assigner, c)
	}
	return best
}

// checkDrained: every cluster that moved when joiner joined went to it, and
// was drained by its live owner (drain label seen, or its owner label
// emptied) before the joiner got it.
func (f *fleet) checkDrained(before, after map[string]string, since time.Time, joiner string) {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for key, was := range before {
		if after[key] == was {
			continue
		}
		if after[key] != joiner {
			f.t.Errorf("%s moved from %s to %s when %s joined", key, was, after[key], joiner)
		}
		drained := false
		for _, l := range f.labels[key] {
			if l.at.Before(since) {
				continue
			}
			// The drain label, or the owner label emptied: only the old,
			// live owner removes it, once its actor stopped (the drain
			// acknowledged). A fast drain may come and go between two
			// polls of 100 ms, its emptied label much less likely so.
			if l.who == was+"+drain" || l.who == "" {
				drained = true
			}
			if l.who == joiner && !drained {
				f.t.Errorf("%s went from %s to %s without the drain label: %v", key, was, joiner, f.labels[key])
			}
		}
	}
}

// checkLogs reads every cluster's event log: the writers follow one another
// and none returns; nothing by paused after pausedAt; one initiate.
func (f *fleet) checkLogs(uids map[string]string, paused string, pausedAt time.Time) {
	f.t.Helper()
	store := eventlog.NewKube(f.env.Client)
	var most []string
	for key, uid := range uids {
		ns, name, _ := strings.Cut(key, "/")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		snap, recs, err := store.Load(ctx, eventlog.Stream{Namespace: ns, Name: name, UID: uid})
		cancel()
		if err != nil {
			f.t.Errorf("%s: loading its event log: %v", key, err)
			continue
		}
		var writers []string
		for _, r := range recs {
			if len(writers) == 0 || writers[len(writers)-1] != r.Writer {
				for _, w := range writers {
					if w == r.Writer {
						f.t.Errorf("%s: %s writes again at seq %d after %v", key, r.Writer, r.Seq, writers)
					}
				}
				writers = append(writers, r.Writer)
			}
			if strings.HasPrefix(r.Writer, paused+"#") && r.Time.After(pausedAt) {
				f.t.Errorf("%s: the paused %s wrote seq %d (%s) after its pause", key, paused, r.Seq, r.Type)
			}
		}
		if len(writers) > len(most) {
			most = writers
		}
		s := actors.Initial()
		if snap != nil {
			if err := json.Unmarshal(snap.State, &s); err != nil {
				f.t.Errorf("%s: snapshot: %v", key, err)
				continue
			}
		}
		if s, err = actors.Fold(s, recs); err != nil {
			f.t.Errorf("%s: folding its log: %v", key, err)
		} else if s.Initiates != 1 {
			f.t.Errorf("%s: initiated %d times", key, s.Initiates)
		}
	}
	f.t.Logf("event logs: the most writers one log had, in order: %v", most)
}
