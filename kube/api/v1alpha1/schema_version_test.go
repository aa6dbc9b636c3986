package v1alpha1_test

import (
	"strings"
	"testing"

	"github.com/mgors/operator/test/crdcases"
)

// spec.version moves up one major version at a time (a transition rule);
// going down is the operator's to judge against the FCV.
func TestVersionMovesOneMajorAtATime(t *testing.T) {
	s := newAPIServer(t)
	for _, tc := range []struct {
		from, to string
		ok       bool
	}{
		{"6.0.19", "7.0.14", true},
		{"6.0", "8.0", false},
		{"7.0.14", "8.0.4", true},
		{"7.0.14", "6.0.19", true},
		{"7.0.14", "7.0.12", true},
		{"5.0", "8.0.4", false},
	} {
		_, old, err := crdcases.Case{Patch: `spec: {version: "` + tc.from + `"}`}.Objects()
		if err != nil {
			t.Fatal(err)
		}
		_, obj, err := crdcases.Case{Patch: `spec: {version: "` + tc.to + `"}`}.Objects()
		if err != nil {
			t.Fatal(err)
		}
		errs := s.update(requestContext(), obj, old)
		if tc.ok != (len(errs) == 0) {
			t.Errorf("%s → %s: %v", tc.from, tc.to, errs.ToAggregate())
		}
		if !tc.ok && (len(errs) != 1 || errs[0].Field != "spec.version" || !strings.Contains(errs[0].Error(), "one major version at a time")) {
			t.Errorf("%s → %s: want one error on spec.version, got %v", tc.from, tc.to, errs.ToAggregate())
		}
	}
}
