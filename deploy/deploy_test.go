package deploy_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

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
	for name, committed := range map[string][]byte{
		"mgors.io_mgorses.yaml":       deploy.CRD,
		"mgors.io_mgorsbackups.yaml":  deploy.BackupCRD,
		"mgors.io_mgorsrestores.yaml": deploy.RestoreCRD,
	} {
		got, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, committed) {
			t.Fatalf("deploy/crd/%s is stale: run `make manifests` and commit the result", name)
		}
	}
}

// Every CRD in deploy/crd is embedded (the operator installs it) and listed
// in deploy/'s kustomization (kubectl apply -k deploy/ installs it); the
// namespaced install lists none (a person applies deploy/crd/).
func TestEveryCRDIsInstalled(t *testing.T) {
	files, err := filepath.Glob("crd/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	embedded := [][]byte{deploy.CRD, deploy.BackupCRD, deploy.RestoreCRD}
	if len(files) != len(embedded) {
		t.Fatalf("deploy/crd holds %v; the operator embeds %d CRDs", files, len(embedded))
	}
	resources := func(path string) []string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var k struct {
			Resources []string `json:"resources"`
		}
		if err := yaml.Unmarshal(b, &k); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return k.Resources
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range embedded {
			found = found || bytes.Equal(b, e)
		}
		if !found {
			t.Errorf("%s is not embedded in the operator (deploy.go)", f)
		}
	}
	listed := resources("kustomization.yaml")
	for _, f := range files {
		if !slices.Contains(listed, f) {
			t.Errorf("deploy/kustomization.yaml does not list %s (has %v)", f, listed)
		}
	}
	for _, r := range resources("namespaced/kustomization.yaml") {
		if strings.Contains(r, "crd") {
			t.Errorf("deploy/namespaced/kustomization.yaml lists %s: the namespaced install may not write a CRD", r)
		}
	}
}
