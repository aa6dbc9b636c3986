package main

import (
	"context"
	"errors"
	"flag"

	"github.com/rs/zerolog"
)

// kubeletCmd runs one Node's kubelet from its JSON config. The kubelet package's
// Run is not available yet; until it is, Nodes cannot be started.
func kubeletCmd(ctx context.Context, args []string, log zerolog.Logger) error {
	fs := flag.NewFlagSet("kubelet", flag.ExitOnError)
	config := fs.String("config", "", "kubelet.Config JSON file (required)")
	_ = fs.Parse(args)
	if *config == "" {
		return errors.New("--config is required")
	}
	return errors.New("this localkube was built without a kubelet")
}
