package actors

import "github.com/mgors/operator/mongo"

// Auth is how the operator authenticates to the members.
type Auth string

// The operator's two identities in MongoDB (docs/design/mongo-admin.md).
const (
	// AuthKeyfile is mongod's internal __system user, opened by the keyfile:
	// the zero value, for a set without the operator's user (before it is
	// created, and logs older than it).
	AuthKeyfile Auth = ""
	// AuthOperator is the operator's own user, with the roles its commands need.
	AuthOperator Auth = "operator"
)

// MarshalText writes the keyfile as "keyfile", so a record says which.
func (a Auth) MarshalText() ([]byte, error) {
	if a == AuthKeyfile {
		return []byte("keyfile"), nil
	}
	return []byte(a), nil
}

// UnmarshalText reads what MarshalText writes.
func (a *Auth) UnmarshalText(b []byte) error {
	*a = Auth(b)
	if *a == "keyfile" {
		*a = AuthKeyfile
	}
	return nil
}

// String names the identity as logs and events show it.
func (a Auth) String() string {
	if a == AuthOperator {
		return "user(" + mongo.OperatorUser + ")"
	}
	return "keyfile(__system)"
}

// AdminUserReady records that the admin user exists (created, or found).
type AdminUserReady struct {
	User  string `json:"user"`
	Found bool   `json:"found,omitempty"`
}

// OperatorUserReady records that the operator's own user exists (created,
// or found). The operator switches to it with AuthSwitched.
type OperatorUserReady struct {
	User   string `json:"user"`
	Secret string `json:"secret"`
	Found  bool   `json:"found,omitempty"`
}

// AuthSwitched records that the operator authenticates as To from now on:
// to its own user once the user's Secret opens it, back to the keyfile when
// that Secret no longer does (changed or re-created) until the password is
// applied.
type AuthSwitched struct {
	From   Auth   `json:"from"`
	To     Auth   `json:"to"`
	Reason string `json:"reason"`
}

// PasswordApplied records that a user's password is now the one its Secret
// holds at SecretVersion (its resourceVersion). Never the password, nor a
// hash of it.
type PasswordApplied struct {
	User          string `json:"user"`
	Secret        string `json:"secret"`
	SecretVersion string `json:"secretVersion"`
}

func (AdminUserReady) Type() string    { return "AdminUserReady" }
func (OperatorUserReady) Type() string { return "OperatorUserReady" }
func (AuthSwitched) Type() string      { return "AuthSwitched" }
func (PasswordApplied) Type() string   { return "PasswordApplied" }

func init() {
	register(AdminUserReady{})
	register(OperatorUserReady{})
	register(AuthSwitched{})
	register(PasswordApplied{})
}
