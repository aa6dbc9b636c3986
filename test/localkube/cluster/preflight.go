package cluster

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// otherCluster returns the directory of another localkube cluster running on this
// machine, or "". Two clusters cannot coexist (one bridge, fixed addresses and
// ports), and without this check the second one's readiness probes would be
// answered by the first one's etcd and API server.
func otherCluster(dir string) string {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 || !alive(pid) {
			continue
		}
		other := clusterDirOf(bytes.Split(bytes.TrimRight(b, "\x00"), []byte{0}))
		// Only a cluster of `localkube up` (it has cluster.json) holds the network
		// plan; test fixtures that run an etcd of their own on free ports do not.
		if other != "" && other != dir && fileExists(filepath.Join(other, "cluster.json")) {
			return other
		}
	}
	return ""
}

// clusterDirOf recognises a localkube etcd or API server by its arguments and
// returns its cluster directory.
func clusterDirOf(argv [][]byte) string {
	if len(argv) == 0 {
		return ""
	}
	switch filepath.Base(string(argv[0])) {
	case "etcd":
		for _, a := range argv[1:] {
			if v, ok := strings.CutPrefix(string(a), "--data-dir="); ok && filepath.Base(v) == "etcd" {
				return filepath.Dir(v)
			}
		}
	case "kube-apiserver":
		for _, a := range argv[1:] {
			if v, ok := strings.CutPrefix(string(a), "--tls-cert-file="); ok && strings.HasSuffix(v, "/pki/apiserver.crt") {
				return strings.TrimSuffix(v, "/pki/apiserver.crt")
			}
		}
	}
	return ""
}

func preflight(dir string) error {
	if other := otherCluster(dir); other != "" {
		return fmt.Errorf("another localkube cluster runs from %s: stop it (localkube down --dir %s) or use it (LOCALKUBE_DIR=%s)", other, other, other)
	}
	return nil
}
