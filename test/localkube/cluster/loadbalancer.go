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
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", layout{dir: dir}.kubeconfigFor("loadbalancer"))
	if err != nil {
		return err
	}
	cfg.Timeout = 15 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	return balancer.Run(ctx, cs, log)
}
