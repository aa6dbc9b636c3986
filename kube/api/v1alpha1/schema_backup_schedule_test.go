package v1alpha1_test

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/mgors/operator/test/crdcases"
)

// spec.backup: schedules and point-in-time archiving; what cannot work is
// refused naming the field and the rule, and keep and chunkSeconds default.
func TestSchemaBackupSpec(t *testing.T) {
	s := newAPIServer(t)
	const store = "store: {endpoint: 's3.backup.svc:9000', bucket: backups, tls: false, credentialsSecretRef: {name: s3-creds}}"
	for _, tc := range []struct {
		patch, rule string
	}{
		{"spec: {backup: {" + store + ", schedules: [{name: nightly, schedule: '0 3 * * *'}], pointInTime: {enabled: true}}}", ""},
		{"spec: {backup: {" + store + ", schedules: [{name: hourly, schedule: '@hourly'}]}}", "must be a cron expression of five fields"},
		{"spec: {backup: {" + store + ", schedules: [{name: Nightly, schedule: '0 3 * * *'}]}}", "spec.backup.schedules[].name must be a DNS label"},
		{"spec: {backup: {" + store + ", schedules: [{name: a, schedule: '0 3 * * *', keep: 0}]}}", "should be greater than or equal to 1"},
		{"spec: {backup: {" + store + ", schedules: [{name: a, schedule: '0 3 * * *'}, {name: a, schedule: '0 4 * * *'}]}}", "Duplicate value"},
		{"spec: {backup: {" + store + ", pointInTime: {enabled: true, chunkSeconds: 1}}}", "should be greater than or equal to 5"},
		{"spec: {backup: {schedules: [{name: a, schedule: '0 3 * * *'}]}}", "spec.backup.store: Required value"},
	} {
		_, obj, err := crdcases.Case{Patch: tc.patch}.Objects()
		if err != nil {
			t.Fatal(err)
		}
		errs := s.create(requestContext(), obj)
		switch {
		case tc.rule == "" && len(errs) > 0:
			t.Errorf("%s refused: %v", tc.patch, errs.ToAggregate())
		case tc.rule != "" && (len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tc.rule)):
			t.Errorf("%s: %v, want %q", tc.patch, errs.ToAggregate(), tc.rule)
		}
		if tc.rule == "" {
			scheds, _, _ := unstructured.NestedSlice(obj.Object, "spec", "backup", "schedules")
			keep, _, _ := unstructured.NestedInt64(scheds[0].(map[string]any), "keep")
			chunk, _, _ := unstructured.NestedInt64(obj.Object, "spec", "backup", "pointInTime", "chunkSeconds")
			if keep != 7 || chunk != 60 {
				t.Errorf("defaults: keep %d, chunkSeconds %d; want 7 and 60", keep, chunk)
			}
		}
	}
}
