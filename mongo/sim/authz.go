package sim

import (
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// RoleRef names a role in a database.
type RoleRef struct {
	Role string `bson:"role"`
	DB   string `bson:"db"`
}

type authedUser struct {
	user, db string
}

// authzGen numbers the states of admin.system.users/roles; Data.Apply
// takes a fresh value on every change to them, so privileges cached on a
// connection are re-resolved after any local or replicated change.
var authzGen atomic.Uint64

// userAuthz is what one user holds, resolved from the current users and
// roles.
type userAuthz struct {
	roles     []RoleRef // granted directly
	inherited []RoleRef // every role held, directly or through other roles
	privs     []Privilege
}

// authzCache is a connection's resolved privileges for one authzGen.
type authzCache struct {
	gen   uint64
	users []*userAuthz
}

func (c *conn) authenticated() bool {
	return len(c.users) > 0 || c.internal.Load() && c.n.keyFile == ""
}

// localhostException is mongod's localhost auth bypass: auth on, the
// peer on a loopback address, no user and no role in the system.
func (c *conn) localhostException() bool {
	if !c.n.cfg.Auth || !c.local {
		return false
	}
	if v, ok := c.n.cfg.SetParameters["enableLocalhostAuthBypass"]; ok && (v == "false" || v == "0") {
		return false
	}
	return !c.n.anyUserOrRoleExists()
}

// anyUserOrRoleExists reads the replication view (replview.go), so a
// member's heartbeat from a loopback address never waits for n.mu.
func (n *Node) anyUserOrRoleExists() bool {
	return n.replState().anyUser
}

// localhostPrivileges are what the bypass grants (mongod's default
// privileges): creating users in admin and $external, granting roles from
// admin, and initiating and watching the replica set.
func (n *Node) localhostPrivileges() []Privilege {
	cluster := []string{"addShard", "replSetConfigure", "replSetGetStatus"}
	if versionAtLeast(n.cfg.MajorMinor(), "8.0") {
		cluster = append(cluster, "issueDirectShardOperations")
	}
	if n.replState().state == StateArbiter {
		cluster = append(cluster, "getCmdLineOpts", "getParameter", "serverStatus", "shutdown")
	}
	return []Privilege{{Resource: Resource{DB: "admin"}, Actions: []string{"createUser", "grantRole"}},
		{Resource: Resource{DB: "$external"}, Actions: []string{"createUser"}},
		{Resource: clusterRes(), Actions: cluster}}
}

// resolve walks a user's roles: built-in roles by version, custom roles
// from admin.system.roles (cycles are refused when written, and ignored
// here).
func (n *Node) resolve(direct []RoleRef) *userAuthz {
	mm := n.cfg.MajorMinor()
	u := &userAuthz{roles: direct}
	seen := map[RoleRef]bool{}
	queue := append([]RoleRef(nil), direct...)
	var privs []Privilege
	for len(queue) > 0 {
		r := queue[0]
		queue = queue[1:]
		if seen[r] {
			continue
		}
		seen[r] = true
		if isBuiltinRole(r) {
			u.inherited = append(u.inherited, r)
			privs = append(privs, builtinPrivileges(r.Role, r.DB, mm)...)
			continue
		}
		doc := n.roleDoc(r.DB, r.Role)
		if doc == nil {
			continue
		}
		u.inherited = append(u.inherited, r)
		p, _ := parsePrivileges(doc.Lookup("privileges"), "privileges")
		privs = append(privs, p...)
		queue = append(queue, parseRoles(doc.Lookup("roles"), r.DB)...)
	}
	u.privs = mergePrivileges(privs)
	return u
}

func (n *Node) roleDoc(db, role string) bson.Raw {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.data.Coll("admin", "system.roles", false).Get(mustRV(db + "." + role))
}

func (n *Node) userDoc(db, user string) bson.Raw {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.data.Coll("admin", "system.users", false).Get(mustRV(db + "." + user))
}

// authz returns the connection's users resolved against the current
// users and roles; a dropped user resolves to nothing.
func (c *conn) authz() []*userAuthz {
	gen := c.n.replState().authzGen
	if c.authzCache != nil && c.authzCache.gen == gen {
		return c.authzCache.users
	}
	var users []*userAuthz
	for _, u := range c.users {
		if u.user == "__system" && u.db == "local" {
			users = append(users, c.n.resolve([]RoleRef{{Role: "__system", DB: "admin"}}))
			continue
		}
		doc := c.n.userDoc(u.db, u.user)
		if doc == nil {
			continue
		}
		users = append(users, c.n.resolve(parseRoles(doc.Lookup("roles"), u.db)))
	}
	c.authzCache = &authzCache{gen: gen, users: users}
	return users
}

// privileges are everything the connection may do now.
func (c *conn) privileges() []Privilege {
	var out []Privilege
	if c.internal.Load() && c.n.keyFile == "" {
		out = append(out, Privilege{Resource: Resource{Any: true}, Actions: []string{"anyAction"}})
	}
	for _, u := range c.authz() {
		out = append(out, u.privs...)
	}
	if c.localhostException() {
		out = append(out, c.n.localhostPrivileges()...)
	}
	return out
}

// can reports whether the connection holds every action on target.
func (c *conn) can(target Resource, actions ...string) bool {
	return allowed(c.privileges(), target, actions...)
}

// holdsRole: some authenticated user has the role, directly or inherited.
func (c *conn) holdsRole(r RoleRef) bool {
	for _, u := range c.authz() {
		for _, x := range u.inherited {
			if x == r {
				return true
			}
		}
	}
	return false
}

func (c *conn) isUser(user, db string) bool {
	for _, u := range c.users {
		if u.user == user && u.db == db {
			return true
		}
	}
	return false
}

func mustRV(s string) bson.RawValue {
	t, v, _ := bson.MarshalValue(s)
	return bson.RawValue{Type: t, Value: v}
}

func parseRoles(v bson.RawValue, defDB string) []RoleRef {
	arr, ok := v.ArrayOK()
	if !ok {
		return nil
	}
	vals, _ := arr.Values()
	var out []RoleRef
	for _, x := range vals {
		if s, ok := x.StringValueOK(); ok {
			out = append(out, RoleRef{Role: s, DB: defDB})
			continue
		}
		if d, ok := x.DocumentOK(); ok {
			r, _ := d.Lookup("role").StringValueOK()
			db, _ := d.Lookup("db").StringValueOK()
			out = append(out, RoleRef{Role: r, DB: db})
		}
	}
	return out
}

func rolesDoc(roles []RoleRef) bson.A {
	out := bson.A{}
	for _, r := range roles {
		out = append(out, bson.D{{Key: "role", Value: r.Role}, {Key: "db", Value: r.DB}})
	}
	return out
}

// coauthorized: the connection is authenticated as the users that opened
// a cursor (mongod's isCoauthorizedWith), or auth is off.
func (c *conn) coauthorized(users []authedUser) bool {
	if !c.n.cfg.Auth || len(users) == 0 && len(c.users) == 0 {
		return true
	}
	for _, u := range users {
		if c.isUser(u.user, u.db) {
			return true
		}
	}
	return false
}
