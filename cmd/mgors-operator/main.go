// Command mgors-operator runs the Mgors operator: it takes the leader Lease
// (when asked), installs the Mgors, MgorsBackup and MgorsRestore CRDs once
// leading (unless --install-crd=false), watches Mgors objects (and the
// MgorsBackups and MgorsRestores that name them) and runs one supervised
// actor per cluster. Wiring only; the behaviour lives in actors, watch, kube
// and mongo.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/mgors/operator/actors"
	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/client"
	"github.com/mgors/operator/mongo"
	"github.com/mgors/operator/watch"
)

type options struct {
	kubeconfig     string
	namespace      string
	leaderElect    bool
	leaseNamespace string
	leaseName      string
	healthAddr     string
	metricsAddr    string
	clusterDomain  string
	dnsServer      string
	store          string
	storeDir       string
	interval       time.Duration
	observeTimeout time.Duration
	actTimeout     time.Duration
	snapshotEvery  int64
	keepRecords    int64
	logLevel       string
	identity       string
	shards         string
	installCRD     bool
	certLifetime   time.Duration
}

func parseFlags(args []string) (options, error) {
	var o options
	host, _ := os.Hostname()
	fs := flag.NewFlagSet("mgors-operator", flag.ContinueOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file; empty means the in-cluster config")
	fs.StringVar(&o.namespace, "namespace", "", "watch only this namespace; empty watches all")
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "take a Lease before acting, so only one replica acts")
	fs.StringVar(&o.leaseNamespace, "lease-namespace", "mgors-system", "namespace of the leader Lease")
	fs.StringVar(&o.leaseName, "lease-name", "mgors-operator", "name of the leader Lease")
	fs.StringVar(&o.healthAddr, "health-addr", ":8081", "address of /healthz and /readyz")
	fs.StringVar(&o.metricsAddr, "metrics-addr", ":8080", "address of /metrics")
	fs.StringVar(&o.clusterDomain, "cluster-domain", "cluster.local", "the cluster's DNS domain, in member host names")
	fs.StringVar(&o.dnsServer, "dns-server", "", "resolve member names through this DNS server (host:port), for an operator running outside the cluster")
	fs.StringVar(&o.store, "event-store", "", "where event logs are kept: kube, file or memory; empty means kube in a cluster, file outside")
	fs.StringVar(&o.storeDir, "event-dir", ".mgors/events", "directory of the file event store")
	fs.DurationVar(&o.interval, "interval", time.Minute, "how often each cluster is observed without a change to wake it (its objects' watches and its members' moves wake it at once)")
	fs.DurationVar(&o.observeTimeout, "observe-timeout", 20*time.Second, "bound of one observation (every call inside has its own, shorter deadline)")
	fs.DurationVar(&o.actTimeout, "act-timeout", 60*time.Second, "bound of one action")
	fs.Int64Var(&o.snapshotEvery, "snapshot-every", 100, "records between event-log snapshots")
	fs.Int64Var(&o.keepRecords, "eventlog-keep", 300, "records before a snapshot the kube store keeps for people (mgorsctl replay) when it compacts")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&o.identity, "identity", host, "this instance's name in the Lease and in the records it writes")
	fs.StringVar(&o.shards, "shards", "", `"auto" spreads the Mgors over every live replica, each with a Lease of its own (docs/design/sharding.md); empty: one replica acts (with --leader-elect, the others stand by)`)
	fs.BoolVar(&o.installCRD, "install-crd", true, "install or upgrade the Mgors, MgorsBackup and MgorsRestore CRDs when leading; false when a person installs them (the namespaced install has no right to)")
	fs.DurationVar(&o.certLifetime, "certificate-lifetime", 365*24*time.Hour, "life of the member certificates the operator issues; renewed in the last third (short only in tests)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch o.store {
	case "", "kube", "file", "memory":
	default:
		return o, fmt.Errorf("--event-store must be kube, file or memory, not %q", o.store)
	}
	switch o.shards {
	case "":
	case "auto":
		if o.identity == "" {
			return o, errors.New("--shards=auto needs an --identity unique among the replicas")
		}
	default:
		return o, fmt.Errorf(`--shards must be "auto" or empty, not %q`, o.shards)
	}
	if o.keepRecords < 0 {
		return o, fmt.Errorf("--eventlog-keep must be 0 or more records, not %d", o.keepRecords)
	}
	if o.interval <= 0 || o.observeTimeout <= 0 || o.actTimeout <= 0 {
		return o, errors.New("--interval, --observe-timeout and --act-timeout must be positive")
	}
	return o, nil
}

func main() {
	zerolog.TimeFieldFormat = time.RFC3339Nano
	log := zerolog.New(os.Stderr).With().Timestamp().Str("component", "mgors-operator").Logger()
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		log.Error().Err(err).Msg("bad flags")
		os.Exit(2)
	}
	if lvl, err := zerolog.ParseLevel(o.logLevel); err == nil {
		log = log.Level(lvl)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, o, log); err != nil {
		log.Error().Err(err).Msg("operator stopped")
		os.Exit(1)
	}
	log.Info().Msg("operator stopped")
}

func restConfig(o options) (*rest.Config, bool, error) {
	if o.kubeconfig == "" {
		cfg, err := rest.InClusterConfig()
		return cfg, true, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	return cfg, false, err
}

func run(ctx context.Context, o options, log zerolog.Logger) error {
	cfg, inCluster, err := restConfig(o)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	mc, err := client.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ac, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	met := newMetrics(reg)
	var leading atomic.Bool
	var dispatcher atomic.Pointer[watch.Dispatcher]
	serve(ctx, log, o.metricsAddr, "/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	health := http.NewServeMux()
	health.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	health.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if o.leaderElect && !leading.Load() {
			_, _ = w.Write([]byte("standby")) // ready to take over: a standby is healthy
			return
		}
		if d := dispatcher.Load(); d == nil || !d.Synced() {
			http.Error(w, "caches not synced", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})

	store, err := openStore(o, inCluster, kc)
	if err != nil {
		return err
	}
	recorder, stopEvents := kube.NewEventBroadcaster(ctx, kc)
	defer stopEvents()
	mopts := mongo.Options{Log: log.With().Str("component", "mongo").Logger()}
	if o.dnsServer != "" {
		mopts.Resolver = resolverVia(o.dnsServer)
	}
	owner := ""
	if o.shards == "auto" {
		owner = o.identity
	}
	informers := newInformers(ctx, o, kc, mc, owner, reg, log)
	status := kube.NewStatusWriter(mc)
	status.Cache = informers
	applier := kube.NewApplier(kc)
	applier.CertificateLifetime = o.certLifetime
	world := &actors.KubeWorld{
		Cache: informers, Applier: applier, Status: status, Recorder: recorder,
		Mongo: mopts, ClusterDomain: o.clusterDomain,
		NewAdmin: func(opts mongo.Options) mongo.Admin { return timedAdmin{Admin: mongo.NewClient(opts), m: met} },
	}
	deps := &actors.Deps{
		Store: store, World: world, Log: log, Writer: o.identity, ClusterDomain: o.clusterDomain,
		Interval: o.interval, ObserveTimeout: o.observeTimeout, ActTimeout: o.actTimeout,
		SnapshotEvery: o.snapshotEvery, Metrics: met, Mailbox: met.mailboxStats,
		AfterAppend: crashHook(log),
		// As many writing steps in flight as the client is given requests a
		// second: none waits for the rate limiter past its deadline.
		Gate: actors.NewGate(int(cfg.QPS)),
	}
	var current atomic.Pointer[running]
	health.HandleFunc("/owned", ownedHandler(o.identity, &current, deps))
	serve(ctx, log, o.healthAddr, "/", health)

	lead := func(ctx context.Context) error {
		// Only the leader installs the CRD: a standby (or a second operator
		// version starting during a rollout) never writes a schema.
		if o.installCRD {
			ictx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			err := kube.InstallCRD(ictx, ac, 2*time.Minute)
			cancel()
			if err != nil {
				return err
			}
			log.Info().Msg("Mgors, MgorsBackup and MgorsRestore CRDs installed and established")
		}
		system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
			return slog.New(zerolog.NewSlogHandler(log.With().Str("component", "protoactor").Logger().Level(zerolog.WarnLevel)))
		}))
		mgr, err := system.Root.SpawnNamed(actors.NewManagerProps(deps), "manager")
		if err != nil {
			return err
		}
		d := &watch.Dispatcher{Informers: informers, Namespace: o.namespace, Log: log, Owner: owner,
			Send: func(msg any) { system.Root.Send(mgr, msg) }}
		dispatcher.Store(d)
		current.Store(&running{system: system, mgr: mgr})
		err = d.Run(ctx, 2*time.Minute)
		current.Store(nil)
		// Graceful shutdown: stop the actors (they finish the step under way).
		if werr := system.Root.PoisonFuture(mgr).Wait(); werr != nil {
			log.Warn().Err(werr).Msg("stopping the actors")
		}
		return err
	}
	if o.shards == "auto" {
		leading.Store(true) // every replica acts on its own share
		return runSharded(ctx, o, kc, mc, deps, log, lead)
	}
	if !o.leaderElect {
		leading.Store(true)
		return lead(ctx)
	}
	return leaderElect(ctx, o, kc, log, &leading, lead)
}

func openStore(o options, inCluster bool, kc kubernetes.Interface) (eventlog.Store, error) {
	kind := o.store
	if kind == "" {
		kind = "file"
		if inCluster {
			kind = "kube"
		}
	}
	switch kind {
	case "kube":
		ks := eventlog.NewKube(kc)
		ks.KeepRecords = o.keepRecords
		return ks, nil
	case "memory":
		return eventlog.NewMemory(), nil
	}
	return eventlog.NewFile(o.storeDir)
}

// resolverVia resolves names through one DNS server, so an operator on a host
// outside the cluster finds members by their cluster DNS names.
func resolverVia(server string) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, server)
	}}
}

func serve(ctx context.Context, log zerolog.Logger, addr, path string, h http.Handler) {
	if addr == "" || addr == "0" {
		return
	}
	mux := http.NewServeMux()
	mux.Handle(path, h)
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Str("addr", addr).Msg("http server failed")
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
}

// leaderElect runs lead while this instance holds the Lease; losing it ends
// the process (a fresh start is the simplest correct way to drop all state).
// On shutdown the actors stop first and the Lease is released after them, so a
// standby never acts while this instance's actors still finish a step.
func leaderElect(ctx context.Context, o options, kc kubernetes.Interface, log zerolog.Logger, leading *atomic.Bool, lead func(context.Context) error) error {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: o.leaseNamespace, Name: o.leaseName},
		Client:     kc.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: o.identity},
	}
	// The elector's context ends after the actors stopped (or at shutdown when
	// this instance never led), and only then does ReleaseOnCancel free the Lease.
	ectx, stopElecting := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElecting()
	var started atomic.Bool
	led := make(chan error, 1)
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		ReleaseOnCancel: true, Name: o.leaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				started.Store(true)
				if ctx.Err() != nil { // won the Lease while shutting down: do not start
					led <- nil
					stopElecting()
					return
				}
				leading.Store(true)
				log.Info().Str("identity", o.identity).Msg("leading: starting the actors")
				// lctx ends when the Lease is lost, ctx when the process shuts down.
				actx, cancel := context.WithCancel(lctx)
				stop := context.AfterFunc(ctx, cancel)
				err := lead(actx)
				stop()
				cancel()
				led <- err
				stopElecting()
			},
			OnStoppedLeading: func() { leading.Store(false) },
		},
	})
	if err != nil {
		return err
	}
	idle := context.AfterFunc(ctx, func() {
		if !started.Load() {
			stopElecting() // shutting down before ever leading
		}
	})
	defer idle()
	le.Run(ectx) // returns when leadership is lost or the elector's context ends
	var leadErr error
	if started.Load() {
		leadErr = <-led // the actors have stopped
	}
	if ctx.Err() != nil {
		return leadErr // shutting down
	}
	return errors.Join(errors.New("lost the leader Lease"), leadErr)
}
