package mongo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// simPrimary initiates a 3-member mongod-sim set as __system and returns the
// keyfile client, the hosts and the primary.
func simPrimary(t *testing.T) (*Client, []string, string) {
	t.Helper()
	keyfile := []byte("c2VjcmV0LWtleS1mb3ItdGhlLXNldA\n")
	hosts := simSet(t, 3, keyfile)
	ctx := context.Background()
	c := NewClient(Options{Timeout: 5 * time.Second, Credentials: KeyfileAuth(keyfile), Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})
	t.Cleanup(func() { _ = c.Close(ctx) })
	for _, h := range hosts {
		eventually(t, "hello "+h, func() error { _, err := c.Hello(ctx, h); return err })
	}
	var desired []DesiredMember
	for i, h := range hosts {
		desired = append(desired, DesiredMember{Ordinal: int32(i), Name: fmt.Sprint("m", i), Host: h, Votes: 1, Priority: 1})
	}
	settings := v1alpha1.ReplicaSetSettings{ElectionTimeoutMillis: new(int32(1000)), HeartbeatIntervalMillis: new(int32(200))}
	if err := c.Initiate(ctx, hosts[0], InitialConfig("rs0", desired, settings)); err != nil {
		t.Fatal(err)
	}
	var primary string
	eventually(t, "a primary and two secondaries", func() error {
		st, err := c.Status(ctx, hosts[0])
		if err != nil {
			return err
		}
		for _, m := range st.Members {
			if !m.State.Healthy() {
				return fmt.Errorf("%s is %s", m.Name, m.State)
			}
		}
		p := st.Primary()
		if p == nil {
			return errors.New("no primary yet")
		}
		// Writes (createUser) wait for the new primary to leave catch-up.
		if r, err := c.Hello(ctx, p.Name); err != nil || !r.IsWritablePrimary {
			return fmt.Errorf("%s not writable yet: %w", p.Name, err)
		}
		primary = p.Name
		return nil
	})
	return c, hosts, primary
}

// operatorCommand is one command the operator sends as its own user, and
// the roles of OperatorRoles that grant it (any one of them).
type operatorCommand struct {
	name      string
	grantedBy []string
	run       func(ctx context.Context, c *Client) error
}

// operatorCommands are every authenticated command of the Admin but
// replSetInitiate (sent before any user exists, as __system), in an order
// that leaves the set usable: the state-changing ones that must succeed
// only once (stepdown, force) come last and are run by the privileged user only.
func operatorCommands(primary, secondary string) []operatorCommand {
	return []operatorCommand{
		{"replSetGetStatus", []string{"clusterManager", "clusterMonitor"}, func(ctx context.Context, c *Client) error { _, err := c.Status(ctx, primary); return err }},
		{"replSetGetConfig", []string{"clusterManager", "clusterMonitor"}, func(ctx context.Context, c *Client) error { _, err := c.Config(ctx, primary); return err }},
		{"find local.oplog.rs", []string{"clusterMonitor"}, func(ctx context.Context, c *Client) error { _, err := c.Local(ctx, secondary); return err }},
		{"replSetReconfig", []string{"clusterManager"}, func(ctx context.Context, c *Client) error {
			cfg, err := c.Config(ctx, primary)
			if err != nil {
				return err
			}
			return c.Reconfig(ctx, primary, cfg.Next(), false)
		}},
		{"replSetFreeze", []string{"clusterManager"}, func(ctx context.Context, c *Client) error { return c.Freeze(ctx, secondary, 0) }},
		{"usersInfo", []string{"userAdmin"}, func(ctx context.Context, c *Client) error { _, err := c.UserExists(ctx, primary, "admin"); return err }},
		{"createUser", []string{"userAdmin"}, func(ctx context.Context, c *Client) error {
			err := c.CreateUser(ctx, primary, "admin", "first-password", []Role{{Role: "root", DB: "admin"}})
			if errors.Is(err, ErrDuplicateUser) {
				return nil // created by the run before: the privilege check passed
			}
			return err
		}},
		{"updateUser", []string{"userAdmin"}, func(ctx context.Context, c *Client) error {
			return c.UpdatePassword(ctx, primary, "admin", "first-password")
		}},
	}
}

// TestOperatorRolesAgainstMongodSim: mongod-sim enforces MongoDB's
// authorization. A user with OperatorRoles runs every command the operator
// sends (forced reconfig and stepdown included); a user without roles is
// refused each of them, and a user lacking one of the roles is refused the
// commands that role grants, so no role is there for nothing.
func TestOperatorRolesAgainstMongodSim(t *testing.T) {
	sys, hosts, primary := simPrimary(t)
	ctx := context.Background()
	secondary := hosts[0]
	for _, h := range hosts {
		if !SameHost(h, primary) {
			secondary = h
			break
		}
	}
	client := func(user string, roles []Role) *Client {
		t.Helper()
		if err := sys.CreateUser(ctx, primary, user, "pw-"+user, roles); err != nil {
			t.Fatalf("createUser %s: %v", user, err)
		}
		c := NewClient(Options{Timeout: 5 * time.Second, Credentials: AdminUser(user, "pw-"+user)})
		t.Cleanup(func() { _ = c.Close(ctx) })
		return c
	}
	cmds := operatorCommands(primary, secondary)

	none := client("nobody", nil)
	for _, cmd := range cmds {
		if err := cmd.run(ctx, none); !errors.Is(err, ErrUnauthorized) {
			t.Errorf("%s without roles: %v, want Unauthorized", cmd.name, err)
		}
	}
	for _, drop := range OperatorRoles() {
		var roles []Role
		for _, r := range OperatorRoles() {
			if r != drop {
				roles = append(roles, r)
			}
		}
		c := client("without-"+drop.Role, roles)
		for _, cmd := range cmds {
			err := cmd.run(ctx, c)
			granted := slices.ContainsFunc(roles, func(r Role) bool { return slices.Contains(cmd.grantedBy, r.Role) })
			switch {
			case !granted && !errors.Is(err, ErrUnauthorized):
				t.Errorf("%s without %s: %v, want Unauthorized", cmd.name, drop.Role, err)
			case granted && err != nil:
				t.Errorf("%s without %s: %v", cmd.name, drop.Role, err)
			}
		}
	}

	op := client(OperatorUser, OperatorRoles())
	for _, cmd := range cmds {
		if err := cmd.run(ctx, op); err != nil {
			t.Errorf("%s as %s: %v", cmd.name, OperatorUser, err)
		}
	}
	// A forced reconfig, as after a majority loss (onto a secondary here:
	// the set is healthy, so the force only bumps the version).
	cfg, err := op.Config(ctx, secondary)
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Reconfig(ctx, secondary, cfg.Next(), true); err != nil {
		t.Errorf("forced replSetReconfig as %s: %v", OperatorUser, err)
	}
	if err := none.Reconfig(ctx, secondary, cfg.Next(), true); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("forced replSetReconfig without roles: %v, want Unauthorized", err)
	}
	eventually(t, "a primary after the force", func() error {
		st, err := op.Status(ctx, secondary)
		if err == nil && st.Primary() == nil {
			return errors.New("no primary")
		}
		if err == nil {
			primary = st.Primary().Name
		}
		return err
	})
	if err := none.StepDown(ctx, primary, 10); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("replSetStepDown without roles: %v, want Unauthorized", err)
	}
	if err := op.StepDown(ctx, primary, 10); err != nil {
		t.Errorf("replSetStepDown as %s: %v", OperatorUser, err)
	}
}

// TestUpdatePasswordAgainstMongodSim: after updateUser the old password is
// refused and the new one opens the user; Login caches nothing, so it
// tells the two apart on the same Client.
func TestUpdatePasswordAgainstMongodSim(t *testing.T) {
	sys, _, primary := simPrimary(t)
	ctx := context.Background()
	if err := sys.CreateUser(ctx, primary, OperatorUser, "operator-pw", OperatorRoles()); err != nil {
		t.Fatal(err)
	}
	op := NewClient(Options{Timeout: 5 * time.Second, Credentials: AdminUser(OperatorUser, "operator-pw")})
	defer func() { _ = op.Close(ctx) }()
	if err := op.CreateUser(ctx, primary, "admin", "old-password", []Role{{Role: "root", DB: "admin"}}); err != nil {
		t.Fatal(err)
	}
	if err := op.Login(ctx, primary, AdminUser("admin", "old-password")); err != nil {
		t.Fatalf("old password before the change: %v", err)
	}
	if err := op.Login(ctx, primary, AdminUser("admin", "new-password")); !errors.Is(err, ErrAuthenticationFailed) {
		t.Fatalf("new password before the change: %v, want AuthenticationFailed", err)
	}
	if err := op.UpdatePassword(ctx, primary, "admin", "new-password"); err != nil {
		t.Fatalf("updateUser: %v", err)
	}
	if err := op.Login(ctx, primary, AdminUser("admin", "old-password")); !errors.Is(err, ErrAuthenticationFailed) {
		t.Errorf("old password after the change: %v, want AuthenticationFailed", err)
	}
	if err := op.Login(ctx, primary, AdminUser("admin", "new-password")); err != nil {
		t.Errorf("new password after the change: %v", err)
	}
	if err := op.UpdatePassword(ctx, primary, "nobody", "x"); !errors.Is(err, ErrUserNotFound) {
		t.Errorf("updateUser of a missing user: %v, want UserNotFound", err)
	}
	// The operator's own password, changed with the keyfile (its old one is
	// gone from its Secret): its cached connections stay open, new ones need
	// the new password.
	if err := sys.UpdatePassword(ctx, primary, OperatorUser, "operator-pw-2"); err != nil {
		t.Fatal(err)
	}
	if err := op.Login(ctx, primary, AdminUser(OperatorUser, "operator-pw")); !errors.Is(err, ErrAuthenticationFailed) {
		t.Errorf("the operator's old password: %v", err)
	}
	if err := op.Login(ctx, primary, AdminUser(OperatorUser, "operator-pw-2")); err != nil {
		t.Errorf("the operator's new password: %v", err)
	}
}
