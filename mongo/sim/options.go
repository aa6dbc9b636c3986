package sim

import "strings"

// optKind is how an option's value is written and typed in getCmdLineOpts.
type optKind int

const (
	optSwitch optKind = iota // no value on the command line; true in YAML
	optString
	optInt
	optDouble
	optBool    // takes true/false (the command line may omit it: true)
	optStrings // YAML sequence, or a comma list on the command line
	optSection // config-file subtree of free keys (setParameter, log components...)
)

// lines is the set of mongod release lines that accept an option.
type lines uint8

const (
	line60 lines = 1 << iota
	line70
	line80
	allLines = line60 | line70 | line80
	// before80 are options 8.0 removed (free monitoring).
	before80 = line60 | line70
)

func (l lines) has(majorMinor string) bool {
	switch majorMinor {
	case "6.0":
		return l&line60 != 0
	case "7.0":
		return l&line70 != 0
	case "8.0":
		return l&line80 != 0
	}
	return l&line70 != 0
}

// option is one of mongod's options, as the manual's "mongod" and
// "Configuration File Options" pages list them: its command-line name (""
// for config-file only), its config-file path ("" for command-line only),
// how its value is typed, and which release lines accept it. Options the
// simulator does not model are accepted, shown by getCmdLineOpts and noted
// in the start-up log; modelled ones are applied in Config.set.
type option struct {
	flag  string
	yaml  string
	kind  optKind
	lines lines
	// secret values are shown as "<password>" by getCmdLineOpts and the log, as mongod does.
	secret bool
}

// options is the table; the command-line aliases mongod keeps for old
// names (--ssl*) map onto the YAML path of their --tls* successor.
var options = []option{
	// General
	{flag: "help", kind: optSwitch, lines: allLines},
	{flag: "h", kind: optSwitch, lines: allLines},
	{flag: "version", kind: optSwitch, lines: allLines},
	{flag: "config", kind: optString, lines: allLines},
	{flag: "f", kind: optString, lines: allLines},
	{flag: "configExpand", kind: optString, lines: allLines},
	{flag: "verbose", yaml: "systemLog.verbosity", kind: optInt, lines: allLines},
	{flag: "quiet", yaml: "systemLog.quiet", kind: optSwitch, lines: allLines},
	{flag: "port", yaml: "net.port", kind: optInt, lines: allLines},
	{flag: "bind_ip", yaml: "net.bindIp", kind: optString, lines: allLines},
	{flag: "bind_ip_all", yaml: "net.bindIpAll", kind: optSwitch, lines: allLines},
	{flag: "clusterIpSourceAllowlist", yaml: "security.clusterIpSourceAllowlist", kind: optStrings, lines: allLines},
	{flag: "ipv6", yaml: "net.ipv6", kind: optSwitch, lines: allLines},
	{flag: "listenBacklog", yaml: "net.listenBacklog", kind: optInt, lines: allLines},
	{flag: "maxConns", yaml: "net.maxIncomingConnections", kind: optInt, lines: allLines},
	{yaml: "net.wireObjectCheck", kind: optBool, lines: allLines},
	{yaml: "net.maxIncomingConnectionsOverride", kind: optStrings, lines: line70 | line80},
	{yaml: "net.reservedAdminThreads", kind: optInt, lines: line70 | line80},
	{flag: "logpath", yaml: "systemLog.path", kind: optString, lines: allLines},
	{flag: "syslog", yaml: "systemLog.destination", kind: optSwitch, lines: allLines},
	{yaml: "systemLog.destination", kind: optString, lines: allLines},
	{flag: "syslogFacility", yaml: "systemLog.syslogFacility", kind: optString, lines: allLines},
	{flag: "logappend", yaml: "systemLog.logAppend", kind: optSwitch, lines: allLines},
	{flag: "logRotate", yaml: "systemLog.logRotate", kind: optString, lines: allLines},
	{flag: "timeStampFormat", yaml: "systemLog.timeStampFormat", kind: optString, lines: allLines},
	{yaml: "systemLog.traceAllExceptions", kind: optBool, lines: allLines},
	{yaml: "systemLog.component", kind: optSection, lines: allLines},
	{flag: "pidfilepath", yaml: "processManagement.pidFilePath", kind: optString, lines: allLines},
	{flag: "timeZoneInfo", yaml: "processManagement.timeZoneInfo", kind: optString, lines: allLines},
	{flag: "fork", yaml: "processManagement.fork", kind: optSwitch, lines: allLines},
	{flag: "keyFile", yaml: "security.keyFile", kind: optString, lines: allLines},
	{flag: "setParameter", yaml: "setParameter", kind: optSection, lines: allLines},
	{flag: "nounixsocket", yaml: "net.unixDomainSocket.enabled", kind: optSwitch, lines: allLines},
	{yaml: "net.unixDomainSocket.enabled", kind: optBool, lines: allLines},
	{flag: "unixSocketPrefix", yaml: "net.unixDomainSocket.pathPrefix", kind: optString, lines: allLines},
	{flag: "filePermissions", yaml: "net.unixDomainSocket.filePermissions", kind: optInt, lines: allLines},
	{flag: "auth", yaml: "security.authorization", kind: optSwitch, lines: allLines},
	{flag: "noauth", yaml: "security.authorization", kind: optSwitch, lines: allLines},
	{yaml: "security.authorization", kind: optString, lines: allLines},
	{flag: "transitionToAuth", yaml: "security.transitionToAuth", kind: optSwitch, lines: allLines},
	{flag: "networkMessageCompressors", yaml: "net.compression.compressors", kind: optString, lines: allLines},
	{flag: "outputConfig", kind: optSwitch, lines: allLines},
	{flag: "shutdown", kind: optSwitch, lines: allLines},
	{flag: "sysinfo", kind: optSwitch, lines: allLines},
	{flag: "enableFreeMonitoring", yaml: "cloud.monitoring.free.state", kind: optString, lines: before80},
	{flag: "freeMonitoringTag", yaml: "cloud.monitoring.free.tags", kind: optString, lines: before80},
	// Security
	{flag: "clusterAuthMode", yaml: "security.clusterAuthMode", kind: optString, lines: allLines},
	{flag: "relaxPermChecks", yaml: "security.relaxPermChecks", kind: optSwitch, lines: allLines},
	{flag: "noscripting", yaml: "security.javascriptEnabled", kind: optSwitch, lines: allLines},
	{yaml: "security.javascriptEnabled", kind: optBool, lines: allLines},
	{flag: "redactClientLogData", yaml: "security.redactClientLogData", kind: optSwitch, lines: allLines},
	{flag: "enableEncryption", yaml: "security.enableEncryption", kind: optSwitch, lines: allLines},
	{flag: "encryptionKeyFile", yaml: "security.encryptionKeyFile", kind: optString, lines: allLines},
	{flag: "encryptionCipherMode", yaml: "security.encryptionCipherMode", kind: optString, lines: allLines},
	{yaml: "security.sasl.hostName", kind: optString, lines: allLines},
	{yaml: "security.sasl.serviceName", kind: optString, lines: allLines},
	{yaml: "security.sasl.saslauthdSocketPath", kind: optString, lines: allLines},
	// TLS, and the deprecated SSL names of the same settings
	{flag: "tlsMode", yaml: "net.tls.mode", kind: optString, lines: allLines},
	{flag: "tlsCertificateKeyFile", yaml: "net.tls.certificateKeyFile", kind: optString, lines: allLines},
	{flag: "tlsCertificateKeyFilePassword", yaml: "net.tls.certificateKeyFilePassword", kind: optString, lines: allLines, secret: true},
	{flag: "tlsClusterFile", yaml: "net.tls.clusterFile", kind: optString, lines: allLines},
	{flag: "tlsClusterPassword", yaml: "net.tls.clusterPassword", kind: optString, lines: allLines, secret: true},
	{flag: "tlsCAFile", yaml: "net.tls.CAFile", kind: optString, lines: allLines},
	{flag: "tlsClusterCAFile", yaml: "net.tls.clusterCAFile", kind: optString, lines: allLines},
	{flag: "tlsCRLFile", yaml: "net.tls.CRLFile", kind: optString, lines: allLines},
	{flag: "tlsAllowConnectionsWithoutCertificates", yaml: "net.tls.allowConnectionsWithoutCertificates", kind: optSwitch, lines: allLines},
	{flag: "tlsAllowInvalidHostnames", yaml: "net.tls.allowInvalidHostnames", kind: optSwitch, lines: allLines},
	{flag: "tlsAllowInvalidCertificates", yaml: "net.tls.allowInvalidCertificates", kind: optSwitch, lines: allLines},
	{flag: "tlsFIPSMode", yaml: "net.tls.FIPSMode", kind: optSwitch, lines: allLines},
	{flag: "tlsCertificateSelector", yaml: "net.tls.certificateSelector", kind: optString, lines: allLines},
	{flag: "tlsClusterCertificateSelector", yaml: "net.tls.clusterCertificateSelector", kind: optString, lines: allLines},
	{flag: "tlsDisabledProtocols", yaml: "net.tls.disabledProtocols", kind: optString, lines: allLines},
	{flag: "tlsLogVersions", yaml: "net.tls.logVersions", kind: optString, lines: allLines},
	{flag: "tlsClusterAuthX509Attributes", yaml: "net.tls.clusterAuthX509.attributes", kind: optString, lines: line70 | line80},
	{flag: "tlsClusterAuthX509ExtensionValue", yaml: "net.tls.clusterAuthX509.extensionValue", kind: optString, lines: line70 | line80},
	{flag: "sslMode", yaml: "net.tls.mode", kind: optString, lines: allLines},
	{flag: "sslPEMKeyFile", yaml: "net.tls.certificateKeyFile", kind: optString, lines: allLines},
	{flag: "sslPEMKeyPassword", yaml: "net.tls.certificateKeyFilePassword", kind: optString, lines: allLines, secret: true},
	{flag: "sslClusterFile", yaml: "net.tls.clusterFile", kind: optString, lines: allLines},
	{flag: "sslClusterPassword", yaml: "net.tls.clusterPassword", kind: optString, lines: allLines, secret: true},
	{flag: "sslCAFile", yaml: "net.tls.CAFile", kind: optString, lines: allLines},
	{flag: "sslClusterCAFile", yaml: "net.tls.clusterCAFile", kind: optString, lines: allLines},
	{flag: "sslCRLFile", yaml: "net.tls.CRLFile", kind: optString, lines: allLines},
	{flag: "sslAllowConnectionsWithoutCertificates", yaml: "net.tls.allowConnectionsWithoutCertificates", kind: optSwitch, lines: allLines},
	{flag: "sslAllowInvalidHostnames", yaml: "net.tls.allowInvalidHostnames", kind: optSwitch, lines: allLines},
	{flag: "sslAllowInvalidCertificates", yaml: "net.tls.allowInvalidCertificates", kind: optSwitch, lines: allLines},
	{flag: "sslFIPSMode", yaml: "net.tls.FIPSMode", kind: optSwitch, lines: allLines},
	{flag: "sslCertificateSelector", yaml: "net.tls.certificateSelector", kind: optString, lines: allLines},
	{flag: "sslClusterCertificateSelector", yaml: "net.tls.clusterCertificateSelector", kind: optString, lines: allLines},
	{flag: "sslDisabledProtocols", yaml: "net.tls.disabledProtocols", kind: optString, lines: allLines},
	{yaml: "net.ssl.mode", kind: optString, lines: allLines},
	{yaml: "net.ssl.PEMKeyFile", kind: optString, lines: allLines},
	{yaml: "net.ssl.PEMKeyPassword", kind: optString, lines: allLines, secret: true},
	{yaml: "net.ssl.clusterFile", kind: optString, lines: allLines},
	{yaml: "net.ssl.clusterPassword", kind: optString, lines: allLines, secret: true},
	{yaml: "net.ssl.CAFile", kind: optString, lines: allLines},
	{yaml: "net.ssl.clusterCAFile", kind: optString, lines: allLines},
	{yaml: "net.ssl.CRLFile", kind: optString, lines: allLines},
	{yaml: "net.ssl.allowConnectionsWithoutCertificates", kind: optBool, lines: allLines},
	{yaml: "net.ssl.allowInvalidCertificates", kind: optBool, lines: allLines},
	{yaml: "net.ssl.allowInvalidHostnames", kind: optBool, lines: allLines},
	{yaml: "net.ssl.disabledProtocols", kind: optString, lines: allLines},
	{yaml: "net.ssl.FIPSMode", kind: optBool, lines: allLines},
	{yaml: "net.ssl.certificateSelector", kind: optString, lines: allLines},
	{yaml: "net.ssl.clusterCertificateSelector", kind: optString, lines: allLines},
	// Storage
	{flag: "storageEngine", yaml: "storage.engine", kind: optString, lines: allLines},
	{flag: "dbpath", yaml: "storage.dbPath", kind: optString, lines: allLines},
	{flag: "directoryperdb", yaml: "storage.directoryPerDB", kind: optSwitch, lines: allLines},
	{flag: "syncdelay", yaml: "storage.syncPeriodSecs", kind: optDouble, lines: allLines},
	{flag: "upgrade", yaml: "storage.upgrade", kind: optSwitch, lines: allLines},
	{flag: "repair", yaml: "storage.repair", kind: optSwitch, lines: allLines},
	{flag: "journal", yaml: "storage.journal.enabled", kind: optSwitch, lines: line60},
	{flag: "nojournal", yaml: "storage.journal.enabled", kind: optSwitch, lines: line60},
	{yaml: "storage.journal.enabled", kind: optBool, lines: line60},
	{flag: "journalCommitInterval", yaml: "storage.journal.commitIntervalMs", kind: optInt, lines: allLines},
	{flag: "oplogMinRetentionHours", yaml: "storage.oplogMinRetentionHours", kind: optDouble, lines: allLines},
	{flag: "wiredTigerCacheSizeGB", yaml: "storage.wiredTiger.engineConfig.cacheSizeGB", kind: optDouble, lines: allLines},
	{flag: "wiredTigerJournalCompressor", yaml: "storage.wiredTiger.engineConfig.journalCompressor", kind: optString, lines: allLines},
	{flag: "wiredTigerDirectoryForIndexes", yaml: "storage.wiredTiger.engineConfig.directoryForIndexes", kind: optSwitch, lines: allLines},
	{yaml: "storage.wiredTiger.engineConfig.zstdCompressionLevel", kind: optInt, lines: allLines},
	{yaml: "storage.wiredTiger.engineConfig.configString", kind: optString, lines: allLines},
	{flag: "wiredTigerCollectionBlockCompressor", yaml: "storage.wiredTiger.collectionConfig.blockCompressor", kind: optString, lines: allLines},
	{flag: "wiredTigerIndexPrefixCompression", yaml: "storage.wiredTiger.indexConfig.prefixCompression", kind: optBool, lines: allLines},
	{flag: "inMemorySizeGB", yaml: "storage.inMemory.engineConfig.inMemorySizeGB", kind: optDouble, lines: allLines},
	// Replication and sharding
	{flag: "replSet", yaml: "replication.replSet", kind: optString, lines: allLines},
	{yaml: "replication.replSetName", kind: optString, lines: allLines},
	{flag: "oplogSize", yaml: "replication.oplogSizeMB", kind: optInt, lines: allLines},
	{flag: "enableMajorityReadConcern", yaml: "replication.enableMajorityReadConcern", kind: optBool, lines: allLines},
	{flag: "configsvr", yaml: "sharding.clusterRole", kind: optSwitch, lines: allLines},
	{flag: "shardsvr", yaml: "sharding.clusterRole", kind: optSwitch, lines: allLines},
	{yaml: "sharding.clusterRole", kind: optString, lines: allLines},
	{yaml: "sharding.archiveMovedChunks", kind: optBool, lines: allLines},
	// Profiler
	{flag: "profile", yaml: "operationProfiling.mode", kind: optInt, lines: allLines},
	{yaml: "operationProfiling.mode", kind: optString, lines: allLines},
	{flag: "slowms", yaml: "operationProfiling.slowOpThresholdMs", kind: optInt, lines: allLines},
	{flag: "slowOpSampleRate", yaml: "operationProfiling.slowOpSampleRate", kind: optDouble, lines: allLines},
	{flag: "profileFilter", yaml: "operationProfiling.filter", kind: optString, lines: allLines},
	// Audit (Enterprise and Percona builds)
	{flag: "auditDestination", yaml: "auditLog.destination", kind: optString, lines: allLines},
	{flag: "auditFormat", yaml: "auditLog.format", kind: optString, lines: allLines},
	{flag: "auditPath", yaml: "auditLog.path", kind: optString, lines: allLines},
	{flag: "auditFilter", yaml: "auditLog.filter", kind: optString, lines: allLines},
}

// modelled are the YAML paths (and command-line-only names) the simulator
// acts on; every other accepted option is noted as not modelled.
var modelled = map[string]bool{
	"net.port": true, "net.bindIp": true, "net.bindIpAll": true, "storage.dbPath": true, "security.keyFile": true,
	"security.clusterAuthMode": true, "security.authorization": true, "security.relaxPermChecks": true, "security.transitionToAuth": true,
	"net.tls.mode": true, "net.tls.certificateKeyFile": true, "net.tls.CAFile": true,
	"net.tls.allowConnectionsWithoutCertificates": true, "net.tls.allowInvalidCertificates": true, "net.tls.allowInvalidHostnames": true,
	"net.ssl.mode": true, "net.ssl.PEMKeyFile": true, "net.ssl.CAFile": true,
	"setParameter": true, "replication.replSet": true, "replication.replSetName": true, "replication.oplogSizeMB": true,
	"systemLog.path": true, "systemLog.logAppend": true, "systemLog.destination": true, "processManagement.fork": true,
	"help": true, "h": true, "version": true, "config": true, "f": true, "shutdown": true,
}

// optionByFlag finds a command-line option accepted by a release line;
// -v, -vv ... -vvvvv are --verbose at that level.
func optionByFlag(name, majorMinor string) (option, bool) {
	if strings.Trim(name, "v") == "" && len(name) <= 5 {
		return option{flag: name, yaml: "systemLog.verbosity", kind: optSwitch, lines: allLines}, true
	}
	for _, o := range options {
		if o.flag == name && o.lines.has(majorMinor) {
			return o, true
		}
	}
	return option{}, false
}

// optionByYAML finds a config-file setting accepted by a release line; a
// section (setParameter, systemLog.component) takes any key below it. A
// YAML-only entry wins over a command-line one of the same path, whose
// switch is a boolean in the file.
func optionByYAML(path, majorMinor string) (option, bool) {
	var found option
	ok := false
	for _, o := range options {
		if o.yaml == "" || !o.lines.has(majorMinor) {
			continue
		}
		if o.kind == optSection && strings.HasPrefix(path, o.yaml+".") {
			return o, true
		}
		if o.yaml != path {
			continue
		}
		if o.flag == "" {
			return o, true
		}
		if !ok {
			found, ok = o, true
			if found.kind == optSwitch {
				found.kind = optBool
			}
		}
	}
	return found, ok
}

// HelpText is what `mongod --help` prints: the options this release
// accepts, with "arg" for those that take a value, as boost lists them.
func (c Config) HelpText() string {
	var b strings.Builder
	b.WriteString("Options:\n\n")
	mm := c.MajorMinor()
	seen := map[string]bool{}
	for _, o := range options {
		if o.flag == "" || seen[o.flag] || !o.lines.has(mm) {
			continue
		}
		seen[o.flag] = true
		name := "--" + o.flag
		if len(o.flag) == 1 {
			name = "-" + o.flag
		}
		switch o.kind {
		case optSwitch:
		case optBool:
			name += " [arg]"
		default:
			name += " arg"
		}
		b.WriteString("  " + name + "\n")
	}
	return b.String()
}
