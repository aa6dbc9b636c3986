package cluster

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestUnescapeMount(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/plain/path", "/plain/path"},
		{`/with\040space`, "/with space"},
		{`/tab\011and\134backslash`, "/tab\tand\\backslash"},
		{`/trailing\04`, `/trailing\04`},
	}
	for _, tt := range tests {
		if got := unescapeMount(tt.in); got != tt.want {
			t.Errorf("unescapeMount(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestStopOrderStopsKubeletsFirstAndEtcdLast(t *testing.T) {
	dir := t.TempDir()
	l := layout{dir: dir}
	if err := os.MkdirAll(l.runDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"etcd", "kube-apiserver", "kubelet-localkube-2", "kubelet-localkube-1", "newthing"} {
		if err := os.WriteFile(filepath.Join(l.runDir(), c+".pid"), []byte("1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"newthing", "kubelet-localkube-1", "kubelet-localkube-2", "loadbalancer", "provisioner", "kube-proxy", "coredns",
		"kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd"}
	if got := stopOrder(l); !reflect.DeepEqual(got, want) {
		t.Errorf("stopOrder = %v, want %v", got, want)
	}
}

func TestStalePidFileReadsAsStopped(t *testing.T) {
	dir := t.TempDir()
	l := layout{dir: dir}
	if err := os.MkdirAll(l.runDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	// Our own pid is alive but its command line does not name the cluster dir.
	if err := os.WriteFile(l.pid("etcd"), []byte(itoa(os.Getpid())+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := pidOf(l, "etcd"); ok {
		t.Error("a pid that is not ours reads as running")
	}
	if err := os.WriteFile(l.pid("etcd"), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := pidOf(l, "etcd"); ok {
		t.Error("a garbage pid file reads as running")
	}
}
