package sim

import (
	"errors"
	"fmt"
	"sort"
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

type command struct {
	fn     func(c *conn, req *Request) (bson.D, error)
	class  cmdClass
	noAuth bool
	// action is mongod's privilege action the command needs, checked on
	// the cluster, the database or the namespace it names (commandTarget);
	// authzRules holds the commands that check more.
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
		"getParameter":            {fn: (*conn).cmdGetParameter, action: "getParameter"},
		"serverStatus":            {fn: (*conn).cmdServerStatus, action: "serverStatus"},
		"getCmdLineOpts":          {fn: (*conn).cmdGetCmdLineOpts, action: "getCmdLineOpts"},
		"connectionStatus":        {fn: (*conn).cmdConnectionStatus, noAuth: true},
		"endSessions":             {fn: (*conn).cmdEndSessions, noAuth: true},
		"logout":                  {fn: (*conn).cmdLogout, noAuth: true},
		"getLog":                  {fn: (*conn).cmdGetLog, action: "getLog"},
		"hostInfo":                {fn: (*conn).cmdHostInfo, action: "hostInfo"},
		"whatsmyuri":              {fn: (*conn).cmdWhatsMyURI, noAuth: true},
		"getFreeMonitoringStatus": {fn: (*conn).cmdOK, action: "checkFreeMonitoringStatus"},
		"currentOp":               {fn: (*conn).cmdCurrentOp, action: "inprog"},
		"killOp":                  {fn: (*conn).cmdKillOp, action: "killop"},
		"fsync":                   {fn: (*conn).cmdFsync, action: "fsync"},
		"logRotate":               {fn: (*conn).cmdOK, action: "logRotate"},
		"getDefaultRWConcern":     {fn: (*conn).cmdGetDefaultRWConcern, action: "getDefaultRWConcern"},
		"setDefaultRWConcern":     {fn: (*conn).cmdSetDefaultRWConcern, action: "setDefaultRWConcern"},
		"_isSelf":                 {fn: (*conn).cmdIsSelf, noAuth: true, legacyOK: true},
		"saslStart":               {fn: (*conn).cmdSaslStart, noAuth: true, legacyOK: true},
		"saslContinue":            {fn: (*conn).cmdSaslContinue, noAuth: true, legacyOK: true},
		"authenticate":            {fn: (*conn).cmdAuthenticate, noAuth: true, legacyOK: true},
		"shutdown":                {fn: (*conn).cmdShutdown, action: "shutdown"},
		// replica set
		"replSetInitiate":     {fn: (*conn).cmdReplSetInitiate, action: "replSetConfigure"},
		"replSetGetStatus":    {fn: (*conn).cmdReplSetGetStatus, action: "replSetGetStatus"},
		"replSetGetConfig":    {fn: (*conn).cmdReplSetGetConfig, action: "replSetGetConfig"},
		"replSetReconfig":     {fn: (*conn).cmdReplSetReconfig, action: "replSetConfigure"},
		"replSetStepDown":     {fn: (*conn).cmdReplSetStepDown, action: "replSetStateChange"},
		"replSetFreeze":       {fn: (*conn).cmdReplSetFreeze, action: "replSetStateChange"},
		"replSetStepUp":       {fn: (*conn).cmdReplSetStepUp, action: "replSetStateChange"},
		"replSetHeartbeat":    {fn: (*conn).cmdReplSetHeartbeat, action: "internal"},
		"replSetRequestVotes": {fn: (*conn).cmdReplSetRequestVotes, action: "internal"},
		"_simOplogFetch":      {fn: (*conn).cmdOplogFetch, action: "internal"},
		"_simOplogFind":       {fn: (*conn).cmdOplogFind, action: "internal"},
		// users and roles
		"createUser":               {fn: (*conn).cmdCreateUser, class: classWrite, action: "createUser"},
		"updateUser":               {fn: (*conn).cmdUpdateUser, class: classWrite, action: "updateUser"},
		"dropUser":                 {fn: (*conn).cmdDropUser, class: classWrite, action: "dropUser"},
		"dropAllUsersFromDatabase": {fn: (*conn).cmdDropAllUsers, class: classWrite, action: "dropUser"},
		"usersInfo":                {fn: (*conn).cmdUsersInfo, class: classRead, action: "viewUser"},
		"grantRolesToUser":         {fn: (*conn).cmdGrantRoles, class: classWrite, action: "grantRole"},
		"revokeRolesFromUser":      {fn: (*conn).cmdRevokeRoles, class: classWrite, action: "revokeRole"},
		"createRole":               {fn: (*conn).cmdCreateRole, class: classWrite, action: "createRole"},
		"updateRole":               {fn: (*conn).cmdUpdateRole, class: classWrite, action: "updateRole"},
		"dropRole":                 {fn: (*conn).cmdDropRole, class: classWrite, action: "dropRole"},
		"dropAllRolesFromDatabase": {fn: (*conn).cmdDropAllRoles, class: classWrite, action: "dropRole"},
		"grantPrivilegesToRole":    {fn: (*conn).cmdGrantPrivilegesToRole, class: classWrite, action: "grantRole"},
		"revokePrivilegesFromRole": {fn: (*conn).cmdRevokePrivilegesFromRole, class: classWrite, action: "revokeRole"},
		"grantRolesToRole":         {fn: (*conn).cmdGrantRolesToRole, class: classWrite, action: "grantRole"},
		"revokeRolesFromRole":      {fn: (*conn).cmdRevokeRolesFromRole, class: classWrite, action: "revokeRole"},
		"rolesInfo":                {fn: (*conn).cmdRolesInfo, class: classRead, action: "viewRole"},
		// data
		"insert":          {fn: (*conn).cmdInsert, class: classWrite, action: "insert"},
		"update":          {fn: (*conn).cmdUpdate, class: classWrite, action: "update"},
		"delete":          {fn: (*conn).cmdDelete, class: classWrite, action: "remove"},
		"find":            {fn: (*conn).cmdFind, class: classRead, action: "find"},
		"getMore":         {fn: (*conn).cmdGetMore, action: "find"},
		"killCursors":     {fn: (*conn).cmdKillCursors}, // own cursors: any authenticated user
		"count":           {fn: (*conn).cmdCount, class: classRead, action: "find"},
		"distinct":        {fn: (*conn).cmdDistinct, class: classRead, action: "find"},
		"findAndModify":   {fn: (*conn).cmdFindAndModify, class: classWrite, action: "update"},
		"findandmodify":   {fn: (*conn).cmdFindAndModify, class: classWrite, action: "update"},
		"aggregate":       {fn: (*conn).cmdAggregate, class: classRead, action: "find"},
		"listDatabases":   {fn: (*conn).cmdListDatabases, class: classRead, action: "listDatabases"},
		"listCollections": {fn: (*conn).cmdListCollections, class: classRead, action: "listCollections"},
		"listIndexes":     {fn: (*conn).cmdListIndexes, class: classRead, action: "listIndexes"},
		"create":          {fn: (*conn).cmdCreate, class: classWrite, action: "createCollection"},
		"createIndexes":   {fn: (*conn).cmdCreateIndexes, class: classWrite, action: "createIndex"},
		"drop":            {fn: (*conn).cmdDrop, class: classWrite, action: "dropCollection"},
		"dropDatabase":    {fn: (*conn).cmdDropDatabase, class: classWrite, action: "dropDatabase"},
		"dbStats":         {fn: (*conn).cmdDBStats, class: classRead, action: "dbStats"},
		"collStats":       {fn: (*conn).cmdCollStats, class: classRead, action: "collStats"},
		// indexes and collection DDL (slice sim-index)
		"dropIndexes":      {fn: (*conn).cmdDropIndexes, class: classWrite, action: "dropIndex"},
		"deleteIndexes":    {fn: (*conn).cmdDropIndexes, class: classWrite, action: "dropIndex"},
		"collMod":          {fn: (*conn).cmdCollMod, class: classWrite, action: "collMod"},
		"renameCollection": {fn: (*conn).cmdRenameCollection, class: classWrite, action: "renameCollectionSameDB"},
		"applyOps":         {fn: (*conn).cmdApplyOps, class: classWrite, action: "applyOps"},
		// oplog slice: bounded oplog and initial sync by cloning
		"replSetResizeOplog": {fn: (*conn).cmdReplSetResizeOplog, action: "replSetResizeOplog"},
		"_simClone":          {fn: (*conn).cmdClone, action: "internal"},
		// admin slice: server parameters, FCV, introspection (mongod's privilege actions)
		"setParameter":                   {fn: (*conn).cmdSetParameter, action: "setParameter"},
		"setFeatureCompatibilityVersion": {fn: (*conn).cmdSetFeatureCompatibilityVersion, action: "setFeatureCompatibilityVersion"},
		"listCommands":                   {fn: (*conn).cmdListCommands, noAuth: true},
		"top":                            {fn: (*conn).cmdTop, action: "top"},
		"validate":                       {fn: (*conn).cmdValidate, class: classRead, action: "validate"},
		"dbHash":                         {fn: (*conn).cmdDBHash, class: classRead, action: "dbHash"},
		"dbhash":                         {fn: (*conn).cmdDBHash, class: classRead, action: "dbHash"},
		"getDiagnosticData":              {fn: (*conn).cmdGetDiagnosticData, action: "serverStatus"},
		"explain":                        {fn: (*conn).cmdExplain, class: classRead, action: "find"},
		// write slice: transactions (mongod checks no privilege for these)
		"commitTransaction": {fn: (*conn).cmdCommitTransaction, class: classWrite},
		"abortTransaction":  {fn: (*conn).cmdAbortTransaction, class: classWrite},
		// replication slice: maintenance mode and sync source
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
	retryable := txnErr == nil && (!inTransaction(req) || name == "commitTransaction" || name == "abortTransaction")
	fail := func(e *CmdError) (bson.D, bool) {
		txnErrorLabels(req, name, e)
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
	op := n.metrics.begin(c, req, name, ok)
	failed := true
	defer func() { n.metrics.end(op, ok, failed) }()
	if !ok {
		return fail(cerr(59, "no such command: '%s'", name))
	}
	db := req.DB()
	if e := c.checkAuthz(name, cmd, req); e != nil {
		return fail(e)
	}
	if n.cfg.ReplSet != "" && cmd.class != classAlways && db != "local" {
		if e := n.checkCanRun(cmd.class, req, !c.helloOk); e != nil {
			return fail(e)
		}
	}
	if e := c.beginStatement(req, name); e != nil {
		return fail(e)
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
	failed = false
	n.metrics.returnedDocs(out)
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

// checkCanRun applies mongod's commandCanRunHere rules (spec §7); legacy
// connections (no helloOk in their handshake) get the old wording.
// It reads the replication view (replview.go); a write checks again under
// n.mu before it is applied (writeOplogLocked).
func (n *Node) checkCanRun(class cmdClass, req *Request, legacy bool) *CmdError {
	v := n.replState()
	if v.canAcceptWrites() {
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
	if v.state != StateSecondary && v.state != StatePrimary {
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

// cmdFsync: every write is already fsync'd; lock is not modelled.
func (c *conn) cmdFsync(req *Request) (bson.D, error) {
	if lock, _ := req.Body.Lookup("lock").BooleanOK(); lock {
		return nil, cerr(115, "fsync lock is not supported by mongod-sim")
	}
	return bson.D{{Key: "numFiles", Value: int32(1)}}, nil
}
