package cluster

import (
	"context"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mgors/operator/test/localkube/balancer"
)

// RunLoadBalancer serves the cluster's Services of type LoadBalancer (package
// balancer) with its own identity, until ctx ends. `up` starts it as the
// component "loadbalancer", beside the control plane.
func RunLoadBalancer(ctx context.Context, dir string, log zerolog.Logger) error {
	_, cs, err := componentClient(dir, "loadbalancer")
	if err != nil {
		return err
	}
	return balancer.Run(ctx, cs, log)
}

// componentClient is the API client of the component name of the cluster in
// dir (its own kubeconfig, so its own identity), each call bounded, and the
// cluster's layout.
func componentClient(dir, name string) (layout, kubernetes.Interface, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return layout{}, nil, err
	}
	l := layout{dir: dir}
	cfg, err := clientcmd.BuildConfigFromFlags("", l.kubeconfigFor(name))
	if err != nil {
		return layout{}, nil, err
	}
	cfg.Timeout = 15 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return layout{}, nil, err
	}
	return l, cs, nil
}
