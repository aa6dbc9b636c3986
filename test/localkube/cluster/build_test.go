package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSourceStampFollowsSources(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module x\n")
	write("go.sum", "")
	write("etcd/main.go", "package main\n")
	stamp := func(goVersion string) string {
		t.Helper()
		s, err := sourceStamp(dir, goVersion)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	base := stamp("go1.26.8")
	if again := stamp("go1.26.8"); again != base {
		t.Fatal("stamp is not stable")
	}
	write("README.md", "not a build input")
	if stamp("go1.26.8") != base {
		t.Error("a non-Go file changed the stamp")
	}
	if stamp("go1.27.0") == base {
		t.Error("a new toolchain kept the stamp")
	}
	write("etcd/main.go", "package main\n// changed\n")
	if stamp("go1.26.8") == base {
		t.Error("a changed source kept the stamp")
	}
}

func TestKubernetesVersionMatchesTheModule(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "controlplane", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "\tk8s.io/kubernetes "+KubernetesVersion+"\n") {
		t.Errorf("controlplane/go.mod does not require k8s.io/kubernetes %s", KubernetesVersion)
	}
}
