package sim

import "strings"

// actionTypes are mongod's privilege action names (the manual's
// "Privilege Actions"); createRole and friends refuse any other string.
var actionTypes = map[string]bool{}

// actionOrder is mongod's ActionType enum order, in which action sets
// print their actions.
var actionOrder = map[string]int{}

func init() {
	for _, a := range strings.Fields(`addShard advanceClusterTime allCollectionStats analyze analyzeShardKey anyAction
		appendOplogNote applicationMessage auditConfigure auditLogRotate authCheck authenticate authSchemaUpgrade
		bypassDocumentValidation bypassWriteBlockingMode changeCustomData changePassword changeOwnPassword
		changeOwnCustomData changeStream checkFreeMonitoringStatus checkMetadataConsistency cleanupOrphaned
		clearJumboFlag cleanupStructuredEncryptionData closeAllDatabases collMod collStats compact
		compactStructuredEncryptionData configureQueryAnalyzer connPoolStats connPoolSync convertToCapped cpuProfiler
		createCollection createDatabase createIndex createRole createSearchIndexes createUser dbCheck dbHash dbStats
		dropAllRolesFromDatabase dropAllUsersFromDatabase dropCollection dropConnections dropDatabase dropIndex dropRole
		dropSearchIndex dropUser emptycapped enableProfiler enableSharding exportCollection find flushRouterConfig
		forceUUID fsync fsyncUnlock getClusterParameter getDatabaseVersion getDefaultRWConcern getCmdLineOpts getLog
		getParameter getShardMap getShardVersion grantRole grantPrivilegesToRole grantRolesToRole grantRolesToUser
		hostInfo impersonate importCollection indexStats inprog insert internal invalidateUserCache
		issueDirectShardOperations killAnyCursor killAnySession killCursors killop listCachedAndActiveUsers
		listCollections listCursors listDatabases listIndexes listSampledQueries listSearchIndexes listSessions
		listShards logRotate updateSearchIndex moveChunk moveCollection netstat oidcListKeys oidcRefreshKeys oidReset
		operationMetrics planCacheIndexFilter planCacheRead planCacheWrite querySettings queryStatsRead
		queryStatsReadTransformed refineCollectionShardKey reIndex remove removeShard renameCollection
		renameCollectionSameDB repairDatabase replSetConfigure replSetGetConfig replSetGetStatus replSetHeartbeat
		replSetReconfig replSetResizeOplog replSetStateChange reshardCollection resync revokeRole
		revokePrivilegesFromRole revokeRolesFromRole revokeRolesFromUser rotateCertificates runAsLessPrivilegedUser
		runTenantMigration serverStatus setAuthenticationRestriction setClusterParameter setDefaultRWConcern
		setFeatureCompatibilityVersion setFreeMonitoring setParameter setUserWriteBlockMode shardCollection
		shardedDataDistribution shardingState shutdown splitChunk splitVector storageDetails top touch trafficRecord
		transitionFromDedicatedConfigServer transitionToDedicatedConfigServer unlock useTenant useUUID update
		updateRole updateUser validate viewRole viewUser applyOps setChangeStreamState getChangeStreamState`) {
		actionOrder[a] = len(actionTypes)
		actionTypes[a] = true
	}
}

// clusterActions are checked on the cluster resource: a command whose
// action is one of these needs it on {cluster: true}.
var clusterActions = map[string]bool{}

func init() {
	for _, a := range strings.Fields(`addShard advanceClusterTime allCollectionStats appendOplogNote applicationMessage
		auditConfigure authSchemaUpgrade bypassWriteBlockingMode checkMetadataConsistency cleanupOrphaned connPoolStats
		connPoolSync cpuProfiler dropConnections flushRouterConfig forceUUID fsync fsyncUnlock getClusterParameter
		getCmdLineOpts getDefaultRWConcern getLog getParameter getShardMap hostInfo inprog internal invalidateUserCache
		issueDirectShardOperations killAnyCursor killAnySession killop listCachedAndActiveUsers listDatabases
		listSampledQueries listSessions listShards logRotate netstat oidReset oidcListKeys oidcRefreshKeys
		operationMetrics querySettings queryStatsRead queryStatsReadTransformed removeShard replSetConfigure
		replSetGetConfig replSetGetStatus replSetHeartbeat replSetResizeOplog replSetStateChange resync
		rotateCertificates runTenantMigration serverStatus setClusterParameter setDefaultRWConcern
		setFeatureCompatibilityVersion setParameter setUserWriteBlockMode shardedDataDistribution shardingState
		shutdown top touch trafficRecord transitionFromDedicatedConfigServer transitionToDedicatedConfigServer unlock
		useTenant useUUID applyOps setChangeStreamState getChangeStreamState checkFreeMonitoringStatus setFreeMonitoring
		listCursors closeAllDatabases`) {
		clusterActions[a] = true
	}
}

// databaseActions are checked on the database resource even when the
// command names a collection.
var databaseActions = map[string]bool{"dbStats": true, "dropDatabase": true, "listCollections": true,
	"enableProfiler": true, "dbHash": true, "createUser": true, "dropUser": true, "viewUser": true, "createRole": true,
	"dropRole": true, "viewRole": true, "grantRole": true, "revokeRole": true, "changePassword": true,
	"changeCustomData": true, "setAuthenticationRestriction": true}
