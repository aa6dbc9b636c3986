package sim

import (
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Resource is a privilege's resource as mongod models it: {db, collection}
// where "" means any (both "" is "any normal resource"), {cluster: true}
// or {anyResource: true}. As the target of a check, Collection "" names a
// database and a Collection an exact namespace.
type Resource struct {
	DB, Collection string
	Cluster, Any   bool
}

// Privilege grants actions on a resource.
type Privilege struct {
	Resource Resource
	Actions  []string
}

// clusterRes is the {cluster: true} resource.
func clusterRes() Resource { return Resource{Cluster: true} }

// normalCollection: not system.*, not local's replset.* bookkeeping.
func normalCollection(db, coll string) bool {
	if strings.HasPrefix(coll, "system.") {
		return false
	}
	return db != "local" || !strings.HasPrefix(coll, "replset.")
}

// covers reports whether pattern p matches target t (mongod's resource
// search list): anyResource matches all; "any normal" matches databases
// and normal collections outside local and config; a database pattern
// matches the database and its normal collections; a collection-name
// pattern matches that name in every database.
func (p Resource) covers(t Resource) bool {
	switch {
	case p.Any:
		return true
	case p.Cluster || t.Cluster:
		return p.Cluster && t.Cluster
	}
	special := t.DB == "local" || t.DB == "config"
	if t.Collection == "" {
		return p.Collection == "" && (p.DB == t.DB || p.DB == "" && !special)
	}
	if p.DB == t.DB && p.Collection == t.Collection {
		return true
	}
	if p.DB == "" && p.Collection == t.Collection {
		return true
	}
	if !normalCollection(t.DB, t.Collection) || p.Collection != "" {
		return false
	}
	return p.DB == t.DB || p.DB == "" && !special
}

func (p Privilege) has(action string) bool {
	for _, a := range p.Actions {
		if a == action || a == "anyAction" {
			return true
		}
	}
	return false
}

// allowed reports whether privs grant every action on the target.
func allowed(privs []Privilege, target Resource, actions ...string) bool {
	for _, a := range actions {
		ok := false
		for _, p := range privs {
			if p.has(a) && p.Resource.covers(target) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// anyOnDB is mongod's isAuthorizedForAnyActionOnAnyResourceInDB: some
// privilege names this database, a namespace in it, any database (any
// normal resource, even for local and config) or a collection name;
// listDatabases and listCollections filter by it.
func anyOnDB(privs []Privilege, db string) bool {
	for _, p := range privs {
		r := p.Resource
		if r.Any || !r.Cluster && (r.DB == db || r.DB == "") {
			return true
		}
	}
	return false
}

// mergePrivileges unions actions per resource, resources in first-seen
// order, actions in mongod's action-set order.
func mergePrivileges(in []Privilege) []Privilege {
	var out []Privilege
	idx := map[Resource]int{}
	for _, p := range in {
		i, ok := idx[p.Resource]
		if !ok {
			i = len(out)
			idx[p.Resource] = i
			out = append(out, Privilege{Resource: p.Resource})
		}
		for _, a := range p.Actions {
			if !containsStr(out[i].Actions, a) {
				out[i].Actions = append(out[i].Actions, a)
			}
		}
	}
	for i := range out {
		acts := out[i].Actions
		sort.SliceStable(acts, func(a, b int) bool { return actionOrder[acts[a]] < actionOrder[acts[b]] })
	}
	return out
}

func containsStr(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// resourceDoc is a resource as mongod prints it.
func (r Resource) doc() bson.D {
	switch {
	case r.Any:
		return bson.D{{Key: "anyResource", Value: true}}
	case r.Cluster:
		return bson.D{{Key: "cluster", Value: true}}
	}
	return bson.D{{Key: "db", Value: r.DB}, {Key: "collection", Value: r.Collection}}
}

func privilegesDoc(privs []Privilege) bson.A {
	out := bson.A{}
	for _, p := range privs {
		acts := bson.A{}
		for _, a := range p.Actions {
			acts = append(acts, a)
		}
		out = append(out, bson.D{{Key: "resource", Value: p.Resource.doc()}, {Key: "actions", Value: acts}})
	}
	return out
}

// parsePrivileges reads a privileges array as createRole takes it,
// validating as mongod does.
func parsePrivileges(v bson.RawValue, field string) ([]Privilege, *CmdError) {
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, cerr(14, "BSON field '%s' is the wrong type '%s', expected type 'array'", field, typeName(v.Type))
	}
	vals, _ := arr.Values()
	var out []Privilege
	for _, x := range vals {
		d, ok := x.DocumentOK()
		if !ok {
			return nil, cerr(14, "BSON field '%s' is the wrong type '%s', expected type 'object'", field, typeName(x.Type))
		}
		rv, err := d.LookupErr("resource")
		if err != nil {
			return nil, cerr(40414, "BSON field 'privilege.resource' is missing but a required field")
		}
		rd, _ := rv.DocumentOK()
		var r Resource
		if b, ok := rd.Lookup("cluster").BooleanOK(); ok && b {
			r.Cluster = true
		} else if b, ok := rd.Lookup("anyResource").BooleanOK(); ok && b {
			r.Any = true
		} else {
			db, dbOK := rd.Lookup("db").StringValueOK()
			coll, collOK := rd.Lookup("collection").StringValueOK()
			if !dbOK || !collOK {
				return nil, cerr(2, "resource pattern must contain 'collection' and 'db' fields, or 'cluster' or 'anyResource'")
			}
			r = Resource{DB: db, Collection: coll}
		}
		av, err := d.LookupErr("actions")
		if err != nil {
			return nil, cerr(40414, "BSON field 'privilege.actions' is missing but a required field")
		}
		aa, _ := av.ArrayOK()
		avals, _ := aa.Values()
		var acts []string
		for _, a := range avals {
			s, _ := a.StringValueOK()
			if !actionTypes[s] {
				return nil, cerr(2, "Unknown action type in privilege set: '%s'", s)
			}
			if !containsStr(acts, s) {
				acts = append(acts, s)
			}
		}
		out = append(out, Privilege{Resource: r, Actions: acts})
	}
	return out, nil
}
