package kube

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/kube/client/fake"
)

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// A scheduled backup's name is <cluster>-<schedule>-<YYYYMMDDHHMM> in UTC;
// a long cluster name is cut and ends in a hash of the whole, so the name
// stays a DNS label and two long names sharing a beginning differ.
func TestScheduledBackupName(t *testing.T) {
	at := time.Date(2026, 12, 4, 3, 5, 59, 0, time.FixedZone("CET", 3600))
	if got := ScheduledBackupName("demo", "nightly", at); got != "demo-nightly-202612040205" {
		t.Fatalf("got %s", got)
	}
	long := strings.Repeat("a", 40) + "-x"
	other := strings.Repeat("a", 40) + "-y"
	schedule := strings.Repeat("s", 20)
	a, b := ScheduledBackupName(long, schedule, at), ScheduledBackupName(other, schedule, at)
	for _, n := range []string{a, b} {
		if len(n) > 63 || !dnsLabel.MatchString(n) || !strings.HasSuffix(n, "-"+schedule+"-202612040205") {
			t.Errorf("%s (%d): not a DNS label ending in the schedule and time", n, len(n))
		}
	}
	if a == b {
		t.Fatalf("two clusters take the same name %s", a)
	}
	// A cut that ends in '-' is trimmed: no "--" before the hash.
	dashed := strings.Repeat("b", 24) + "-" + strings.Repeat("c", 20)
	if n := ScheduledBackupName(dashed, schedule, at); strings.Contains(n, "--") || len(n) > 63 {
		t.Fatalf("%s", n)
	}
}

func scheduled(t *testing.T) (*v1alpha1.Mgors, *v1alpha1.MgorsBackup) {
	t.Helper()
	m := &v1alpha1.Mgors{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "db", UID: "m-1"}}
	m.Spec.Backup = &v1alpha1.BackupSpec{Store: v1alpha1.BackupStore{Endpoint: "s3:9000", Bucket: "backups",
		CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}}}
	b, err := ScheduledBackup(m, "demo-every-202612040300", "every")
	if err != nil {
		t.Fatal(err)
	}
	return m, b
}

// The backup names the cluster and the store, carries the two labels, and
// is owned by nothing: it outlives the cluster.
func TestScheduledBackup(t *testing.T) {
	m, b := scheduled(t)
	if b.Spec.Cluster != "demo" || b.Spec.Store.Bucket != "backups" || b.Namespace != "db" ||
		b.Labels[LabelCluster] != "demo" || b.Labels[LabelSchedule] != "every" || len(b.OwnerReferences) != 0 {
		t.Fatalf("%+v", b)
	}
	m.Spec.Backup.Store.Bucket = "changed"
	if b.Spec.Store.Bucket != "backups" {
		t.Fatal("the backup shares the spec's store")
	}
	m.Spec.Backup = nil
	if _, err := ScheduledBackup(m, "x", "every"); err == nil {
		t.Fatal("no error without spec.backup")
	}
}

// A create whose backup exists is success when it is the same cluster's
// backup of the schedule, an error otherwise; a delete of a backup gone, or
// replaced under its name, is no error.
func TestCreateAndDeleteBackup(t *testing.T) {
	ctx := context.Background()
	_, b := scheduled(t)
	c := fake.NewClientset()
	if err := CreateBackup(ctx, c, 0, b); err != nil {
		t.Fatal(err)
	}
	if err := CreateBackup(ctx, c, 0, b.DeepCopy()); err != nil {
		t.Fatalf("the same backup again: %v", err)
	}
	foreign := b.DeepCopy()
	foreign.Labels[LabelSchedule] = "other"
	if err := CreateBackup(ctx, c, 0, foreign); err == nil || !strings.Contains(err.Error(), "is not cluster demo's backup of schedule other") {
		t.Fatalf("another schedule's name: %v", err)
	}
	if err := DeleteBackup(ctx, c, 0, "db", "gone", "u"); err != nil {
		t.Fatalf("a backup gone: %v", err)
	}
	if err := DeleteBackup(ctx, c, 0, "db", b.Name, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := c.MgorsBackups("db").Get(ctx, b.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("still there: %v", err)
	}
}
