// Command etcd runs one embedded etcd member for a localkube cluster. It exists so that
// etcd is built from the pinned go.etcd.io/etcd/server/v3 module like the rest of the
// control plane, instead of being downloaded as a release binary.
package main

import (
	"flag"
	"log"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

func main() {
	dataDir := flag.String("data-dir", "", "directory of the member's data")
	clientURL := flag.String("listen-client-url", "http://127.0.0.1:2379", "client URL (loopback only)")
	peerURL := flag.String("listen-peer-url", "http://127.0.0.1:2380", "peer URL (loopback only)")
	flag.Parse()
	if *dataDir == "" {
		log.Fatal("etcd: --data-dir is required")
	}
	cu, err := url.Parse(*clientURL)
	if err != nil {
		log.Fatalf("etcd: client URL: %v", err)
	}
	pu, err := url.Parse(*peerURL)
	if err != nil {
		log.Fatalf("etcd: peer URL: %v", err)
	}

	cfg := embed.NewConfig()
	cfg.Name = "localkube"
	cfg.Dir = *dataDir
	cfg.ListenClientUrls = []url.URL{*cu}
	cfg.AdvertiseClientUrls = []url.URL{*cu}
	cfg.ListenPeerUrls = []url.URL{*pu}
	cfg.AdvertisePeerUrls = []url.URL{*pu}
	cfg.InitialCluster = cfg.Name + "=" + pu.String()
	cfg.LogLevel = "warn"
	// One member on a test machine: a small backend and regular compaction keep the
	// data directory small over long test runs.
	cfg.QuotaBackendBytes = 2 << 30
	cfg.AutoCompactionMode = "periodic"
	cfg.AutoCompactionRetention = "5m"

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		log.Fatalf("etcd: start: %v", err)
	}
	select {
	case <-e.Server.ReadyNotify():
		log.Printf("etcd: ready on %s", cu)
	case <-time.After(2 * time.Minute):
		e.Server.Stop()
		log.Fatal("etcd: not ready after 2m")
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case s := <-sig:
		log.Printf("etcd: %v, stopping", s)
		e.Close()
	case err := <-e.Err():
		log.Fatalf("etcd: %v", err)
	}
}
