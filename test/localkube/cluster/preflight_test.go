package cluster

import (
	"bytes"
	"testing"
)

func TestClusterDirOf(t *testing.T) {
	tests := []struct {
		cmdline string
		want    string
	}{
		{"/b/etcd --data-dir=/c/one/etcd --listen-client-url=http://127.0.0.1:2379", "/c/one"},
		{"/b/kube-apiserver --etcd-servers=x --tls-cert-file=/c/two/pki/apiserver.crt", "/c/two"},
		{"/usr/bin/etcd --data-dir=/var/lib/etcd/member", ""},
		{"/b/kube-apiserver --tls-cert-file=/etc/kubernetes/pki/server.crt", ""},
		{"/bin/sleep 10", ""},
		{"", ""},
	}
	for _, tt := range tests {
		argv := bytes.Fields([]byte(tt.cmdline))
		if got := clusterDirOf(argv); got != tt.want {
			t.Errorf("clusterDirOf(%q) = %q, want %q", tt.cmdline, got, tt.want)
		}
	}
}
