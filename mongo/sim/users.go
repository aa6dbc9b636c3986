package sim

import (
	"crypto/rand"
	"slices"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// User commands: createUser, updateUser, dropUser,
// dropAllUsersFromDatabase, grantRolesToUser, revokeRolesFromUser,
// usersInfo. Users live in admin.system.users (_id "db.user") and
// replicate through the oplog.

// usersInfoArg parses usersInfo's argument: 1 (all in this database),
// {forAllDBs: true}, a name, {user, db}, or a list of those (user names
// carried in RoleRef.Role).
func usersInfoArg(req *Request) (all, forAll bool, want []RoleRef) {
	db := req.DB()
	v := req.Body.Lookup("usersInfo")
	one := func(x bson.RawValue) {
		if s, ok := x.StringValueOK(); ok {
			want = append(want, RoleRef{Role: s, DB: db})
		} else if d, ok := x.DocumentOK(); ok {
			u, _ := d.Lookup("user").StringValueOK()
			udb, _ := d.Lookup("db").StringValueOK()
			want = append(want, RoleRef{Role: u, DB: udb})
		}
	}
	switch v.Type {
	case bson.TypeString:
		one(v)
	case bson.TypeEmbeddedDocument:
		if b, _ := v.Document().Lookup("forAllDBs").BooleanOK(); b {
			return false, true, nil
		}
		one(v)
	case bson.TypeArray:
		vals, _ := v.Array().Values()
		for _, x := range vals {
			one(x)
		}
	default:
		all = true
	}
	return all, false, want
}

func (n *Node) writeAuthDoc(req *Request, op, coll string, doc bson.D, id string) *CmdError {
	spec := opSpec{op: op, ns: "admin." + coll}
	switch op {
	case "d":
		spec.o = mustRaw(bson.D{{Key: "_id", Value: id}})
	case "u":
		spec.o, spec.o2 = mustRaw(doc), mustRaw(bson.D{{Key: "_id", Value: id}})
	default:
		spec.o = mustRaw(doc)
	}
	if _, err := n.writeOplog([]opSpec{spec}, false); err != nil {
		return cerr(10107, "not primary")
	}
	return nil
}

// credentialMechanisms reads createUser's/updateUser's mechanisms.
func credentialMechanisms(req *Request, def []string) ([]string, *CmdError) {
	v := req.Body.Lookup("mechanisms")
	if v.Type == 0 {
		return def, nil
	}
	arr, _ := v.ArrayOK()
	vals, _ := arr.Values()
	var mechs []string
	for _, x := range vals {
		s, _ := x.StringValueOK()
		if s != "SCRAM-SHA-1" && s != "SCRAM-SHA-256" {
			return nil, cerr(2, "Unknown auth mechanism '%s'", s)
		}
		mechs = append(mechs, s)
	}
	if len(mechs) == 0 {
		return nil, cerr(2, "mechanisms field must not be empty")
	}
	return mechs, nil
}

func (c *conn) cmdCreateUser(req *Request) (bson.D, error) {
	db := req.DB()
	user, _ := req.Body.Lookup("createUser").StringValueOK()
	if user == "" {
		return nil, cerr(2, "User document needs 'user' field to be non-empty")
	}
	if db == "local" {
		return nil, cerr(2, "Cannot create users in the local database")
	}
	if _, err := req.Body.LookupErr("roles"); err != nil {
		return nil, cerr(40414, "BSON field 'createUser.roles' is missing but a required field")
	}
	pwd, hasPwd := req.Body.Lookup("pwd").StringValueOK()
	if !hasPwd && db != "$external" {
		return nil, cerr(2, "Must provide a 'pwd' field for all user documents, except those with '$external' as the user's source db")
	}
	if hasPwd && db == "$external" {
		return nil, cerr(2, "Cannot set the password for users defined on the '$external' database")
	}
	if hasPwd && pwd == "" {
		return nil, cerr(2, "Password cannot be empty")
	}
	roles := parseRoles(req.Body.Lookup("roles"), db)
	if e := c.n.checkRolesExist(roles); e != nil {
		return nil, e
	}
	mechs, e := credentialMechanisms(req, []string{"SCRAM-SHA-1", "SCRAM-SHA-256"})
	if e != nil {
		return nil, e
	}
	var creds bson.D
	if hasPwd {
		var err error
		if creds, err = buildCredentials(user, pwd, mechs); err != nil {
			return nil, err
		}
	} else {
		creds = bson.D{{Key: "external", Value: true}}
	}
	if c.n.userDoc(db, user) != nil {
		return nil, cerr(51003, "User \"%s@%s\" already exists", user, db)
	}
	uid := make([]byte, 16)
	_, _ = rand.Read(uid)
	uid[6] = uid[6]&0x0f | 0x40
	uid[8] = uid[8]&0x3f | 0x80
	doc := bson.D{{Key: "_id", Value: db + "." + user}, {Key: "userId", Value: bson.Binary{Subtype: 4, Data: uid}},
		{Key: "user", Value: user}, {Key: "db", Value: db}, {Key: "credentials", Value: creds}}
	if ar := req.Body.Lookup("authenticationRestrictions"); nonEmptyArray(ar) {
		doc = append(doc, bson.E{Key: "authenticationRestrictions", Value: ar})
	}
	if cd, ok := req.Body.Lookup("customData").DocumentOK(); ok {
		doc = append(doc, bson.E{Key: "customData", Value: cd})
	}
	doc = append(doc, bson.E{Key: "roles", Value: rolesDoc(roles)})
	if e := c.n.writeAuthDoc(req, "i", "system.users", doc, ""); e != nil {
		return nil, e
	}
	c.n.logI("ACCESS", 20255, "Created user", func(e *zerolog.Event) { e.Str("user", user).Str("db", db) })
	return c.finishWrite(req, bson.D{}), nil
}

func (n *Node) checkRolesExist(roles []RoleRef) *CmdError {
	for _, r := range roles {
		if !isBuiltinRole(r) && n.roleDoc(r.DB, r.Role) == nil {
			return cerr(31, "Could not find role: %s@%s", r.Role, r.DB)
		}
	}
	return nil
}

// setField replaces or appends one field, keeping the document's order.
func setField(d bson.D, k string, v any) bson.D {
	for i := range d {
		if d[i].Key == k {
			d[i].Value = v
			return d
		}
	}
	return append(d, bson.E{Key: k, Value: v})
}

func (c *conn) userForUpdate(db, user string) (bson.D, *CmdError) {
	old := c.n.userDoc(db, user)
	if old == nil {
		return nil, cerr(11, "Could not find user \"%s\" for db \"%s\"", user, db)
	}
	var d bson.D
	_ = bson.Unmarshal(old, &d)
	return d, nil
}

func (c *conn) cmdUpdateUser(req *Request) (bson.D, error) {
	db := req.DB()
	user, _ := req.Body.Lookup("updateUser").StringValueOK()
	changes := 0
	for _, k := range []string{"pwd", "customData", "roles", "authenticationRestrictions", "mechanisms"} {
		if _, err := req.Body.LookupErr(k); err == nil {
			changes++
		}
	}
	if changes == 0 {
		return nil, cerr(2, "Must specify at least one field to update in updateUser")
	}
	d, e := c.userForUpdate(db, user)
	if e != nil {
		return nil, cerr(11, "User %s@%s not found", user, db)
	}
	if pwd, ok := req.Body.Lookup("pwd").StringValueOK(); ok {
		if pwd == "" {
			return nil, cerr(2, "Password cannot be empty")
		}
		mechs, e := credentialMechanisms(req, c.n.userMechanismsOf(db, user))
		if e != nil {
			return nil, e
		}
		creds, err := buildCredentials(user, pwd, mechs)
		if err != nil {
			return nil, err
		}
		d = setField(d, "credentials", creds)
	} else if _, err := req.Body.LookupErr("mechanisms"); err == nil {
		// without pwd, mechanisms trims the stored credentials to a subset
		mechs, e := credentialMechanisms(req, nil)
		if e != nil {
			return nil, e
		}
		have := c.n.userMechanismsOf(db, user)
		var kept bson.D
		for _, x := range d {
			if x.Key != "credentials" {
				continue
			}
			var cd bson.D
			_ = bson.Unmarshal(mustRawValue(x.Value).Document(), &cd)
			for _, m := range mechs {
				if !slices.Contains(have, m) {
					return nil, cerr(2, "mechanisms field must be a subset of previously set mechanisms")
				}
			}
			for _, ce := range cd {
				if slices.Contains(mechs, ce.Key) {
					kept = append(kept, ce)
				}
			}
		}
		d = setField(d, "credentials", kept)
	}
	if cd, ok := req.Body.Lookup("customData").DocumentOK(); ok {
		d = setField(d, "customData", cd)
	}
	if _, err := req.Body.LookupErr("roles"); err == nil {
		roles := parseRoles(req.Body.Lookup("roles"), db)
		if e := c.n.checkRolesExist(roles); e != nil {
			return nil, e
		}
		d = setField(d, "roles", rolesDoc(roles))
	}
	if ar, err := req.Body.LookupErr("authenticationRestrictions"); err == nil {
		if nonEmptyArray(ar) {
			d = setField(d, "authenticationRestrictions", ar)
		} else {
			d = slices.DeleteFunc(d, func(e bson.E) bool { return e.Key == "authenticationRestrictions" })
		}
	}
	if e := c.n.writeAuthDoc(req, "u", "system.users", d, db+"."+user); e != nil {
		return nil, e
	}
	return c.finishWrite(req, bson.D{}), nil
}

func (n *Node) userMechanismsOf(db, user string) []string {
	var out []string
	for _, m := range n.userMechanisms(db + "." + user) {
		out = append(out, m.(string))
	}
	return out
}

func (c *conn) changeUserRoles(req *Request, cmd string, grant bool) (bson.D, error) {
	db := req.DB()
	user, _ := req.Body.Lookup(cmd).StringValueOK()
	if _, err := req.Body.LookupErr("roles"); err != nil {
		return nil, cerr(40414, "BSON field '%s.roles' is missing but a required field", cmd)
	}
	change := parseRoles(req.Body.Lookup("roles"), db)
	if len(change) == 0 {
		return nil, cerr(2, "%s command requires a non-empty \"roles\" array", cmd)
	}
	d, e := c.userForUpdate(db, user)
	if e != nil {
		return nil, e
	}
	if e := c.n.checkRolesExist(change); e != nil {
		return nil, e
	}
	var cur []RoleRef
	for _, x := range d {
		if x.Key == "roles" {
			cur = parseRoles(mustRawValue(x.Value), db)
		}
	}
	cur = applyRoleChange(cur, change, grant)
	d = setField(d, "roles", rolesDoc(cur))
	if e := c.n.writeAuthDoc(req, "u", "system.users", d, db+"."+user); e != nil {
		return nil, e
	}
	return c.finishWrite(req, bson.D{}), nil
}

// applyRoleChange adds (deduplicated) or removes roles.
func applyRoleChange(cur, change []RoleRef, grant bool) []RoleRef {
	has := func(xs []RoleRef, r RoleRef) bool {
		for _, x := range xs {
			if x == r {
				return true
			}
		}
		return false
	}
	if grant {
		for _, r := range change {
			if !has(cur, r) {
				cur = append(cur, r)
			}
		}
		return cur
	}
	var out []RoleRef
	for _, r := range cur {
		if !has(change, r) {
			out = append(out, r)
		}
	}
	return out
}

func mustRawValue(v any) bson.RawValue {
	t, b, _ := bson.MarshalValue(v)
	return bson.RawValue{Type: t, Value: b}
}

func (c *conn) cmdGrantRoles(req *Request) (bson.D, error) {
	return c.changeUserRoles(req, "grantRolesToUser", true)
}

func (c *conn) cmdRevokeRoles(req *Request) (bson.D, error) {
	return c.changeUserRoles(req, "revokeRolesFromUser", false)
}

func (c *conn) cmdDropUser(req *Request) (bson.D, error) {
	db := req.DB()
	user, _ := req.Body.Lookup("dropUser").StringValueOK()
	if c.n.userDoc(db, user) == nil {
		return nil, cerr(11, "User '%s@%s' not found", user, db)
	}
	if e := c.n.writeAuthDoc(req, "d", "system.users", nil, db+"."+user); e != nil {
		return nil, e
	}
	return c.finishWrite(req, bson.D{}), nil
}

func (c *conn) cmdDropAllUsers(req *Request) (bson.D, error) {
	db := req.DB()
	c.n.mu.Lock()
	docs := c.n.data.Coll("admin", "system.users", false).Docs()
	c.n.mu.Unlock()
	var ops []opSpec
	for _, d := range docs {
		if udb, _ := d.Lookup("db").StringValueOK(); udb == db {
			ops = append(ops, opSpec{op: "d", ns: "admin.system.users", o: mustRaw(bson.D{{Key: "_id", Value: d.Lookup("_id")}})})
		}
	}
	if len(ops) > 0 {
		if _, err := c.n.writeOplog(ops, false); err != nil {
			return nil, cerr(10107, "not primary")
		}
	}
	return c.finishWrite(req, bson.D{{Key: "n", Value: int32(len(ops))}}), nil
}

// cmdConnectionStatus reports the authenticated user, the roles granted
// to it and, with showPrivileges, every privilege they resolve to.
func (c *conn) cmdConnectionStatus(req *Request) (bson.D, error) {
	users := bson.A{}
	for _, u := range c.users {
		users = append(users, bson.D{{Key: "user", Value: u.user}, {Key: "db", Value: u.db}})
	}
	var roles []RoleRef
	var privs []Privilege
	for _, u := range c.authz() {
		roles = append(roles, u.roles...)
		privs = append(privs, u.privs...)
	}
	info := bson.D{{Key: "authenticatedUsers", Value: users}, {Key: "authenticatedUserRoles", Value: rolesDoc(roles)}}
	if b, _ := req.Body.Lookup("showPrivileges").BooleanOK(); b {
		info = append(info, bson.E{Key: "authenticatedUserPrivileges", Value: privilegesDoc(mergePrivileges(privs))})
	}
	return bson.D{{Key: "authInfo", Value: info}}, nil
}
