package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/kube/client"
	"github.com/mgors/operator/kube/client/fake"
)

func demo() *v1alpha1.Mgors {
	m := &v1alpha1.Mgors{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "db"}}
	m.Default()
	return m
}

func TestClientAddressesTheAPI(t *testing.T) {
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.Method+" "+r.URL.Path)
		m := demo()
		m.APIVersion, m.Kind = "mgors.io/v1alpha1", "Mgors"
		m.Status.Phase = v1alpha1.PhaseHealthy
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(m)
	}))
	defer srv.Close()
	c, err := client.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := c.Mgorses("db").Get(ctx, "demo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != v1alpha1.PhaseHealthy || got.Spec.Members != 3 {
		t.Fatalf("decoded %+v", got)
	}
	if _, err := c.Mgorses("db").UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Mgorses("db").Patch(ctx, "demo", types.MergePatchType, []byte(`{"spec":{"paused":true}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"GET /apis/mgors.io/v1alpha1/namespaces/db/mgorses/demo",
		"PUT /apis/mgors.io/v1alpha1/namespaces/db/mgorses/demo/status",
		"PATCH /apis/mgors.io/v1alpha1/namespaces/db/mgorses/demo",
	}
	if len(paths) != len(want) {
		t.Fatalf("requests %v, want %v", paths, want)
	}
	for i := range want {
		if paths[i] != want[i] {
			t.Fatalf("request %d = %s, want %s", i, paths[i], want[i])
		}
	}
}

func TestFake(t *testing.T) {
	c := fake.NewClientset(demo())
	ctx := context.Background()
	w, err := c.Mgorses("db").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	m, err := c.Mgorses("db").Get(ctx, "demo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m.Status.Phase = v1alpha1.PhaseProvisioning
	if _, err := c.Mgorses("db").UpdateStatus(ctx, m, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A watch without a resourceVersion first replays what exists, as the API server does.
	for done := false; !done; {
		select {
		case ev := <-w.ResultChan():
			done = ev.Type == watch.Modified && ev.Object.(*v1alpha1.Mgors).Status.Phase == v1alpha1.PhaseProvisioning
		case <-time.After(5 * time.Second):
			t.Fatal("no watch event for the status update")
		}
	}
	l, err := c.Mgorses("").List(ctx, metav1.ListOptions{})
	if err != nil || len(l.Items) != 1 {
		t.Fatalf("list: %v %v", l, err)
	}
}

func TestBackupClientAddressesTheAPI(t *testing.T) {
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.Method+" "+r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/apis/mgors.io/v1alpha1/namespaces/db/mgorsbackups" {
			_ = json.NewEncoder(w).Encode(&v1alpha1.MgorsBackupList{TypeMeta: metav1.TypeMeta{APIVersion: "mgors.io/v1alpha1", Kind: "MgorsBackupList"},
				Items: []v1alpha1.MgorsBackup{{ObjectMeta: metav1.ObjectMeta{Name: "b1", Namespace: "db"}, Spec: v1alpha1.MgorsBackupSpec{Cluster: "demo"}}}})
			return
		}
		b := &v1alpha1.MgorsBackup{TypeMeta: metav1.TypeMeta{APIVersion: "mgors.io/v1alpha1", Kind: "MgorsBackup"},
			ObjectMeta: metav1.ObjectMeta{Name: "b1", Namespace: "db"}, Spec: v1alpha1.MgorsBackupSpec{Cluster: "demo"},
			Status: v1alpha1.MgorsBackupStatus{Phase: v1alpha1.BackupRunning}}
		_ = json.NewEncoder(w).Encode(b)
	}))
	defer srv.Close()
	c, err := client.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := c.MgorsBackups("db").Get(ctx, "b1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Cluster != "demo" || got.Status.Phase != v1alpha1.BackupRunning {
		t.Fatalf("decoded %+v", got)
	}
	if _, err := c.MgorsBackups("db").UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if l, err := c.MgorsBackups("db").List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 1 || l.Items[0].Spec.Cluster != "demo" {
		t.Fatalf("list %+v, %v", l, err)
	}
	want := []string{
		"GET /apis/mgors.io/v1alpha1/namespaces/db/mgorsbackups/b1",
		"PUT /apis/mgors.io/v1alpha1/namespaces/db/mgorsbackups/b1/status",
		"GET /apis/mgors.io/v1alpha1/namespaces/db/mgorsbackups",
	}
	if len(paths) != len(want) {
		t.Fatalf("requests %v, want %v", paths, want)
	}
	for i := range want {
		if paths[i] != want[i] {
			t.Fatalf("request %d = %s, want %s", i, paths[i], want[i])
		}
	}
}

func TestFakeBackups(t *testing.T) {
	b := &v1alpha1.MgorsBackup{ObjectMeta: metav1.ObjectMeta{Name: "b1", Namespace: "db"}, Spec: v1alpha1.MgorsBackupSpec{Cluster: "demo"}}
	c := fake.NewClientset(demo(), b)
	ctx := context.Background()
	got, err := c.MgorsBackups("db").Get(ctx, "b1", metav1.GetOptions{})
	if err != nil || got.Spec.Cluster != "demo" {
		t.Fatalf("get %+v, %v", got, err)
	}
	got.Status.Phase = v1alpha1.BackupSucceeded
	if _, err := c.MgorsBackups("db").UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	l, err := c.MgorsBackups("").List(ctx, metav1.ListOptions{})
	if err != nil || len(l.Items) != 1 || l.Items[0].Status.Phase != v1alpha1.BackupSucceeded {
		t.Fatalf("list: %+v %v", l, err)
	}
	if ms, err := c.Mgorses("db").List(ctx, metav1.ListOptions{}); err != nil || len(ms.Items) != 1 {
		t.Fatalf("the Mgors list holds %+v, %v: the kinds are kept apart", ms, err)
	}
}

func TestRestoreClientAddressesTheAPI(t *testing.T) {
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.Method+" "+r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/apis/mgors.io/v1alpha1/namespaces/db/mgorsrestores" {
			_ = json.NewEncoder(w).Encode(&v1alpha1.MgorsRestoreList{TypeMeta: metav1.TypeMeta{APIVersion: "mgors.io/v1alpha1", Kind: "MgorsRestoreList"},
				Items: []v1alpha1.MgorsRestore{{ObjectMeta: metav1.ObjectMeta{Name: "r1", Namespace: "db"}, Spec: v1alpha1.MgorsRestoreSpec{Cluster: "demo", Backup: "b1"}}}})
			return
		}
		rs := &v1alpha1.MgorsRestore{TypeMeta: metav1.TypeMeta{APIVersion: "mgors.io/v1alpha1", Kind: "MgorsRestore"},
			ObjectMeta: metav1.ObjectMeta{Name: "r1", Namespace: "db"}, Spec: v1alpha1.MgorsRestoreSpec{Cluster: "demo", Backup: "b1"},
			Status: v1alpha1.MgorsRestoreStatus{Phase: v1alpha1.RestoreRunning}}
		_ = json.NewEncoder(w).Encode(rs)
	}))
	defer srv.Close()
	c, err := client.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := c.MgorsRestores("db").Get(ctx, "r1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Cluster != "demo" || got.Spec.Backup != "b1" || got.Status.Phase != v1alpha1.RestoreRunning {
		t.Fatalf("decoded %+v", got)
	}
	if _, err := c.MgorsRestores("db").UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if l, err := c.MgorsRestores("db").List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 1 || l.Items[0].Spec.Backup != "b1" {
		t.Fatalf("list %+v, %v", l, err)
	}
	want := []string{
		"GET /apis/mgors.io/v1alpha1/namespaces/db/mgorsrestores/r1",
		"PUT /apis/mgors.io/v1alpha1/namespaces/db/mgorsrestores/r1/status",
		"GET /apis/mgors.io/v1alpha1/namespaces/db/mgorsrestores",
	}
	if len(paths) != len(want) {
		t.Fatalf("requests %v, want %v", paths, want)
	}
	for i := range want {
		if paths[i] != want[i] {
			t.Fatalf("request %d = %s, want %s", i, paths[i], want[i])
		}
	}
}

func TestFakeRestores(t *testing.T) {
	r := &v1alpha1.MgorsRestore{ObjectMeta: metav1.ObjectMeta{Name: "r1", Namespace: "db"}, Spec: v1alpha1.MgorsRestoreSpec{Cluster: "demo", Backup: "b1"}}
	b := &v1alpha1.MgorsBackup{ObjectMeta: metav1.ObjectMeta{Name: "b1", Namespace: "db"}, Spec: v1alpha1.MgorsBackupSpec{Cluster: "demo"}}
	c := fake.NewClientset(demo(), b, r)
	ctx := context.Background()
	got, err := c.MgorsRestores("db").Get(ctx, "r1", metav1.GetOptions{})
	if err != nil || got.Spec.Backup != "b1" {
		t.Fatalf("get %+v, %v", got, err)
	}
	got.Status.Phase = v1alpha1.RestoreSucceeded
	if _, err := c.MgorsRestores("db").UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	l, err := c.MgorsRestores("").List(ctx, metav1.ListOptions{})
	if err != nil || len(l.Items) != 1 || l.Items[0].Status.Phase != v1alpha1.RestoreSucceeded {
		t.Fatalf("list: %+v %v", l, err)
	}
	if bs, err := c.MgorsBackups("db").List(ctx, metav1.ListOptions{}); err != nil || len(bs.Items) != 1 {
		t.Fatalf("the MgorsBackup list holds %+v, %v: the kinds are kept apart", bs, err)
	}
}
