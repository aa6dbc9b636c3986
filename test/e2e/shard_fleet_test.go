package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgors/operator/kube/client"
	"github.com/mgors/operator/kube/shard"
	"github.com/mgors/operator/test/localkube/harness"
)

// shardReplica is one operator process on the host, run with --shards=auto
// over the test's namespace (its Leases are there too, so the cluster-wide
// operator's are never touched).
type shardReplica struct {
	id      string
	cmd     *exec.Cmd
	logPath string
	health  string // host:port of /owned
	metrics string // host:port of /metrics
	exited  chan struct{}
	// stopped: SIGSTOPped, it runs nothing; the poll does not wait for its
	// answer (which would stretch the 100 ms period).
	stopped atomic.Bool
}

// pause and resume SIGSTOP and SIGCONT the process.
func (r *shardReplica) pause() error {
	r.stopped.Store(true)
	return r.cmd.Process.Signal(syscall.SIGSTOP)
}

func (r *shardReplica) resume() error {
	err := r.cmd.Process.Signal(syscall.SIGCONT)
	r.stopped.Store(false)
	return err
}

// fleet runs the replicas and polls, every 100 ms, what each one owns: the
// clusters whose actor runs in it while its Lease allows writing (its
// /owned), and the Mgors's owner and drain labels.
type fleet struct {
	t   *testing.T
	env *harness.Env
	mc  client.Interface
	dir string

	mu      sync.Mutex
	live    map[string]*shardReplica // the current process of each identity
	runs    map[string]int
	owner   map[string]string // cluster → the replica owning it at the last poll ("" none)
	owners  map[string][]ownerAt
	label   map[string]string // cluster → its labels at the last poll: owner, "+drain"
	labels  map[string][]ownerAt
	doubles []string
	missed  int // answers of running replicas that came too late (1 s)
	polls   int
	polling time.Duration
}

// ownerAt is a change seen by the poll: from at on, the cluster was owned by
// (or labelled) who.
type ownerAt struct {
	who string
	at  time.Time
}

// ownedAnswer is cmd/mgors-operator's /owned answer.
type ownedAnswer struct {
	Identity string   `json:"identity"`
	MayWrite bool     `json:"mayWrite"`
	Clusters []string `json:"clusters"`
}

func newFleet(t *testing.T, env *harness.Env) *fleet {
	f := &fleet{t: t, env: env, mc: mgorsClient(t, env), dir: t.TempDir(), live: map[string]*shardReplica{}, runs: map[string]int{},
		owner: map[string]string{}, owners: map[string][]ownerAt{}, label: map[string]string{}, labels: map[string][]ownerAt{}}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.poll(ctx)
	}()
	t.Cleanup(func() { stop(); <-done })
	return f
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// start runs a new process of replica id.
func (f *fleet) start(id string) *shardReplica {
	t := f.t
	t.Helper()
	f.mu.Lock()
	f.runs[id]++
	n := f.runs[id]
	f.mu.Unlock()
	r := &shardReplica{id: id, health: freeAddr(t), metrics: freeAddr(t), exited: make(chan struct{}),
		logPath: filepath.Join(f.dir, fmt.Sprintf("%s-%d.log", id, n))}
	out, err := os.Create(r.logPath)
	if err != nil {
		t.Fatal(err)
	}
	r.cmd = exec.Command(filepath.Join(repo(t), "bin", "mgors-operator"),
		"--kubeconfig", filepath.Join(f.env.Dir, "kubeconfig"),
		"--namespace", f.env.Namespace, "--lease-namespace", f.env.Namespace,
		"--shards=auto", "--identity", id, "--install-crd=false",
		"--event-store", "kube", "--dns-server", "10.244.0.1:53",
		"--metrics-addr", r.metrics, "--health-addr", r.health, "--interval", "5s")
	r.cmd.Stdout, r.cmd.Stderr = out, out
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = r.cmd.Wait()
		_ = out.Close()
		close(r.exited)
	}()
	t.Cleanup(r.stop)
	f.mu.Lock()
	f.live[id] = r
	f.mu.Unlock()
	return r
}

// stop ends the process as a scale-down does (SIGTERM; SIGKILL after 30 s).
func (r *shardReplica) stop() {
	select {
	case <-r.exited:
		return
	default:
	}
	_ = r.cmd.Process.Signal(syscall.SIGCONT) // a paused one must run to stop
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(30 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.exited
	}
}

// drop forgets the process of id (it died or stopped): the poll no longer asks it.
func (f *fleet) drop(id string) {
	f.mu.Lock()
	delete(f.live, id)
	f.mu.Unlock()
}

func (f *fleet) replica(id string) *shardReplica {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.live[id]
}

// logLines are the JSON lines of the process's log.
func (r *shardReplica) logLines() []map[string]any {
	fh, err := os.Open(r.logPath)
	if err != nil {
		return nil
	}
	defer func() { _ = fh.Close() }()
	var out []map[string]any
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// writer is the name the process writes its event-log records under.
func (f *fleet) writer(r *shardReplica) string {
	f.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		for _, l := range r.logLines() {
			if w, ok := l["writer"].(string); ok && strings.HasPrefix(w, r.id+"@") {
				return w
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	f.t.Fatalf("%s never logged its writer name\n%s", r.id, tail(r.logPath, 30))
	return ""
}

func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// poll asks every running replica's /owned every 100 ms (a round waits for
// the slowest answer, so under load a round may take longer: the test
// reports the rounds' mean period), and, in its own loop, lists the Mgors's
// labels, until ctx ends.
func (f *fleet) poll(ctx context.Context) {
	var labels sync.WaitGroup
	labels.Go(func() { f.pollLabels(ctx) })
	defer labels.Wait()
	hc := &http.Client{Timeout: time.Second}
	began := time.Now()
	for ctx.Err() == nil {
		start := time.Now()
		f.mu.Lock()
		reps := make([]*shardReplica, 0, len(f.live))
		for _, r := range f.live {
			reps = append(reps, r)
		}
		f.mu.Unlock()
		answers := make([]ownedAnswer, len(reps))
		failed := make([]bool, len(reps))
		var wg sync.WaitGroup
		for i, r := range reps {
			if r.stopped.Load() {
				continue // SIGSTOPped: it runs nothing
			}
			wg.Go(func() {
				resp, err := hc.Get("http://" + r.health + "/owned")
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					failed[i] = true // running, but no answer in time
				}
				if err != nil {
					return // not listening: exited, or not yet started
				}
				defer func() { _ = resp.Body.Close() }()
				// 503: no Manager runs there (starting or stopping): it owns nothing.
				if resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&answers[i]) != nil {
					failed[i] = true
				}
			})
		}
		wg.Wait()
		seen := map[string]string{}
		var doubles []string
		missed := 0
		for i, a := range answers {
			if failed[i] {
				missed++
			}
			if !a.MayWrite {
				continue
			}
			for _, key := range a.Clusters {
				if other, ok := seen[key]; ok {
					doubles = append(doubles, fmt.Sprintf("%s: %s owned by %s and %s", start.UTC().Format(time.RFC3339Nano), key, other, reps[i].id))
				}
				seen[key] = reps[i].id
			}
		}
		f.mu.Lock()
		f.doubles = append(f.doubles, doubles...)
		f.missed += missed
		for key := range f.owner {
			if _, ok := seen[key]; !ok {
				seen[key] = ""
			}
		}
		for key, who := range seen {
			if f.owner[key] != who || len(f.owners[key]) == 0 {
				f.owners[key] = append(f.owners[key], ownerAt{who, start})
			}
			f.owner[key] = who
		}
		f.polls++
		f.polling = time.Since(began)
		f.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(start.Add(100 * time.Millisecond))):
		}
	}
}

// pollLabels lists the Mgors every 100 ms and records their owner and drain labels.
func (f *fleet) pollLabels(ctx context.Context) {
	for ctx.Err() == nil {
		start := time.Now()
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		list, err := f.mc.Mgorses(f.env.Namespace).List(lctx, metav1.ListOptions{})
		cancel()
		if err == nil {
			f.mu.Lock()
			for _, o := range list.Items {
				key := o.Namespace + "/" + o.Name
				l := o.Labels[shard.LabelOwner]
				if _, ok := o.Labels[shard.LabelDrain]; ok {
					l += "+drain"
				}
				if f.label[key] != l || len(f.labels[key]) == 0 {
					f.labels[key] = append(f.labels[key], ownerAt{l, start})
				}
				f.label[key] = l
			}
			f.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(start.Add(100 * time.Millisecond))):
		}
	}
}

// snapshot is the last poll: owner and labels by cluster.
func (f *fleet) snapshot() (owner, label map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	owner, label = map[string]string{}, map[string]string{}
	for k, v := range f.owner {
		owner[k] = v
	}
	for k, v := range f.label {
		label[k] = v
	}
	return owner, label
}

func count(owner map[string]string) map[string]int {
	c := map[string]int{}
	for _, who := range owner {
		c[who]++
	}
	return c
}

func ownedBy(owner map[string]string, id string) []string {
	var keys []string
	for k, who := range owner {
		if who == id {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// settled: each of the n clusters is owned by one of the live replicas ids,
// each owns some, its owner label names the owner, and none is draining.
func (f *fleet) settled(n int, ids ...string) func() bool {
	return func() bool {
		owner, label := f.snapshot()
		c := count(owner)
		if len(label) != n || c[""] != 0 {
			return false
		}
		for _, id := range ids {
			if c[id] == 0 {
				return false
			}
		}
		for key, l := range label {
			if owner[key] != l || !slices.Contains(ids, l) {
				return false
			}
		}
		return true
	}
}

// waitFor polls cond every 100 ms for at most timeout; on failure it shows
// the owners and the replicas' last log lines.
func (f *fleet) waitFor(what string, timeout time.Duration, cond func() bool) time.Duration {
	f.t.Helper()
	start := time.Now()
	for time.Since(start) < timeout {
		if cond() {
			return time.Since(start)
		}
		time.Sleep(100 * time.Millisecond)
	}
	owner, label := f.snapshot()
	var b strings.Builder
	fmt.Fprintf(&b, "owners %v\nlabels %v\n", owner, label)
	f.mu.Lock()
	for id, r := range f.live {
		fmt.Fprintf(&b, "--- %s (%s):\n%s\n", id, r.logPath, tail(r.logPath, 25))
	}
	f.mu.Unlock()
	f.t.Fatalf("%s: not within %s\n%s", what, timeout, b.String())
	return 0
}

// movedAfter is, for each key, how long after t it was first seen owned by a
// replica other than from.
func (f *fleet) movedAfter(keys []string, t time.Time, from string) map[string]time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]time.Duration{}
	for _, key := range keys {
		for _, o := range f.owners[key] {
			if !o.at.Before(t) && o.who != "" && o.who != from {
				out[key] = o.at.Sub(t)
				break
			}
		}
	}
	return out
}

// spread says min, median and max of moves.
func spread(moves map[string]time.Duration) (lo, mid, hi time.Duration) {
	ds := make([]time.Duration, 0, len(moves))
	for _, d := range moves {
		ds = append(ds, d)
	}
	if len(ds) == 0 {
		return 0, 0, 0
	}
	slices.Sort(ds)
	return ds[0], ds[len(ds)/2], ds[len(ds)-1]
}

// assigner is the replica holding the leader Lease (it runs the assigner).
func (f *fleet) assigner() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, err := f.env.Client.CoordinationV1().Leases(f.env.Namespace).Get(ctx, "mgors-operator", metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// memory is the replica's Go heap in use and its resident set, in MiB: the
// median of 5 scrapes of its /metrics a second apart.
func (f *fleet) memory(r *shardReplica) (heap, rss float64) {
	var heaps, rsss []float64
	hc := &http.Client{Timeout: 2 * time.Second}
	for range 5 {
		resp, err := hc.Get("http://" + r.metrics + "/metrics")
		if err == nil {
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				name, v, ok := strings.Cut(sc.Text(), " ")
				x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				switch {
				case !ok || err != nil:
				case name == "go_memstats_heap_inuse_bytes":
					heaps = append(heaps, x/(1<<20))
				case name == "process_resident_memory_bytes":
					rsss = append(rsss, x/(1<<20))
				}
			}
			_ = resp.Body.Close()
		}
		time.Sleep(time.Second)
	}
	med := func(xs []float64) float64 {
		if len(xs) == 0 {
			return 0
		}
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	return med(heaps), med(rsss)
}

// movedFrom: every key is owned by a replica other than from.
func (f *fleet) movedFrom(keys []string, from string) func() bool {
	return func() bool {
		owner, _ := f.snapshot()
		for _, k := range keys {
			if owner[k] == "" || owner[k] == from {
				return false
			}
		}
		return true
	}
}
