package v1alpha1_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/mgors/operator/deploy"
	"github.com/mgors/operator/kube/api/v1alpha1"
)

func restoreObject(t *testing.T, spec string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte("apiVersion: mgors.io/v1alpha1\nkind: MgorsRestore\nmetadata: {name: r1, namespace: default}\nspec: " + spec))
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return obj
}

// MgorsRestore's schema: a valid restore is accepted, with or without
// spec.pointInTime; each invalid one is refused with a message naming the
// field and the rule; the spec cannot change once created.
func TestSchemaRestore(t *testing.T) {
	s := newAPIServerFor(t, deploy.RestoreCRD, v1alpha1.RestoreGroupVersionKind)
	valid := "{cluster: demo, backup: nightly}"
	withPIT := "{cluster: demo-copy, backup: nightly, pointInTime: '2026-01-01T12:30:00Z'}"
	for _, tc := range []struct {
		spec, rule string
	}{
		{valid, ""},
		{withPIT, ""},
		{"{cluster: Demo_1, backup: nightly}", "spec.cluster must be the name of a Mgors"},
		{"{cluster: '', backup: nightly}", "spec.cluster"},
		{"{backup: nightly}", "spec.cluster: Required value"},
		{"{cluster: demo}", "spec.backup: Required value"},
		{"{cluster: demo, backup: ''}", "spec.backup"},
		{"{cluster: demo, backup: nightly, pointInTime: yesterday}", "spec.pointInTime"},
	} {
		obj := restoreObject(t, tc.spec)
		errs := s.create(requestContext(), obj)
		switch {
		case tc.rule == "" && len(errs) > 0:
			t.Errorf("%s refused: %v", tc.spec, errs.ToAggregate())
		case tc.rule != "" && (len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tc.rule)):
			t.Errorf("%s: %v, want %q", tc.spec, errs.ToAggregate(), tc.rule)
		}
	}
	for _, change := range []struct{ what, from, to string }{
		{"spec.backup", valid, "{cluster: demo, backup: weekly}"},
		{"spec.cluster", valid, "{cluster: other, backup: nightly}"},
		{"spec.pointInTime", withPIT, "{cluster: demo-copy, backup: nightly, pointInTime: '2026-01-01T13:00:00Z'}"},
		{"spec.pointInTime (added)", valid, "{cluster: demo, backup: nightly, pointInTime: '2026-01-01T13:00:00Z'}"},
	} {
		old, obj := restoreObject(t, change.from), restoreObject(t, change.to)
		if errs := s.update(requestContext(), obj, old); len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), "spec is immutable") {
			t.Errorf("changing %s: %v, want the immutability rule", change.what, errs.ToAggregate())
		}
	}
	// The status is the operator's to write, not a spec change.
	old := restoreObject(t, valid)
	obj := restoreObject(t, valid)
	if err := unstructured.SetNestedField(obj.Object, map[string]any{"phase": "Running"}, "status"); err != nil {
		t.Fatal(err)
	}
	if errs := s.update(requestContext(), obj, old); len(errs) > 0 {
		t.Errorf("an unchanged spec refused: %v", errs.ToAggregate())
	}
}
