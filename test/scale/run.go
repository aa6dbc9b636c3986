package scale

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/kube/client"
)

// Rows are the implementations a run can measure.
const (
	RowMgors    = "mgors"
	RowBaseline = "baseline"
)

// Config is one run: one row at one N.
type Config struct {
	Row     string
	N       int
	Members int32
	// Settle is the quiet time after all are Healthy before the steady
	// window; Window the steady window itself.
	Settle, Window time.Duration
	// Faults is how many clusters get each fault (at most N), Spacing the
	// time between two faults, Wait how long a reaction may take.
	Faults  int
	Spacing time.Duration
	Wait    time.Duration
	// HealthyWait bounds the wait for all N to be Healthy.
	HealthyWait time.Duration
	// QPS is the row's client rate limit (0: OperatorQPS).
	QPS float32
	// HeapProfile, when set, is where a heap profile (pprof) is written when
	// the heap figure is taken, and HeapProfile+".base" one when the heap
	// before the row is: `go tool pprof -sample_index=inuse_space -base
	// HeapProfile.base HeapProfile` is what the row added.
	HeapProfile string
	// CPUProfile, when set, is where a CPU profile (pprof) of the kill
	// faults is written: what a reaction competes with.
	CPUProfile string
	Log        zerolog.Logger
}

// Run measures one row on the API server of base: it creates N Mgors in a
// namespace of their own, simulates their members and pods, runs the row,
// and takes the figures (see Result). The namespace is left behind.
func Run(ctx context.Context, base *rest.Config, c Config) (Result, error) {
	res := Result{Row: c.Row, N: c.N, Members: c.Members, QPS: c.QPS}
	if res.QPS <= 0 {
		res.QPS = OperatorQPS
	}
	h, err := newHarness(ctx, base, c)
	if err != nil {
		return res, err
	}
	members := NewMembers()
	clusters := make([]*v1alpha1.Mgors, c.N)
	for i := range clusters {
		clusters[i] = newMgors(h.ns, i, c.Members)
		members.Add(clusters[i], clusterDomain)
	}
	kubelet := &Kubelet{Client: h.kc, Namespace: h.ns}
	hctx, stopHarness := context.WithCancel(ctx)
	defer stopHarness()
	go kubelet.Run(hctx)
	go forgetCalls(hctx, members)

	heapBefore := liveHeap()
	if c.HeapProfile != "" {
		writeHeapProfile(c.HeapProfile+".base", c.Log)
	}
	qps := c.QPS
	if qps <= 0 {
		qps = OperatorQPS
	}
	env, err := NewEnv(hctx, base, qps, h.ns, members, c.Log)
	if err != nil {
		return res, err
	}
	defer env.Close()
	// A row that stops by itself (it failed) ends the run.
	ctx, failed := context.WithCancelCause(ctx)
	defer failed(nil)
	rowCtx, stopRow := context.WithCancel(hctx)
	rowDone := make(chan struct{})
	go func() {
		defer close(rowDone)
		run := RunMgors
		if c.Row == RowBaseline {
			run = RunBaseline
		}
		err := run(rowCtx, env)
		if rowCtx.Err() == nil {
			failed(fmt.Errorf("the %s row stopped: %w", c.Row, err))
		}
	}()
	defer func() { stopRow(); <-rowDone }()

	if err := h.create(ctx, clusters); err != nil {
		return res, err
	}
	created := time.Now()
	res.Healthy = h.waitHealthy(ctx, c.N, c.HealthyWait)
	res.ToHealthy = time.Since(created).Seconds()
	c.Log.Info().Int("healthy", res.Healthy).Float64("seconds", res.ToHealthy).Interface("requests", env.Requests.ByKind()).
		Msg("clusters Healthy; the requests so far, by method and resource")

	sleep(ctx, c.Settle)
	steady(ctx, &res, env, members, c)
	res.Heap = float64(liveHeap()-heapBefore) / 1024 / float64(c.N)
	if c.HeapProfile != "" {
		writeHeapProfile(c.HeapProfile, c.Log)
	}
	res.RSS = rssMiB()

	f := &faults{h: h, env: env, members: members, kubelet: kubelet, clusters: clusters, c: c}
	stopProfile := startCPUProfile(c.CPUProfile, c.Log)
	kills, killMissed, writes := f.run(ctx, f.kill)
	stopProfile()
	res.Kill = Summarise(kills, killMissed)
	res.KillDelivery = Summarise(f.deliveries())
	res.ObserveUnderFaults = Summarise(env.Observations.Take(), 0)
	h.waitHealthy(ctx, c.N, c.HealthyWait)
	specs, specMissed, specWrites := f.run(ctx, f.spec)
	res.Spec = Summarise(specs, specMissed)
	res.WriteP50 = Summarise(append(writes, specWrites...), 0).P50
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return res, err
	}
	return res, ctx.Err()
}

// steady takes the steady-state figures over c.Window.
func steady(ctx context.Context, res *Result, env *Env, members *Members, c Config) {
	env.Observations.Take()
	req0, cmd0, cpu0, t0 := env.Requests.Counts(), members.Commands(), cpuTime(), time.Now()
	sleep(ctx, c.Window)
	d := env.Requests.Counts().Sub(req0)
	cmds, cpu, wall := members.Commands()-cmd0, cpuTime()-cpu0, time.Since(t0)
	perMin := func(v float64) float64 { return v / float64(c.N) / wall.Minutes() }
	res.Window = wall.Seconds()
	res.Reads, res.Writes, res.Appends = perMin(float64(d.Reads)), perMin(float64(d.Writes)), perMin(float64(d.Appends))
	res.Commands = perMin(float64(cmds))
	res.CPU = perMin(float64(cpu) / float64(time.Millisecond))
	res.CPUCores = float64(cpu) / float64(wall)
	res.Observe = Summarise(env.Observations.Take(), 0)
}

// harness is the benchmark's own access to the API server: not counted,
// not rate limited like the operator.
type harness struct {
	ns string
	kc kubernetes.Interface
	mc client.Interface
}

func newHarness(ctx context.Context, base *rest.Config, c Config) (*harness, error) {
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = 1000, 2000
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	mc, err := client.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ac, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ictx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := kube.InstallCRD(ictx, ac, 2*time.Minute); err != nil {
		return nil, fmt.Errorf("installing the CRDs: %w", err)
	}
	ns := fmt.Sprintf("scale-%s-%d-%s", c.Row, c.N, time.Now().UTC().Format("150405"))
	if _, err := kc.CoreV1().Namespaces().Create(ictx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("namespace %s: %w", ns, err)
	}
	return &harness{ns: ns, kc: kc, mc: mc}, nil
}

// newMgors is the i-th cluster: small, one volume each, no anti-affinity.
func newMgors(ns string, i int, members int32) *v1alpha1.Mgors {
	size := resource.MustParse("512Mi")
	m := &v1alpha1.Mgors{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("rs-%04d", i)},
		Spec: v1alpha1.MgorsSpec{Members: members, Version: "7.0.14",
			Storage:    v1alpha1.StorageSpec{Size: &size},
			Scheduling: v1alpha1.SchedulingSpec{AntiAffinity: v1alpha1.AntiAffinityNone}}}
	m.APIVersion, m.Kind = v1alpha1.SchemeGroupVersion.String(), v1alpha1.Kind
	return m
}

// create makes the Mgors, eight at a time, and records their UIDs.
func (h *harness) create(ctx context.Context, clusters []*v1alpha1.Mgors) error {
	var wg sync.WaitGroup
	errs := make(chan error, len(clusters))
	next := make(chan *v1alpha1.Mgors)
	for range 8 {
		wg.Go(func() {
			for m := range next {
				cctx, cancel := context.WithTimeout(ctx, time.Minute)
				got, err := h.mc.Mgorses(h.ns).Create(cctx, m, metav1.CreateOptions{})
				cancel()
				if err != nil {
					errs <- fmt.Errorf("creating %s: %w", m.Name, err)
					continue
				}
				m.UID, m.ResourceVersion, m.Generation = got.UID, got.ResourceVersion, got.Generation
			}
		})
	}
	for _, m := range clusters {
		next <- m
	}
	close(next)
	wg.Wait()
	close(errs)
	return <-errs // nil when none failed
}

// waitHealthy polls until n Mgors say Healthy or wait passes; it returns
// how many did.
func (h *harness) waitHealthy(ctx context.Context, n int, wait time.Duration) int {
	deadline := time.Now().Add(wait)
	healthy := 0
	for ctx.Err() == nil {
		healthy = h.healthy(ctx)
		if healthy >= n || time.Now().After(deadline) {
			return healthy
		}
		sleep(ctx, time.Second)
	}
	return healthy
}

func (h *harness) healthy(ctx context.Context) int {
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	l, err := h.mc.Mgorses(h.ns).List(cctx, metav1.ListOptions{})
	if err != nil {
		return 0
	}
	n := 0
	for _, m := range l.Items {
		if m.Status.Phase == v1alpha1.PhaseHealthy {
			n++
		}
	}
	return n
}

// forgetCalls keeps the fakes' call logs empty.
func forgetCalls(ctx context.Context, m *Members) {
	for ctx.Err() == nil {
		sleep(ctx, 5*time.Second)
		m.ForgetCalls()
	}
}

// writeHeapProfile writes the heap profile of the live heap (liveHeap has
// just collected) to path; a failure is logged, the run goes on.
func writeHeapProfile(path string, log zerolog.Logger) {
	err := func() error {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			_ = f.Close()
			return err
		}
		return f.Close()
	}()
	if err != nil {
		log.Warn().Err(err).Str("path", path).Msg("heap profile not written")
	}
}

// startCPUProfile starts a CPU profile to path (none when path is empty)
// and returns what stops it.
func startCPUProfile(path string, log zerolog.Logger) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		log.Warn().Err(err).Str("path", path).Msg("CPU profile not written")
		if f != nil {
			_ = f.Close()
		}
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			log.Warn().Err(err).Str("path", path).Msg("CPU profile not written")
		}
	}
}

// liveHeap is the heap in use after two collections.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	return int64(s.HeapAlloc)
}

// cpuTime is the process's user and system CPU so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rssMiB is the process's resident set (VmRSS), in MiB.
func rssMiB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	var kb float64
	for _, line := range strings.Split(string(b), "\n") {
		if _, err := fmt.Sscanf(line, "VmRSS: %f kB", &kb); err == nil {
			return kb / 1024
		}
	}
	return 0
}
