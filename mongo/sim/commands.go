package sim

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
)

type cmdClass int

const (
	classAlways cmdClass = iota // runs in any state
	classRead                   // kOptIn: primary, or secondary with secondaryOk
	classWrite                  // kNever: writable primary only
)

// Action categories used for authorization.
const (
	actNone           = ""
	actRead           = "read"
	actWrite          = "write"
	actDBAdmin        = "dbAdmin"
	actUserAdmin      = "userAdmin"
	actClusterAdmin   = "clusterAdmin"
	actClusterMonitor = "clusterMonitor"
	actInternal       = "internal"
)

type command struct {
	fn       func(c *conn, req *Request) (bson.D, error)
	class    cmdClass
	noAuth   bool
	action   string
	legacyOK bool
}

var commands map[string]command

func init() {
	hello := command{fn: (*conn).cmdHello, noAuth: true, legacyOK: true}
	commands = map[string]command{
		"hello": hello, "isMaster": hello, "ismaster": hello,
		"ping":                    {fn: (*conn).cmdPing, noAuth: true},
		"buildInfo":               {fn: (*conn).cmdBuildInfo, noAuth: true, legacyOK: true},
		"buildinfo":               {fn: (*conn).cmdBuildInfo, noAuth: true, legacyOK: true},
		"getParameter":            {fn: (*conn).cmdGetParameter, action: actClusterMonitor},
		"serverStatus":            {fn: (*conn).cmdServerStatus, action: actClusterMonitor},
		"getCmdLineOpts":          {fn: (*conn).cmdGetCmdLineOpts, action: actClusterMonitor},
		"connectionStatus":        {fn: (*conn).cmdConnectionStatus, noAuth: true},
		"endSessions":             {fn: (*conn).cmdOK, noAuth: true},
		"logout":                  {fn: (*conn).cmdLogout, noAuth: true},
		"getLog":                  {fn: (*conn).cmdGetLog, action: actClusterMonitor},
		"hostInfo":                {fn: (*conn).cmdHostInfo, action: actClusterMonitor},
		"whatsmyuri":              {fn: (*conn).cmdWhatsMyURI, noAuth: true},
		"getFreeMonitoringStatus": {fn: (*conn).cmdOK, action: actClusterMonitor},
		"currentOp":               {fn: (*conn).cmdCurrentOp, action: actClusterMonitor},
		"killOp":                  {fn: (*conn).cmdKillOp, action: actClusterAdmin},
		"fsync":                   {fn: (*conn).cmdFsync, action: actClusterAdmin},
		"logRotate":               {fn: (*conn).cmdOK, action: actClusterAdmin},
		"getDefaultRWConcern":     {fn: (*conn).cmdGetDefaultRWConcern, action: actClusterMonitor},
		"setDefaultRWConcern":     {fn: (*conn).cmdSetDefaultRWConcern, action: actClusterAdmin},
		"_isSelf":                 {fn: (*conn).cmdIsSelf, noAuth: true, legacyOK: true},
		"saslStart":               {fn: (*conn).cmdSaslStart, noAuth: true, legacyOK: true},
		"saslContinue":            {fn: (*conn).cmdSaslContinue, noAuth: true, legacyOK: true},
		"authenticate":            {fn: (*conn).cmdAuthenticate, noAuth: true, legacyOK: true},
		"shutdown":                {fn: (*conn).cmdShutdown, action: actClusterAdmin},
		// replica set
		"replSetInitiate":     {fn: (*conn).cmdReplSetInitiate, action: actClusterAdmin},
		"replSetGetStatus":    {fn: (*conn).cmdReplSetGetStatus, action: actClusterMonitor},
		"replSetGetConfig":    {fn: (*conn).cmdReplSetGetConfig, action: actClusterMonitor},
		"replSetReconfig":     {fn: (*conn).cmdReplSetReconfig, action: actClusterAdmin},
		"replSetStepDown":     {fn: (*conn).cmdReplSetStepDown, action: actClusterAdmin},
		"replSetFreeze":       {fn: (*conn).cmdReplSetFreeze, action: actClusterAdmin},
		"replSetStepUp":       {fn: (*conn).cmdReplSetStepUp, action: actClusterAdmin},
		"replSetHeartbeat":    {fn: (*conn).cmdReplSetHeartbeat, action: actInternal},
		"replSetRequestVotes": {fn: (*conn).cmdReplSetRequestVotes, action: actInternal},
		"_simOplogFetch":      {fn: (*conn).cmdOplogFetch, action: actInternal},
		"_simOplogFind":       {fn: (*conn).cmdOplogFind, action: actInternal},
		// users and roles
		"createUser":       {fn: (*conn).cmdCreateUser, class: classWrite, action: actUserAdmin},
		"updateUser":       {fn: (*conn).cmdUpdateUser, class: classWrite, action: actUserAdmin},
		"dropUser":         {fn: (*conn).cmdDropUser, class: classWrite, action: actUserAdmin},
		"usersInfo":        {fn: (*conn).cmdUsersInfo, class: classRead, action: actUserAdmin},
		"createRole":       {fn: (*conn).cmdCreateRole, class: classWrite, action: actUserAdmin},
		"dropRole":         {fn: (*conn).cmdDropRole, class: classWrite, action: actUserAdmin},
		"rolesInfo":        {fn: (*conn).cmdRolesInfo, class: classRead, action: actUserAdmin},
		"grantRolesToUser": {fn: (*conn).cmdGrantRoles, class: classWrite, action: actUserAdmin},
		// data
		"insert":          {fn: (*conn).cmdInsert, class: classWrite, action: actWrite},
		"update":          {fn: (*conn).cmdUpdate, class: classWrite, action: actWrite},
		"delete":          {fn: (*conn).cmdDelete, class: classWrite, action: actWrite},
		"find":            {fn: (*conn).cmdFind, class: classRead, action: actRead},
		"getMore":         {fn: (*conn).cmdGetMore, action: actRead},
		"killCursors":     {fn: (*conn).cmdKillCursors, action: actRead},
		"count":           {fn: (*conn).cmdCount, class: classRead, action: actRead},
		"distinct":        {fn: (*conn).cmdDistinct, class: classRead, action: actRead},
		"findAndModify":   {fn: (*conn).cmdFindAndModify, class: classWrite, action: actWrite},
		"findandmodify":   {fn: (*conn).cmdFindAndModify, class: classWrite, action: actWrite},
		"aggregate":       {fn: (*conn).cmdAggregate, class: classRead, action: actRead},
		"listDatabases":   {fn: (*conn).cmdListDatabases, class: classRead, action: actRead},
		"listCollections": {fn: (*conn).cmdListCollections, class: classRead, action: actRead},
		"listIndexes":     {fn: (*conn).cmdListIndexes, class: classRead, action: actRead},
		"create":          {fn: (*conn).cmdCreate, class: classWrite, action: actWrite},
		"createIndexes":   {fn: (*conn).cmdCreateIndexes, class: classWrite, action: actWrite},
		"drop":            {fn: (*conn).cmdDrop, class: classWrite, action: actWrite},
		"dropDatabase":    {fn: (*conn).cmdDropDatabase, class: classWrite, action: actWrite},
		"dbStats":         {fn: (*conn).cmdDBStats, class: classRead, action: actRead},
		"collStats":       {fn: (*conn).cmdCollStats, class: classRead, action: actRead},

		// Replication slice (elections, stepdown, TLS).
		"replSetMaintenance": {fn: (*conn).cmdReplSetMaintenance, action: "replSetStateChange"},
		"replSetSyncFrom":    {fn: (*conn).cmdReplSetSyncFrom, action: "replSetStateChange"},
	}
}

var legacyNames = map[string]bool{"hello": true, "isMaster": true, "ismaster": true, "_isSelf": true, "authenticate": true,
	"buildinfo": true, "buildInfo": true, "saslStart": true, "saslContinue": true}

// handle runs one request and returns the reply document; nil means
// close the connection without replying (shutdown).
func (c *conn) handle(req *Request) (reply bson.D, closeAfter bool) {
	n := c.n
	name := req.Name()
	_, txnErr := req.Body.LookupErr("txnNumber")
	retryable := txnErr == nil
	fail := func(e *CmdError) (bson.D, bool) {
		d := n.errorDoc(e, retryable && commands[name].class == classWrite)
		if n.cfg.ReplSet != "" {
			d = append(d, n.clusterTimeFields()...)
		}
		return d, false
	}
	if req.Legacy && !legacyNames[name] {
		return fail(cerr(352, "Unsupported OP_QUERY command: %s. The client driver may require an upgrade. For more details see https://dochub.mongodb.org/core/legacy-opcode-removal", name))
	}
	cmd, ok := commands[name]
	if !ok {
		return fail(cerr(59, "no such command: '%s'", name))
	}
	db := req.DB()
	if n.cfg.Auth && !cmd.noAuth {
		if !c.authenticated() && !c.localhostException() {
			return fail(cerr(13, "Command %s requires authentication", name))
		}
		if !c.authorized(cmd.action, db, name) {
			return fail(cerr(13, "not authorized on %s to execute command { %s: %s }", db, name, shortVal(req.Body.Lookup(name))))
		}
	}
	if n.cfg.ReplSet != "" && cmd.class != classAlways && db != "local" {
		if e := n.checkCanRun(cmd.class, req, !c.helloOk); e != nil {
			return fail(e)
		}
	}
	out, err := c.safeCall(cmd.fn, req)
	if err != nil {
		if errors.Is(err, errCloseConn) {
			return nil, true
		}
		var ce *CmdError
		if !errors.As(err, &ce) {
			ce = cerr(1, "%v", err)
		}
		return fail(ce)
	}
	out = append(out, bson.E{Key: "ok", Value: 1.0})
	if n.cfg.ReplSet != "" {
		out = append(out, n.clusterTimeFields()...)
	}
	return out, false
}

var errCloseConn = fmt.Errorf("close connection")

func (c *conn) safeCall(fn func(*conn, *Request) (bson.D, error), req *Request) (out bson.D, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = cerr(1, "internal error in simulator: %v", r)
		}
	}()
	return fn(c, req)
}

func shortVal(v bson.RawValue) string {
	s := v.String()
	if len(s) > 60 {
		s = s[:60] + "..."
	}
	return s
}

// checkCanRun applies mongod's commandCanRunHere rules (spec §7); legacy
// connections (no helloOk in their handshake) get the old wording.
func (n *Node) checkCanRun(class cmdClass, req *Request, legacy bool) *CmdError {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.canAcceptWritesLocked() {
		return nil
	}
	if class == classWrite {
		if legacy {
			return cerr(10107, "not master")
		}
		return cerr(10107, "not primary")
	}
	// A primary that is draining or stepping down cannot accept writes, and
	// mongod then serves reads only to secondaryOk readers, as a secondary.
	secOK := false
	if rp, err := req.Body.LookupErr("$readPreference"); err == nil {
		if d, ok := rp.DocumentOK(); ok {
			if m, _ := d.Lookup("mode").StringValueOK(); m != "" && m != "primary" {
				secOK = true
			}
		}
	}
	if !secOK {
		if legacy {
			return cerr(13435, "not master and slaveOk=false")
		}
		return cerr(13435, "not primary and secondaryOk=false")
	}
	if n.state != StateSecondary && n.state != StatePrimary {
		if legacy {
			return cerr(13436, "node is recovering")
		}
		return cerr(13436, "not primary or secondary; cannot currently read from this replSet member")
	}
	return nil
}

func (c *conn) cmdOK(*Request) (bson.D, error)   { return bson.D{}, nil }
func (c *conn) cmdPing(*Request) (bson.D, error) { return bson.D{}, nil }

func (c *conn) cmdWhatsMyURI(*Request) (bson.D, error) {
	return bson.D{{Key: "you", Value: c.nc.RemoteAddr().String()}}, nil
}

func (c *conn) cmdBuildInfo(*Request) (bson.D, error) {
	return bson.D{{Key: "version", Value: Version}, {Key: "gitVersion", Value: GitVersion}, {Key: "modules", Value: bson.A{}},
		{Key: "allocator", Value: "tcmalloc"}, {Key: "javascriptEngine", Value: "mozjs"}, {Key: "sysInfo", Value: "deprecated"},
		{Key: "versionArray", Value: bson.A{int32(7), int32(0), int32(14), int32(0)}},
		{Key: "openssl", Value: bson.D{{Key: "running", Value: "OpenSSL 3.0.2 15 Mar 2022"}, {Key: "compiled", Value: "OpenSSL 3.0.2 15 Mar 2022"}}},
		{Key: "buildEnvironment", Value: bson.D{{Key: "distmod", Value: "ubuntu2204"}, {Key: "distarch", Value: "x86_64"}, {Key: "target_arch", Value: "x86_64"}}},
		{Key: "bits", Value: int32(64)}, {Key: "debug", Value: false}, {Key: "maxBsonObjectSize", Value: int32(maxBSONSize)},
		{Key: "storageEngines", Value: bson.A{"devnull", "wiredTiger"}}}, nil
}

func (n *Node) parameters() bson.D {
	p := bson.D{{Key: "featureCompatibilityVersion", Value: bson.D{{Key: "version", Value: "7.0"}}},
		{Key: "authenticationMechanisms", Value: bson.A{"SCRAM-SHA-1", "SCRAM-SHA-256"}},
		{Key: "scramIterationCount", Value: int32(10000)}, {Key: "scramSHA256IterationCount", Value: int32(15000)},
		{Key: "enableLocalhostAuthBypass", Value: true}, {Key: "logLevel", Value: int32(0)},
		{Key: "replElectionTimeoutOffsetLimitFraction", Value: 0.15}, {Key: "periodicNoopIntervalSecs", Value: int32(10)},
		{Key: "clusterAuthMode", Value: n.cfg.ClusterAuth}, {Key: "tlsMode", Value: tlsModeOr(n.cfg.TLSMode)}}
	for k, v := range n.cfg.SetParameters {
		found := false
		for i := range p {
			if p[i].Key == k {
				p[i].Value, found = v, true
			}
		}
		if !found {
			p = append(p, bson.E{Key: k, Value: v})
		}
	}
	return p
}

func tlsModeOr(m string) string {
	if m == "" {
		return "disabled"
	}
	return m
}

func (c *conn) cmdGetParameter(req *Request) (bson.D, error) {
	all := c.n.parameters()
	v := req.Body.Lookup("getParameter")
	if s, ok := v.StringValueOK(); ok && s == "*" {
		return all, nil
	}
	if d, ok := v.DocumentOK(); ok {
		if b, _ := d.Lookup("allParameters").BooleanOK(); b {
			return all, nil
		}
	}
	var out bson.D
	elems, _ := req.Body.Elements()
	for _, e := range elems[1:] {
		k := e.Key()
		if strings.HasPrefix(k, "$") || k == "lsid" || k == "comment" {
			continue
		}
		for _, p := range all {
			if p.Key == k {
				out = append(out, p)
			}
		}
	}
	if len(out) == 0 {
		return nil, cerr(72, "no option found to get")
	}
	return out, nil
}

func (c *conn) cmdGetCmdLineOpts(*Request) (bson.D, error) {
	return bson.D{{Key: "argv", Value: c.n.cfg.Argv}, {Key: "parsed", Value: c.n.cfg.Parsed}}, nil
}

func (c *conn) cmdHostInfo(*Request) (bson.D, error) {
	h, _ := os.Hostname()
	return bson.D{{Key: "system", Value: bson.D{{Key: "currentTime", Value: bson.NewDateTimeFromTime(time.Now())},
		{Key: "hostname", Value: h}, {Key: "cpuAddrSize", Value: int32(64)}, {Key: "numCores", Value: int32(runtime.NumCPU())}, {Key: "cpuArch", Value: runtime.GOARCH}}},
		{Key: "os", Value: bson.D{{Key: "type", Value: "Linux"}}}, {Key: "extra", Value: bson.D{}}}, nil
}

func (c *conn) cmdGetLog(req *Request) (bson.D, error) {
	if s, _ := req.Body.Lookup("getLog").StringValueOK(); s == "*" {
		return bson.D{{Key: "names", Value: bson.A{"global", "startupWarnings"}}}, nil
	}
	return bson.D{{Key: "totalLinesWritten", Value: int32(0)}, {Key: "log", Value: bson.A{}}}, nil
}

func (c *conn) cmdServerStatus(*Request) (bson.D, error) {
	n := c.n
	host, _ := os.Hostname()
	up := time.Since(n.started)
	n.connMu.Lock()
	cur, total := n.connCount, n.connTotal
	n.connMu.Unlock()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	d := bson.D{{Key: "host", Value: fmt.Sprintf("%s:%d", host, n.cfg.Port)}, {Key: "version", Value: Version},
		{Key: "process", Value: "mongod"}, {Key: "pid", Value: int64(os.Getpid())}, {Key: "uptime", Value: up.Seconds()},
		{Key: "uptimeMillis", Value: up.Milliseconds()}, {Key: "uptimeEstimate", Value: int64(up.Seconds())},
		{Key: "localTime", Value: bson.NewDateTimeFromTime(time.Now())},
		{Key: "connections", Value: bson.D{{Key: "current", Value: int32(cur)}, {Key: "available", Value: int32(838860 - cur)},
			{Key: "totalCreated", Value: int32(total)}, {Key: "active", Value: int32(1)}, {Key: "awaitingTopologyChanges", Value: int32(0)}}},
		{Key: "mem", Value: bson.D{{Key: "bits", Value: int32(64)}, {Key: "resident", Value: int32(m.Sys >> 20)}, {Key: "virtual", Value: int32(m.Sys >> 20)}, {Key: "supported", Value: true}}},
	}
	if n.cfg.ReplSet != "" {
		n.mu.Lock()
		repl := n.helloReplFieldsLocked(true, defaultHorizon)
		repl = append(repl, bson.E{Key: "rbid", Value: n.rbid}, bson.E{Key: "userWriteBlockMode", Value: int32(1)})
		n.mu.Unlock()
		d = append(d, bson.E{Key: "repl", Value: repl})
	}
	d = append(d, bson.E{Key: "storageEngine", Value: bson.D{{Key: "name", Value: "wiredTiger"}, {Key: "supportsCommittedReads", Value: true}, {Key: "persistent", Value: true}}})
	return d, nil
}

func (c *conn) cmdConnectionStatus(req *Request) (bson.D, error) {
	users := bson.A{}
	roles := bson.A{}
	for _, u := range c.users {
		users = append(users, bson.D{{Key: "user", Value: u.user}, {Key: "db", Value: u.db}})
		for _, r := range u.roles {
			roles = append(roles, bson.D{{Key: "role", Value: r.Role}, {Key: "db", Value: r.DB}})
		}
	}
	info := bson.D{{Key: "authenticatedUsers", Value: users}, {Key: "authenticatedUserRoles", Value: roles}}
	if b, _ := req.Body.Lookup("showPrivileges").BooleanOK(); b {
		info = append(info, bson.E{Key: "authenticatedUserPrivileges", Value: bson.A{}})
	}
	return bson.D{{Key: "authInfo", Value: info}}, nil
}

func (c *conn) cmdIsSelf(*Request) (bson.D, error) {
	return bson.D{{Key: "id", Value: c.n.processID}}, nil
}

func (c *conn) cmdShutdown(req *Request) (bson.D, error) {
	n := c.n
	force, _ := req.Body.Lookup("force").BooleanOK()
	timeout := 15 * time.Second
	if v, ok := req.Body.Lookup("timeoutSecs").AsInt64OK(); ok {
		timeout = time.Duration(v) * time.Second
	}
	if req.DB() != "admin" {
		return nil, cerr(13, "shutdown must run from admin db")
	}
	n.mu.Lock()
	isPrimary := n.state == StatePrimary
	n.mu.Unlock()
	if isPrimary && !force {
		if err := n.stepDown(timeout, timeout, false, time.Now().Add(timeout)); err != nil {
			return nil, err
		}
	}
	n.logI("COMMAND", 4695400, "Terminating via shutdown command", func(e *zerolog.Event) { e.Bool("force", force).Int64("timeoutSecs", int64(timeout.Seconds())) })
	go func() {
		time.Sleep(10 * time.Millisecond)
		n.requestShutdown()
	}()
	return nil, errCloseConn
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// cmdCurrentOp reports no operations in progress: the simulator's
// operations are short and not listed.
func (c *conn) cmdCurrentOp(*Request) (bson.D, error) {
	return bson.D{{Key: "inprog", Value: bson.A{}}}, nil
}

func (c *conn) cmdKillOp(*Request) (bson.D, error) {
	return bson.D{{Key: "info", Value: "attempting to kill op"}}, nil
}

// cmdFsync: every write is already fsync'd; lock is not modelled.
func (c *conn) cmdFsync(req *Request) (bson.D, error) {
	if lock, _ := req.Body.Lookup("lock").BooleanOK(); lock {
		return nil, cerr(115, "fsync lock is not supported by mongod-sim")
	}
	return bson.D{{Key: "numFiles", Value: int32(1)}}, nil
}

func (c *conn) cmdGetDefaultRWConcern(*Request) (bson.D, error) {
	c.n.mu.Lock()
	wc := c.n.defaultWC
	c.n.mu.Unlock()
	src := "implicit"
	if wc == nil {
		wc = bson.D{{Key: "w", Value: "majority"}, {Key: "wtimeout", Value: int32(0)}}
	} else {
		src = "global"
	}
	return bson.D{{Key: "defaultReadConcern", Value: bson.D{{Key: "level", Value: "local"}}},
		{Key: "defaultWriteConcern", Value: wc}, {Key: "defaultWriteConcernSource", Value: src},
		{Key: "defaultReadConcernSource", Value: "implicit"}, {Key: "localUpdateWallClockTime", Value: bson.NewDateTimeFromTime(time.Now())}}, nil
}

// cmdSetDefaultRWConcern records the default write concern (not replicated,
// and not applied to writes: they use what the client sends or w:1).
func (c *conn) cmdSetDefaultRWConcern(req *Request) (bson.D, error) {
	if wc, ok := req.Body.Lookup("defaultWriteConcern").DocumentOK(); ok {
		var d bson.D
		_ = bson.Unmarshal(wc, &d)
		c.n.mu.Lock()
		c.n.defaultWC = d
		c.n.mu.Unlock()
	}
	return c.cmdGetDefaultRWConcern(req)
}
