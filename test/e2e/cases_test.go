package e2e

import (
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/mgors/operator/test/crdcases"
	"github.com/mgors/operator/test/localkube/harness"
)

// invalidCase is one row of crdcases.Invalid, sent as a user would: kubectl
// with strict field validation, create or (after creating the valid object)
// replace.
type invalidCase struct {
	name, field, rule string
	apply             func(t *testing.T, env *harness.Env) (string, error)
}

func invalidCases(t *testing.T) []invalidCase {
	var out []invalidCase
	for i, c := range crdcases.Invalid {
		name := fmt.Sprintf("case-%d", i)
		out = append(out, invalidCase{name: c.Name, field: c.Field, rule: c.Rule,
			apply: func(t *testing.T, env *harness.Env) (string, error) {
				old, changed, err := c.Objects()
				if err != nil {
					t.Fatal(err)
				}
				if old != nil {
					old.SetName(name)
					old.SetNamespace(env.Namespace)
					y, _ := yaml.Marshal(old.Object)
					mustKubectl(t, env, string(y), "create", "--validate=strict", "-f", "-")
				}
				changed.SetName(name)
				changed.SetNamespace(env.Namespace)
				y, err := yaml.Marshal(changed.Object)
				if err != nil {
					t.Fatal(err)
				}
				if old == nil {
					return kubectl(t, env, string(y), "create", "--validate=strict", "-f", "-")
				}
				// An operator deployed by an earlier test may write the
				// object between kubectl's read and its replace: a Conflict
				// is not the answer to the change, so try again.
				var out string
				for range 20 {
					out, err = kubectl(t, env, string(y), "replace", "--validate=strict", "-f", "-")
					if err == nil || !strings.Contains(out, "the object has been modified") {
						break
					}
				}
				return out, err
			}})
	}
	return out
}
