package cluster

import (
	"fmt"
	"os"
	"path/filepath"
)

func bin(opts Options, name string) string { return filepath.Join(opts.BinDir, name) }

func etcdComponent(l layout, opts Options) component {
	return component{name: "etcd", args: []string{bin(opts, "etcd"),
		"--data-dir=" + l.etcdData(),
		"--listen-client-url=" + etcdClientURL,
		"--listen-peer-url=" + etcdPeerURL,
	}}
}

// apiServerComponent listens on all addresses because it must answer both on
// loopback (host tools) and on the bridge (pods, and the kube-proxy route of
// 10.96.0.1); the inet localkube table drops port 6443 on every other interface.
func apiServerComponent(l layout, opts Options) component {
	return component{name: "kube-apiserver", args: []string{bin(opts, "kube-apiserver"),
		"--etcd-servers=" + etcdClientURL,
		"--bind-address=0.0.0.0",
		"--advertise-address=" + Gateway,
		"--secure-port=" + itoa(APIServerPort),
		"--cert-dir=" + l.pki("generated"),
		"--tls-cert-file=" + l.pki("apiserver.crt"),
		"--tls-private-key-file=" + l.pki("apiserver.key"),
		"--client-ca-file=" + l.pki("ca.crt"),
		"--service-account-issuer=https://kubernetes.default.svc." + ClusterDomain,
		"--service-account-key-file=" + l.pki("sa.pub"),
		"--service-account-signing-key-file=" + l.pki("sa.key"),
		"--service-cluster-ip-range=" + ServiceNetwork,
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--allow-privileged=true",
		"--kubelet-client-certificate=" + l.pki("apiserver-kubelet-client.crt"),
		"--kubelet-client-key=" + l.pki("apiserver-kubelet-client.key"),
		"--kubelet-certificate-authority=" + l.pki("ca.crt"),
		"--kubelet-preferred-address-types=InternalIP",
		"--profiling=false",
	}}
}

// kcmComponent runs every controller but two: nodeipam (each kubelet owns the fixed
// PodCIDR of the network plan) and serviceaccount-token (no legacy token Secrets:
// pods and controllers get tokens through TokenRequest).
func kcmComponent(l layout, opts Options) component {
	kc := l.kubeconfigFor("controller-manager")
	return component{name: "kube-controller-manager", args: []string{bin(opts, "kube-controller-manager"),
		"--kubeconfig=" + kc,
		"--authentication-kubeconfig=" + kc,
		"--authorization-kubeconfig=" + kc,
		"--leader-elect=false",
		"--controllers=*,-nodeipam,-serviceaccount-token",
		"--use-service-account-credentials=true",
		"--root-ca-file=" + l.pki("ca.crt"),
		"--cluster-signing-cert-file=" + l.pki("ca.crt"),
		"--cluster-signing-key-file=" + l.pki("ca.key"),
		"--cluster-name=localkube",
		"--service-cluster-ip-range=" + ServiceNetwork,
		"--bind-address=127.0.0.1",
		"--secure-port=" + itoa(kcmPort),
		"--cert-dir=" + l.pki("generated"),
		"--profiling=false",
	}}
}

func schedulerComponent(l layout, opts Options) component {
	kc := l.kubeconfigFor("scheduler")
	return component{name: "kube-scheduler", args: []string{bin(opts, "kube-scheduler"),
		"--kubeconfig=" + kc,
		"--authentication-kubeconfig=" + kc,
		"--authorization-kubeconfig=" + kc,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=" + itoa(schedulerPort),
		"--cert-dir=" + l.pki("generated"),
		"--profiling=false",
	}}
}

func corednsComponent(l layout, opts Options) component {
	return component{name: "coredns", args: []string{bin(opts, "coredns"), "-conf", l.corefile()}}
}

// proxyComponent runs kube-proxy in nftables mode. --masquerade-all makes replies
// from a pod on the same bridge come back through the host, where conntrack undoes
// the service DNAT (without it they would be bridged straight to the client).
func proxyComponent(l layout, opts Options) component {
	return component{name: "kube-proxy", args: []string{bin(opts, "kube-proxy"),
		"--kubeconfig=" + l.kubeconfigFor("kube-proxy"),
		"--proxy-mode=nftables",
		"--cluster-cidr=" + PodNetwork,
		"--hostname-override=" + NodeName(1),
		"--bind-address=" + Gateway, // the node IP; unset, it assumes loopback and stops syncing once the Node shows 10.244.0.1
		"--masquerade-all=true",
		"--nodeport-addresses=" + Gateway + "/32",
		"--healthz-bind-address=127.0.0.1:" + itoa(proxyHealth),
		"--metrics-bind-address=127.0.0.1:" + itoa(proxyMetrics),
		"--conntrack-max-per-core=0",
	}}
}

func provisionerComponent(l layout, opts Options) component {
	return component{name: "provisioner", args: []string{opts.Localkube, "provisioner", "--dir", l.dir}}
}

// loadBalancerComponent serves Services of type LoadBalancer (package balancer).
func loadBalancerComponent(l layout, opts Options) component {
	return component{name: "loadbalancer", args: []string{opts.Localkube, "loadbalancer", "--dir", l.dir}}
}

func kubeletComponent(l layout, opts Options, n int) (component, error) {
	name := NodeName(n)
	if err := os.MkdirAll(l.nodeDir(name), 0o755); err != nil {
		return component{}, err
	}
	cfg := kubeletConfig(l, opts, n)
	// The kubelet decides attachments as the attach/detach controller would; a
	// node's identity may not list other nodes' pods, localkube's storage
	// controller (the provisioner) may.
	cfg.AttachKubeconfig = l.kubeconfigFor("provisioner")
	if err := writeJSON(l.kubeletConfig(name), cfg); err != nil {
		return component{}, err
	}
	return component{name: "kubelet-" + name, args: []string{opts.Localkube, "kubelet", "--config", l.kubeletConfig(name)}}, nil
}

// writeCorefile configures CoreDNS to answer for the cluster domain only, on the
// bridge address (pods and host processes ask there; kube-dns's cluster IP leads
// there too through kube-proxy). There is no forward plugin: pods must not reach
// resolvers outside the machine.
func writeCorefile(l layout) error {
	conf := fmt.Sprintf(`.:%d {
    bind %s
    errors
    health 127.0.0.1:%d
    ready 127.0.0.1:%d
    kubernetes %s in-addr.arpa ip6.arpa {
        kubeconfig %s
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 5
    }
    cache 5
    loadbalance
}
`, DNSPort, Gateway, corednsHealth, corednsReady, ClusterDomain, l.kubeconfigFor("coredns"))
	return os.WriteFile(l.corefile(), []byte(conf), 0o644)
}
