package fake_test

import (
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/kube/client/fake"
)

var _ kube.Reader = (*fake.Reader)(nil)

func TestReaderBackups(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := func(ns, name, cluster string, created time.Time) *v1alpha1.MgorsBackup {
		return &v1alpha1.MgorsBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(created)},
			Spec: v1alpha1.MgorsBackupSpec{Cluster: cluster}}
	}
	mc := fake.NewClientset(b("ns", "late", "db", t0.Add(time.Hour)), b("ns", "b", "db", t0), b("ns", "a", "db", t0),
		b("ns", "other", "db2", t0), b("elsewhere", "x", "db", t0))
	got, err := fake.NewReader(k8sfake.NewClientset(), mc).Backups("ns", "db")
	var names []string
	for _, b := range got {
		names = append(names, b.Name)
	}
	if want := []string{"a", "b", "late"}; err != nil || !slices.Equal(names, want) {
		t.Fatalf("backups %v, %v; want %v", names, err, want)
	}
	if got, err := fake.NewReader(k8sfake.NewClientset(), nil).Backups("ns", "db"); err != nil || len(got) != 0 {
		t.Fatalf("without a Mgors client: %v, %v", got, err)
	}
}

func TestReaderRestores(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := func(ns, name, cluster string, created time.Time) *v1alpha1.MgorsRestore {
		return &v1alpha1.MgorsRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(created)},
			Spec: v1alpha1.MgorsRestoreSpec{Cluster: cluster, Backup: "b1"}}
	}
	mc := fake.NewClientset(r("ns", "late", "db", t0.Add(time.Hour)), r("ns", "b", "db", t0), r("ns", "a", "db", t0),
		r("ns", "other", "db2", t0), r("elsewhere", "x", "db", t0))
	got, err := fake.NewReader(k8sfake.NewClientset(), mc).Restores("ns", "db")
	var names []string
	for _, r := range got {
		names = append(names, r.Name)
	}
	if want := []string{"a", "b", "late"}; err != nil || !slices.Equal(names, want) {
		t.Fatalf("restores %v, %v; want %v", names, err, want)
	}
	if got, err := fake.NewReader(k8sfake.NewClientset(), nil).Restores("ns", "db"); err != nil || len(got) != 0 {
		t.Fatalf("without a Mgors client: %v, %v", got, err)
	}
}

func TestReaderBackup(t *testing.T) {
	b := &v1alpha1.MgorsBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b1"}, Spec: v1alpha1.MgorsBackupSpec{Cluster: "db"}}
	rd := fake.NewReader(k8sfake.NewClientset(), fake.NewClientset(b))
	if got, err := rd.Backup("ns", "b1"); err != nil || got.Spec.Cluster != "db" {
		t.Fatalf("backup b1: %+v, %v", got, err)
	}
	if _, err := rd.Backup("ns", "missing"); !apierrors.IsNotFound(err) {
		t.Fatalf("a missing backup: %v", err)
	}
	if _, err := fake.NewReader(k8sfake.NewClientset(), nil).Backup("ns", "b1"); !apierrors.IsNotFound(err) {
		t.Fatalf("without a Mgors client: %v", err)
	}
}
