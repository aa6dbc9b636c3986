package deploy_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/mgors/operator/deploy"
)

// controllerToolsVersion reads the pinned controller-gen version from the
// Makefile, so the test regenerates with exactly what `make manifests` uses.
func controllerToolsVersion(t *testing.T) string {
	t.Helper()
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^CONTROLLER_TOOLS_VERSION \?= (\S+)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("CONTROLLER_TOOLS_VERSION not found in the Makefile")
	}
	return string(m[1])
}

// TestCRDUpToDate regenerates the CRD from the Go types and checks that deploy/
// holds exactly that: regenerating changes nothing.
func TestCRDUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("regenerating the CRD runs controller-gen")
	}
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "run",
		"sigs.k8s.io/controller-tools/cmd/controller-gen@"+controllerToolsVersion(t),
		"crd", "paths=./kube/api/...", "output:crd:artifacts:config="+out)
	cmd.Dir = ".."
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("controller-gen: %v\n%s", err, b)
	}
	for name, committed := range map[string][]byte{"mgors.io_mgorses.yaml": deploy.CRD, "mgors.io_mgorsbackups.yaml": deploy.BackupCRD} {
		got, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, committed) {
			t.Fatalf("deploy/crd/%s is stale: run `make manifests` and commit the result", name)
		}
	}
}
