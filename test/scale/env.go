package scale

import (
	"context"
	"fmt"

	"github.com/rs/zerolog"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/mgors/operator/actors"
	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/client"
	"github.com/mgors/operator/mongo"
)

// Operator settings both rows run with: cmd/mgors-operator's.
const (
	clusterDomain = "cluster.local"
	// OperatorQPS is cmd/mgors-operator's client rate limit (burst twice it).
	OperatorQPS = 50
)

// Env is what a row runs on: clients whose every request is counted, the
// World they make (KubeWorld, as cmd/mgors-operator wires it, with the
// members simulated), and the kube event log behind the Probe.
type Env struct {
	Namespace string
	// Config is the counted rest.Config (the operator's QPS and burst).
	Config *rest.Config
	Kube   kubernetes.Interface
	Mgors  client.Interface
	World  actors.World
	// Informers are the shared informers the World reads and the mgors
	// row's dispatcher starts (the baseline row starts them itself).
	Informers *kube.Informers
	Store     *Probe
	Requests  *Requests
	// Observations are the rows' observation durations.
	Observations *Observations
	Log          zerolog.Logger

	stopEvents func()
}

// NewEnv builds the row's clients from base (the harness's config, copied),
// limited to qps requests a second (burst twice that) per client.
func NewEnv(ctx context.Context, base *rest.Config, qps float32, namespace string, members *Members, log zerolog.Logger) (*Env, error) {
	req := &Requests{}
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = qps, int(2*qps)
	cfg.Wrap(req.Wrap)
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kube client: %w", err)
	}
	mc, err := client.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("mgors client: %w", err)
	}
	recorder, stopEvents := kube.NewEventBroadcaster(ctx, kc)
	inf := kube.NewInformers(kc, mc, kube.InformerOptions{Namespace: namespace, ClusterScoped: true})
	return &Env{Namespace: namespace, Config: cfg, Kube: kc, Mgors: mc, World: newWorld(inf, kc, mc, recorder, members, log),
		Informers: inf, Store: &Probe{Store: eventlog.NewKube(kc)}, Requests: req, Observations: &Observations{}, Log: log,
		stopEvents: stopEvents}, nil
}

// Close stops the Event broadcaster.
func (e *Env) Close() { e.stopEvents() }

// newWorld is KubeWorld as cmd/mgors-operator wires it, its members dialled
// in process.
func newWorld(inf *kube.Informers, kc kubernetes.Interface, mc client.Interface, recorder *kube.Recorder, members *Members, log zerolog.Logger) *actors.KubeWorld {
	status := kube.NewStatusWriter(mc)
	status.Cache = inf
	return &actors.KubeWorld{
		Cache: inf, Applier: kube.NewApplier(kc), Status: status, Recorder: recorder,
		Mongo: mongo.Options{Log: log}, ClusterDomain: clusterDomain,
		NewAdmin: func(mongo.Options) mongo.Admin { return members.Admin() },
	}
}
