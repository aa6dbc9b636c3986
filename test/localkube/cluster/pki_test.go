package cluster

import (
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"testing"
)

func TestCertificatesChainToTheCA(t *testing.T) {
	dir := t.TempDir()
	l := layout{dir: dir}
	if err := os.MkdirAll(filepath.Join(dir, "pki"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "kubeconfigs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeCredentials(l, Options{Dir: dir, Nodes: 2}); err != nil {
		t.Fatal(err)
	}
	ca, err := readCert(l.pki("ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)

	tests := []struct {
		cert  string
		usage x509.ExtKeyUsage
		cn    string
		org   string
		host  string
	}{
		{"apiserver", x509.ExtKeyUsageServerAuth, "kube-apiserver", "", "10.244.0.1"},
		{"apiserver", x509.ExtKeyUsageServerAuth, "kube-apiserver", "", "10.96.0.1"},
		{"apiserver", x509.ExtKeyUsageServerAuth, "kube-apiserver", "", "127.0.0.1"},
		{"apiserver", x509.ExtKeyUsageServerAuth, "kube-apiserver", "", "kubernetes.default.svc.cluster.local"},
		{"apiserver", x509.ExtKeyUsageServerAuth, "kube-apiserver", "", "kubernetes.default"},
		{"kubelet-localkube-2", x509.ExtKeyUsageServerAuth, "localkube-2", "", "10.244.0.1"},
		{"admin", x509.ExtKeyUsageClientAuth, "localkube-admin", "system:masters", ""},
		{"node-localkube-1", x509.ExtKeyUsageClientAuth, "system:node:localkube-1", "system:nodes", ""},
		{"controller-manager", x509.ExtKeyUsageClientAuth, "system:kube-controller-manager", "", ""},
		{"scheduler", x509.ExtKeyUsageClientAuth, "system:kube-scheduler", "", ""},
		{"coredns", x509.ExtKeyUsageClientAuth, "system:coredns", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.cert+"/"+tt.host, func(t *testing.T) {
			c, err := readCert(l.pki(tt.cert + ".crt"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{tt.usage}, DNSName: tt.host}); err != nil {
				t.Fatalf("verify: %v", err)
			}
			if c.Subject.CommonName != tt.cn {
				t.Errorf("CN %q, want %q", c.Subject.CommonName, tt.cn)
			}
			if tt.org != "" && (len(c.Subject.Organization) != 1 || c.Subject.Organization[0] != tt.org) {
				t.Errorf("O %v, want %q", c.Subject.Organization, tt.org)
			}
			if ip := net.ParseIP(tt.host); ip != nil {
				if err := c.VerifyHostname(tt.host); err != nil {
					t.Error(err)
				}
			}
		})
	}

	// A second pass keeps every file: a resumed cluster keeps its identities.
	before, _ := os.ReadFile(l.pki("apiserver.crt"))
	if err := writeCredentials(l, Options{Dir: dir, Nodes: 2}); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(l.pki("apiserver.crt"))
	if string(before) != string(after) {
		t.Error("a second writeCredentials reissued the API server certificate")
	}
}
