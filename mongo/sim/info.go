package sim

import (
	"sort"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// usersInfo and rolesInfo in mongod's shapes (authorization_backend_local):
// the stored documents, filtered by the show* options, with the resolved
// inheritedRoles, inheritedPrivileges and inheritedAuthenticationRestrictions.

// cmdUsersInfo: without showPrivileges/showAuthenticationRestrictions the
// stored documents sorted by user and db, credentials (unless
// showCredentials), customData (showCustomData:false) and restrictions
// removed, mechanisms last, then the filter; with them (exact names
// only) each user as resolved, mechanisms in place of credentials.
func (c *conn) cmdUsersInfo(req *Request) (bson.D, error) {
	n := c.n
	db := req.DB()
	showCreds, _ := req.Body.Lookup("showCredentials").BooleanOK()
	showPrivs, _ := req.Body.Lookup("showPrivileges").BooleanOK()
	showRestr, _ := req.Body.Lookup("showAuthenticationRestrictions").BooleanOK()
	showCustom := true
	if b, ok := req.Body.Lookup("showCustomData").BooleanOK(); ok {
		showCustom = b
	}
	filter, hasFilter := req.Body.Lookup("filter").DocumentOK()
	all, forAll, want := usersInfoArg(req)
	users := bson.A{}
	if showPrivs || showRestr {
		if hasFilter || all || forAll {
			return nil, cerr(20, "Privilege or restriction details require exact-match usersInfo queries")
		}
		for _, w := range want {
			d := n.userDoc(w.DB, w.Role)
			if d == nil {
				continue
			}
			var out bson.D
			for _, e := range n.userDescription(d, w.DB) {
				switch e.Key {
				case "credentials":
					out = append(out, bson.E{Key: "mechanisms", Value: mechanismsOf(e.Value.(bson.RawValue))})
					if !showCreds {
						continue
					}
				case "authenticationRestrictions":
					if !showRestr {
						continue
					}
				case "customData":
					if !showCustom {
						continue
					}
				}
				out = append(out, e)
			}
			users = append(users, out)
		}
		return bson.D{{Key: "users", Value: users}}, nil
	}
	n.mu.Lock()
	docs := n.data.Coll("admin", "system.users", false).Docs()
	n.mu.Unlock()
	var picked []bson.Raw
	for _, d := range docs {
		u, _ := d.Lookup("user").StringValueOK()
		udb, _ := d.Lookup("db").StringValueOK()
		ok := forAll || all && udb == db
		for _, w := range want {
			ok = ok || w.Role == u && w.DB == udb
		}
		if ok {
			picked = append(picked, d)
		}
	}
	sort.SliceStable(picked, func(i, j int) bool {
		ui, _ := picked[i].Lookup("user").StringValueOK()
		uj, _ := picked[j].Lookup("user").StringValueOK()
		di, _ := picked[i].Lookup("db").StringValueOK()
		dj, _ := picked[j].Lookup("db").StringValueOK()
		return ui < uj || ui == uj && di < dj
	})
	for _, d := range picked {
		var out bson.D
		els, _ := d.Elements()
		for _, e := range els {
			switch e.Key() {
			case "authenticationRestrictions":
				continue
			case "credentials":
				if !showCreds {
					continue
				}
			case "customData":
				if !showCustom {
					continue
				}
			}
			out = append(out, bson.E{Key: e.Key(), Value: e.Value()})
		}
		out = append(out, bson.E{Key: "mechanisms", Value: mechanismsOf(d.Lookup("credentials"))})
		if hasFilter {
			if ok, _ := Match(mustRaw(out), filter); !ok {
				continue
			}
		}
		users = append(users, out)
	}
	return bson.D{{Key: "users", Value: users}}, nil
}

func mechanismsOf(creds bson.RawValue) bson.A {
	out := bson.A{}
	cd, _ := creds.DocumentOK()
	els, _ := cd.Elements()
	for _, e := range els {
		out = append(out, e.Key())
	}
	return out
}

// userDescription is a user as mongod resolves it: the stored fields
// (authenticationRestrictions: [] added when absent), inheritedRoles,
// inheritedPrivileges, inheritedAuthenticationRestrictions.
func (n *Node) userDescription(d bson.Raw, db string) bson.D {
	var out bson.D
	els, _ := d.Elements()
	sawRestr := false
	for _, e := range els {
		sawRestr = sawRestr || e.Key() == "authenticationRestrictions"
		out = append(out, bson.E{Key: e.Key(), Value: e.Value()})
	}
	if !sawRestr {
		out = append(out, bson.E{Key: "authenticationRestrictions", Value: bson.A{}})
	}
	u := n.resolve(parseRoles(d.Lookup("roles"), db))
	return append(out, bson.E{Key: "inheritedRoles", Value: rolesDoc(u.inherited)},
		bson.E{Key: "inheritedPrivileges", Value: privilegesDoc(u.privs)},
		bson.E{Key: "inheritedAuthenticationRestrictions", Value: n.rolesRestrictions(u.inherited)})
}

// rolesRestrictions lists the non-empty restriction arrays of roles.
func (n *Node) rolesRestrictions(roles []RoleRef) bson.A {
	out := bson.A{}
	for _, r := range roles {
		if d := n.roleDoc(r.DB, r.Role); d != nil && nonEmptyArray(d.Lookup("authenticationRestrictions")) {
			out = append(out, d.Lookup("authenticationRestrictions"))
		}
	}
	return out
}

// subRoles resolves what a role's direct roles bring: every role reached
// (direct ones included) and their privileges.
func (n *Node) subRoles(direct []RoleRef) ([]RoleRef, []Privilege) {
	u := n.resolve(direct)
	return u.inherited, u.privs
}

// cmdRolesInfo: exact names give each role as stored (built-ins
// synthesised as {db, role, roles: []}) followed by the inherited fields
// and isBuiltin; rolesInfo: 1 gives the built-ins (showBuiltinRoles) and
// the database's roles with isBuiltin before the inherited fields;
// showPrivileges "asUserFragment" gives one user fragment.
func (c *conn) cmdRolesInfo(req *Request) (bson.D, error) {
	n := c.n
	db := req.DB()
	mm := n.cfg.MajorMinor()
	all, want := rolesInfoArg(req)
	showBuiltin, _ := req.Body.Lookup("showBuiltinRoles").BooleanOK()
	showRestr, _ := req.Body.Lookup("showAuthenticationRestrictions").BooleanOK()
	showPrivs, _ := req.Body.Lookup("showPrivileges").BooleanOK()
	fragment := false
	if s, ok := req.Body.Lookup("showPrivileges").StringValueOK(); ok {
		if s != "asUserFragment" {
			return nil, cerr(2, "showPrivileges must be a boolean or the string 'asUserFragment'")
		}
		fragment = true
	}
	if fragment {
		if all {
			return nil, cerr(20, "Cannot get user fragment for all roles in a database")
		}
		roles, privs := n.subRoles(want)
		frag := bson.D{{Key: "roles", Value: rolesDoc(want)}, {Key: "inheritedRoles", Value: rolesDoc(roles)},
			{Key: "inheritedPrivileges", Value: privilegesDoc(privs)}}
		if showRestr {
			frag = append(frag, bson.E{Key: "inheritedAuthenticationRestrictions", Value: n.rolesRestrictions(roles)})
		}
		return bson.D{{Key: "userFragment", Value: frag}}, nil
	}
	out := bson.A{}
	// describe renders a stored or synthesised role document.
	describe := func(doc bson.D, r RoleRef, builtinFirst bool) bson.D {
		var d bson.D
		var direct []RoleRef
		sawRestr := false
		for _, e := range doc {
			switch e.Key {
			case "roles":
				direct = parseRoles(mustRawValue(e.Value), r.DB)
			case "privileges":
				if !showPrivs {
					continue
				}
			case "authenticationRestrictions":
				sawRestr = true
				if showRestr {
					d = append(d, bson.E{Key: e.Key, Value: bson.A{e.Value}})
				}
				continue
			}
			d = append(d, e)
		}
		if showRestr && !sawRestr {
			d = append(d, bson.E{Key: "authenticationRestrictions", Value: bson.A{}})
		}
		builtin := isBuiltinRole(r)
		if builtinFirst {
			d = append(d, bson.E{Key: "isBuiltin", Value: builtin})
		}
		roles, privs := n.subRoles(direct)
		d = append(d, bson.E{Key: "inheritedRoles", Value: rolesDoc(roles)})
		if showPrivs {
			own := bson.A{}
			for _, e := range doc {
				if e.Key == "privileges" {
					vals, _ := mustRawValue(e.Value).Array().Values()
					for _, v := range vals {
						own = append(own, v)
					}
				}
			}
			d = append(d, bson.E{Key: "inheritedPrivileges", Value: append(own, privilegesDoc(privs)...)})
		}
		if showRestr {
			ir := bson.A{}
			for _, e := range doc {
				if e.Key == "authenticationRestrictions" && nonEmptyArray(mustRawValue(e.Value)) {
					ir = append(ir, e.Value)
				}
			}
			d = append(d, bson.E{Key: "inheritedAuthenticationRestrictions", Value: append(ir, n.rolesRestrictions(roles)...)})
		}
		if !builtinFirst {
			d = append(d, bson.E{Key: "isBuiltin", Value: builtin})
		}
		return d
	}
	stored := func(d bson.Raw) bson.D {
		var out bson.D
		els, _ := d.Elements()
		for _, e := range els {
			out = append(out, bson.E{Key: e.Key(), Value: e.Value()})
		}
		return out
	}
	if all {
		if showBuiltin {
			for _, name := range builtinRoleNames(db) {
				d := bson.D{{Key: "role", Value: name}, {Key: "db", Value: db}, {Key: "isBuiltin", Value: true},
					{Key: "roles", Value: bson.A{}}, {Key: "inheritedRoles", Value: bson.A{}}}
				if showPrivs {
					p := privilegesDoc(builtinPrivileges(name, db, mm))
					d = append(d, bson.E{Key: "privileges", Value: p}, bson.E{Key: "inheritedPrivileges", Value: p})
				}
				if showRestr {
					d = append(d, bson.E{Key: "authenticationRestrictions", Value: bson.A{}},
						bson.E{Key: "inheritedAuthenticationRestrictions", Value: bson.A{}})
				}
				out = append(out, d)
			}
		}
		n.mu.Lock()
		docs := n.data.Coll("admin", "system.roles", false).Docs()
		n.mu.Unlock()
		for _, d := range docs {
			if rdb, _ := d.Lookup("db").StringValueOK(); rdb == db {
				r, _ := d.Lookup("role").StringValueOK()
				out = append(out, describe(stored(d), RoleRef{Role: r, DB: rdb}, true))
			}
		}
		return bson.D{{Key: "roles", Value: out}}, nil
	}
	for _, r := range want {
		var doc bson.D
		if isBuiltinRole(r) {
			doc = bson.D{{Key: "db", Value: r.DB}, {Key: "role", Value: r.Role}, {Key: "roles", Value: bson.A{}}}
			if showPrivs {
				doc = append(doc, bson.E{Key: "privileges", Value: privilegesDoc(builtinPrivileges(r.Role, r.DB, mm))})
			}
		} else if d := n.roleDoc(r.DB, r.Role); d != nil {
			doc = stored(d)
		} else {
			continue
		}
		out = append(out, describe(doc, r, false))
	}
	return bson.D{{Key: "roles", Value: out}}, nil
}
