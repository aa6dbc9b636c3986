package v1alpha1_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	k8sschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"sigs.k8s.io/yaml"

	"github.com/mgors/operator/deploy"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/test/crdcases"
)

// apiServer validates Mgors objects the way kube-apiserver does for a CRD:
// strict unknown-field check, pruning, defaulting, OpenAPI schema, CEL rules and
// CEL transition rules, all from the CRD that deploy/ embeds.
type apiServer struct {
	structural *schema.Structural
	create     func(ctx context.Context, obj *unstructured.Unstructured) field.ErrorList
	update     func(ctx context.Context, obj, old *unstructured.Unstructured) field.ErrorList
}

func newAPIServer(t *testing.T) *apiServer {
	t.Helper()
	return newAPIServerFor(t, deploy.CRD, v1alpha1.SchemeGroupVersionKind)
}

// newAPIServerFor is newAPIServer for another CRD of the group (MgorsBackup).
func newAPIServerFor(t *testing.T, crdYAML []byte, gvk k8sschema.GroupVersionKind) *apiServer {
	t.Helper()
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(crdYAML, &crd); err != nil {
		t.Fatalf("decoding the embedded CRD: %v", err)
	}
	var internal apiextensionsinternal.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(&crd, &internal, nil); err != nil {
		t.Fatalf("converting the CRD: %v", err)
	}
	if len(internal.Spec.Versions) != 1 || internal.Spec.Versions[0].Name != v1alpha1.Version {
		t.Fatalf("CRD versions = %+v, want only %s", internal.Spec.Versions, v1alpha1.Version)
	}
	// With one version the internal form keeps its schema and subresources at the top.
	openapi := internal.Spec.Validation.OpenAPIV3Schema
	subresources := internal.Spec.Subresources
	structural, err := schema.NewStructural(openapi)
	if err != nil {
		t.Fatalf("structural schema: %v", err)
	}
	if errs := schema.ValidateStructural(nil, structural); len(errs) > 0 {
		t.Fatalf("schema is not structural: %v", errs.ToAggregate())
	}
	validator, _, err := validation.NewSchemaValidator(openapi)
	if err != nil {
		t.Fatalf("schema validator: %v", err)
	}
	statusSchema := openapi.Properties["status"]
	statusValidator, _, err := validation.NewSchemaValidator(&statusSchema)
	if err != nil {
		t.Fatalf("status validator: %v", err)
	}
	strategy := customresource.NewStrategy(typer{}, true, gvk,
		validator, statusValidator, structural, subresources.Status, subresources.Scale, nil)

	prepare := func(obj *unstructured.Unstructured) field.ErrorList {
		var errs field.ErrorList
		unknown := pruning.PruneWithOptions(obj.Object, structural, true, schema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
		for _, path := range unknown {
			errs = append(errs, field.Invalid(field.NewPath(path), nil, fmt.Sprintf("unknown field %q", path)))
		}
		defaulting.Default(obj.Object, structural)
		return errs
	}
	return &apiServer{
		structural: structural,
		create: func(ctx context.Context, obj *unstructured.Unstructured) field.ErrorList {
			errs := prepare(obj)
			if len(errs) > 0 {
				return errs // strict field validation fails the request before validation
			}
			return strategy.Validate(ctx, obj)
		},
		update: func(ctx context.Context, obj, old *unstructured.Unstructured) field.ErrorList {
			if errs := prepare(old); len(errs) > 0 {
				return errs
			}
			if errs := prepare(obj); len(errs) > 0 {
				return errs
			}
			obj.SetResourceVersion("1")
			old.SetResourceVersion("1")
			obj.SetGeneration(1)
			old.SetGeneration(1)
			return strategy.ValidateUpdate(ctx, obj, old)
		},
	}
}

// typer reports an unstructured object's own kind, as the API server's
// unstructured typer does for custom resources.
type typer struct{}

func (typer) ObjectKinds(obj runtime.Object) ([]k8sschema.GroupVersionKind, bool, error) {
	return []k8sschema.GroupVersionKind{obj.GetObjectKind().GroupVersionKind()}, false, nil
}

func (typer) Recognizes(k8sschema.GroupVersionKind) bool { return true }

func requestContext() context.Context {
	return genericapirequest.WithNamespace(genericapirequest.NewContext(), "default")
}

// The API server validates a CRD before it stores it: structural schema, CEL
// rules compiled within their cost budget, and every default checked against
// the schema and its rules. A CRD that fails here never installs.
func TestCRDIsAcceptedByTheAPIServer(t *testing.T) {
	for _, y := range [][]byte{deploy.CRD, deploy.BackupCRD} {
		crdAccepted(t, y)
	}
}

func crdAccepted(t *testing.T, y []byte) {
	t.Helper()
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(y, &crd); err != nil {
		t.Fatal(err)
	}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(&crd)
	var internal apiextensionsinternal.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(&crd, &internal, nil); err != nil {
		t.Fatal(err)
	}
	if errs := crdvalidation.ValidateCustomResourceDefinition(context.Background(), &internal); len(errs) > 0 {
		t.Fatalf("the API server would refuse the CRD: %v", errs.ToAggregate())
	}
}

func TestSchemaAcceptsValid(t *testing.T) {
	s := newAPIServer(t)
	_, obj, err := crdcases.Case{Patch: "{}"}.Objects()
	if err != nil {
		t.Fatal(err)
	}
	if errs := s.create(requestContext(), obj); len(errs) > 0 {
		t.Fatalf("valid Mgors rejected: %v", errs.ToAggregate())
	}
}

func TestSchemaRejectsInvalid(t *testing.T) {
	s := newAPIServer(t)
	for _, c := range crdcases.Invalid {
		t.Run(c.Name, func(t *testing.T) {
			old, obj, err := c.Objects()
			if err != nil {
				t.Fatal(err)
			}
			var errs field.ErrorList
			if c.Update {
				errs = s.update(requestContext(), obj, old)
			} else {
				errs = s.create(requestContext(), obj)
			}
			if len(errs) == 0 {
				t.Fatalf("accepted; want an error on %s saying %q", c.Field, c.Rule)
			}
			for _, e := range errs {
				if e.Field == c.Field && strings.Contains(e.Error(), c.Rule) {
					return
				}
			}
			t.Fatalf("errors %v; want one on field %s saying %q", errs.ToAggregate(), c.Field, c.Rule)
		})
	}
}

// Every sample in deploy/samples is a valid Mgors.
func TestSamplesAreValid(t *testing.T) {
	s := newAPIServer(t)
	paths, err := filepath.Glob("../../../deploy/samples/*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no samples found: %v", err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		j, err := yaml.YAMLToJSON(b)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(j); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		obj.SetNamespace("default")
		if errs := s.create(requestContext(), obj); len(errs) > 0 {
			t.Errorf("%s: %v", filepath.Base(p), errs.ToAggregate())
		}
	}
}
