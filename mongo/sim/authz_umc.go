package sim

// Authorization of the user management commands, with mongod's checks
// and messages (user_management_commands_common.cpp).

func authzCreateUser(c *conn, req *Request) *CmdError {
	db := req.DB()
	if !c.can(Resource{DB: db}, "createUser") {
		return cerr(13, "Not authorized to create users on db: %s", db)
	}
	if e := c.authzGrantRoleList(parseRoles(req.Body.Lookup("roles"), db)); e != nil {
		return e
	}
	return c.authzRestrictions(req, db)
}

func (c *conn) authzGrantRoleList(roles []RoleRef) *CmdError {
	for _, r := range roles {
		if !c.can(Resource{DB: r.DB}, "grantRole") {
			return cerr(13, "Not authorized to grant role: %s@%s", r.Role, r.DB)
		}
	}
	return nil
}

func (c *conn) authzRevokeRoleList(roles []RoleRef) *CmdError {
	for _, r := range roles {
		if !c.can(Resource{DB: r.DB}, "revokeRole") {
			return cerr(13, "Not authorized to revoke role: %s@%s", r.Role, r.DB)
		}
	}
	return nil
}

func (c *conn) authzRestrictions(req *Request, db string) *CmdError {
	if _, err := req.Body.LookupErr("authenticationRestrictions"); err == nil && !c.can(Resource{DB: db}, "setAuthenticationRestriction") {
		return cerr(13, "Unauthorized")
	}
	return nil
}

func authzUpdateUser(c *conn, req *Request) *CmdError {
	db := req.DB()
	user, _ := req.Body.Lookup("updateUser").StringValueOK()
	self := c.isUser(user, db)
	if _, err := req.Body.LookupErr("pwd"); err == nil && (!self || !c.can(Resource{DB: db}, "changeOwnPassword")) && !c.can(Resource{DB: db}, "changePassword") {
		return cerr(13, "Not authorized to change password of user: %s@%s", user, db)
	}
	if _, err := req.Body.LookupErr("customData"); err == nil && (!self || !c.can(Resource{DB: db}, "changeOwnCustomData")) && !c.can(Resource{DB: db}, "changeCustomData") {
		return cerr(13, "Not authorized to change customData of user: %s@%s", user, db)
	}
	if _, err := req.Body.LookupErr("roles"); err == nil {
		if !c.can(Resource{}, "revokeRole") {
			return cerr(13, "In order to use updateUser to set roles array, must be authorized to revoke any role in the system")
		}
		if e := c.authzGrantRoleList(parseRoles(req.Body.Lookup("roles"), db)); e != nil {
			return e
		}
	}
	return c.authzRestrictions(req, db)
}

func authzDropUser(c *conn, req *Request) *CmdError {
	if !c.can(Resource{DB: req.DB()}, "dropUser") {
		return cerr(13, "Not authorized to drop users from the %s database", req.DB())
	}
	return nil
}

func authzDropAllUsers(c *conn, req *Request) *CmdError { return authzDropUser(c, req) }

func authzGrantRoles(c *conn, req *Request) *CmdError {
	return c.authzGrantRoleList(parseRoles(req.Body.Lookup("roles"), req.DB()))
}

func authzRevokeRoles(c *conn, req *Request) *CmdError {
	return c.authzRevokeRoleList(parseRoles(req.Body.Lookup("roles"), req.DB()))
}

func authzUsersInfo(c *conn, req *Request) *CmdError {
	db := req.DB()
	all, forAll, want := usersInfoArg(req)
	switch {
	case forAll:
		if !c.can(clusterRes(), "viewUser") {
			return cerr(13, "Not authorized to view users from all databases")
		}
	case all:
		if !c.can(Resource{DB: db}, "viewUser") {
			return cerr(13, "Not authorized to view users from the %s database", db)
		}
	default:
		for _, w := range want {
			if !c.isUser(w.Role, w.DB) && !c.can(Resource{DB: w.DB}, "viewUser") {
				return cerr(13, "Not authorized to view users from the %s database", db)
			}
		}
	}
	return nil
}

func authzCreateRole(c *conn, req *Request) *CmdError {
	db := req.DB()
	if !c.can(Resource{DB: db}, "createRole") {
		// The localhost exception creates a role only for a user that
		// already holds it through external authorization: never here.
		return cerr(13, "Not authorized to create roles on db: %s", db)
	}
	if e := c.authzGrantRoleList(parseRoles(req.Body.Lookup("roles"), db)); e != nil {
		return e
	}
	if e := c.authzPrivilegeList(req, "grantRole"); e != nil {
		return e
	}
	return c.authzRestrictions(req, db)
}

// authzPrivilegeList: granting (revoking) a privilege needs grantRole
// (revokeRole) on its database, or on admin for cluster-wide resources.
func (c *conn) authzPrivilegeList(req *Request, action string) *CmdError {
	privs, _ := parsePrivileges(req.Body.Lookup("privileges"), "privileges")
	verb := "grant"
	if action == "revokeRole" {
		verb = "revoke"
	}
	for _, p := range privs {
		r := p.Resource
		if !r.Any && !r.Cluster && r.DB != "" {
			if !c.can(Resource{DB: r.DB}, action) {
				return cerr(13, "Not authorized to %s privileges on the %sdatabase", verb, r.DB)
			}
		} else if !c.can(Resource{DB: "admin"}, action) {
			return cerr(13, "To %s privileges affecting multiple databases or the cluster, must be authorized to %s roles from the admin database", verb, verb)
		}
	}
	return nil
}

func authzUpdateRole(c *conn, req *Request) *CmdError {
	db := req.DB()
	if !c.can(Resource{}, "revokeRole") {
		return cerr(13, "updateRole command required the ability to revoke any role in the system")
	}
	if _, err := req.Body.LookupErr("roles"); err == nil {
		if e := c.authzGrantRoleList(parseRoles(req.Body.Lookup("roles"), db)); e != nil {
			return e
		}
	}
	if _, err := req.Body.LookupErr("privileges"); err == nil {
		if e := c.authzPrivilegeList(req, "grantRole"); e != nil {
			return e
		}
	}
	return c.authzRestrictions(req, db)
}

func authzDropRole(c *conn, req *Request) *CmdError {
	if !c.can(Resource{DB: req.DB()}, "dropRole") {
		return cerr(13, "Not authorized to drop roles from the %s database", req.DB())
	}
	return nil
}

func authzDropAllRoles(c *conn, req *Request) *CmdError { return authzDropRole(c, req) }

func authzGrantPrivileges(c *conn, req *Request) *CmdError {
	return c.authzPrivilegeList(req, "grantRole")
}

func authzRevokePrivileges(c *conn, req *Request) *CmdError {
	return c.authzPrivilegeList(req, "revokeRole")
}

func authzRolesInfo(c *conn, req *Request) *CmdError {
	db := req.DB()
	all, want := rolesInfoArg(req)
	if all {
		if !c.can(Resource{DB: db}, "viewRole") {
			return cerr(13, "Not authorized to view roles from the %s database", db)
		}
		return nil
	}
	for _, r := range want {
		if !c.holdsRole(r) && !c.can(Resource{DB: r.DB}, "viewRole") {
			return cerr(13, "Not authorized to view roles from the %s database", r.DB)
		}
	}
	return nil
}
