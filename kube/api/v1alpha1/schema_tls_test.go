package v1alpha1_test

import (
	"strings"
	"testing"

	"github.com/mgors/operator/test/crdcases"
)

// spec.tls.mode moves one step at a time on an existing replica set, since
// members restarted one by one must still reach the others: allowTLS and
// requireTLS members cannot talk (one dials plain, the other refuses it).
func TestSchemaTLSModeSteps(t *testing.T) {
	s := newAPIServer(t)
	with := func(mode string) crdcases.Case {
		return crdcases.Case{Patch: "spec: {tls: {mode: " + mode + "}}"}
	}
	for _, tc := range []struct {
		from, to string
		ok       bool
	}{
		{"allowTLS", "preferTLS", true}, {"preferTLS", "requireTLS", true}, {"requireTLS", "preferTLS", true},
		{"preferTLS", "allowTLS", true}, {"allowTLS", "requireTLS", false}, {"requireTLS", "allowTLS", false},
	} {
		_, old, err := with(tc.from).Objects()
		if err != nil {
			t.Fatal(err)
		}
		_, obj, err := with(tc.to).Objects()
		if err != nil {
			t.Fatal(err)
		}
		errs := s.update(requestContext(), obj, old)
		if tc.ok && len(errs) > 0 {
			t.Errorf("%s -> %s refused: %v", tc.from, tc.to, errs.ToAggregate())
		}
		if !tc.ok && (len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), "spec.tls.mode moves one step at a time")) {
			t.Errorf("%s -> %s: %v, want the one-step rule", tc.from, tc.to, errs.ToAggregate())
		}
	}
}
