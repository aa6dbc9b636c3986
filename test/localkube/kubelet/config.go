package kubelet

// Config is what `localkube up` hands each kubelet process (as JSON, through
// `localkube kubelet --config FILE`). One kubelet process serves one Node.
type Config struct {
	// NodeName is the Node object's name, e.g. "localkube-1".
	NodeName string `json:"nodeName"`
	// Dir is the cluster directory; this kubelet keeps all its state under
	// Dir/nodes/NodeName and leaves nothing on the host outside Dir.
	Dir string `json:"dir"`
	// Kubeconfig is the path of the kubeconfig the kubelet talks to the API server with.
	Kubeconfig string `json:"kubeconfig"`
	// NodeIP is the Node's InternalIP: the bridge address at which the API server
	// reaches this kubelet's HTTPS endpoint (logs, exec, attach, port-forward).
	NodeIP string `json:"nodeIP"`
	// Port is the kubelet's HTTPS port, published as daemonEndpoints.kubeletEndpoint.
	Port int `json:"port"`
	// Bridge is the host bridge that pods' veth pairs attach to. `localkube up`
	// creates it (with Gateway as its address) and `localkube down` removes it.
	Bridge string `json:"bridge"`
	// Gateway is the bridge's address: the pods' default route.
	Gateway string `json:"gateway"`
	// PodCIDR is this Node's pod address range, e.g. "10.244.1.0/24".
	PodCIDR string `json:"podCIDR"`
	// ClusterDNS is the address of cluster DNS, written into pods' resolv.conf.
	ClusterDNS string `json:"clusterDNS"`
	// ClusterDomain is the cluster's DNS domain, "cluster.local".
	ClusterDomain string `json:"clusterDomain"`
	// APIServerHost and APIServerPort are what pods get as KUBERNETES_SERVICE_HOST
	// and KUBERNETES_SERVICE_PORT.
	APIServerHost string `json:"apiServerHost"`
	APIServerPort int    `json:"apiServerPort"`
	// ImageTable is the path of the image table that maps image references to
	// local image directories; empty means the built-in table only.
	ImageTable string `json:"imageTable"`
	// TLSCert and TLSKey are the kubelet's serving certificate and key (PEM files)
	// signed by the cluster CA, valid for NodeIP.
	TLSCert string `json:"tlsCert"`
	TLSKey  string `json:"tlsKey"`
	// ClientCA is the cluster CA (PEM file) used to verify the API server's client
	// certificate when it calls the kubelet.
	ClientCA string `json:"clientCA"`

	// BinDir holds the locally built binaries the built-in images carry
	// (mongod-sim, mgors-operator); empty means the directory of the running
	// executable. Env LOCALKUBE_BIN_DIR overrides an empty value.
	BinDir string `json:"binDir,omitempty"`
	// MongodBin is a real mongod used as the mongo images' /usr/bin/mongod instead of
	// mongod-sim. Env MONGOD_BIN overrides an empty value.
	MongodBin string `json:"mongodBin,omitempty"`
	// MongoshDir is an npm prefix holding node_modules/mongosh, the mongo images'
	// /usr/bin/mongosh. Env MONGOSH_DIR overrides an empty value.
	MongoshDir string `json:"mongoshDir,omitempty"`
	// CrashLoopBackOff is the initial restart delay of a crashing container (a Go
	// duration, default "10s", the kubelet's initialCrashLoopBackOff): the first
	// exit restarts at once, the second waits this long, each further one twice as
	// long up to CrashLoopBackOffMax (backoff.go). Tests shorten it.
	CrashLoopBackOff string `json:"crashLoopBackOff,omitempty"`
	// CrashLoopBackOffMax is the longest restart delay (default "5m", the kubelet's
	// crashLoopBackOff.maxContainerRestartPeriod); under CrashLoopBackOff it lowers
	// the initial delay too, as in a kubelet.
	CrashLoopBackOffMax string `json:"crashLoopBackOffMax,omitempty"`
	// AttachKubeconfig is the kubeconfig the kubelet reads pods, claims and volumes
	// with when it takes the attach/detach controller's part (attach.go): a node's
	// own identity may not list the pods of other nodes. Empty: Kubeconfig.
	AttachKubeconfig string `json:"attachKubeconfig,omitempty"`
	// BridgePrefixLen is the prefix length of the bridge network that pods of all
	// nodes share (default 16: 10.244.0.0/16), so pods reach each other directly.
	BridgePrefixLen int `json:"bridgePrefixLen,omitempty"`
}
