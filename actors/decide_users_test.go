package actors

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
)

// withUsers fills in the two users' Secrets as the World reads them.
func (w *world) withUsers(operatorVersion, adminVersion string) *world {
	w.obs.Operator = Credential{User: mongo.OperatorUser, Secret: w.m.OperatorSecretName(), SecretVersion: operatorVersion}
	w.obs.Admin = Credential{User: AdminUsername, Secret: w.m.AdminSecretName(), SecretVersion: adminVersion}
	return w
}

// migratedState is a Healthy set whose operator's user was created and
// switched to, as a set of an older operator gets it.
func migratedState(t *testing.T, w *world) State {
	t.Helper()
	s := healthyState(t, w)
	w.withUsers("7", "12")
	w.obs.OperatorUser = new(false)
	d := Decide(s, w.in())
	a := d.Action
	if a == nil || a.Kind != ActCreateOperatorUser || a.Host != w.obs.Primary || a.Auth != AuthKeyfile || a.Credential != w.obs.Operator {
		t.Fatalf("want the operator's user created on the primary as __system: %+v", a)
	}
	if st := d.Events[len(d.Events)-1].(ActionStarted); st.User != mongo.OperatorUser || st.Secret != "demo-operator" || st.SecretVersion != "7" {
		t.Fatalf("ActionStarted does not name the user and its Secret: %+v", st)
	}
	s = run(s, d)
	s = run(s, Decision{Events: Conclude(*a, nil)})
	if !s.OperatorUser || s.Auth != AuthKeyfile {
		t.Fatalf("after the creation: %+v", s)
	}
	w.obs.OperatorUser, w.obs.OperatorLogin, w.obs.AdminLogin = new(true), new(true), new(true)
	d = Decide(s, w.in())
	if !slices.Equal(types(d), []string{"AuthSwitched"}) || d.Action != nil {
		t.Fatalf("want only the switch: %v %+v", types(d), d.Action)
	}
	s = run(s, d)
	if s.Auth != AuthOperator {
		t.Fatalf("not switched: %+v", s.Auth)
	}
	return s
}

// A set of an older operator (Healthy, no operator user) gets the user,
// created as __system, then the operator switches to it; then it is steady.
func TestMigrationCreatesTheOperatorUserThenSwitches(t *testing.T) {
	w := newWorld(demo(3)).answering().initiated()
	s := migratedState(t, w)
	for range 3 {
		if d := Decide(s, w.in()); len(d.Events) != 0 {
			t.Fatalf("steady observation wrote %v", types(d))
		}
	}
	// Found rather than created (a lost log): recorded as found, no createUser.
	fresh := healthyState(t, newWorld(demo(3)).answering().initiated())
	w2 := newWorld(demo(3)).answering().initiated().withUsers("7", "12")
	w2.obs.AdminUser, w2.obs.OperatorUser, w2.obs.OperatorLogin = new(true), new(true), new(true)
	d := Decide(fresh, w2.in())
	if d.Action != nil || !has(d, "OperatorUserReady") || !has(d, "AuthSwitched") {
		t.Fatalf("found user: %v %+v", types(d), d.Action)
	}
}

// A new set: after the initiate and the first primary, the operator's user
// comes before the admin user, and the admin user is created by it.
func TestBootstrapCreatesTheOperatorUserFirst(t *testing.T) {
	w := newWorld(demo(3)).answering()
	s := Initial()
	for range 2 {
		d := Decide(s, w.in())
		s = run(s, d)
		if d.Action != nil {
			s = run(s, Decision{Events: Conclude(*d.Action, nil)})
		}
	}
	if !s.Initiated {
		t.Fatalf("not initiated: %s", s)
	}
	w.initiated().withUsers("1", "2")
	w.obs.AdminUser, w.obs.OperatorUser = new(false), new(false)
	d := Decide(s, w.in())
	if d.Action == nil || d.Action.Kind != ActCreateOperatorUser {
		t.Fatalf("want the operator's user first: %+v", d.Action)
	}
	s = run(s, d)
	s = run(s, Decision{Events: Conclude(*d.Action, nil)})
	w.obs.OperatorUser, w.obs.OperatorLogin = new(true), new(true)
	d = Decide(s, w.in())
	s = run(s, d)
	if !has(d, "AuthSwitched") || d.Action == nil || d.Action.Kind != ActCreateUser || d.Action.Auth != AuthOperator {
		t.Fatalf("want the switch, then the admin user created as the operator's user: %v %+v", types(d), d.Action)
	}
}

// A changed admin Secret: its password no longer opens the admin user, so
// it is applied with updateUser, as the operator's user, and recorded by
// the Secret's resourceVersion.
func TestChangedAdminSecretIsApplied(t *testing.T) {
	w := newWorld(demo(3)).answering().initiated()
	s := migratedState(t, w)
	w.withUsers("7", "13")
	w.obs.AdminLogin = new(false)
	d := Decide(s, w.in())
	a := d.Action
	if a == nil || a.Kind != ActUpdatePassword || a.Host != w.obs.Primary || a.Auth != AuthOperator || a.Credential != w.obs.Admin {
		t.Fatalf("want updateUser of the admin on the primary as the operator's user: %+v", a)
	}
	s = run(s, d)
	events := Conclude(*a, nil)
	want := PasswordApplied{User: AdminUsername, Secret: "demo-admin", SecretVersion: "13"}
	if len(events) != 2 || events[1] != want {
		t.Fatalf("conclusion %v, want %+v", events, want)
	}
	s = run(s, Decision{Events: events})
	w.obs.AdminLogin = new(true)
	if d := Decide(s, w.in()); len(d.Events) != 0 {
		t.Fatalf("after the change: %v", types(d))
	}
	// No primary: nothing to write to, so nothing is decided.
	w.obs.AdminLogin = new(false)
	w.obs.Primary = ""
	if d := Decide(s, w.in()); d.Action != nil && d.Action.Kind == ActUpdatePassword {
		t.Fatalf("updateUser without a primary: %+v", d.Action)
	}
}

// The operator's own Secret changed: the observation made with it is
// discarded, the operator goes back to __system, applies the password with
// updateUser and switches to its user again.
func TestChangedOperatorSecretGoesBackToTheKeyfile(t *testing.T) {
	w := newWorld(demo(3)).answering().initiated()
	s := migratedState(t, w)
	blind := newWorld(demo(3)).withUsers("8", "12") // nothing read: every member "silent"
	blind.obs.OperatorLogin = new(false)
	d := Decide(s, blind.in())
	if !slices.Equal(types(d), []string{"AuthSwitched"}) || d.Action != nil {
		t.Fatalf("want only the switch back, nothing decided from a blind observation: %v %+v", types(d), d.Action)
	}
	s = run(s, d)
	if s.Auth != AuthKeyfile || s.Phase != v1alpha1.PhaseHealthy {
		t.Fatalf("after the switch back: %s auth %q", s, s.Auth)
	}
	w.withUsers("8", "12")
	w.obs.OperatorLogin = new(false)
	d = Decide(s, w.in())
	a := d.Action
	if a == nil || a.Kind != ActUpdatePassword || a.Auth != AuthKeyfile || a.Credential != w.obs.Operator {
		t.Fatalf("want the operator's password applied as __system: %+v", a)
	}
	s = run(s, d)
	s = run(s, Decision{Events: Conclude(*a, nil)})
	w.obs.OperatorLogin = new(true)
	d = Decide(s, w.in())
	s = run(s, d)
	if !slices.Equal(types(d), []string{"AuthSwitched"}) || s.Auth != AuthOperator {
		t.Fatalf("want the switch to the operator's user again: %v", types(d))
	}
}

// An UpdatePassword whose result a crash lost is settled by a login with
// the Secret's password; the records name the Secret, never a password.
func TestUpdatePasswordSettledFromALogin(t *testing.T) {
	w := newWorld(demo(3)).answering().initiated()
	s := migratedState(t, w)
	w.withUsers("7", "14")
	w.obs.AdminLogin = new(false)
	d := Decide(s, w.in())
	s = run(s, d)
	if s.InFlight == nil || s.InFlight.Action != ActUpdatePassword {
		t.Fatalf("not in flight: %s", s)
	}
	for _, opens := range []bool{true, false} {
		w.obs.AdminLogin = new(opens)
		d := Decide(s, w.in())
		if opens != has(d, "PasswordApplied") || opens == has(d, "ActionFailed") {
			t.Fatalf("login %t: %v", opens, types(d))
		}
		for _, e := range d.Events {
			b, _ := json.Marshal(e)
			if p, ok := e.(PasswordApplied); ok && (p.SecretVersion != "14" || p.Secret != "demo-admin") {
				t.Fatalf("settled as %s", b)
			}
		}
	}
}

// The keyfile, the zero Auth, is written as "keyfile" and read back as itself.
func TestAuthSwitchedRoundTrips(t *testing.T) {
	for _, e := range []AuthSwitched{{From: AuthKeyfile, To: AuthOperator, Reason: "r"}, {From: AuthOperator, To: AuthKeyfile, Reason: "r"}} {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var back AuthSwitched
		if err := json.Unmarshal(b, &back); err != nil || back != e || !strings.Contains(string(b), `"keyfile"`) {
			t.Fatalf("%s read back as %+v (%v)", b, back, err)
		}
	}
}
