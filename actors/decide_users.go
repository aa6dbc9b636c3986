package actors

import "fmt"

// The users' rules (docs/design/mongo-admin.md, "Users"). The operator
// authenticates as mongod's __system (the keyfile) only until its own user
// exists and its Secret opens it, and again while that Secret does not
// (changed or re-created) until its password is applied. Each user's
// password is the one its Secret holds: a Secret whose password no longer
// opens its user is applied with updateUser, recorded by the Secret's name
// and resourceVersion, never by the password.

// authRefused is the first rule after the spec: the operator authenticates
// as its own user and the member refused the password of that user's
// Secret. Everything else in the observation was read blind, so nothing else
// is decided from it: the operator goes back to __system and looks again.
func (d *decider) authRefused() bool {
	o := d.in.Obs
	if d.s.Auth != AuthOperator || o.OperatorLogin == nil || *o.OperatorLogin {
		return false
	}
	d.emit(AuthSwitched{From: d.s.Auth, To: AuthKeyfile,
		Reason: fmt.Sprintf("the password in Secret %s does not open user %s", o.Operator.Secret, o.Operator.User)})
	return true
}

// users creates the operator's user on an initiated set with a primary (a
// set of an older operator has none: this is its migration), switches to it
// once its Secret opens it, and applies a Secret's password that does not
// open its user. The operator's user comes first: the admin user of a new
// set is created by it, and its password is applied before the admin's.
func (d *decider) users() bool {
	o := d.in.Obs
	if !d.s.Initiated || o.Primary == "" || !o.ObjectsReady {
		return false // the Secrets come with EnsureObjects; user writes need a primary
	}
	switch {
	case !d.s.OperatorUser:
		if o.OperatorUser == nil {
			return false // not checked: never create a user blindly
		}
		d.act(Action{Kind: ActCreateOperatorUser, Host: o.Primary, Credential: o.Operator}, started(o.Primary, o.Operator,
			"the operator's own user does not exist: created as __system, the operator switches to it"))
		return true
	case o.OperatorLogin != nil && !*o.OperatorLogin:
		// The operator is on the keyfile here (authRefused switched it).
		d.act(Action{Kind: ActUpdatePassword, Host: o.Primary, Credential: o.Operator}, started(o.Primary, o.Operator,
			fmt.Sprintf("the password in Secret %s does not open user %s", o.Operator.Secret, o.Operator.User)))
		return true
	case d.s.Auth != AuthOperator && o.OperatorLogin != nil && *o.OperatorLogin:
		d.emit(AuthSwitched{From: d.s.Auth, To: AuthOperator,
			Reason: fmt.Sprintf("user %s exists and the password in Secret %s opens it", o.Operator.User, o.Operator.Secret)})
	}
	if d.s.AdminUser && o.AdminLogin != nil && !*o.AdminLogin {
		d.act(Action{Kind: ActUpdatePassword, Host: o.Primary, Credential: o.Admin}, started(o.Primary, o.Admin,
			fmt.Sprintf("the password in Secret %s does not open user %s", o.Admin.Secret, o.Admin.User)))
		return true
	}
	return false
}

func started(host string, c Credential, reason string) ActionStarted {
	return ActionStarted{Target: host, User: c.User, Secret: c.Secret, SecretVersion: c.SecretVersion, Reason: reason}
}

// passwordSettled: an UpdatePassword whose result was lost took effect
// when the password of the Secret it named now opens the user.
func (d *decider) passwordSettled(f *ActionStarted) bool {
	o := d.in.Obs
	login := o.AdminLogin
	if f.Secret == o.Operator.Secret {
		login = o.OperatorLogin
	}
	return login != nil && *login
}
