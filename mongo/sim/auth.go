package sim

import (
	"crypto/md5"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"

	"github.com/rs/zerolog"
	"github.com/xdg-go/scram"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// RoleRef names a role in a database.
type RoleRef struct {
	Role string `bson:"role"`
	DB   string `bson:"db"`
}

type authedUser struct {
	user, db string
	roles    []RoleRef
}

type saslConv struct {
	id       int32
	mech     string
	db       string
	conv     *scram.ServerConversation
	skipLast bool
	done     bool
}

var convIDs struct {
	sync.Mutex
	n int32
}

func (c *conn) authenticated() bool {
	return len(c.users) > 0 || c.internal.Load() && c.n.keyFile == ""
}

// localhostException: a loopback client may act while no user exists.
func (c *conn) localhostException() bool {
	if !c.local {
		return false
	}
	if v, ok := c.n.cfg.SetParameters["enableLocalhostAuthBypass"]; ok && (v == "false" || v == "0") {
		return false
	}
	return !c.n.anyUserExists()
}

func (n *Node) anyUserExists() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	coll := n.data.Coll("admin", "system.users", false)
	return coll.Len() > 0
}

// builtinRoles maps each built-in role to what it grants: actions, and
// whether on any database ("*") or only its own.
var builtinRoles = map[string]struct {
	actions []string
	anyDB   bool
}{
	"read":                 {[]string{actRead}, false},
	"readWrite":            {[]string{actRead, actWrite}, false},
	"dbAdmin":              {[]string{actDBAdmin, actRead}, false},
	"dbOwner":              {[]string{actRead, actWrite, actDBAdmin, actUserAdmin}, false},
	"userAdmin":            {[]string{actUserAdmin}, false},
	"clusterMonitor":       {[]string{actClusterMonitor}, true},
	"clusterManager":       {[]string{actClusterMonitor, actClusterAdmin}, true},
	"clusterAdmin":         {[]string{actClusterMonitor, actClusterAdmin, actDBAdmin}, true},
	"hostManager":          {[]string{actClusterMonitor}, true},
	"readAnyDatabase":      {[]string{actRead}, true},
	"readWriteAnyDatabase": {[]string{actRead, actWrite}, true},
	"userAdminAnyDatabase": {[]string{actUserAdmin}, true},
	"dbAdminAnyDatabase":   {[]string{actDBAdmin, actRead}, true},
	"backup":               {[]string{actRead, actClusterMonitor}, true},
	"restore":              {[]string{actWrite}, true},
	"root":                 {[]string{actRead, actWrite, actDBAdmin, actUserAdmin, actClusterAdmin, actClusterMonitor}, true},
	"__system":             {[]string{actRead, actWrite, actDBAdmin, actUserAdmin, actClusterAdmin, actClusterMonitor, actInternal}, true},
}

func isBuiltinRole(name, db string) bool {
	r, ok := builtinRoles[name]
	if !ok {
		return false
	}
	return !r.anyDB || db == "admin"
}

// authorized decides whether the connection's users may run an action on db.
func (c *conn) authorized(action, db, name string) bool {
	if action == actNone || c.localhostException() {
		return true
	}
	if c.internal.Load() && c.n.keyFile != "" && len(c.users) > 0 && c.users[0].user == "__system" {
		return true
	}
	if name == "connectionStatus" || name == "logout" {
		return true
	}
	for _, u := range c.users {
		if c.n.rolesGrant(u.roles, action, db, 0) {
			return true
		}
	}
	return false
}

func (n *Node) rolesGrant(roles []RoleRef, action, db string, depth int) bool {
	if depth > 8 {
		return false
	}
	for _, r := range roles {
		if br, ok := builtinRoles[r.Role]; ok {
			if !br.anyDB && r.DB != db {
				continue
			}
			if br.anyDB && db == "local" && action == actWrite && r.Role != "root" && r.Role != "__system" {
				continue
			}
			for _, a := range br.actions {
				if a == action {
					return true
				}
			}
			continue
		}
		// custom role: inherited roles and privilege actions
		n.mu.Lock()
		doc := n.data.Coll("admin", "system.roles", false).Get(mustRV(r.DB + "." + r.Role))
		n.mu.Unlock()
		if doc == nil {
			continue
		}
		if n.rolesGrant(parseRoles(doc.Lookup("roles"), r.DB), action, db, depth+1) {
			return true
		}
		privs, _ := doc.Lookup("privileges").ArrayOK()
		pv, _ := privs.Values()
		for _, p := range pv {
			pd, _ := p.DocumentOK()
			res, _ := pd.Lookup("resource").DocumentOK()
			pdb, _ := res.Lookup("db").StringValueOK()
			cluster, _ := res.Lookup("cluster").BooleanOK()
			if !cluster && pdb != "" && pdb != db {
				continue
			}
			acts, _ := pd.Lookup("actions").ArrayOK()
			av, _ := acts.Values()
			for _, a := range av {
				if s, _ := a.StringValueOK(); privilegeCategory(s) == action {
					return true
				}
			}
		}
	}
	return false
}

// privilegeCategory maps a mongod action name onto the simulator's categories.
func privilegeCategory(a string) string {
	switch a {
	case "find", "listCollections", "listDatabases", "listIndexes", "dbStats", "collStats":
		return actRead
	case "insert", "update", "remove", "createCollection", "dropCollection", "createIndex":
		return actWrite
	case "createUser", "dropUser", "updateUser", "viewUser", "createRole", "dropRole", "viewRole", "grantRole":
		return actUserAdmin
	case "replSetConfigure", "replSetStateChange", "shutdown":
		return actClusterAdmin
	case "replSetGetStatus", "replSetGetConfig", "serverStatus", "getParameter", "getCmdLineOpts":
		return actClusterMonitor
	}
	return ""
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

// ------------------------------------------------------------------- SCRAM

func saltedCreds(fcn scram.HashGeneratorFcn, user, pwd string, iters int, sha1 bool) (bson.D, error) {
	salt := make([]byte, 16)
	if !sha1 {
		salt = make([]byte, 28)
	}
	_, _ = rand.Read(salt)
	var client *scram.Client
	var err error
	if sha1 {
		client, err = fcn.NewClientUnprepped(user, mongoPasswordDigest(user, pwd), "")
	} else {
		client, err = fcn.NewClient(user, pwd, "")
	}
	if err != nil {
		return nil, err
	}
	sc, err := client.GetStoredCredentialsWithError(scram.KeyFactors{Salt: string(salt), Iters: iters})
	if err != nil {
		return nil, err
	}
	return bson.D{{Key: "iterationCount", Value: int32(iters)}, {Key: "salt", Value: base64.StdEncoding.EncodeToString(salt)},
		{Key: "storedKey", Value: base64.StdEncoding.EncodeToString(sc.StoredKey)}, {Key: "serverKey", Value: base64.StdEncoding.EncodeToString(sc.ServerKey)}}, nil
}

func mongoPasswordDigest(user, pwd string) string {
	h := md5.Sum([]byte(user + ":mongo:" + pwd))
	return hex.EncodeToString(h[:])
}

func buildCredentials(user, pwd string, mechs []string) (bson.D, error) {
	var out bson.D
	for _, m := range mechs {
		switch m {
		case "SCRAM-SHA-1":
			d, err := saltedCreds(scram.SHA1, user, pwd, 10000, true)
			if err != nil {
				return nil, err
			}
			out = append(out, bson.E{Key: m, Value: d})
		case "SCRAM-SHA-256":
			d, err := saltedCreds(scram.SHA256, user, pwd, 15000, false)
			if err != nil {
				return nil, cerr(2, "Error preparing SCRAM-SHA-256 credentials: %v", err)
			}
			out = append(out, bson.E{Key: m, Value: d})
		default:
			return nil, cerr(2, "Unknown auth mechanism '%s'", m)
		}
	}
	return out, nil
}

func (n *Node) lookupCreds(mech, db string) scram.CredentialLookup {
	return func(user string) (scram.StoredCredentials, error) {
		if user == "__system" && db == "local" && n.keyFile != "" {
			if v, ok := n.systemCreds.Load(mech); ok {
				return v.(scram.StoredCredentials), nil
			}
			salt := make([]byte, 16)
			_, _ = rand.Read(salt)
			var client *scram.Client
			var err error
			iters := 15000
			if mech == "SCRAM-SHA-1" {
				iters = 10000
				client, err = scram.SHA1.NewClientUnprepped(user, mongoPasswordDigest(user, n.keyFile), "")
			} else {
				client, err = scram.SHA256.NewClient(user, n.keyFile, "")
			}
			if err != nil {
				return scram.StoredCredentials{}, err
			}
			sc, err := client.GetStoredCredentialsWithError(scram.KeyFactors{Salt: string(salt), Iters: iters})
			if err != nil {
				return scram.StoredCredentials{}, err
			}
			n.systemCreds.Store(mech, sc)
			return sc, nil
		}
		doc := n.userDoc(db, user)
		if doc == nil {
			return scram.StoredCredentials{}, fmt.Errorf("user not found")
		}
		cd, ok := doc.Lookup("credentials", mech).DocumentOK()
		if !ok {
			return scram.StoredCredentials{}, fmt.Errorf("no credentials")
		}
		it, _ := cd.Lookup("iterationCount").AsInt64OK()
		s, _ := cd.Lookup("salt").StringValueOK()
		sk, _ := cd.Lookup("storedKey").StringValueOK()
		svk, _ := cd.Lookup("serverKey").StringValueOK()
		salt, _ := base64.StdEncoding.DecodeString(s)
		stored, _ := base64.StdEncoding.DecodeString(sk)
		server, _ := base64.StdEncoding.DecodeString(svk)
		return scram.StoredCredentials{KeyFactors: scram.KeyFactors{Salt: string(salt), Iters: int(it)}, StoredKey: stored, ServerKey: server}, nil
	}
}

func (n *Node) userDoc(db, user string) bson.Raw {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.data.Coll("admin", "system.users", false).Get(mustRV(db + "." + user))
}

// userMechanisms answers hello's saslSupportedMechs: "db.user".
func (n *Node) userMechanisms(s string) bson.A {
	db, user, ok := strings.Cut(s, ".")
	if !ok {
		return nil
	}
	if user == "__system" && db == "local" && n.keyFile != "" {
		return bson.A{"SCRAM-SHA-1", "SCRAM-SHA-256"}
	}
	doc := n.userDoc(db, user)
	if doc == nil {
		return nil
	}
	out := bson.A{}
	for _, m := range []string{"SCRAM-SHA-1", "SCRAM-SHA-256"} {
		if _, err := doc.LookupErr("credentials", m); err == nil {
			out = append(out, m)
		}
	}
	return out
}

func (c *conn) saslStep(req bson.Raw, db string, start bool) (bson.D, error) {
	fail := func() (bson.D, error) {
		c.sasl = nil
		c.n.logI("ACCESS", 20249, "Authentication failed", func(e *zerolog.Event) { e.Str("db", db) })
		return nil, cerr(18, "Authentication failed.")
	}
	_, payload, _ := req.Lookup("payload").BinaryOK()
	if p, ok := req.Lookup("payload").StringValueOK(); ok {
		payload = []byte(p)
	}
	if start {
		mech, _ := req.Lookup("mechanism").StringValueOK()
		var fcn scram.HashGeneratorFcn
		switch mech {
		case "SCRAM-SHA-1":
			fcn = scram.SHA1
		case "SCRAM-SHA-256":
			fcn = scram.SHA256
		default:
			return nil, cerr(2, "Received authentication for mechanism %s which is not enabled", mech)
		}
		srv, err := fcn.NewServer(c.n.lookupCreds(mech, db))
		if err != nil {
			return fail()
		}
		convIDs.Lock()
		convIDs.n++
		id := convIDs.n
		convIDs.Unlock()
		skip, _ := req.Lookup("options", "skipEmptyExchange").BooleanOK()
		c.sasl = &saslConv{id: id, mech: mech, db: db, conv: srv.NewConversation(), skipLast: skip}
	}
	s := c.sasl
	if s == nil {
		return nil, cerr(17, "No SASL session state found")
	}
	if s.done {
		// the empty final exchange without skipEmptyExchange
		c.finishAuth(s)
		return bson.D{{Key: "conversationId", Value: s.id}, {Key: "done", Value: true}, {Key: "payload", Value: bson.Binary{Data: []byte{}}}}, nil
	}
	out, err := s.conv.Step(string(payload))
	if err != nil {
		return fail()
	}
	if s.conv.Done() {
		if !s.conv.Valid() {
			return fail()
		}
		if s.skipLast {
			c.finishAuth(s)
			return bson.D{{Key: "conversationId", Value: s.id}, {Key: "done", Value: true}, {Key: "payload", Value: bson.Binary{Data: []byte(out)}}}, nil
		}
		s.done = true
	}
	return bson.D{{Key: "conversationId", Value: s.id}, {Key: "done", Value: false}, {Key: "payload", Value: bson.Binary{Data: []byte(out)}}}, nil
}

func (c *conn) finishAuth(s *saslConv) {
	user := s.conv.Username()
	c.sasl = nil
	if user == "__system" && s.db == "local" {
		c.internal.Store(true)
		c.users = []authedUser{{user: "__system", db: "local", roles: []RoleRef{{Role: "__system", DB: "admin"}}}}
		return
	}
	doc := c.n.userDoc(s.db, user)
	var roles []RoleRef
	if doc != nil {
		roles = parseRoles(doc.Lookup("roles"), s.db)
	}
	c.users = append(c.users[:0:0], authedUser{user: user, db: s.db, roles: roles})
	c.n.logI("ACCESS", 5286306, "Successfully authenticated", func(e *zerolog.Event) {
		e.Str("user", user).Str("db", s.db).Str("mechanism", s.mech)
	})
}

func (c *conn) cmdSaslStart(req *Request) (bson.D, error) {
	return c.saslStep(req.Body, req.DB(), true)
}

func (c *conn) cmdSaslContinue(req *Request) (bson.D, error) {
	return c.saslStep(req.Body, req.DB(), false)
}

func (c *conn) cmdAuthenticate(req *Request) (bson.D, error) {
	return nil, cerr(2, "Auth mechanism not specified")
}

func (c *conn) cmdLogout(*Request) (bson.D, error) {
	c.users = nil
	return bson.D{}, nil
}

// speculativeAuth runs the first SCRAM step inside hello.
func (c *conn) speculativeAuth(sa bson.Raw, helloDB string) bson.D {
	db, _ := sa.Lookup("db").StringValueOK()
	if db == "" {
		db = helloDB
	}
	if _, ok := sa.Lookup("mechanism").StringValueOK(); !ok {
		return nil
	}
	r, err := c.saslStep(sa, db, true)
	if err != nil {
		return nil
	}
	return r
}

// ------------------------------------------------------------ user admin

func (c *conn) cmdCreateUser(req *Request) (bson.D, error) {
	db := req.DB()
	user, _ := req.Body.Lookup("createUser").StringValueOK()
	if user == "" {
		return nil, cerr(2, "User name must be a non-empty string")
	}
	if c.localhostException() && db != "admin" {
		return nil, cerr(13, "not authorized on %s to execute command { createUser: \"%s\" }", db, user)
	}
	pwd, hasPwd := req.Body.Lookup("pwd").StringValueOK()
	if !hasPwd && db != "$external" {
		return nil, cerr(2, "Must provide a 'pwd' field for all user documents, except those with '$external' as the user's source db")
	}
	if c.n.userDoc(db, user) != nil {
		return nil, cerr(51003, "User \"%s@%s\" already exists", user, db)
	}
	roles := parseRoles(req.Body.Lookup("roles"), db)
	if roles == nil {
		if _, err := req.Body.LookupErr("roles"); err != nil {
			return nil, cerr(4, "BSON field 'createUser.roles' is missing but a required field")
		}
	}
	if e := c.n.checkRolesExist(roles); e != nil {
		return nil, e
	}
	mechs := []string{"SCRAM-SHA-1", "SCRAM-SHA-256"}
	if v, err := req.Body.LookupErr("mechanisms"); err == nil {
		mechs = nil
		arr, _ := v.ArrayOK()
		vals, _ := arr.Values()
		for _, x := range vals {
			s, _ := x.StringValueOK()
			mechs = append(mechs, s)
		}
	}
	creds, err := buildCredentials(user, pwd, mechs)
	if err != nil {
		return nil, err
	}
	uid := make([]byte, 16)
	_, _ = rand.Read(uid)
	uid[6] = uid[6]&0x0f | 0x40
	uid[8] = uid[8]&0x3f | 0x80
	doc := bson.D{{Key: "_id", Value: db + "." + user}, {Key: "userId", Value: bson.Binary{Subtype: 4, Data: uid}},
		{Key: "user", Value: user}, {Key: "db", Value: db}, {Key: "credentials", Value: creds}, {Key: "roles", Value: rolesDoc(roles)}}
	if cd, ok := req.Body.Lookup("customData").DocumentOK(); ok {
		doc = append(doc, bson.E{Key: "customData", Value: cd})
	}
	if _, err := c.n.writeOplog([]opSpec{{op: "i", ns: "admin.system.users", o: mustRaw(doc)}}, false); err != nil {
		return nil, cerr(10107, "not primary")
	}
	if e := c.n.awaitWriteConcern(req); e != nil {
		return bson.D{{Key: "writeConcernError", Value: e}}, nil
	}
	c.n.logI("ACCESS", 20255, "Created user", func(e *zerolog.Event) { e.Str("user", user).Str("db", db) })
	return bson.D{}, nil
}

func rolesDoc(roles []RoleRef) bson.A {
	out := bson.A{}
	for _, r := range roles {
		out = append(out, bson.D{{Key: "role", Value: r.Role}, {Key: "db", Value: r.DB}})
	}
	return out
}

func (n *Node) checkRolesExist(roles []RoleRef) *CmdError {
	for _, r := range roles {
		if isBuiltinRole(r.Role, r.DB) {
			continue
		}
		n.mu.Lock()
		doc := n.data.Coll("admin", "system.roles", false).Get(mustRV(r.DB + "." + r.Role))
		n.mu.Unlock()
		if doc == nil {
			return cerr(31, "Could not find role: %s@%s", r.Role, r.DB)
		}
	}
	return nil
}

func (c *conn) cmdUpdateUser(req *Request) (bson.D, error) {
	db := req.DB()
	user, _ := req.Body.Lookup("updateUser").StringValueOK()
	old := c.n.userDoc(db, user)
	if old == nil {
		return nil, cerr(11, "User %s@%s not found", user, db)
	}
	var d bson.D
	_ = bson.Unmarshal(old, &d)
	set := func(k string, v any) {
		for i := range d {
			if d[i].Key == k {
				d[i].Value = v
				return
			}
		}
		d = append(d, bson.E{Key: k, Value: v})
	}
	if pwd, ok := req.Body.Lookup("pwd").StringValueOK(); ok {
		creds, err := buildCredentials(user, pwd, []string{"SCRAM-SHA-1", "SCRAM-SHA-256"})
		if err != nil {
			return nil, err
		}
		set("credentials", creds)
	}
	if _, err := req.Body.LookupErr("roles"); err == nil {
		roles := parseRoles(req.Body.Lookup("roles"), db)
		if e := c.n.checkRolesExist(roles); e != nil {
			return nil, e
		}
		set("roles", rolesDoc(roles))
	}
	if cd, ok := req.Body.Lookup("customData").DocumentOK(); ok {
		set("customData", cd)
	}
	raw := mustRaw(d)
	if _, err := c.n.writeOplog([]opSpec{{op: "u", ns: "admin.system.users", o: raw, o2: mustRaw(bson.D{{Key: "_id", Value: db + "." + user}})}}, false); err != nil {
		return nil, cerr(10107, "not primary")
	}
	return c.finishWrite(req, bson.D{}), nil
}

func (c *conn) cmdGrantRoles(req *Request) (bson.D, error) {
	db := req.DB()
	user, _ := req.Body.Lookup("grantRolesToUser").StringValueOK()
	old := c.n.userDoc(db, user)
	if old == nil {
		return nil, cerr(11, "Could not find user \"%s\" for db \"%s\"", user, db)
	}
	roles := append(parseRoles(old.Lookup("roles"), db), parseRoles(req.Body.Lookup("roles"), db)...)
	if e := c.n.checkRolesExist(roles); e != nil {
		return nil, e
	}
	var d bson.D
	_ = bson.Unmarshal(old, &d)
	for i := range d {
		if d[i].Key == "roles" {
			d[i].Value = rolesDoc(roles)
		}
	}
	if _, err := c.n.writeOplog([]opSpec{{op: "u", ns: "admin.system.users", o: mustRaw(d), o2: mustRaw(bson.D{{Key: "_id", Value: db + "." + user}})}}, false); err != nil {
		return nil, cerr(10107, "not primary")
	}
	return c.finishWrite(req, bson.D{}), nil
}

func (c *conn) cmdDropUser(req *Request) (bson.D, error) {
	db := req.DB()
	user, _ := req.Body.Lookup("dropUser").StringValueOK()
	if c.n.userDoc(db, user) == nil {
		return nil, cerr(11, "User '%s@%s' not found", user, db)
	}
	if _, err := c.n.writeOplog([]opSpec{{op: "d", ns: "admin.system.users", o: mustRaw(bson.D{{Key: "_id", Value: db + "." + user}})}}, false); err != nil {
		return nil, cerr(10107, "not primary")
	}
	return c.finishWrite(req, bson.D{}), nil
}

func (c *conn) cmdUsersInfo(req *Request) (bson.D, error) {
	n := c.n
	db := req.DB()
	showCreds, _ := req.Body.Lookup("showCredentials").BooleanOK()
	v := req.Body.Lookup("usersInfo")
	type key struct{ user, db string }
	var want []key
	all := false
	switch v.Type {
	case bson.TypeString:
		want = append(want, key{v.StringValue(), db})
	case bson.TypeEmbeddedDocument:
		d := v.Document()
		if b, ok := d.Lookup("forAllDBs").BooleanOK(); ok && b {
			all, db = true, ""
		} else {
			u, _ := d.Lookup("user").StringValueOK()
			udb, _ := d.Lookup("db").StringValueOK()
			want = append(want, key{u, udb})
		}
	case bson.TypeArray:
		vals, _ := v.Array().Values()
		for _, x := range vals {
			if s, ok := x.StringValueOK(); ok {
				want = append(want, key{s, db})
			} else if d, ok := x.DocumentOK(); ok {
				u, _ := d.Lookup("user").StringValueOK()
				udb, _ := d.Lookup("db").StringValueOK()
				want = append(want, key{u, udb})
			}
		}
	default:
		all = true
	}
	n.mu.Lock()
	docs := n.data.Coll("admin", "system.users", false).Docs()
	n.mu.Unlock()
	users := bson.A{}
	for _, d := range docs {
		u, _ := d.Lookup("user").StringValueOK()
		udb, _ := d.Lookup("db").StringValueOK()
		match := all && (db == "" || udb == db)
		for _, w := range want {
			if w.user == u && w.db == udb {
				match = true
			}
		}
		if !match {
			continue
		}
		out := bson.D{{Key: "_id", Value: udb + "." + u}, {Key: "userId", Value: d.Lookup("userId")}, {Key: "user", Value: u},
			{Key: "db", Value: udb}, {Key: "roles", Value: d.Lookup("roles")}}
		if cd, ok := d.Lookup("customData").DocumentOK(); ok {
			out = append(out, bson.E{Key: "customData", Value: cd})
		}
		mechs := bson.A{}
		if cr, ok := d.Lookup("credentials").DocumentOK(); ok {
			els, _ := cr.Elements()
			for _, e := range els {
				mechs = append(mechs, e.Key())
			}
			if showCreds {
				out = append(out, bson.E{Key: "credentials", Value: cr})
			}
		}
		out = append(out, bson.E{Key: "mechanisms", Value: mechs})
		users = append(users, out)
	}
	return bson.D{{Key: "users", Value: users}}, nil
}

func (c *conn) cmdCreateRole(req *Request) (bson.D, error) {
	db := req.DB()
	role, _ := req.Body.Lookup("createRole").StringValueOK()
	if role == "" {
		return nil, cerr(2, "Role name must be a non-empty string")
	}
	if isBuiltinRole(role, db) || builtinRoles[role].actions != nil {
		return nil, cerr(51002, "Role \"%s@%s\" already exists", role, db)
	}
	c.n.mu.Lock()
	exists := c.n.data.Coll("admin", "system.roles", false).Get(mustRV(db+"."+role)) != nil
	c.n.mu.Unlock()
	if exists {
		return nil, cerr(51002, "Role \"%s@%s\" already exists", role, db)
	}
	roles := parseRoles(req.Body.Lookup("roles"), db)
	if e := c.n.checkRolesExist(roles); e != nil {
		return nil, e
	}
	privs, _ := req.Body.Lookup("privileges").ArrayOK()
	if privs == nil {
		privs = bson.RawArray(mustRaw(bson.D{}))
	}
	doc := bson.D{{Key: "_id", Value: db + "." + role}, {Key: "role", Value: role}, {Key: "db", Value: db},
		{Key: "privileges", Value: privs}, {Key: "roles", Value: rolesDoc(roles)}}
	if _, err := c.n.writeOplog([]opSpec{{op: "i", ns: "admin.system.roles", o: mustRaw(doc)}}, false); err != nil {
		return nil, cerr(10107, "not primary")
	}
	return c.finishWrite(req, bson.D{}), nil
}

func (c *conn) cmdDropRole(req *Request) (bson.D, error) {
	db := req.DB()
	role, _ := req.Body.Lookup("dropRole").StringValueOK()
	c.n.mu.Lock()
	exists := c.n.data.Coll("admin", "system.roles", false).Get(mustRV(db+"."+role)) != nil
	c.n.mu.Unlock()
	if !exists {
		return nil, cerr(31, "Role '%s@%s' not found", role, db)
	}
	if _, err := c.n.writeOplog([]opSpec{{op: "d", ns: "admin.system.roles", o: mustRaw(bson.D{{Key: "_id", Value: db + "." + role}})}}, false); err != nil {
		return nil, cerr(10107, "not primary")
	}
	return c.finishWrite(req, bson.D{}), nil
}

func (c *conn) cmdRolesInfo(req *Request) (bson.D, error) {
	db := req.DB()
	v := req.Body.Lookup("rolesInfo")
	showBuiltin, _ := req.Body.Lookup("showBuiltinRoles").BooleanOK()
	var want []RoleRef
	all := false
	switch v.Type {
	case bson.TypeString:
		want = []RoleRef{{Role: v.StringValue(), DB: db}}
	case bson.TypeEmbeddedDocument:
		d := v.Document()
		r, _ := d.Lookup("role").StringValueOK()
		rdb, _ := d.Lookup("db").StringValueOK()
		want = []RoleRef{{Role: r, DB: rdb}}
	case bson.TypeArray:
		want = parseRoles(v, db)
	default:
		all = true
	}
	out := bson.A{}
	roleDoc := func(r RoleRef, builtin bool, inherited bson.RawValue) bson.D {
		d := bson.D{{Key: "_id", Value: r.DB + "." + r.Role}, {Key: "role", Value: r.Role}, {Key: "db", Value: r.DB},
			{Key: "isBuiltin", Value: builtin}}
		if builtin {
			d = append(d, bson.E{Key: "roles", Value: bson.A{}}, bson.E{Key: "inheritedRoles", Value: bson.A{}})
		} else {
			d = append(d, bson.E{Key: "roles", Value: inherited}, bson.E{Key: "inheritedRoles", Value: inherited})
		}
		return d
	}
	c.n.mu.Lock()
	docs := c.n.data.Coll("admin", "system.roles", false).Docs()
	c.n.mu.Unlock()
	if all {
		if showBuiltin {
			for _, name := range sortedKeys(builtinRoles) {
				if name != "__system" && isBuiltinRole(name, db) {
					out = append(out, roleDoc(RoleRef{name, db}, true, bson.RawValue{}))
				}
			}
		}
		for _, d := range docs {
			if rdb, _ := d.Lookup("db").StringValueOK(); rdb == db {
				r, _ := d.Lookup("role").StringValueOK()
				out = append(out, roleDoc(RoleRef{r, rdb}, false, d.Lookup("roles")))
			}
		}
		return bson.D{{Key: "roles", Value: out}}, nil
	}
	for _, w := range want {
		if isBuiltinRole(w.Role, w.DB) {
			out = append(out, roleDoc(w, true, bson.RawValue{}))
			continue
		}
		for _, d := range docs {
			r, _ := d.Lookup("role").StringValueOK()
			rdb, _ := d.Lookup("db").StringValueOK()
			if r == w.Role && rdb == w.DB {
				out = append(out, roleDoc(w, false, d.Lookup("roles")))
			}
		}
	}
	return bson.D{{Key: "roles", Value: out}}, nil
}
