package v1alpha1_test

import (
	"reflect"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// The Go defaults and the schema's defaults must agree, or an object created
// through the API server and one built in Go would behave differently.
func TestDefaultMatchesSchema(t *testing.T) {
	s := newAPIServer(t)
	for _, tc := range []struct {
		name string
		spec map[string]any
	}{
		{"empty spec", map[string]any{}},
		{"tls on", map[string]any{"tls": map[string]any{"certificateSecretRef": map[string]any{"name": "c"}}}},
		{"members set", map[string]any{"members": int64(5), "storage": map[string]any{"storageClassName": "x"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "mgors.io/v1alpha1", "kind": "Mgors",
				"metadata": map[string]any{"name": "demo", "namespace": "default"},
				"spec":     runtime.DeepCopyJSONValue(tc.spec),
			}}
			defaulting.Default(u.Object, s.structural)
			var fromSchema v1alpha1.Mgors
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &fromSchema); err != nil {
				t.Fatal(err)
			}
			var fromGo v1alpha1.Mgors
			u2 := &unstructured.Unstructured{Object: map[string]any{"spec": runtime.DeepCopyJSONValue(tc.spec)}}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u2.Object, &fromGo); err != nil {
				t.Fatal(err)
			}
			fromGo.Default()
			// Quantities compare by value, not by their cached string.
			if fromGo.Spec.Storage.Size.Cmp(*fromSchema.Spec.Storage.Size) != 0 {
				t.Fatalf("storage size: Go %s, schema %s", fromGo.Spec.Storage.Size.String(), fromSchema.Spec.Storage.Size.String())
			}
			fromGo.Spec.Storage.Size = fromSchema.Spec.Storage.Size
			if !reflect.DeepEqual(fromGo.Spec, fromSchema.Spec) {
				t.Fatalf("defaults differ:\nGo:     %+v\nschema: %+v", fromGo.Spec, fromSchema.Spec)
			}
		})
	}
}

func TestDerivedNames(t *testing.T) {
	m := &v1alpha1.Mgors{}
	m.Name, m.Namespace = "demo", "prod"
	m.Default()
	for _, tc := range []struct{ got, want string }{
		{m.ReplSetName(), "demo"},
		{m.MemberImage(), "mongo:7.0.14"},
		{m.KeyfileSecretName(), "demo-keyfile"},
		{m.AdminSecretName(), "demo-admin"},
		{m.ServiceName(), "demo-svc"},
		{m.PodName(2), "demo-2"},
		{m.MemberHost(2, "cluster.local"), "demo-2.demo-svc.prod.svc.cluster.local:27017"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	m.Spec.ReplicaSetName = "rs0"
	m.Spec.Image = "percona/percona-server-mongodb:7.0"
	m.Spec.Auth.KeyfileSecretRef = &v1alpha1.SecretReference{Name: "mine"}
	if m.ReplSetName() != "rs0" || m.MemberImage() != "percona/percona-server-mongodb:7.0" || m.KeyfileSecretName() != "mine" {
		t.Fatalf("overrides ignored: %q %q %q", m.ReplSetName(), m.MemberImage(), m.KeyfileSecretName())
	}
}
