package kube

import (
	"slices"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// spec.storage.oplogSizeMB is mongod's --oplogSize on the members; unset, the
// command line (and so the pod template's hash: no rolling restart) is as
// before.
func TestOplogSizeIsPassedToMongod(t *testing.T) {
	m := &v1alpha1.Mgors{}
	m.Name, m.Namespace = "demo", "db"
	m.Default()
	before := StatefulSet(m, Options{})
	if slices.Contains(MongodArgs(m), "--oplogSize") {
		t.Fatalf("unset: %v", MongodArgs(m))
	}
	m.Spec.Storage.OplogSizeMB = ptr.To(int32(2))
	args := StatefulSet(m, Options{}).Spec.Template.Spec.Containers[0].Command
	i := slices.Index(args, "--oplogSize")
	if i < 0 || i+1 >= len(args) || args[i+1] != "2" {
		t.Fatalf("mongod command %v, want --oplogSize 2", args)
	}
	m.Spec.Storage.OplogSizeMB = nil
	if got, want := StatefulSet(m, Options{}).Spec.Template.Annotations[TemplateHashAnnotation],
		before.Spec.Template.Annotations[TemplateHashAnnotation]; got != want {
		t.Errorf("template hash %s, want %s: unset must not roll the members", got, want)
	}
}
