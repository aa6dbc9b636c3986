package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/mgors/operator/test/localkube/kubelet"
)

// state is cluster.json: what the first `up` chose, so that a later `up` or `down`
// on the same DIR acts on the same cluster without repeating its flags.
type state struct {
	Nodes       int    `json:"nodes"`
	BinDir      string `json:"binDir"`
	Localkube   string `json:"localkube"`
	KubeProxy   bool   `json:"kubeProxy"`
	ImageTable  string `json:"imageTable,omitempty"`
	WorkloadBin string `json:"workloadBin,omitempty"`
	MongoshDir  string `json:"mongoshDir,omitempty"`
	MongodBin   string `json:"mongodBin,omitempty"`
}

// controlPlane lists the components that RestartControlPlane stops and starts, in
// start order.
var controlPlane = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// Up starts the cluster in opts.Dir, or resumes it: parts already running are left
// alone, missing ones are started with the data they had. It returns once the API
// server is ready, every Node is Ready and CoreDNS answers, or with an error that
// carries the tail of the log of the component that failed.
func Up(ctx context.Context, opts Options, log zerolog.Logger) error {
	began := time.Now()
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return err
	}
	opts.Dir = dir
	unlock, err := lockDir(dir)
	if err != nil {
		return err
	}
	defer unlock()
	l := layout{dir: dir}
	opts, err = resolve(l, opts)
	if err != nil {
		return err
	}
	if err := preflight(dir); err != nil {
		return err
	}
	if opts.Source != "" {
		if err := Build(ctx, BuildOptions{Source: opts.Source, BinDir: opts.BinDir}, log); err != nil {
			return err
		}
	}
	for _, b := range binaries {
		if !fileExists(filepath.Join(opts.BinDir, b.name)) {
			return fmt.Errorf("%s missing in %s: run `localkube build`", b.name, opts.BinDir)
		}
	}
	for _, d := range []string{"pki", "kubeconfigs", "logs", "run", "etcd", "nodes", "volumes", "coredns", "bin"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	if err := os.Chmod(l.etcdData(), 0o700); err != nil {
		return err
	}
	if err := writeJSON(l.state(), state{Nodes: opts.Nodes, BinDir: opts.BinDir, Localkube: opts.Localkube,
		KubeProxy: opts.KubeProxy, ImageTable: opts.ImageTable, WorkloadBin: opts.WorkloadBin,
		MongoshDir: opts.MongoshDir, MongodBin: opts.MongodBin}); err != nil {
		return err
	}
	if err := writeCredentials(l, opts); err != nil {
		return fmt.Errorf("certificates: %w", err)
	}
	log.Info().Str("step", "certificates").Msg("certificates and kubeconfigs ready")

	// A cluster without etcd data is new, and preflight found no other cluster
	// running: a bridge or tables on the host are leftovers of a cluster that was
	// never stopped (a killed session). Their veths would still hold pod addresses
	// the new Nodes will hand out again, so start from a clean network.
	if !fileExists(filepath.Join(l.etcdData(), "member")) && (linkExists(Bridge) || tableExists(ctx, "inet "+filterTable)) {
		log.Warn().Str("bridge", Bridge).Msg("removing the network left by a cluster that was not stopped")
		if err := removeNetwork(ctx); err != nil {
			return err
		}
	}
	if err := ensureBridge(ctx); err != nil {
		return fmt.Errorf("bridge: %w", err)
	}
	if err := ensureFirewall(ctx); err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	log.Info().Str("step", "network").Str("bridge", Bridge).Str("gateway", Gateway).Msg("bridge and nftables ready")

	_ = os.Remove(l.kubectl())
	if err := os.Symlink(filepath.Join(opts.BinDir, "kubectl"), l.kubectl()); err != nil {
		return err
	}
	if err := writeCorefile(l); err != nil {
		return err
	}

	admin, err := adminTLS(l)
	if err != nil {
		return err
	}
	steps := []struct {
		c     component
		ready func(context.Context) error
	}{
		{etcdComponent(l, opts), func(ctx context.Context) error { return httpOK(ctx, nil, etcdClientURL+"/health") }},
		{apiServerComponent(l, opts), func(ctx context.Context) error {
			return httpOK(ctx, admin, fmt.Sprintf("https://127.0.0.1:%d/readyz", APIServerPort))
		}},
	}
	for _, s := range steps {
		if err := ensureRunning(ctx, l, s.c, s.ready, log); err != nil {
			return err
		}
	}
	if err := bootstrap(ctx, l, opts); err != nil {
		return fmt.Errorf("bootstrap objects: %w", err)
	}
	log.Info().Str("step", "bootstrap").Msg("RBAC, StorageClass and kube-dns objects in place")

	insecure := &tls.Config{InsecureSkipVerify: true} // self-signed health endpoints on loopback
	rest := []struct {
		c     component
		ready func(context.Context) error
	}{
		{kcmComponent(l, opts), func(ctx context.Context) error {
			return httpOK(ctx, insecure, fmt.Sprintf("https://127.0.0.1:%d/healthz", kcmPort))
		}},
		{schedulerComponent(l, opts), func(ctx context.Context) error {
			return httpOK(ctx, insecure, fmt.Sprintf("https://127.0.0.1:%d/healthz", schedulerPort))
		}},
		{corednsComponent(l, opts), func(ctx context.Context) error {
			return httpOK(ctx, nil, fmt.Sprintf("http://127.0.0.1:%d/ready", corednsReady))
		}},
		{provisionerComponent(l, opts), nil},
		{loadBalancerComponent(l, opts), nil},
	}
	// A Node taken down by a fault (NodeDown) stays down until NodeUp.
	down := nodesDown(l)
	running := nodesToRun(opts.Nodes, down)
	for name := range down {
		log.Info().Str("component", "kubelet-"+name).Msg("node is down (localkube fault node-down): not started")
	}
	var ready []string
	for _, i := range running {
		ready = append(ready, NodeName(i))
		c, err := kubeletComponent(l, opts, i)
		if err != nil {
			return err
		}
		rest = append(rest, struct {
			c     component
			ready func(context.Context) error
		}{c, nil})
	}
	// kube-proxy comes last: it waits (up to 30 s) for the Node named after it.
	if opts.KubeProxy {
		rest = append(rest, struct {
			c     component
			ready func(context.Context) error
		}{proxyComponent(l, opts), func(ctx context.Context) error {
			return httpOK(ctx, nil, fmt.Sprintf("http://127.0.0.1:%d/livez", proxyHealth))
		}})
	}
	for _, s := range rest {
		if err := ensureRunning(ctx, l, s.c, s.ready, log); err != nil {
			return err
		}
	}
	if err := waitNodesReady(ctx, l, ready, log); err != nil {
		return err
	}
	if err := waitDNS(ctx, l); err != nil {
		return err
	}
	if err := waitPodsAdmitted(ctx, l); err != nil {
		return err
	}
	log.Info().Str("step", "ready").Dur("took", time.Since(began)).Int("nodes", opts.Nodes).
		Str("kubeconfig", l.kubeconfig()).Msg("cluster ready")
	return nil
}

// resolve fills what the caller left open from cluster.json (a resumed cluster) or
// from defaults, and checks the result.
func resolve(l layout, opts Options) (Options, error) {
	var st state
	if b, err := os.ReadFile(l.state()); err == nil {
		if err := json.Unmarshal(b, &st); err != nil {
			return opts, fmt.Errorf("%s: %w", l.state(), err)
		}
		if opts.Nodes < 0 {
			opts.Nodes = st.Nodes
		}
		if opts.BinDir == "" {
			opts.BinDir = st.BinDir
		}
		if opts.Localkube == "" {
			opts.Localkube = st.Localkube
		}
		if opts.ImageTable == "" {
			opts.ImageTable = st.ImageTable
		}
		if opts.WorkloadBin == "" {
			opts.WorkloadBin = st.WorkloadBin
		}
		if opts.MongoshDir == "" {
			opts.MongoshDir = st.MongoshDir
		}
		if opts.MongodBin == "" {
			opts.MongodBin = st.MongodBin
		}
		opts.KubeProxy = opts.KubeProxy || st.KubeProxy
	}
	if opts.Nodes < 0 {
		opts.Nodes = 3
	}
	if opts.Nodes > MaxNodes {
		return opts, fmt.Errorf("--nodes %d: at most %d", opts.Nodes, MaxNodes)
	}
	if opts.BinDir == "" {
		return opts, errors.New("no bin dir: pass one or run from the repository")
	}
	if opts.Localkube == "" {
		exe, err := os.Executable()
		if err != nil {
			return opts, err
		}
		opts.Localkube = exe
	}
	var err error
	if opts.BinDir, err = filepath.Abs(opts.BinDir); err != nil {
		return opts, err
	}
	return opts, nil
}

// writeCredentials issues every certificate and kubeconfig the cluster needs. Files
// that exist are kept, so a resumed cluster keeps its identities.
func writeCredentials(l layout, opts Options) error {
	pki := filepath.Join(l.dir, "pki")
	ca, err := ensureCA(pki)
	if err != nil {
		return err
	}
	if err := ensureServiceAccountKey(pki); err != nil {
		return err
	}
	specs := []certSpec{
		{name: "apiserver", cn: "kube-apiserver", server: true, ips: apiServerIPs(), dns: apiServerNames},
		{name: "apiserver-kubelet-client", cn: "kube-apiserver-kubelet-client", orgs: []string{"system:masters"}, client: true},
		{name: "admin", cn: "localkube-admin", orgs: []string{"system:masters"}, client: true},
		{name: "controller-manager", cn: "system:kube-controller-manager", client: true},
		{name: "scheduler", cn: "system:kube-scheduler", client: true},
		{name: "kube-proxy", cn: "system:kube-proxy", client: true},
		{name: "coredns", cn: "system:coredns", client: true},
		{name: "provisioner", cn: "localkube:provisioner", orgs: []string{"system:masters"}, client: true},
		{name: "loadbalancer", cn: "localkube:loadbalancer", orgs: []string{"system:masters"}, client: true},
	}
	for i := 1; i <= opts.Nodes; i++ {
		n := NodeName(i)
		specs = append(specs,
			certSpec{name: "node-" + n, cn: "system:node:" + n, orgs: []string{"system:nodes"}, client: true},
			certSpec{name: "kubelet-" + n, cn: n, server: true, ips: []net.IP{net.ParseIP(Gateway), net.ParseIP("127.0.0.1")}, dns: []string{n, "localhost"}},
		)
	}
	for _, s := range specs {
		if err := ca.ensureCert(pki, s); err != nil {
			return err
		}
	}
	server := fmt.Sprintf("https://127.0.0.1:%d", APIServerPort)
	kc := func(path, cert string) error {
		return writeKubeconfig(path, server, l.pki("ca.crt"), l.pki(cert+".crt"), l.pki(cert+".key"))
	}
	if err := kc(l.kubeconfig(), "admin"); err != nil {
		return err
	}
	for _, c := range []string{"controller-manager", "scheduler", "kube-proxy", "coredns", "provisioner", "loadbalancer"} {
		if err := kc(l.kubeconfigFor(c), c); err != nil {
			return err
		}
	}
	for i := 1; i <= opts.Nodes; i++ {
		n := NodeName(i)
		// Kubelets talk to the API server at the bridge address, as a kubelet on
		// another machine would.
		if err := writeKubeconfig(l.kubeconfigFor("node-"+n), fmt.Sprintf("https://%s:%d", Gateway, APIServerPort),
			l.pki("ca.crt"), l.pki("node-"+n+".crt"), l.pki("node-"+n+".key")); err != nil {
			return err
		}
	}
	return nil
}

func adminTLS(l layout) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(l.pki("admin.crt"), l.pki("admin.key"))
	if err != nil {
		return nil, err
	}
	caPEM, err := os.ReadFile(l.pki("ca.crt"))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool}, nil
}

// ensureRunning starts c unless it already runs, then waits for ready. A component
// that exits while we wait fails at once with the tail of its log.
func ensureRunning(ctx context.Context, l layout, c component, ready func(context.Context) error, log zerolog.Logger) error {
	began := time.Now()
	pid, ok := pidOf(l, c.name)
	if ok {
		log.Info().Str("component", c.name).Int("pid", pid).Msg("already running")
	} else {
		var err error
		if pid, err = start(l, c); err != nil {
			return err
		}
		log.Info().Str("component", c.name).Int("pid", pid).Msg("started")
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	var last error
	for {
		// The pid, not the command line: a process that re-executes itself has no
		// readable command line for a moment.
		if !alive(pid) {
			if !ok {
				return fmt.Errorf("%s exited; last lines of %s:\n%s", c.name, l.log(c.name), logTail(l, c.name, 25))
			}
			// It was running when we looked but was on its way out (stopped by
			// someone else a moment ago): start it once more.
			ok = false
			var err error
			if pid, err = start(l, c); err != nil {
				return err
			}
			log.Info().Str("component", c.name).Int("pid", pid).Msg("exited while up looked at it; started again")
		}
		if ready == nil {
			return nil
		}
		if last = ready(ctx); last == nil {
			log.Info().Str("component", c.name).Dur("took", time.Since(began)).Msg("ready")
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w; last lines of %s:\n%s", c.name, last, l.log(c.name), logTail(l, c.name, 25))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// httpOK succeeds when url answers 200 within a second.
func httpOK(ctx context.Context, tlsConf *tls.Config, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConf, DisableKeepAlives: true}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// kubeletConfig is the contract handed to Node n's kubelet.
func kubeletConfig(l layout, opts Options, n int) kubelet.Config {
	name := NodeName(n)
	apiHost, apiPort, dns := Gateway, APIServerPort, Gateway
	if opts.KubeProxy {
		apiHost, apiPort, dns = KubernetesServiceIP, 443, DNSServiceIP
	}
	return kubelet.Config{
		NodeName:      name,
		Dir:           l.dir,
		Kubeconfig:    l.kubeconfigFor("node-" + name),
		NodeIP:        Gateway,
		Port:          KubeletPort(n),
		Bridge:        Bridge,
		Gateway:       Gateway,
		PodCIDR:       PodCIDR(n),
		ClusterDNS:    dns,
		ClusterDomain: ClusterDomain,
		APIServerHost: apiHost,
		APIServerPort: apiPort,
		ImageTable:    opts.ImageTable,
		TLSCert:       l.pki("kubelet-" + name + ".crt"),
		TLSKey:        l.pki("kubelet-" + name + ".key"),
		ClientCA:      l.pki("ca.crt"),
		BinDir:        opts.WorkloadBin,
		MongoshDir:    opts.MongoshDir,
		MongodBin:     opts.MongodBin,
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
