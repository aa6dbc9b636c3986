package kube

import (
	"context"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// establishOnWrite makes the fake API server mark a created or updated CRD
// Established, as the real one does shortly after.
func establishOnWrite(c *fake.Clientset) {
	c.PrependReactor("*", "customresourcedefinitions", func(a k8stesting.Action) (bool, runtime.Object, error) {
		var obj runtime.Object
		switch a.GetVerb() { // create and update actions share one method set: tell them by verb
		case "create":
			obj = a.(k8stesting.CreateAction).GetObject()
		case "update":
			obj = a.(k8stesting.UpdateAction).GetObject()
		default:
			return false, nil, nil
		}
		crd := obj.(*apiextensionsv1.CustomResourceDefinition)
		crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{
			{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue},
		}
		return false, nil, nil // let the tracker store it
	})
}

func TestCRDIdentity(t *testing.T) {
	crd, err := CRD()
	if err != nil {
		t.Fatal(err)
	}
	n := crd.Spec.Names
	if crd.Name != "mgorses.mgors.io" || crd.Spec.Group != v1alpha1.GroupName || n.Kind != "Mgors" ||
		n.ListKind != "MgorsList" || n.Plural != "mgorses" || n.Singular != "mgors" ||
		len(n.ShortNames) != 1 || n.ShortNames[0] != "mgo" || crd.Spec.Scope != apiextensionsv1.NamespaceScoped {
		t.Fatalf("CRD identity is off: %s %+v", crd.Name, n)
	}
	v := crd.Spec.Versions[0]
	if v.Subresources == nil || v.Subresources.Status == nil || v.Subresources.Scale == nil ||
		v.Subresources.Scale.SpecReplicasPath != ".spec.members" {
		t.Fatalf("subresources: %+v", v.Subresources)
	}
	var cols []string
	for _, c := range v.AdditionalPrinterColumns {
		cols = append(cols, c.Name)
	}
	for _, want := range []string{"Phase", "Ready", "Primary", "Age"} {
		found := false
		for _, c := range cols {
			found = found || c == want
		}
		if !found {
			t.Errorf("printer column %s missing from %v", want, cols)
		}
	}
}

func TestInstallCRDCreatesAndWaits(t *testing.T) {
	c := fake.NewClientset()
	establishOnWrite(c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := InstallCRD(ctx, c, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	got, err := c.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "mgorses.mgors.io", metav1.GetOptions{})
	if err != nil || !Established(got) {
		t.Fatalf("CRD not installed and established: %v", err)
	}
}

func TestInstallCRDUpdatesAnOldSchema(t *testing.T) {
	old, _ := CRD()
	old.Spec.Versions[0].AdditionalPrinterColumns = nil
	c := fake.NewClientset(old)
	establishOnWrite(c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := InstallCRD(ctx, c, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	got, _ := c.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, "mgorses.mgors.io", metav1.GetOptions{})
	if len(got.Spec.Versions[0].AdditionalPrinterColumns) == 0 {
		t.Fatal("the CRD was not updated to the embedded schema")
	}
}

func TestInstallCRDTimesOutWhenNeverEstablished(t *testing.T) {
	c := fake.NewClientset()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := InstallCRD(ctx, c, 300*time.Millisecond); err == nil {
		t.Fatal("want an error when the CRD never becomes Established")
	}
}
