// Package cluster starts, resumes, inspects and stops a localkube cluster: a real
// Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, CoreDNS, kube-proxy) built from the official Go modules, plus one
// process kubelet per Node, all running as local processes under one directory.
// See docs/design/localkube.md.
package cluster

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
)

// The fixed network plan shared with the kubelets (docs/design/localkube.md).
const (
	// Bridge is the host bridge every pod's veth attaches to.
	Bridge = "lk0"
	// Gateway is the bridge address: the pods' default route, every Node's
	// InternalIP, and where the API server and CoreDNS are reachable from pods.
	Gateway = "10.244.0.1"
	// PodNetwork holds every pod address; Node N owns 10.244.N.0/24.
	PodNetwork = "10.244.0.0/16"
	// ServiceNetwork is the Service cluster-IP range.
	ServiceNetwork = "10.96.0.0/16"
	// KubernetesServiceIP is the cluster IP of default/kubernetes.
	KubernetesServiceIP = "10.96.0.1"
	// DNSServiceIP is the cluster IP of kube-system/kube-dns.
	DNSServiceIP = "10.96.0.10"
	// ClusterDomain is the cluster's DNS domain.
	ClusterDomain = "cluster.local"
	// APIServerPort is the API server's secure port on the bridge and on loopback.
	APIServerPort = 6443
	// DNSPort is where CoreDNS listens on Gateway (and so where host processes ask).
	DNSPort = 53
	// StorageClass is the name of the default StorageClass served by the provisioner.
	StorageClass = "localkube"
	// Provisioner is the provisioner name of StorageClass.
	Provisioner = "localkube.mgors.io/hostpath"
	// MaxNodes bounds --nodes: kubelet ports 10251.. must stay clear of the
	// control plane's own ports.
	MaxNodes = 20

	etcdClientURL = "http://127.0.0.1:2379"
	etcdPeerURL   = "http://127.0.0.1:2380"
	kcmPort       = 10357
	schedulerPort = 10359
	proxyHealth   = 10356
	proxyMetrics  = 10349
	corednsHealth = 10354
	corednsReady  = 10355
)

// Options says which cluster to start and how.
type Options struct {
	// Dir holds everything the cluster has: certificates, etcd data, logs, pid files,
	// node state and volumes.
	Dir string
	// Nodes is the number of Nodes (kubelet processes), named localkube-1..N.
	// 0 starts the control plane only; a negative number means what DIR had
	// (cluster.json), else 3.
	Nodes int
	// BinDir holds the control-plane binaries (see Build).
	BinDir string
	// Localkube is the localkube executable that runs kubelets and the volume
	// provisioner (`localkube kubelet`, `localkube provisioner`).
	Localkube string
	// Source is the control-plane module's directory; when set, Up builds first
	// (a no-op when the stamp matches).
	Source string
	// KubeProxy runs kube-proxy in nftables mode so that Service cluster IPs are
	// routed for pods.
	KubeProxy bool
	// ImageTable is handed to the kubelets (kubelet.Config.ImageTable).
	ImageTable string
	// WorkloadBin holds the locally built programs the built-in images carry
	// (mongod-sim, mgors-operator): kubelet.Config.BinDir.
	WorkloadBin string
	// MongoshDir is an npm prefix holding node_modules/mongosh, for the mongo
	// images' /usr/bin/mongosh: kubelet.Config.MongoshDir.
	MongoshDir string
	// MongodBin, when set, is a real mongod that the mongo images run instead
	// of mongod-sim: kubelet.Config.MongodBin.
	MongodBin string
}

// NodeName is the name of Node n (1-based).
func NodeName(n int) string { return "localkube-" + strconv.Itoa(n) }

// PodCIDR is the pod address range of Node n (1-based).
func PodCIDR(n int) string { return fmt.Sprintf("10.244.%d.0/24", n) }

// KubeletPort is the HTTPS port of Node n's kubelet.
func KubeletPort(n int) int { return 10250 + n }

// layout names every path under a cluster directory, so that up, down and status
// agree on where things are.
type layout struct{ dir string }

func (l layout) pki(name string) string { return filepath.Join(l.dir, "pki", name) }
func (l layout) kubeconfig() string     { return filepath.Join(l.dir, "kubeconfig") }
func (l layout) kubeconfigFor(c string) string {
	return filepath.Join(l.dir, "kubeconfigs", c+".kubeconfig")
}
func (l layout) log(c string) string        { return filepath.Join(l.dir, "logs", c+".log") }
func (l layout) pid(c string) string        { return filepath.Join(l.dir, "run", c+".pid") }
func (l layout) runDir() string             { return filepath.Join(l.dir, "run") }
func (l layout) etcdData() string           { return filepath.Join(l.dir, "etcd") }
func (l layout) nodeDir(name string) string { return filepath.Join(l.dir, "nodes", name) }
func (l layout) kubeletConfig(name string) string {
	return filepath.Join(l.nodeDir(name), "kubelet.json")
}
func (l layout) volumes() string  { return filepath.Join(l.dir, "volumes") }
func (l layout) corefile() string { return filepath.Join(l.dir, "coredns", "Corefile") }
func (l layout) state() string    { return filepath.Join(l.dir, "cluster.json") }
func (l layout) kubectl() string  { return filepath.Join(l.dir, "bin", "kubectl") }

// serviceIPs are the addresses the API server certificate must be valid for.
func apiServerIPs() []net.IP {
	return []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(Gateway), net.ParseIP(KubernetesServiceIP)}
}

var apiServerNames = []string{
	"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
	"kubernetes.default.svc." + ClusterDomain,
}
