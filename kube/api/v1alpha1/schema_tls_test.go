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

// spec.tls may be added to a running replica set in any mode (the operator
// steps the members through allowTLS and preferTLS itself), and removed only
// from allowTLS, where members and clients still speak plain.
func TestSchemaTLSAddedAndRemoved(t *testing.T) {
	s := newAPIServer(t)
	_, plain, err := crdcases.Case{}.Objects()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"allowTLS", "preferTLS", "requireTLS"} {
		_, withTLS, err := crdcases.Case{Patch: "spec: {tls: {mode: " + mode + "}}"}.Objects()
		if err != nil {
			t.Fatal(err)
		}
		if errs := s.update(requestContext(), withTLS, plain); len(errs) > 0 {
			t.Errorf("adding spec.tls at %s refused: %v", mode, errs.ToAggregate())
		}
		errs := s.update(requestContext(), plain, withTLS)
		switch {
		case mode == "allowTLS" && len(errs) > 0:
			t.Errorf("removing spec.tls at allowTLS refused: %v", errs.ToAggregate())
		case mode != "allowTLS" && (len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), "spec.tls can be removed only when spec.tls.mode is allowTLS")):
			t.Errorf("removing spec.tls at %s: %v, want the allowTLS rule", mode, errs.ToAggregate())
		}
	}
}

// spec.tls.caSecretRef is fixed while TLS is on: a new CA needs a rotation
// (both CAs trusted during the roll), which is not built.
func TestSchemaTLSCASecretRefFixed(t *testing.T) {
	s := newAPIServer(t)
	for _, tc := range []struct {
		from, to string
		ok       bool
	}{
		{"spec: {tls: {mode: requireTLS}}", "spec: {tls: {mode: requireTLS, caSecretRef: {name: ca2}}}", false},
		{"spec: {tls: {mode: requireTLS, caSecretRef: {name: ca1}}}", "spec: {tls: {mode: requireTLS, caSecretRef: {name: ca2}}}", false},
		{"spec: {tls: {mode: requireTLS, caSecretRef: {name: ca1}}}", "spec: {tls: {mode: requireTLS}}", false},
		{"spec: {tls: {mode: requireTLS, caSecretRef: {name: ca1}}}", "spec: {tls: {mode: preferTLS, caSecretRef: {name: ca1}}}", true},
		{"spec: {members: 3}", "spec: {tls: {mode: requireTLS, caSecretRef: {name: ca1}}}", true},
	} {
		_, old, err := crdcases.Case{Patch: tc.from}.Objects()
		if err != nil {
			t.Fatal(err)
		}
		_, obj, err := crdcases.Case{Patch: tc.to}.Objects()
		if err != nil {
			t.Fatal(err)
		}
		errs := s.update(requestContext(), obj, old)
		if tc.ok && len(errs) > 0 {
			t.Errorf("%s -> %s refused: %v", tc.from, tc.to, errs.ToAggregate())
		}
		if !tc.ok && (len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), "spec.tls.caSecretRef cannot change while TLS is on")) {
			t.Errorf("%s -> %s: %v, want the caSecretRef rule", tc.from, tc.to, errs.ToAggregate())
		}
	}
}
