package kubelet

import (
	"fmt"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// podHostname is the pod's hostname and, when it has hostname and subdomain, its
// fully qualified name, as a kubelet derives them.
func podHostname(pod *corev1.Pod, clusterDomain string) (host, fqdn string) {
	host = pod.Name
	if pod.Spec.Hostname != "" {
		host = pod.Spec.Hostname
	}
	if len(host) > 63 {
		host = strings.TrimRight(host[:63], "-.")
	}
	if pod.Spec.Subdomain != "" {
		fqdn = fmt.Sprintf("%s.%s.%s.svc.%s", host, pod.Spec.Subdomain, pod.Namespace, clusterDomain)
	}
	return host, fqdn
}

// renderHosts writes /etc/hosts the way a kubelet manages it.
func renderHosts(pod *corev1.Pod, podIP, clusterDomain string) string {
	var b strings.Builder
	b.WriteString("# Kubernetes-managed hosts file.\n")
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\n")
	b.WriteString("fe00::0\tip6-mcastprefix\n")
	b.WriteString("fe00::1\tip6-allnodes\n")
	b.WriteString("fe00::2\tip6-allrouters\n")
	host, fqdn := podHostname(pod, clusterDomain)
	if podIP != "" {
		if fqdn != "" {
			fmt.Fprintf(&b, "%s\t%s\t%s\n", podIP, fqdn, host)
		} else {
			fmt.Fprintf(&b, "%s\t%s\n", podIP, host)
		}
	}
	if len(pod.Spec.HostAliases) > 0 {
		b.WriteString("\n# Entries added by HostAliases.\n")
		for _, a := range pod.Spec.HostAliases {
			fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
		}
	}
	return b.String()
}

// renderResolvConf writes /etc/resolv.conf for the pod's dnsPolicy. hostResolv is the
// host's resolv.conf, used by dnsPolicy Default (and ClusterFirst on the host network).
func renderResolvConf(pod *corev1.Pod, clusterDNS, clusterDomain, hostResolv string) string {
	policy := pod.Spec.DNSPolicy
	if policy == "" {
		policy = corev1.DNSClusterFirst
	}
	if policy == corev1.DNSClusterFirst && pod.Spec.HostNetwork {
		policy = corev1.DNSDefault
	}
	var servers, searches, options []string
	switch policy {
	case corev1.DNSClusterFirst, corev1.DNSClusterFirstWithHostNet:
		servers = []string{clusterDNS}
		searches = []string{pod.Namespace + ".svc." + clusterDomain, "svc." + clusterDomain, clusterDomain}
		options = []string{"ndots:5"}
	case corev1.DNSDefault:
		for _, line := range strings.Split(hostResolv, "\n") {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			switch f[0] {
			case "nameserver":
				servers = append(servers, f[1])
			case "search":
				searches = append(searches, f[1:]...)
			case "options":
				options = append(options, f[1:]...)
			}
		}
	}
	if c := pod.Spec.DNSConfig; c != nil {
		servers = appendNew(servers, c.Nameservers...)
		searches = appendNew(searches, c.Searches...)
		for _, o := range c.Options {
			opt := o.Name
			if o.Value != nil {
				opt += ":" + *o.Value
			}
			// A pod option replaces one of the same name.
			kept := options[:0:0]
			for _, existing := range options {
				if strings.SplitN(existing, ":", 2)[0] != o.Name {
					kept = append(kept, existing)
				}
			}
			options = append(kept, opt)
		}
	}
	var b strings.Builder
	if len(searches) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(searches, " "))
	}
	for _, s := range servers {
		fmt.Fprintf(&b, "nameserver %s\n", s)
	}
	if len(options) > 0 {
		fmt.Fprintf(&b, "options %s\n", strings.Join(options, " "))
	}
	return b.String()
}

func appendNew(list []string, more ...string) []string {
	for _, m := range more {
		dup := false
		for _, l := range list {
			dup = dup || l == m
		}
		if !dup {
			list = append(list, m)
		}
	}
	return list
}

func hostResolvConf() string {
	b, _ := os.ReadFile("/etc/resolv.conf")
	return string(b)
}
