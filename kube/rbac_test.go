package kube

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// rules reads the rules of every Role or ClusterRole of a manifest file.
func rules(t *testing.T, path string, kind string) map[string][]rbacv1.PolicyRule {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]rbacv1.PolicyRule{}
	for doc := range bytes.SplitSeq(b, []byte("\n---")) {
		var meta struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if meta.Kind != kind {
			continue
		}
		var r rbacv1.ClusterRole // a Role has the same fields
		if err := yaml.UnmarshalStrict(doc, &r); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out[r.Name] = r.Rules
	}
	return out
}

// asRules is the PolicyRules that grant exactly ps.
func asRules(ps []Permission) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, p := range ps {
		out = append(out, rbacv1.PolicyRule{APIGroups: []string{p.Group}, Resources: []string{p.Resource},
			Verbs: p.Verbs, ResourceNames: p.Names})
	}
	return out
}

func filter(keep func(Permission) bool) []Permission {
	var out []Permission
	for _, p := range Permissions {
		if keep(p) {
			out = append(out, p)
		}
	}
	return out
}

func sameRules(t *testing.T, what string, got, want []rbacv1.PolicyRule) {
	t.Helper()
	norm := func(rs []rbacv1.PolicyRule) []string {
		var out []string
		for _, r := range rs {
			out = append(out, strings.Join(r.APIGroups, ",")+"|"+strings.Join(r.Resources, ",")+"|"+
				strings.Join(r.Verbs, ",")+"|"+strings.Join(r.ResourceNames, ","))
		}
		return out
	}
	g, w := norm(got), norm(want)
	if !slices.Equal(g, w) {
		t.Errorf("%s grants\n  %s\nbut kube.Permissions are\n  %s\n(update both, and docs/design/security.md)",
			what, strings.Join(g, "\n  "), strings.Join(w, "\n  "))
	}
}

// The cluster-wide install grants exactly Permissions: the ClusterRole all
// but the Lease, the leader-election Role the Lease.
func TestClusterWideRBACIsPermissions(t *testing.T) {
	cr := rules(t, "../deploy/rbac.yaml", "ClusterRole")
	sameRules(t, "deploy/rbac.yaml ClusterRole mgors-operator", cr["mgors-operator"],
		asRules(filter(func(p Permission) bool { return !p.Leader })))
	r := rules(t, "../deploy/rbac.yaml", "Role")
	sameRules(t, "deploy/rbac.yaml Role mgors-operator-leader-election", r["mgors-operator-leader-election"],
		asRules(filter(func(p Permission) bool { return p.Leader })))
	for _, p := range Permissions {
		if slices.Contains(p.Verbs, "*") || p.Resource == "*" || p.Where == "" {
			t.Errorf("%s/%s: no wildcards, and say where the code calls it", p.Group, p.Resource)
		}
	}
}

// The namespaced install's Role grants the namespaced Permissions and the
// Lease, and nothing cluster-scoped.
func TestNamespacedRBACIsPermissions(t *testing.T) {
	r := rules(t, "../deploy/namespaced/rbac.yaml", "Role")
	sameRules(t, "deploy/namespaced/rbac.yaml Role mgors-operator", r["mgors-operator"],
		asRules(filter(func(p Permission) bool { return !p.ClusterScoped })))
	if cr := rules(t, "../deploy/namespaced/rbac.yaml", "ClusterRole"); len(cr) != 0 {
		t.Errorf("the namespaced install has a ClusterRole: %v", cr)
	}
}

// Every resource the operator's code reaches through a typed client is in
// Permissions: a new call on a new resource fails here until it is granted.
func TestEveryResourceTheCodeCallsIsGranted(t *testing.T) {
	// Typed client accessors in the code, e.g. CoreV1().Secrets( or
	// AppsV1().StatefulSets(, and the resources they stand for.
	call := regexp.MustCompile(`\b(CoreV1|AppsV1|PolicyV1|StorageV1|CoordinationV1|ApiextensionsV1)\(\)\.(\w+)\(`)
	groups := map[string]string{"CoreV1": "", "AppsV1": "apps", "PolicyV1": "policy", "StorageV1": "storage.k8s.io",
		"CoordinationV1": "coordination.k8s.io", "ApiextensionsV1": "apiextensions.k8s.io"}
	granted := map[string]bool{}
	for _, p := range Permissions {
		granted[p.Group+"/"+strings.Split(p.Resource, "/")[0]] = true
	}
	seen := 0
	for _, dir := range []string{".", "../actors", "../actors/eventlog", "../watch", "../cmd/mgors-operator"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range call.FindAllStringSubmatch(string(b), -1) {
				if m[2] == "RESTClient" {
					continue // the event log writes its configmaps through it (granted above)
				}
				seen++
				res := strings.ToLower(m[2])
				if !granted[groups[m[1]]+"/"+res] {
					t.Errorf("%s calls %s().%s() but kube.Permissions grant nothing on %s", f, m[1], m[2], res)
				}
			}
		}
	}
	if seen < 10 {
		t.Fatalf("found only %d typed client calls: the scan is broken", seen)
	}
}

// Every kind the Informers watch is granted list and watch: an informer
// without them never syncs, and the operator never starts its actors.
func TestEveryInformerIsGrantedListAndWatch(t *testing.T) {
	informer := regexp.MustCompile(`\b(Core|Apps|Policy|Storage)\(\)\.V1\(\)\.(\w+)\(\)`)
	groups := map[string]string{"Core": "", "Apps": "apps", "Policy": "policy", "Storage": "storage.k8s.io"}
	b, err := os.ReadFile("informers.go")
	if err != nil {
		t.Fatal(err)
	}
	found := informer.FindAllStringSubmatch(string(b), -1)
	if len(found) < 8 {
		t.Fatalf("found only %d informers: the scan is broken", len(found))
	}
	for _, m := range found {
		res := strings.ToLower(m[2])
		ok := false
		for _, p := range Permissions {
			if p.Group == groups[m[1]] && p.Resource == res && p.Names == nil &&
				slices.Contains(p.Verbs, "list") && slices.Contains(p.Verbs, "watch") {
				ok = true
			}
		}
		if !ok {
			t.Errorf("informers.go watches %s but kube.Permissions grant no list and watch on it", res)
		}
	}
}

// The CRD installer may get and update every CRD it installs (CRDs), and no other.
func TestCRDInstallerIsGrantedEveryCRD(t *testing.T) {
	crds, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, crd := range crds {
		want = append(want, crd.Name)
	}
	for _, p := range Permissions {
		if p.Resource == "customresourcedefinitions" && p.Names != nil && !slices.Equal(p.Names, want) {
			t.Errorf("get, update on CRDs %v; InstallCRD installs %v", p.Names, want)
		}
	}
}

// Every Mgors API resource the code reaches through the typed client
// (kube/client) is granted, and the informers' kinds list and watch.
func TestEveryMgorsResourceTheCodeCallsIsGranted(t *testing.T) {
	call := regexp.MustCompile(`\.(Mgorses|MgorsBackups|MgorsRestores)\(`)
	verbs := func(res string) []string {
		for _, p := range Permissions {
			if p.Group == "mgors.io" && p.Resource == res && p.Names == nil {
				return p.Verbs
			}
		}
		return nil
	}
	seen := map[string]bool{}
	for _, dir := range []string{".", "../actors", "../watch", "../cmd/mgors-operator"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range call.FindAllStringSubmatch(string(b), -1) {
				res := strings.ToLower(m[1])
				seen[res] = true
				if len(verbs(res)) == 0 {
					t.Errorf("%s calls %s() but kube.Permissions grant nothing on %s", f, m[1], res)
				}
			}
		}
	}
	if !seen["mgorses"] || !seen["mgorsbackups"] || !seen["mgorsrestores"] {
		t.Fatalf("the scan found %v: broken", seen)
	}
	for _, res := range []string{"mgorses", "mgorsbackups", "mgorsrestores"} {
		if v := verbs(res); !slices.Contains(v, "list") || !slices.Contains(v, "watch") || !slices.Contains(v, "get") {
			t.Errorf("%s: the informer lists and watches, the status writer gets; granted %v", res, v)
		}
		if v := verbs(res + "/status"); !slices.Contains(v, "update") {
			t.Errorf("%s/status: the status writer updates; granted %v", res, v)
		}
	}
}
