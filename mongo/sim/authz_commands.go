package sim

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// authzRules are commands whose checks are not one action on one
// resource (mongod's per-command checkAuthForOperation); every other
// command needs its table action on its target.
var authzRules map[string]func(c *conn, req *Request) *CmdError

func init() {
	authzRules = map[string]func(c *conn, req *Request) *CmdError{
		"update":                   authzUpdate,
		"findAndModify":            authzFindAndModify,
		"findandmodify":            authzFindAndModify,
		"getMore":                  authzGetMore,
		"aggregate":                authzAggregate,
		"listDatabases":            authzListDatabases,
		"listCollections":          authzListCollections,
		"renameCollection":         authzRenameCollection,
		"applyOps":                 authzApplyOps,
		"createUser":               authzCreateUser,
		"updateUser":               authzUpdateUser,
		"dropUser":                 authzDropUser,
		"dropAllUsersFromDatabase": authzDropAllUsers,
		"usersInfo":                authzUsersInfo,
		"grantRolesToUser":         authzGrantRoles,
		"revokeRolesFromUser":      authzRevokeRoles,
		"createRole":               authzCreateRole,
		"updateRole":               authzUpdateRole,
		"dropRole":                 authzDropRole,
		"dropAllRolesFromDatabase": authzDropAllRoles,
		"grantRolesToRole":         authzGrantRoles,
		"revokeRolesFromRole":      authzRevokeRoles,
		"grantPrivilegesToRole":    authzGrantPrivileges,
		"revokePrivilegesFromRole": authzRevokePrivileges,
		"rolesInfo":                authzRolesInfo,
	}
}

// checkAuthz is checkCanRun's auth part: authentication, then privileges.
func (c *conn) checkAuthz(name string, cmd command, req *Request) *CmdError {
	if !c.n.cfg.Auth || cmd.noAuth {
		return nil
	}
	bypass := c.localhostException()
	if !bypass && !c.authenticated() {
		return cerr(13, "Command %s requires authentication", name)
	}
	if rule, ok := authzRules[name]; ok {
		return rule(c, req)
	}
	if cmd.action == "" || c.can(commandTarget(cmd.action, name, req), cmd.action) {
		return nil
	}
	return unauthorized(req)
}

// unauthorized is mongod's generic refusal, naming the whole command.
func unauthorized(req *Request) *CmdError {
	return cerr(13, "not authorized on %s to execute command %s", req.DB(), showDoc(req.Body))
}

// commandTarget is the resource an action is checked on: the cluster,
// the database, or the namespace the command names.
func commandTarget(action, name string, req *Request) Resource {
	if clusterActions[action] {
		return clusterRes()
	}
	db := req.DB()
	if coll, ok := req.Body.Lookup(name).StringValueOK(); ok && coll != "" && !databaseActions[action] {
		return Resource{DB: db, Collection: coll}
	}
	return Resource{DB: db}
}

func nsOf(req *Request, field string) Resource {
	coll, _ := req.Body.Lookup(field).StringValueOK()
	return Resource{DB: req.DB(), Collection: coll}
}

func authzUpdate(c *conn, req *Request) *CmdError {
	acts := []string{"update"}
	ups, _ := req.Body.Lookup("updates").ArrayOK()
	vals, _ := ups.Values()
	for _, u := range vals {
		if d, ok := u.DocumentOK(); ok {
			if b, _ := d.Lookup("upsert").BooleanOK(); b {
				acts = append(acts, "insert")
				break
			}
		}
	}
	if c.can(nsOf(req, "update"), acts...) {
		return nil
	}
	return unauthorized(req)
}

func authzFindAndModify(c *conn, req *Request) *CmdError {
	name := "findAndModify"
	if _, err := req.Body.LookupErr(name); err != nil {
		name = "findandmodify"
	}
	acts := []string{"find", "update"}
	if b, _ := req.Body.Lookup("remove").BooleanOK(); b {
		acts = []string{"find", "remove"}
	} else if b, _ := req.Body.Lookup("upsert").BooleanOK(); b {
		acts = append(acts, "insert")
	}
	if c.can(nsOf(req, name), acts...) {
		return nil
	}
	return unauthorized(req)
}

func authzGetMore(c *conn, req *Request) *CmdError {
	if c.can(nsOf(req, "collection"), "find") {
		return nil
	}
	return unauthorized(req)
}

// authzAggregate: find on the namespace (or the stage's own action for
// $collStats, $indexStats, $currentOp), find on every $lookup,
// $graphLookup and $unionWith source, insert and remove on an $out
// target, insert and update on a $merge target.
func authzAggregate(c *conn, req *Request) *CmdError {
	db := req.DB()
	coll, _ := req.Body.Lookup("aggregate").StringValueOK()
	type need struct {
		res  Resource
		acts []string
	}
	var needs []need
	arr, _ := req.Body.Lookup("pipeline").ArrayOK()
	stages, _ := arr.Values()
	first := true
	var walk func(stages []bson.RawValue, db, coll string)
	walk = func(stages []bson.RawValue, db, coll string) {
		for _, st := range stages {
			sd, _ := st.DocumentOK()
			e, err := sd.IndexErr(0)
			if err != nil {
				continue
			}
			v := e.Value()
			switch e.Key() {
			case "$collStats":
				needs = append(needs, need{Resource{DB: db, Collection: coll}, []string{"collStats"}})
			case "$indexStats":
				needs = append(needs, need{Resource{DB: db, Collection: coll}, []string{"indexStats"}})
			case "$currentOp":
				needs = append(needs, need{clusterRes(), []string{"inprog"}})
			case "$changeStream":
				needs = append(needs, need{Resource{DB: db, Collection: coll}, []string{"changeStream", "find"}})
			case "$lookup", "$graphLookup", "$unionWith":
				from := ""
				fdb := db
				if s, ok := v.StringValueOK(); ok {
					from = s
				} else if d, ok := v.DocumentOK(); ok {
					from, _ = d.Lookup("from").StringValueOK()
					if e.Key() == "$unionWith" {
						from, _ = d.Lookup("coll").StringValueOK()
					}
					if fd, ok := d.Lookup("from").DocumentOK(); ok {
						fdb, _ = fd.Lookup("db").StringValueOK()
						from, _ = fd.Lookup("coll").StringValueOK()
					}
					if sub, ok := d.Lookup("pipeline").ArrayOK(); ok {
						vals, _ := sub.Values()
						walk(vals, fdb, from)
					}
				}
				if from != "" {
					needs = append(needs, need{Resource{DB: fdb, Collection: from}, []string{"find"}})
				}
			case "$out", "$merge":
				tdb, tcoll := db, ""
				if s, ok := v.StringValueOK(); ok {
					tcoll = s
				} else if d, ok := v.DocumentOK(); ok {
					key := "coll"
					if e.Key() == "$merge" {
						key = "into"
					}
					if s, ok := d.Lookup(key).StringValueOK(); ok {
						tcoll = s
					} else if in, ok := d.Lookup(key).DocumentOK(); ok {
						tdb, _ = in.Lookup("db").StringValueOK()
						tcoll, _ = in.Lookup("coll").StringValueOK()
					}
					if s, ok := d.Lookup("db").StringValueOK(); ok && e.Key() == "$out" {
						tdb = s
					}
				}
				acts := []string{"insert", "remove"}
				if e.Key() == "$merge" {
					acts = []string{"insert", "update"}
				}
				needs = append(needs, need{Resource{DB: tdb, Collection: tcoll}, acts})
			}
		}
	}
	walk(stages, db, coll)
	if len(stages) > 0 {
		sd, _ := stages[0].DocumentOK()
		if e, err := sd.IndexErr(0); err == nil {
			switch e.Key() {
			case "$collStats", "$indexStats", "$currentOp", "$changeStream", "$documents", "$listLocalSessions":
				first = false
			}
		}
	}
	if first && coll != "" {
		needs = append(needs, need{Resource{DB: db, Collection: coll}, []string{"find"}})
	}
	for _, n := range needs {
		if !c.can(n.res, n.acts...) {
			return unauthorized(req)
		}
	}
	return nil
}

// authzListDatabases: anyone may list; without listDatabases on the
// cluster only the databases they hold privileges in are shown, and
// authorizedDatabases:false then fails.
func authzListDatabases(c *conn, req *Request) *CmdError {
	if b, ok := req.Body.Lookup("authorizedDatabases").BooleanOK(); ok && !b && !c.can(clusterRes(), "listDatabases") {
		return cerr(13, "Insufficient permissions to list all databases")
	}
	return nil
}

// databaseVisible is listDatabases' filter for this connection.
func (c *conn) databaseVisible(req *Request) func(string) bool {
	if !c.n.cfg.Auth {
		return func(string) bool { return true }
	}
	all := c.can(clusterRes(), "listDatabases")
	if b, ok := req.Body.Lookup("authorizedDatabases").BooleanOK(); ok {
		all = !b
	}
	if all {
		return func(string) bool { return true }
	}
	var privs []Privilege
	for _, u := range c.authz() {
		privs = append(privs, u.privs...)
	}
	return func(db string) bool { return anyOnDB(privs, db) }
}

// authzListCollections: listCollections on the database, or, with
// authorizedCollections and nameOnly, any privilege in it (the list is
// then filtered to the collections privileges name).
func authzListCollections(c *conn, req *Request) *CmdError {
	db := req.DB()
	if c.can(Resource{DB: db}, "listCollections") {
		return nil
	}
	ac, _ := req.Body.Lookup("authorizedCollections").BooleanOK()
	no, _ := req.Body.Lookup("nameOnly").BooleanOK()
	if ac && no && anyOnDB(c.privileges(), db) {
		return nil
	}
	return unauthorized(req)
}

// collectionVisible is listCollections' filter for this connection.
func (c *conn) collectionVisible(req *Request) func(string) bool {
	db := req.DB()
	ac, _ := req.Body.Lookup("authorizedCollections").BooleanOK()
	if !c.n.cfg.Auth || !ac || c.can(Resource{DB: db}, "listCollections") {
		return func(string) bool { return true }
	}
	privs := c.privileges()
	return func(coll string) bool {
		for _, p := range privs {
			if !p.Resource.Cluster && p.Resource.covers(Resource{DB: db, Collection: coll}) {
				return true
			}
		}
		return false
	}
}

// authzRenameCollection is mongod's rule: within one database
// renameCollectionSameDB suffices (with find on the source unless the
// target is unreadable too); otherwise find and dropCollection on the
// source, insert and createIndex (and dropCollection with dropTarget) on
// the target.
func authzRenameCollection(c *conn, req *Request) *CmdError {
	src, _ := req.Body.Lookup("renameCollection").StringValueOK()
	dst, _ := req.Body.Lookup("to").StringValueOK()
	sdb, srcColl, _ := strings.Cut(src, ".")
	ddb, dcoll, _ := strings.Cut(dst, ".")
	from, to := Resource{DB: sdb, Collection: srcColl}, Resource{DB: ddb, Collection: dcoll}
	dropTarget, _ := req.Body.Lookup("dropTarget").BooleanOK()
	if sdb == ddb && normalCollection(sdb, srcColl) && normalCollection(ddb, dcoll) {
		if c.can(Resource{DB: sdb}, "renameCollectionSameDB") && (!dropTarget || c.can(to, "dropCollection")) &&
			(c.can(from, "find") || !c.can(to, "find")) {
			return nil
		}
	}
	toActs := []string{"insert", "createIndex"}
	if dropTarget {
		toActs = append(toActs, "dropCollection")
	}
	if c.can(from, "find", "dropCollection") && c.can(to, toActs...) {
		return nil
	}
	return unauthorized(req)
}
