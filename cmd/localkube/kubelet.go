package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/rs/zerolog"

	"github.com/mgors/operator/test/localkube/kubelet"
)

// kubeletCmd runs one Node's kubelet from the JSON config `localkube up` wrote.
// Importing the kubelet package also makes this binary its containers' init helper.
func kubeletCmd(ctx context.Context, args []string, log zerolog.Logger) error {
	fs := flag.NewFlagSet("kubelet", flag.ExitOnError)
	config := fs.String("config", "", "kubelet.Config JSON file (required)")
	_ = fs.Parse(args)
	if *config == "" {
		return errors.New("--config is required")
	}
	b, err := os.ReadFile(*config)
	if err != nil {
		return err
	}
	cfg, err := decodeKubeletConfig(b)
	if err != nil {
		return fmt.Errorf("%s: %w", *config, err)
	}
	return kubelet.Run(ctx, cfg, log.With().Str("component", "kubelet").Logger())
}

// decodeKubeletConfig rejects unknown fields: a field `up` writes that the kubelet
// does not know means the two halves disagree on their contract.
func decodeKubeletConfig(b []byte) (kubelet.Config, error) {
	var cfg kubelet.Config
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	err := dec.Decode(&cfg)
	return cfg, err
}
