package sim

import (
	"fmt"
	"sort"
	"strings"
)

// A builtin role's grant, relative to the database the role is granted on
// (mongod's builtin_roles.yml match types): "database" and "exact" default
// to that database; "collection" is a name in any database; "normal" is
// any normal resource; "cluster"; "any" is anyResource.
type grant struct {
	match, db, coll string
	actions         []string
}

type builtinRole struct {
	adminOnly bool
	roles     []string // inherited built-in roles, "name" or "name@db"
	grants    []grant
	// grantsSince is the first MajorMinor whose role grants anything
	// (directShardOperations: a placeholder without privileges in 6.0).
	grantsSince string
}

func acts(s ...string) []string {
	var out []string
	for _, x := range s {
		out = append(out, strings.Fields(x)...)
	}
	return out
}

var (
	readActions      = "changeStream collStats dbHash dbStats find killCursors listCollections listIndexes listSearchIndexes planCacheRead"
	readWriteActions = readActions + " cleanupStructuredEncryptionData compactStructuredEncryptionData convertToCapped createCollection createIndex createSearchIndexes dropCollection dropIndex dropSearchIndex insert remove renameCollectionSameDB update updateSearchIndex"
	userAdminActions = "changeCustomData changePassword createUser createRole dropUser dropRole grantRole revokeRole setAuthenticationRestriction viewUser viewRole"
	dbAdminActions   = "analyze bypassDocumentValidation collMod collStats compact convertToCapped createCollection dbStats dropCollection dropDatabase dropIndex dropSearchIndex createIndex createSearchIndexes enableProfiler listCollections listIndexes listSearchIndexes updateSearchIndex planCacheIndexFilter planCacheRead planCacheWrite reIndex renameCollectionSameDB storageDetails validate"
	monitorDBActions = "collStats dbStats getDatabaseVersion getShardVersion indexStats"
	managerDBActions = "analyzeShardKey configureQueryAnalyzer clearJumboFlag splitChunk moveChunk moveCollection enableSharding splitVector refineCollectionShardKey reshardCollection"
	restoreActions   = "bypassDocumentValidation collMod convertToCapped createCollection createIndex createSearchIndexes dropCollection insert updateSearchIndex"
	readIndexActions = readActions + " createIndex createSearchIndexes dropIndex dropSearchIndex"
)

var builtinRoles = map[string]builtinRole{
	"read": {grants: []grant{{"database", "", "", acts(readActions)}, {"exact", "", "system.js", acts(readActions)}}},
	"readWrite": {grants: []grant{{"database", "", "", acts(readWriteActions)},
		{"exact", "", "system.js", acts(readWriteActions)}}},
	"userAdmin": {grants: []grant{{"database", "", "", acts(userAdminActions)}}},
	"dbAdmin": {grants: []grant{{"database", "", "", acts(dbAdminActions, "configureQueryAnalyzer")},
		{"exact", "", "system.profile", acts(readActions, "convertToCapped createCollection dropCollection")}}},
	"dbOwner":        {roles: []string{"readWrite", "dbAdmin", "userAdmin"}},
	"enableSharding": {grants: []grant{{"normal", "", "", acts("analyzeShardKey enableSharding moveCollection refineCollectionShardKey reshardCollection")}}},
	"readAnyDatabase": {adminOnly: true, grants: []grant{{"normal", "", "", acts(readActions)},
		{"cluster", "", "", acts("listDatabases")}, {"collection", "", "system.js", acts(readActions)}}},
	"readWriteAnyDatabase": {adminOnly: true, roles: []string{"readAnyDatabase"}, grants: []grant{
		{"normal", "", "", acts(readWriteActions)}, {"collection", "", "system.js", acts(readWriteActions)}}},
	"userAdminAnyDatabase": {adminOnly: true, grants: []grant{
		{"normal", "", "", acts(userAdminActions, "listCachedAndActiveUsers")},
		{"database", "local", "", acts(userAdminActions)}, {"database", "config", "", acts(userAdminActions)},
		{"cluster", "", "", acts("listDatabases authSchemaUpgrade invalidateUserCache viewUser")},
		{"exact", "admin", "system.users", acts(readIndexActions)}, {"exact", "admin", "system.roles", acts(readIndexActions)},
		{"collection", "", "system.users", acts(readActions)}, {"exact", "admin", "system.version", acts(readActions)},
		{"exact", "admin", "system.backup_users", acts(readActions)}}},
	"dbAdminAnyDatabase": {adminOnly: true, grants: []grant{{"cluster", "", "", acts("listDatabases applyOps")},
		{"normal", "", "", acts(dbAdminActions, "configureQueryAnalyzer")},
		{"collection", "", "system.profile", acts(readActions, "convertToCapped createCollection dropCollection")}}},
	"clusterMonitor": {adminOnly: true, roles: []string{"read@config", "read@local"}, grants: []grant{
		{"cluster", "", "", acts("checkFreeMonitoringStatus connPoolStats getCmdLineOpts getDefaultRWConcern getLog getParameter getShardMap hostInfo listDatabases listSampledQueries listSessions listShards netstat operationMetrics replSetGetConfig replSetGetStatus serverStatus top useUUID inprog shardingState allCollectionStats shardedDataDistribution")},
		{"normal", "", "", acts(monitorDBActions)}, {"database", "config", "", acts(monitorDBActions)},
		{"exact", "config", "system.sessions", acts(monitorDBActions)}, {"database", "local", "", acts(monitorDBActions)},
		{"exact", "local", "system.replset", acts("find")}, {"exact", "local", "replset.election", acts("find")},
		{"exact", "local", "replset.minvalid", acts("find")}, {"collection", "", "system.profile", acts("find")}}},
	"hostManager": {adminOnly: true, grants: []grant{
		{"cluster", "", "", acts("applicationMessage auditConfigure connPoolSync dropConnections logRotate oidReset setParameter shutdown touch unlock flushRouterConfig fsync invalidateUserCache killAnyCursor killAnySession killop replSetResizeOplog resync trafficRecord rotateCertificates")},
		{"normal", "", "", acts("killCursors")}}},
	"clusterManager": {adminOnly: true, roles: []string{"read@config"}, grants: []grant{
		{"cluster", "", "", acts("appendOplogNote applicationMessage replSetConfigure replSetGetConfig replSetGetStatus replSetStateChange resync addShard removeShard listSessions listShards flushRouterConfig cleanupOrphaned getDefaultRWConcern runTenantMigration setDefaultRWConcern setFeatureCompatibilityVersion setClusterParameter getClusterParameter setChangeStreamState getChangeStreamState checkMetadataConsistency transitionFromDedicatedConfigServer transitionToDedicatedConfigServer")},
		{"normal", "", "", acts(managerDBActions)}, {"database", "config", "", acts(managerDBActions)},
		{"database", "local", "", acts(managerDBActions)}, {"exact", "local", "system.replset", acts(readActions)},
		{"any", "", "", acts("dbCheck")}, {"exact", "local", "system.healthlog", acts(readActions)},
		{"database", "config", "", acts("insert update remove")}, {"database", "local", "", acts("insert update remove")},
		{"exact", "local", "replset.election", acts("insert update remove")},
		{"exact", "local", "replset.minvalid", acts("insert update remove")}}},
	"clusterAdmin": {adminOnly: true, roles: []string{"clusterMonitor", "hostManager", "clusterManager"}, grants: []grant{
		{"normal", "", "", acts("dropDatabase")}, {"any", "", "", acts("importCollection exportCollection")}}},
	"__queryableBackup": {adminOnly: true, grants: []grant{
		{"any", "", "", acts("collStats listCollections listIndexes listSearchIndexes")}, {"normal", "", "", acts("find")},
		{"cluster", "", "", acts("getParameter listDatabases useUUID")},
		{"database", "config", "", acts("find")}, {"database", "local", "", acts("find")},
		{"exact", "local", "replset.election", acts("find")}, {"exact", "local", "replset.minvalid", acts("find")},
		{"collection", "", "system.js", acts("find")}, {"collection", "", "system.users", acts("find")},
		{"collection", "", "system.profile", acts("find")}, {"exact", "admin", "system.backup_users", acts("find")},
		{"exact", "admin", "system.roles", acts("find")}, {"exact", "admin", "system.version", acts("find")},
		{"exact", "config", "settings", acts("find")}}},
	"backup": {adminOnly: true, roles: []string{"__queryableBackup"}, grants: []grant{
		{"cluster", "", "", acts("appendOplogNote serverStatus setUserWriteBlockMode")},
		{"exact", "config", "settings", acts("insert update")}}},
	"restore": {adminOnly: true, grants: []grant{
		{"cluster", "", "", acts("getParameter forceUUID useUUID bypassWriteBlockingMode setUserWriteBlockMode applyOps")},
		{"database", "local", "", acts(restoreActions)}, {"database", "config", "", acts(restoreActions)},
		{"exact", "local", "system.replset", acts(restoreActions)}, {"exact", "local", "replset.election", acts(restoreActions)},
		{"exact", "local", "replset.minvalid", acts(restoreActions)}, {"any", "", "", acts("listCollections")},
		{"normal", "", "", acts(restoreActions, userAdminActions)}, {"collection", "", "system.js", acts(restoreActions)},
		{"exact", "admin", "tempusers", acts("find")}, {"exact", "admin", "temproles", acts("find")},
		{"exact", "admin", "system.backup_users", acts(restoreActions)},
		{"exact", "admin", "system.version", acts(restoreActions, "find")},
		{"collection", "", "system.users", acts(restoreActions, "find update remove")},
		{"exact", "admin", "system.roles", acts("createIndex")}}},
	"root": {adminOnly: true, roles: []string{"clusterAdmin", "userAdminAnyDatabase", "dbAdminAnyDatabase",
		"readWriteAnyDatabase", "backup", "restore", "directShardOperations"}, grants: []grant{
		{"any", "", "", acts("validate")}, {"cluster", "", "", acts("useTenant")},
		{"exact", "config", "system.preimages", acts("find remove")},
		{"exact", "config", "system.change_collection", acts("find insert remove update")}}},
	"directShardOperations": {adminOnly: true, grantsSince: "7.0", grants: []grant{{"cluster", "", "", acts("issueDirectShardOperations")}}},
	"__system":              {adminOnly: true, grants: []grant{{"any", "", "", acts("anyAction")}}},
}

// builtinRoleExists: a built-in role, granted on db
// (the AnyDatabase, cluster and root roles exist only in admin).
func builtinRoleExists(name, db string) bool {
	r, ok := builtinRoles[name]
	return ok && (!r.adminOnly || db == "admin")
}

func versionAtLeast(mm, min string) bool {
	var a, b, c, d int
	_, _ = fmt.Sscanf(mm, "%d.%d", &a, &b)
	_, _ = fmt.Sscanf(min, "%d.%d", &c, &d)
	return a > c || a == c && b >= d
}

// builtinPrivileges resolves a built-in role granted on db, with the
// roles it includes, merged per resource.
func builtinPrivileges(name, db, mm string) []Privilege {
	var out []Privilege
	var walk func(name, db string)
	walk = func(name, db string) {
		if !builtinRoleExists(name, db) {
			return
		}
		r := builtinRoles[name]
		for _, sub := range r.roles {
			sn, sdb, ok := strings.Cut(sub, "@")
			if !ok {
				sdb = db
			}
			walk(sn, sdb)
		}
		if r.grantsSince != "" && !versionAtLeast(mm, r.grantsSince) {
			return
		}
		for _, g := range r.grants {
			gdb := g.db
			if gdb == "" {
				gdb = db
			}
			var res Resource
			switch g.match {
			case "database":
				res = Resource{DB: gdb}
			case "exact":
				res = Resource{DB: gdb, Collection: g.coll}
			case "collection":
				res = Resource{Collection: g.coll}
			case "normal":
				res = Resource{}
			case "cluster":
				res = clusterRes()
			case "any":
				res = Resource{Any: true}
			}
			out = append(out, Privilege{Resource: res, Actions: g.actions})
		}
	}
	walk(name, db)
	return mergePrivileges(out)
}

// builtinRoleNames lists the built-in roles rolesInfo shows for db (on
// admin all of them, __system and __queryableBackup included), sorted.
func builtinRoleNames(db string) []string {
	var out []string
	for name := range builtinRoles {
		if builtinRoleExists(name, db) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
