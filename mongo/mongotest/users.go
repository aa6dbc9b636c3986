package mongotest

import (
	"context"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mgors/operator/mongo"
)

// user is a user of the admin database. The fake keeps the password only to
// answer Login, as mongod keeps SCRAM credentials derived from it.
type user struct {
	password string
	roles    []mongo.Role
}

// CreateUser implements mongo.Admin.
func (r *ReplicaSet) CreateUser(ctx context.Context, host, name, password string, roles []mongo.Role) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, err := r.userWrite(ctx, host, "createUser")
	if err != nil {
		return err
	}
	if _, ok := r.users[name]; ok {
		return serverErr(n.host, mongo.CodeDuplicateUser, "Location51003", "User \"%s@admin\" already exists", name)
	}
	r.users[name] = user{password: password, roles: slices.Clone(roles)}
	r.wrote(n)
	return nil
}

// UpdatePassword implements mongo.Admin.
func (r *ReplicaSet) UpdatePassword(ctx context.Context, host, name, password string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, err := r.userWrite(ctx, host, "updateUser")
	if err != nil {
		return err
	}
	u, ok := r.users[name]
	if !ok {
		return serverErr(n.host, mongo.CodeUserNotFound, "UserNotFound", "Could not find user \"%s\" for db \"admin\"", name)
	}
	u.password = password
	r.users[name] = u
	r.wrote(n)
	return nil
}

// Login implements mongo.Admin: the keyfile always opens a member that is
// up (the fake has no keyfile of its own); a user needs its password.
func (r *ReplicaSet) Login(ctx context.Context, host string, cred mongo.Credentials) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, err := r.begin(ctx, host, "login")
	if err != nil {
		return err
	}
	if len(cred.Keyfile) > 0 {
		return nil
	}
	if u, ok := r.users[cred.Username]; !ok || u.password != cred.Password {
		return serverErr(n.host, mongo.CodeAuthenticationFailed, "AuthenticationFailed", "Authentication failed.")
	}
	return nil
}

// UserExists implements mongo.Admin.
func (r *ReplicaSet) UserExists(ctx context.Context, host, name string) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, err := r.begin(ctx, host, "usersInfo")
	if err != nil {
		return false, err
	}
	if n.state != mongo.StatePrimary && n.state != mongo.StateSecondary {
		return false, serverErr(n.host, mongo.CodeNotPrimaryOrSecondary, "NotPrimaryOrSecondary", "not primary or secondary; cannot currently read from this replSet member")
	}
	_, ok := r.users[name]
	return ok, nil
}

// Roles are the roles a user was created with.
func (r *ReplicaSet) Roles(name string) []mongo.Role {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.users[name].roles)
}

// userWrite begins a user-management write: only the primary takes it.
func (r *ReplicaSet) userWrite(ctx context.Context, host, command string) (*node, error) {
	n, err := r.begin(ctx, host, command)
	if err != nil {
		return nil, err
	}
	if n.state != mongo.StatePrimary {
		return nil, serverErr(n.host, mongo.CodeNotWritablePrimary, "NotWritablePrimary", "not primary")
	}
	return n, nil
}

// wrote advances the primary's optime for a write.
func (r *ReplicaSet) wrote(n *node) {
	r.clock++
	n.optime = mongo.OpTime{TS: bson.Timestamp{T: r.clock, I: 1}, T: r.term}
	n.hasData = true
	r.settle()
}
