package v1alpha1_test

import (
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/mgors/operator/deploy"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/test/crdcases"
)

// Every parameter of the Go table is accepted by the schema with a value
// of its kind, so the CEL rules and v1alpha1.Parameters list the same names
// (crdcases holds the refusals of the others).
func TestSchemaAcceptsEveryParameterOfTheTable(t *testing.T) {
	s := newAPIServer(t)
	for name, p := range v1alpha1.Parameters {
		value := `"1"`
		if p.Kind == v1alpha1.ParameterBool {
			value = `"true"`
		}
		_, obj, err := crdcases.Case{Patch: `spec: {config: {wiredTigerCacheSizeGB: "1.5", profiling: {mode: slowOp, slowOpThresholdMs: 50}, setParameter: {` + name + `: ` + value + `}}}`}.Objects()
		if err != nil {
			t.Fatal(err)
		}
		if errs := s.create(requestContext(), obj); len(errs) > 0 {
			t.Errorf("%s=%s refused: %v", name, value, errs.ToAggregate())
		}
	}
}

// The CEL rules name every parameter of the table, and no other: the
// generated CRD's list is the table's.
func TestCELRulesListTheParameterTable(t *testing.T) {
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema struct {
						Properties map[string]struct {
							Properties map[string]struct {
								Rules []struct {
									Rule string `json:"rule"`
								} `json:"x-kubernetes-validations"`
							} `json:"properties"`
						} `json:"properties"`
					} `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(deploy.CRD, &crd); err != nil {
		t.Fatal(err)
	}
	const prefix = "self.setParameter.all(k, k in ["
	var got []string
	for _, r := range crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["config"].Rules {
		i := strings.Index(r.Rule, prefix)
		if i < 0 {
			continue
		}
		list := r.Rule[i+len(prefix):]
		for _, n := range strings.Split(list[:strings.Index(list, "]")], ",") {
			got = append(got, strings.Trim(strings.TrimSpace(n), "'"))
		}
		break
	}
	var want []string
	for n := range v1alpha1.Parameters {
		want = append(want, n)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("CEL rule lists %v, the table %v", got, want)
	}
}
