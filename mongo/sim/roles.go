package sim

import (
	"go.mongodb.org/mongo-driver/v2/bson"
)

// Role commands: createRole, updateRole, dropRole,
// dropAllRolesFromDatabase, grant/revokePrivileges(To|From)Role,
// grant/revokeRoles(To|From)Role, rolesInfo. Roles live in
// admin.system.roles (_id "db.role") as mongod stores them: _id, role,
// db, privileges (merged per resource), roles, authenticationRestrictions.

func rolesInfoArg(req *Request) (all bool, want []RoleRef) {
	v := req.Body.Lookup("rolesInfo")
	switch v.Type {
	case bson.TypeString:
		return false, []RoleRef{{Role: v.StringValue(), DB: req.DB()}}
	case bson.TypeEmbeddedDocument:
		return false, parseRoles(mustRawValue(bson.A{v.Document()}), req.DB())
	case bson.TypeArray:
		return false, parseRoles(v, req.DB())
	}
	return true, nil
}

// isBuiltinRole is mongod's isBuiltinRole, by name and database.
func isBuiltinRole(r RoleRef) bool {
	return builtinRoleExists(r.Role, r.DB)
}

// checkGrantRolesToRole is mongod's checkOkayToGrantRolesToRole.
func (n *Node) checkGrantRolesToRole(role RoleRef, add []RoleRef) *CmdError {
	for _, r := range add {
		if r == role {
			return cerr(49, "Cannot grant role %s@%s to itself.", role.Role, role.DB)
		}
		if role.DB != "admin" && r.DB != role.DB {
			return cerr(49, "Roles on the '%s' database cannot be granted roles from other databases", role.DB)
		}
	}
	if e := n.checkRolesExist(add); e != nil {
		return cerr(e.Code, "Cannot grant roles to '%s@%s': %s", role.Role, role.DB, e.Msg)
	}
	for _, r := range n.resolve(add).inherited {
		if r == role {
			return cerr(49, "Granting roles to %s@%s would introduce a cycle in the role graph", role.Role, role.DB)
		}
	}
	return nil
}

// checkPrivilegesForRole: a role outside admin may only hold privileges
// on its own database.
func checkPrivilegesForRole(role RoleRef, privs []Privilege) *CmdError {
	if role.DB == "admin" {
		return nil
	}
	for _, p := range privs {
		if p.Resource.Any || p.Resource.Cluster || p.Resource.DB != role.DB {
			return cerr(49, "Roles on the '%s' database cannot be granted privileges that target other databases or the cluster", role.DB)
		}
	}
	return nil
}

func roleDocD(role RoleRef, privs []Privilege, roles []RoleRef, restr bson.RawValue) bson.D {
	d := bson.D{{Key: "_id", Value: role.DB + "." + role.Role}, {Key: "role", Value: role.Role}, {Key: "db", Value: role.DB},
		{Key: "privileges", Value: privilegesDoc(mergePrivileges(privs))}, {Key: "roles", Value: rolesDoc(roles)}}
	if nonEmptyArray(restr) {
		d = append(d, bson.E{Key: "authenticationRestrictions", Value: restr})
	}
	return d
}

func (c *conn) cmdCreateRole(req *Request) (bson.D, error) {
	db := req.DB()
	name, _ := req.Body.Lookup("createRole").StringValueOK()
	if name == "" {
		return nil, cerr(2, "Role name must be non-empty")
	}
	role := RoleRef{Role: name, DB: db}
	for _, f := range []string{"privileges", "roles"} {
		if _, err := req.Body.LookupErr(f); err != nil {
			return nil, cerr(40414, "BSON field 'createRole.%s' is missing but a required field", f)
		}
	}
	switch {
	case db == "local":
		return nil, cerr(2, "Cannot create roles in the local database")
	case db == "$external":
		return nil, cerr(2, "Cannot create roles in the $external database")
	case isBuiltinRole(role):
		return nil, cerr(2, "Cannot create roles with the same name as a built-in role")
	}
	privs, e := parsePrivileges(req.Body.Lookup("privileges"), "createRole.privileges")
	if e != nil {
		return nil, e
	}
	roles := dedupRoles(parseRoles(req.Body.Lookup("roles"), db))
	if e := c.n.checkGrantRolesToRole(role, roles); e != nil {
		return nil, e
	}
	if e := checkPrivilegesForRole(role, privs); e != nil {
		return nil, e
	}
	if c.n.roleDoc(db, name) != nil {
		return nil, cerr(51002, "Role \"%s@%s\" already exists", name, db)
	}
	doc := roleDocD(role, privs, roles, req.Body.Lookup("authenticationRestrictions"))
	if e := c.n.writeAuthDoc(req, "i", "system.roles", doc, ""); e != nil {
		return nil, e
	}
	return c.finishWrite(req, bson.D{}), nil
}

func dedupRoles(in []RoleRef) []RoleRef {
	return applyRoleChange(nil, in, true)
}

// storedRole reads a custom role for modification.
func (c *conn) storedRole(role RoleRef) (privs []Privilege, roles []RoleRef, restr bson.RawValue, e *CmdError) {
	if isBuiltinRole(role) {
		return nil, nil, restr, cerr(2, "%s@%s is a built-in role and cannot be modified", role.Role, role.DB)
	}
	doc := c.n.roleDoc(role.DB, role.Role)
	if doc == nil {
		return nil, nil, restr, cerr(31, "Could not find role: %s@%s", role.Role, role.DB)
	}
	privs, _ = parsePrivileges(doc.Lookup("privileges"), "privileges")
	return privs, parseRoles(doc.Lookup("roles"), role.DB), doc.Lookup("authenticationRestrictions"), nil
}

func (c *conn) cmdUpdateRole(req *Request) (bson.D, error) {
	db := req.DB()
	name, _ := req.Body.Lookup("updateRole").StringValueOK()
	role := RoleRef{Role: name, DB: db}
	_, errR := req.Body.LookupErr("roles")
	_, errP := req.Body.LookupErr("privileges")
	restrV, errA := req.Body.LookupErr("authenticationRestrictions")
	if errR != nil && errP != nil && errA != nil {
		return nil, cerr(2, "Must specify at least one field to update in updateRole")
	}
	var newPrivs []Privilege
	if errP == nil {
		var e *CmdError
		if newPrivs, e = parsePrivileges(req.Body.Lookup("privileges"), "updateRole.privileges"); e != nil {
			return nil, e
		}
	}
	privs, roles, restr, e := c.storedRole(role)
	if e != nil {
		return nil, e
	}
	if errR == nil {
		roles = dedupRoles(parseRoles(req.Body.Lookup("roles"), db))
		if e := c.n.checkGrantRolesToRole(role, roles); e != nil {
			return nil, e
		}
	}
	if errP == nil {
		if e := checkPrivilegesForRole(role, newPrivs); e != nil {
			return nil, e
		}
		privs = newPrivs
	}
	if errA == nil {
		restr = restrV
	}
	if e := c.n.writeAuthDoc(req, "u", "system.roles", roleDocD(role, privs, roles, restr), db+"."+name); e != nil {
		return nil, e
	}
	return c.finishWrite(req, bson.D{}), nil
}

func (c *conn) changeRolePrivileges(req *Request, cmd string, grant bool) (bson.D, error) {
	db := req.DB()
	name, _ := req.Body.Lookup(cmd).StringValueOK()
	role := RoleRef{Role: name, DB: db}
	change, e := parsePrivileges(req.Body.Lookup("privileges"), cmd+".privileges")
	if e != nil {
		return nil, e
	}
	if len(change) == 0 {
		return nil, cerr(2, "%s command requires a non-empty \"privileges\" array", cmd)
	}
	privs, roles, restr, e := c.storedRole(role)
	if e != nil {
		return nil, e
	}
	if grant {
		if e := checkPrivilegesForRole(role, change); e != nil {
			return nil, e
		}
		privs = append(privs, change...)
	} else {
		privs = removePrivileges(privs, change)
	}
	if e := c.n.writeAuthDoc(req, "u", "system.roles", roleDocD(role, privs, roles, restr), db+"."+name); e != nil {
		return nil, e
	}
	return c.finishWrite(req, bson.D{}), nil
}

// removePrivileges drops actions per resource; a privilege left without
// actions goes.
func removePrivileges(privs, rm []Privilege) []Privilege {
	privs = mergePrivileges(privs)
	for _, r := range mergePrivileges(rm) {
		for i := range privs {
			if privs[i].Resource != r.Resource {
				continue
			}
			var keep []string
			for _, a := range privs[i].Actions {
				if !containsStr(r.Actions, a) {
					keep = append(keep, a)
				}
			}
			privs[i].Actions = keep
		}
	}
	var out []Privilege
	for _, p := range privs {
		if len(p.Actions) > 0 {
			out = append(out, p)
		}
	}
	return out
}

func (c *conn) cmdGrantPrivilegesToRole(req *Request) (bson.D, error) {
	return c.changeRolePrivileges(req, "grantPrivilegesToRole", true)
}

func (c *conn) cmdRevokePrivilegesFromRole(req *Request) (bson.D, error) {
	return c.changeRolePrivileges(req, "revokePrivilegesFromRole", false)
}

func (c *conn) changeRoleRoles(req *Request, cmd string, grant bool) (bson.D, error) {
	db := req.DB()
	name, _ := req.Body.Lookup(cmd).StringValueOK()
	role := RoleRef{Role: name, DB: db}
	change := parseRoles(req.Body.Lookup("roles"), db)
	if len(change) == 0 {
		return nil, cerr(2, "%s command requires a non-empty \"roles\" array", cmd)
	}
	if isBuiltinRole(role) {
		return nil, cerr(2, "%s@%s is a built-in role and cannot be modified", name, db)
	}
	if grant {
		if e := c.n.checkGrantRolesToRole(role, change); e != nil {
			return nil, e
		}
	}
	privs, roles, restr, e := c.storedRole(role)
	if e != nil {
		return nil, e
	}
	roles = applyRoleChange(roles, change, grant)
	if e := c.n.writeAuthDoc(req, "u", "system.roles", roleDocD(role, privs, roles, restr), db+"."+name); e != nil {
		return nil, e
	}
	return c.finishWrite(req, bson.D{}), nil
}

func (c *conn) cmdGrantRolesToRole(req *Request) (bson.D, error) {
	return c.changeRoleRoles(req, "grantRolesToRole", true)
}

func (c *conn) cmdRevokeRolesFromRole(req *Request) (bson.D, error) {
	return c.changeRoleRoles(req, "revokeRolesFromRole", false)
}

// dropRoles removes roles and every grant of them to users and roles,
// in one batch of oplog entries.
func (c *conn) dropRoles(req *Request, drop func(RoleRef) bool) (int, *CmdError) {
	n := c.n
	n.mu.Lock()
	users := n.data.Coll("admin", "system.users", false).Docs()
	roles := n.data.Coll("admin", "system.roles", false).Docs()
	n.mu.Unlock()
	var ops []opSpec
	count := 0
	strip := func(coll string, d bson.Raw, defDB string) {
		cur := parseRoles(d.Lookup("roles"), defDB)
		var keep []RoleRef
		for _, r := range cur {
			if !drop(r) {
				keep = append(keep, r)
			}
		}
		if len(keep) == len(cur) {
			return
		}
		var dd bson.D
		_ = bson.Unmarshal(d, &dd)
		dd = setField(dd, "roles", rolesDoc(keep))
		ops = append(ops, opSpec{op: "u", ns: "admin." + coll, o: mustRaw(dd), o2: mustRaw(bson.D{{Key: "_id", Value: d.Lookup("_id")}})})
	}
	for _, d := range users {
		udb, _ := d.Lookup("db").StringValueOK()
		strip("system.users", d, udb)
	}
	for _, d := range roles {
		r, _ := d.Lookup("role").StringValueOK()
		rdb, _ := d.Lookup("db").StringValueOK()
		if drop(RoleRef{Role: r, DB: rdb}) {
			count++
			ops = append(ops, opSpec{op: "d", ns: "admin.system.roles", o: mustRaw(bson.D{{Key: "_id", Value: d.Lookup("_id")}})})
			continue
		}
		strip("system.roles", d, rdb)
	}
	if len(ops) > 0 {
		if _, err := n.writeOplog(ops, false); err != nil {
			return 0, cerr(10107, "not primary")
		}
	}
	return count, nil
}

func (c *conn) cmdDropRole(req *Request) (bson.D, error) {
	db := req.DB()
	name, _ := req.Body.Lookup("dropRole").StringValueOK()
	role := RoleRef{Role: name, DB: db}
	if isBuiltinRole(role) {
		return nil, cerr(2, "%s@%s is a built-in role and cannot be modified", name, db)
	}
	if c.n.roleDoc(db, name) == nil {
		return nil, cerr(31, "Could not find role: %s@%s", name, db)
	}
	if _, e := c.dropRoles(req, func(r RoleRef) bool { return r == role }); e != nil {
		return nil, e
	}
	return c.finishWrite(req, bson.D{}), nil
}

func (c *conn) cmdDropAllRoles(req *Request) (bson.D, error) {
	db := req.DB()
	n, e := c.dropRoles(req, func(r RoleRef) bool { return r.DB == db })
	if e != nil {
		return nil, e
	}
	return c.finishWrite(req, bson.D{{Key: "n", Value: int32(n)}}), nil
}
