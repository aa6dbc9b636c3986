package mongo

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
)

// OperatorUser is the name of the user the operator creates for itself.
const OperatorUser = "mgors-operator"

// OperatorRoles are the built-in roles of the operator's own user, the
// narrowest that cover every command it sends (docs/design/mongo-admin.md):
//   - clusterManager: replSetReconfig (forced too) and replSetInitiate
//     (replSetConfigure), replSetStepDown and replSetFreeze
//     (replSetStateChange), replSetGetConfig, replSetGetStatus,
//     setFeatureCompatibilityVersion;
//   - clusterMonitor: its read of local (find on local.oplog.rs, which
//     clusterManager does not grant) for Local, and getParameter (the FCV);
//   - userAdmin on admin: createUser (granting admin's roles), usersInfo,
//     and updateUser's changePassword, in the admin database only.
func OperatorRoles() []Role {
	return []Role{{Role: "clusterManager", DB: "admin"}, {Role: "clusterMonitor", DB: "admin"}, {Role: "userAdmin", DB: "admin"}}
}

// CreateUser implements Admin. The password goes only into the command.
func (c *Client) CreateUser(ctx context.Context, host, user, password string, roles []Role) error {
	if roles == nil {
		roles = []Role{}
	}
	cmd := bson.D{{Key: "createUser", Value: user}, {Key: "pwd", Value: password}, {Key: "roles", Value: roles}}
	return c.run(ctx, host, "createUser", true, cmd, nil)
}

// UserExists implements Admin.
func (c *Client) UserExists(ctx context.Context, host, user string) (bool, error) {
	var reply struct {
		Users []bson.Raw `bson:"users"`
	}
	cmd := bson.D{{Key: "usersInfo", Value: bson.D{{Key: "user", Value: user}, {Key: "db", Value: "admin"}}}}
	if err := c.run(ctx, host, "usersInfo", true, cmd, &reply); err != nil {
		return false, err
	}
	return len(reply.Users) > 0, nil
}

// UpdatePassword implements Admin. The password goes only into the command;
// mongod derives new SCRAM credentials from it, and the old password stops
// opening new connections at once.
func (c *Client) UpdatePassword(ctx context.Context, host, user, password string) error {
	cmd := bson.D{{Key: "updateUser", Value: user}, {Key: "pwd", Value: password}}
	return c.run(ctx, host, "updateUser", true, cmd, nil)
}

// Login implements Admin: one SCRAM conversation on a fresh connection that
// is closed afterwards, so a password being checked is never cached, and
// the Client's own connections are not touched.
func (c *Client) Login(ctx context.Context, host string, cred Credentials) error {
	opts := c.opts
	opts.Credentials = cred
	probe := NewClient(opts)
	defer func() { _ = probe.Close(context.Background()) }()
	return probe.run(ctx, host, "login "+cred.String(), true, bson.D{{Key: "ping", Value: 1}}, nil)
}

// BackupRole is the built-in role a backup reads with: find on every
// database, local.oplog.rs included.
var BackupRole = Role{Role: "backup", DB: "admin"}

// GrantRoles grants user of the admin database roles, on the primary dc is
// connected to, acknowledged by a majority; granting a role the user holds
// changes nothing.
func GrantRoles(ctx context.Context, dc *driver.Client, user string, roles []Role) error {
	wait := DefaultTimeout
	if dl, ok := ctx.Deadline(); ok {
		wait = time.Until(dl)
	}
	cmd := bson.D{{Key: "grantRolesToUser", Value: user}, {Key: "roles", Value: roles},
		{Key: "writeConcern", Value: bson.D{{Key: "w", Value: "majority"}, {Key: "wtimeout", Value: wait.Milliseconds()}}}}
	return dc.Database("admin").RunCommand(ctx, cmd).Err()
}
