package v1alpha1_test

import (
	"strings"
	"testing"

	"github.com/mgors/operator/test/crdcases"
)

// spec.externalAccess: what mongod and TLS SNI make of horizons is refused
// by the schema, naming the field and the rule.
func TestSchemaExternalAccess(t *testing.T) {
	s := newAPIServer(t)
	const tls = "tls: {mode: requireTLS}, "
	for _, tc := range []struct {
		patch, rule string
	}{
		{"spec: {" + tls + "externalAccess: {}}", ""},
		{"spec: {" + tls + "externalAccess: {type: NodePort, horizon: outside, members: [{ordinal: 0, host: db-0.example.com}, {ordinal: 2, host: 'db-2.example.com:31002'}]}}", ""},
		{"spec: {externalAccess: {type: NodePort}}", "spec.externalAccess needs spec.tls"},
		{"spec: {" + tls + "externalAccess: {type: Ingress}}", "Unsupported value"},
		{"spec: {" + tls + "externalAccess: {horizon: __default}}", "should match"},
		{"spec: {" + tls + "externalAccess: {members: [{ordinal: 3, host: db-3.example.com}]}}", "spec.externalAccess.members[].ordinal must be less than spec.members"},
		{"spec: {" + tls + "externalAccess: {members: [{ordinal: 0, host: '10.0.0.1:30001'}]}}", "must be a DNS name, not an IP address"},
		{"spec: {" + tls + "externalAccess: {members: [{ordinal: 0, host: 'DB_0.example.com'}]}}", "must be a lower-case DNS name"},
		{"spec: {" + tls + "externalAccess: {members: [{ordinal: 0, host: 'db.example.com:70000'}]}}", "the port must be 1 to 65535"},
		{"spec: {" + tls + "externalAccess: {members: [{ordinal: 0, host: db.example.com}, {ordinal: 1, host: db.example.com}]}}", "must differ from member to member"},
		{"spec: {" + tls + "arbiters: 1, externalAccess: {type: NodePort, members: [{ordinal: 0, host: db-0.example.com}], arbiter: 'arb.example.com:31009'}}", ""},
		{"spec: {" + tls + "externalAccess: {arbiter: arb.example.com}}", "spec.externalAccess.arbiter needs spec.arbiters: 1"},
		{"spec: {" + tls + "arbiters: 1, externalAccess: {arbiter: '10.0.0.9'}}", "spec.externalAccess.arbiter must be a DNS name, not an IP address"},
		{"spec: {" + tls + "arbiters: 1, externalAccess: {arbiter: Arb.example.com}}", "spec.externalAccess.arbiter must be a lower-case DNS name"},
		{"spec: {" + tls + "arbiters: 1, externalAccess: {members: [{ordinal: 0, host: db.example.com}], arbiter: db.example.com}}", "spec.externalAccess.arbiter must differ from every members[].host"},
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
	}
}

// spec.tls cannot be removed while spec.externalAccess is set.
func TestSchemaExternalAccessKeepsTLS(t *testing.T) {
	s := newAPIServer(t)
	_, old, err := crdcases.Case{Patch: "spec: {tls: {mode: allowTLS}, externalAccess: {}}"}.Objects()
	if err != nil {
		t.Fatal(err)
	}
	_, obj, err := crdcases.Case{Patch: "spec: {externalAccess: {}}"}.Objects()
	if err != nil {
		t.Fatal(err)
	}
	if errs := s.update(requestContext(), obj, old); len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), "spec.externalAccess needs spec.tls") {
		t.Errorf("removing spec.tls under externalAccess: %v, want the TLS rule", errs.ToAggregate())
	}
}
