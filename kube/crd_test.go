package kube

import (
	"context"
	"slices"
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

func TestBackupCRDIdentity(t *testing.T) {
	crd, err := BackupCRD()
	if err != nil {
		t.Fatal(err)
	}
	n := crd.Spec.Names
	if crd.Name != "mgorsbackups.mgors.io" || crd.Spec.Group != v1alpha1.GroupName || n.Kind != v1alpha1.BackupKind ||
		n.ListKind != "MgorsBackupList" || n.Plural != v1alpha1.BackupResource || n.Singular != "mgorsbackup" ||
		len(n.ShortNames) != 1 || n.ShortNames[0] != "mgob" || crd.Spec.Scope != apiextensionsv1.NamespaceScoped {
		t.Fatalf("CRD identity is off: %s %+v", crd.Name, n)
	}
	if v := crd.Spec.Versions[0]; v.Name != v1alpha1.Version || v.Subresources == nil || v.Subresources.Status == nil {
		t.Fatalf("version %s, subresources %+v", v.Name, v.Subresources)
	}
	all, err := CRDs()
	if err != nil || len(all) != 3 || all[0].Name != "mgorses.mgors.io" || all[1].Name != "mgorsbackups.mgors.io" ||
		all[2].Name != "mgorsrestores.mgors.io" {
		t.Fatalf("CRDs: %v, %v", all, err)
	}
}

func TestRestoreCRDIdentity(t *testing.T) {
	crd, err := RestoreCRD()
	if err != nil {
		t.Fatal(err)
	}
	n := crd.Spec.Names
	if crd.Name != "mgorsrestores.mgors.io" || crd.Spec.Group != v1alpha1.GroupName || n.Kind != v1alpha1.RestoreKind ||
		n.ListKind != "MgorsRestoreList" || n.Plural != v1alpha1.RestoreResource || n.Singular != "mgorsrestore" ||
		len(n.ShortNames) != 1 || n.ShortNames[0] != "mgor" || crd.Spec.Scope != apiextensionsv1.NamespaceScoped {
		t.Fatalf("CRD identity is off: %s %+v", crd.Name, n)
	}
	if v := crd.Spec.Versions[0]; v.Name != v1alpha1.Version || v.Subresources == nil || v.Subresources.Status == nil {
		t.Fatalf("version %s, subresources %+v", v.Name, v.Subresources)
	}
}

// installed are the CRDs the fake API server holds, Established.
func installed(t *testing.T, c *fake.Clientset) []string {
	t.Helper()
	l, err := c.ApiextensionsV1().CustomResourceDefinitions().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, crd := range l.Items {
		if Established(&crd) {
			out = append(out, crd.Name)
		}
	}
	slices.Sort(out)
	return out
}

func TestInstallCRDCreatesAndWaits(t *testing.T) {
	c := fake.NewClientset()
	establishOnWrite(c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := InstallCRD(ctx, c, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if got, want := installed(t, c), []string{"mgorsbackups.mgors.io", "mgorses.mgors.io", "mgorsrestores.mgors.io"}; !slices.Equal(got, want) {
		t.Fatalf("CRDs installed and established: %v, want %v", got, want)
	}
}

func TestInstallCRDUpdatesAnOldSchema(t *testing.T) {
	old, _ := CRD()
	old.Spec.Versions[0].AdditionalPrinterColumns = nil
	oldBackup, _ := BackupCRD()
	oldBackup.Spec.Versions[0].AdditionalPrinterColumns = nil
	oldRestore, _ := RestoreCRD()
	oldRestore.Spec.Versions[0].AdditionalPrinterColumns = nil
	c := fake.NewClientset(old, oldBackup, oldRestore)
	establishOnWrite(c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := InstallCRD(ctx, c, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"mgorses.mgors.io", "mgorsbackups.mgors.io", "mgorsrestores.mgors.io"} {
		got, _ := c.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if len(got.Spec.Versions[0].AdditionalPrinterColumns) == 0 {
			t.Fatalf("%s was not updated to the embedded schema", name)
		}
	}
}

// An operator upgraded from one that installed only the Mgors CRD adds the
// MgorsBackup and MgorsRestore CRDs beside it.
func TestInstallCRDAddsTheBackupAndRestoreCRDs(t *testing.T) {
	have, _ := CRD()
	c := fake.NewClientset(have)
	establishOnWrite(c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := InstallCRD(ctx, c, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if got, want := installed(t, c), []string{"mgorsbackups.mgors.io", "mgorses.mgors.io", "mgorsrestores.mgors.io"}; !slices.Equal(got, want) {
		t.Fatalf("CRDs installed and established: %v, want %v", got, want)
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
