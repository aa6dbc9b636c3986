package kubelet

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
)

func (c Config) withDefaults() Config {
	if c.Bridge == "" {
		c.Bridge = "lk0"
	}
	if c.Gateway == "" {
		c.Gateway = "10.244.0.1"
	}
	if c.NodeIP == "" {
		c.NodeIP = c.Gateway
	}
	if c.ClusterDomain == "" {
		c.ClusterDomain = "cluster.local"
	}
	if c.ClusterDNS == "" {
		c.ClusterDNS = "10.96.0.10"
	}
	if c.BinDir == "" {
		c.BinDir = os.Getenv("LOCALKUBE_BIN_DIR")
	}
	if c.BinDir == "" {
		if exe, err := os.Executable(); err == nil {
			c.BinDir = filepath.Dir(exe)
		}
	}
	if c.MongodBin == "" {
		c.MongodBin = os.Getenv("MONGOD_BIN")
	}
	if c.MongoshDir == "" {
		c.MongoshDir = os.Getenv("MONGOSH_DIR")
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.NodeName == "" {
		errs = append(errs, errors.New("nodeName is required"))
	}
	if !filepath.IsAbs(c.Dir) {
		errs = append(errs, fmt.Errorf("dir must be an absolute path, got %q", c.Dir))
	}
	if c.Kubeconfig == "" {
		errs = append(errs, errors.New("kubeconfig is required"))
	}
	if _, err := netip.ParsePrefix(c.PodCIDR); err != nil {
		errs = append(errs, fmt.Errorf("podCIDR: %w", err))
	}
	if _, err := netip.ParseAddr(c.Gateway); err != nil {
		errs = append(errs, fmt.Errorf("gateway: %w", err))
	}
	return errors.Join(errs...)
}

func (c Config) bridgePrefixLen() int {
	if c.BridgePrefixLen > 0 {
		return c.BridgePrefixLen
	}
	return 16
}
