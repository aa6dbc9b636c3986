package v1alpha1_test

import (
	"os"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/mgors/operator/deploy"
	"github.com/mgors/operator/kube/api/v1alpha1"
)

func backupObject(t *testing.T, spec string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte("apiVersion: mgors.io/v1alpha1\nkind: MgorsBackup\nmetadata: {name: b1, namespace: default}\nspec: " + spec))
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return obj
}

// MgorsBackup's schema: a valid backup is accepted (tls defaulted to true);
// each invalid one is refused with a message naming the field and the rule;
// the spec cannot change once created.
func TestSchemaBackup(t *testing.T) {
	s := newAPIServerFor(t, deploy.BackupCRD, v1alpha1.BackupGroupVersionKind)
	const creds = "credentialsSecretRef: {name: s3-creds}"
	valid := "{cluster: demo, store: {endpoint: 's3.backup.svc:9000', bucket: backups, prefix: team/a, " + creds + "}}"
	for _, tc := range []struct {
		spec, rule string
	}{
		{valid, ""},
		{"{cluster: demo, store: {endpoint: s3.eu-west-1.amazonaws.com, bucket: my.backups-1, region: eu-west-1, tls: true, caSecretRef: {name: ca}, " + creds + "}}", ""},
		{"{cluster: Demo_1, store: {endpoint: s3, bucket: backups, " + creds + "}}", "spec.cluster must be the name of a Mgors"},
		{"{store: {endpoint: s3, bucket: backups, " + creds + "}}", "spec.cluster: Required value"},
		{"{cluster: demo, store: {endpoint: 'https://s3:9000', bucket: backups, " + creds + "}}", "spec.store.endpoint must be host or host:port, without a scheme"},
		{"{cluster: demo, store: {endpoint: 's3:9000/x', bucket: backups, " + creds + "}}", "spec.store.endpoint must be host or host:port"},
		{"{cluster: demo, store: {endpoint: s3, bucket: Backups, " + creds + "}}", "spec.store.bucket must be an S3 bucket name"},
		{"{cluster: demo, store: {endpoint: s3, bucket: ab, " + creds + "}}", "spec.store.bucket must be an S3 bucket name"},
		{"{cluster: demo, store: {endpoint: s3, bucket: backups, prefix: /a, " + creds + "}}", "spec.store.prefix must not start or end with '/'"},
		{"{cluster: demo, store: {endpoint: s3, bucket: backups, prefix: a//b, " + creds + "}}", "spec.store.prefix must not start or end with '/' nor hold '//'"},
		{"{cluster: demo, store: {endpoint: s3, bucket: backups, tls: false, caSecretRef: {name: ca}, " + creds + "}}", "spec.store.caSecretRef needs spec.store.tls"},
		{"{cluster: demo, store: {endpoint: s3, bucket: backups}}", "spec.store.credentialsSecretRef: Required value"},
	} {
		obj := backupObject(t, tc.spec)
		errs := s.create(requestContext(), obj)
		switch {
		case tc.rule == "" && len(errs) > 0:
			t.Errorf("%s refused: %v", tc.spec, errs.ToAggregate())
		case tc.rule != "" && (len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tc.rule)):
			t.Errorf("%s: %v, want %q", tc.spec, errs.ToAggregate(), tc.rule)
		}
		if tc.rule == "" {
			if tls, _, _ := unstructured.NestedBool(obj.Object, "spec", "store", "tls"); !tls {
				t.Errorf("%s: spec.store.tls not defaulted to true", tc.spec)
			}
		}
	}
	b, err := os.ReadFile("../../../deploy/samples/backup/demo-backup.yaml")
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	sample := &unstructured.Unstructured{}
	if err := sample.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	sample.SetNamespace("default")
	if errs := s.create(requestContext(), sample); len(errs) > 0 {
		t.Errorf("deploy/samples/backup/demo-backup.yaml refused: %v", errs.ToAggregate())
	}
	old := backupObject(t, valid)
	obj := backupObject(t, strings.Replace(valid, "bucket: backups", "bucket: other", 1))
	if errs := s.update(requestContext(), obj, old); len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), "spec is immutable") {
		t.Errorf("changing spec.store.bucket: %v, want the immutability rule", errs.ToAggregate())
	}
}
