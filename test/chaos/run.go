package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/kube/client"
	"github.com/mgors/operator/test/localkube/cluster"
	"github.com/mgors/operator/test/localkube/fault"
)

// Config is one chaos run.
type Config struct {
	// Dir is a running localkube cluster; Repo the repository (deploy/ and bin/).
	Dir, Repo string
	// Seed, Duration and Kinds plan the faults (see Schedule).
	Seed     int64
	Duration time.Duration
	Kinds    []FaultKind
	// ReportDir receives the raw logs of the run (logs/); the report itself is
	// written by WriteReport.
	ReportDir string
	Log       zerolog.Logger
	// Healthy bounds the wait for every cluster Healthy after a heal; default 2 min.
	Healthy time.Duration
	// Faults injects the faults; nil means the injector over Dir.
	Faults Faults
	// Clusters, when set, are the Mgors the run creates (in its namespace,
	// which Run sets) instead of the 3-member sample and the PSA set.
	Clusters []*v1alpha1.Mgors
	// Scenario, when set, replaces the seeded schedule (Seed, Duration, Kinds).
	Scenario Scenario
	// Restore, when set, names the cluster whose data the run restores to a
	// point in time (pitr.go): a MgorsBackup of it before the faults, its
	// oplog archived through them, and after them a MgorsRestore to a moment
	// inside them into a new Mgors (History.Restore).
	Restore string
}

// defaultFaults is the injector of Dir: localkube's own faults.
func defaultFaults(dir string, log zerolog.Logger) (Faults, error) { return fault.New(dir, log) }

// run is the state of one Run.
type run struct {
	cfg    Config
	log    zerolog.Logger
	rest   *rest.Config
	kube   kubernetes.Interface
	mgors  client.Interface
	faults Faults
	ns     string
	// clusters are the Mgors of the run, in the order of History.Clusters.
	clusters []*target
	rec      *recorder
	members  *memberView
	leases   *leaseLog
	followed *followedLogs

	mu sync.Mutex
	// expected maps a pod (ns/name) to the fault about to delete it.
	expected map[string]int
	// kept are secret values a Scenario retired (Scene.KeepSecret).
	kept []string
}

// recorder collects the history from many goroutines.
type recorder struct {
	mu sync.Mutex
	h  History
}

func (r *recorder) op(o Op) {
	r.mu.Lock()
	defer r.mu.Unlock()
	o.Index = len(r.h.Ops)
	r.h.Ops = append(r.h.Ops, o)
}

func (r *recorder) member(s MemberSample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Members = append(r.h.Members, s)
}

func (r *recorder) phase(s PhaseSample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Phases = append(r.h.Phases, s)
}

func (r *recorder) deletion(d PodDeletion) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Deletions = append(r.h.Deletions, d)
}

func (r *recorder) fault(f Fault) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Faults = append(r.h.Faults, f)
}

// samplesOf returns a copy of the member samples of a cluster taken in [from, to].
func (r *recorder) samplesOf(cluster string, from, to time.Time) []MemberSample {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []MemberSample
	for _, s := range r.h.Members {
		if s.Cluster == cluster && !s.At.Before(from) && !s.At.After(to) {
			out = append(out, s)
		}
	}
	return out
}

// Run deploys the operator with two replicas on the cluster in cfg.Dir, creates
// the run's replica sets, drives the workload and the samplers through the
// seeded schedule of faults, heals, and returns the history for Check.
func Run(ctx context.Context, cfg Config) (*History, error) {
	if cfg.Healthy == 0 {
		cfg.Healthy = 2 * time.Minute
	}
	if len(cfg.Kinds) == 0 {
		cfg.Kinds = FaultKinds
	}
	rc, cs, err := cluster.Client(cfg.Dir)
	if err != nil {
		return nil, err
	}
	mc, err := client.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	r := &run{cfg: cfg, log: cfg.Log, rest: rc, kube: cs, mgors: mc, faults: cfg.Faults,
		ns: "chaos-" + strconv.FormatInt(time.Now().Unix()%1e6, 36), rec: &recorder{},
		members: newMemberView(), leases: &leaseLog{}, followed: newFollowedLogs(), expected: map[string]int{}}
	if r.faults == nil {
		if r.faults, err = defaultFaults(cfg.Dir, cfg.Log); err != nil {
			return nil, err
		}
	}
	h := &r.rec.h
	h.Seed, h.Duration, h.Kinds, h.Started = cfg.Seed, cfg.Duration, cfg.Kinds, time.Now()
	var steps []Step
	if cfg.Scenario == nil {
		steps = Schedule(cfg.Seed, cfg.Duration, cfg.Kinds, 2)
	}
	r.log.Info().Int64("seed", cfg.Seed).Int("faults", len(steps)).Msg("chaos run planned")

	if err := r.deployOperator(ctx); err != nil {
		return nil, err
	}
	if err := r.createClusters(ctx); err != nil {
		return nil, err
	}
	for _, t := range r.clusters {
		h.Clusters = append(h.Clusters, t.key)
	}
	pvcStart := map[string]map[string]string{}
	for _, t := range r.clusters {
		if pvcStart[t.key], err = r.pvcUIDs(ctx, t); err != nil {
			return nil, err
		}
	}

	// Samplers run from before the first fault until after the final reads.
	sctx, stopSamplers := context.WithCancel(ctx)
	var samplers sync.WaitGroup
	r.startSamplers(sctx, &samplers)
	defer func() { stopSamplers(); samplers.Wait() }()

	wctx, stopWorkload := context.WithCancel(ctx)
	var workers sync.WaitGroup
	for _, t := range r.clusters {
		if err := r.startWorkload(wctx, t, &workers); err != nil {
			stopWorkload()
			workers.Wait()
			return nil, err
		}
	}
	warm := time.Now().Add(10 * time.Second) // warm-up: a baseline of writes before the first fault
	var rs *Restore
	if cfg.Restore != "" {
		rs = &Restore{}
		if err := r.takeBackup(ctx, rs); err != nil {
			stopWorkload()
			workers.Wait()
			return nil, err
		}
	}
	sleep(ctx, time.Until(warm))

	if cfg.Scenario != nil {
		if err := cfg.Scenario(ctx, &Scene{r: r}); err != nil {
			stopWorkload()
			workers.Wait()
			return nil, fmt.Errorf("scenario: %w", err)
		}
	}
	for i, s := range steps {
		if ctx.Err() != nil {
			break
		}
		f, later := r.inject(ctx, i+1, s)
		healed, evidence := f.Healed, make(chan struct{})
		go func() {
			defer close(evidence)
			if later != nil {
				later() // completes f's evidence; f is not read until it is done
			}
		}()
		at, err := r.waitHealthy(ctx, healed)
		<-evidence
		r.log.Info().Int("fault", f.ID).Str("kind", string(f.Kind)).Str("cluster", f.Cluster).
			Strs("targets", f.Targets).Bool("happened", f.Happened).Str("evidence", f.Evidence).Msg("fault healed")
		if err == nil {
			f.HealthyAt = at
			r.log.Info().Int("fault", f.ID).Str("after", at.Sub(healed).Round(time.Millisecond).String()).Msg("every cluster Healthy")
		} else {
			r.log.Warn().Int("fault", f.ID).Err(err).Msg("not Healthy within the bound; going on")
		}
		r.rec.fault(*f)
		sleep(ctx, s.Pause)
	}
	var targetErr error
	if rs != nil {
		targetErr = r.createRestoreTarget(ctx) // it starts while the final reads run
	}
	sleep(ctx, 5*time.Second)
	stopWorkload()
	workers.Wait()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}

	for _, t := range r.clusters {
		fin := r.final(ctx, t)
		fin.PVCStart = pvcStart[t.key]
		h.Final = append(h.Final, fin)
	}
	if rs != nil {
		r.restoreAt(ctx, rs, restoreMoment(h.Faults, rs.BackupEnd), targetErr)
		h.Restore = rs
	}
	r.collect(ctx)
	stopSamplers()
	samplers.Wait()
	h.Ended = time.Now()
	return h, nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// kubectl runs the cluster's kubectl.
func (r *run) kubectl(ctx context.Context, timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(r.cfg.Dir, "bin", "kubectl"), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(r.cfg.Dir, "kubeconfig"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// deployOperator applies deploy/ as `make run` does and waits until both
// replicas are available and one holds the Lease.
func (r *run) deployOperator(ctx context.Context) error {
	if out, err := r.kubectl(ctx, 2*time.Minute, "apply", "--server-side", "--force-conflicts", "-k", filepath.Join(r.cfg.Repo, "deploy")); err != nil {
		return fmt.Errorf("kubectl apply -k deploy: %w\n%s", err, out)
	}
	if out, err := r.kubectl(ctx, 4*time.Minute, "-n", operatorNamespace, "rollout", "status", "deployment/mgors-operator", "--timeout=180s"); err != nil {
		logs, _ := r.kubectl(ctx, time.Minute, "-n", operatorNamespace, "logs", "deployment/mgors-operator", "--tail=50")
		return fmt.Errorf("the operator did not become available: %w\n%s\n%s", err, out, logs)
	}
	r.log.Info().Msg("operator deployed (2 replicas)")
	return nil
}

// sampleFile reads a sample from deploy/samples.
func (r *run) sampleFile(file string) (*v1alpha1.Mgors, error) {
	b, err := os.ReadFile(filepath.Join(r.cfg.Repo, "deploy", "samples", file))
	if err != nil {
		return nil, err
	}
	var m v1alpha1.Mgors
	return &m, yaml.UnmarshalStrict(b, &m)
}

// createClusters makes the run's namespace and its replica sets (Config.Clusters,
// or by default the 3-member sample and a primary-secondary-arbiter set); then
// waits for each to be Healthy.
func (r *run) createClusters(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := r.kube.CoreV1().Namespaces().Create(cctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: r.ns, Labels: map[string]string{"mgors.io/chaos": "true"}}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("namespace %s: %w", r.ns, err)
	}
	wanted := r.cfg.Clusters
	if len(wanted) == 0 {
		demo, err := r.sampleFile("mgors-3.yaml")
		if err != nil {
			return err
		}
		psa := demo.DeepCopy()
		psa.Name, psa.Spec.Members, psa.Spec.Arbiters = "psa", 2, 1
		// demo, the majority-loss fault's target, forces after the grace period.
		demo.Spec.Recovery.MajorityLoss = v1alpha1.RecoveryAutomatic
		demo.Spec.Recovery.GracePeriod = &metav1.Duration{Duration: majorityGrace}
		wanted = []*v1alpha1.Mgors{demo, psa}
	}
	if r.cfg.Restore != "" {
		wanted = slices.Clone(wanted)
		for i := range wanted {
			wanted[i] = wanted[i].DeepCopy()
		}
		if err := r.prepareArchive(ctx, wanted); err != nil {
			return err
		}
	}
	var names []string
	for _, m := range wanted {
		m = m.DeepCopy()
		m.Namespace = r.ns
		if _, err := r.mgors.Mgorses(r.ns).Create(cctx, m, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create Mgors %s: %w", m.Name, err)
		}
		names = append(names, m.Name)
	}
	r.log.Info().Str("namespace", r.ns).Strs("clusters", names).Msg("replica sets created; waiting for Healthy")
	for _, name := range names {
		m, err := r.waitMgors(ctx, name, 8*time.Minute)
		if err != nil {
			return err
		}
		t, err := r.newTarget(ctx, m)
		if err != nil {
			return err
		}
		r.clusters = append(r.clusters, t)
		r.log.Info().Str("cluster", t.key).Str("primary", m.Status.Primary).Msg("Healthy")
	}
	return nil
}

// waitMgors waits until the Mgors is Healthy at its generation with a
// connection string.
func (r *run) waitMgors(ctx context.Context, name string, bound time.Duration) (*v1alpha1.Mgors, error) {
	deadline := time.Now().Add(bound)
	var last *v1alpha1.Mgors
	for time.Now().Before(deadline) && ctx.Err() == nil {
		gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		m, err := r.mgors.Mgorses(r.ns).Get(gctx, name, metav1.GetOptions{})
		cancel()
		if err == nil {
			last = m
			if m.Status.Phase == v1alpha1.PhaseHealthy && m.Status.ObservedGeneration == m.Generation && m.Status.ConnectionString != "" {
				return m, nil
			}
		}
		sleep(ctx, time.Second)
	}
	if last == nil {
		return nil, fmt.Errorf("the Mgors %s/%s: never read within %s", r.ns, name, bound)
	}
	return nil, fmt.Errorf("the Mgors %s/%s is not Healthy within %s: phase %s, conditions %+v", r.ns, name, bound, last.Status.Phase, last.Status.Conditions)
}

// pvcUIDs maps each member PVC of a cluster to its UID.
func (r *run) pvcUIDs(ctx context.Context, t *target) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	l, err := r.kube.CoreV1().PersistentVolumeClaims(t.ns).List(ctx, metav1.ListOptions{LabelSelector: "mgors.io/cluster=" + t.name})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, p := range l.Items {
		out[p.Name] = string(p.UID)
	}
	return out, nil
}

// errNoPrimary says no member was seen primary lately.
var errNoPrimary = errors.New("no primary in the latest samples")

// podOf is the pod name of a member host "pod.svc.ns.svc.domain:port".
func podOf(host string) string {
	name, _, _ := strings.Cut(host, ".")
	return name
}
