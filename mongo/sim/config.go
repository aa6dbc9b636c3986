// Package sim is mongod-sim: a MongoDB replica-set member that speaks the
// wire protocol and behaves as mongod does for what an operator and its
// tests need (hello, replica-set administration, users, simple CRUD), so
// that the official driver and the shell cannot tell it from mongod.
package sim

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Config is mongod's command line (and --config file) as the simulator
// understands it. Ignored lists what mongod accepts but the simulator
// does not model, so the log can say so.
type Config struct {
	// ServerVersion is the mongod version this member reports and behaves as
	// ("8.0.4", "7.0.14", "6.0.19"): buildInfo, built-in roles, FCV default.
	ServerVersion string
	ReplSet       string
	// OplogSizeMB is --oplogSize (replication.oplogSizeMB); 0 means mongod's default.
	OplogSizeMB    int
	Port           int
	BindIP         []string
	BindIPAll      bool
	DBPath         string
	KeyFile        string
	ClusterAuth    string
	Auth           bool
	TLSMode        string
	TLSCertKeyFile string
	TLSCAFile      string
	SetParameters  map[string]string
	ConfigFile     string
	ShowVersion    bool
	ShowHelp       bool
	// LogPath/LogAppend send the log to a file as mongod does (stdout otherwise).
	LogPath   string
	LogAppend bool
	// Fork detaches into the background once listening (mongod --fork).
	Fork bool
	// Shutdown stops the process that holds DBPath (mongod --shutdown).
	Shutdown bool
	Ignored  []string
	// Argv is the original command line, returned by getCmdLineOpts.
	Argv []string
	// Parsed mirrors getCmdLineOpts' "parsed" document.
	Parsed map[string]any
}

// ErrBadOptions is returned for a command line mongod would refuse; the
// message is mongod's and the process exits with code 2 (EXIT_BADOPTIONS).
var ErrBadOptions = errors.New("bad options")

// OptionError carries mongod's refusal text.
type OptionError struct{ Msg string }

func (e *OptionError) Error() string { return e.Msg }

// Unwrap lets callers test errors.Is(err, ErrBadOptions).
func (e *OptionError) Unwrap() error { return ErrBadOptions }

type flagKind int

const (
	kindValue flagKind = iota
	kindBool
	kindIgnoredValue
	kindIgnoredBool
)

// flags mongod knows, by name, with whether they take a value. Ignored
// kinds are accepted and reported as not modelled.
var knownFlags = map[string]flagKind{
	"replSet": kindValue, "port": kindValue, "bind_ip": kindValue, "bind_ip_all": kindBool,
	"dbpath": kindValue, "keyFile": kindValue, "clusterAuthMode": kindValue, "auth": kindBool,
	"noauth": kindBool, "tlsMode": kindValue, "tlsCertificateKeyFile": kindValue, "tlsCAFile": kindValue,
	"setParameter": kindValue, "config": kindValue, "f": kindValue, "version": kindBool, "help": kindBool, "h": kindBool,
	// Accepted, not modelled.
	"tlsCertificateKeyFilePassword": kindIgnoredValue, "tlsClusterFile": kindIgnoredValue,
	"tlsClusterPassword": kindIgnoredValue, "tlsCRLFile": kindIgnoredValue, "tlsAllowInvalidCertificates": kindIgnoredBool,
	"tlsAllowInvalidHostnames": kindIgnoredBool, "tlsAllowConnectionsWithoutCertificates": kindIgnoredBool,
	"tlsDisabledProtocols": kindIgnoredValue, "tlsClusterCAFile": kindIgnoredValue, "sslMode": kindIgnoredValue,
	"sslPEMKeyFile": kindIgnoredValue, "sslCAFile": kindIgnoredValue,
	"storageEngine": kindIgnoredValue, "wiredTigerCacheSizeGB": kindIgnoredValue, "wiredTigerJournalCompressor": kindIgnoredValue,
	"wiredTigerCollectionBlockCompressor": kindIgnoredValue, "wiredTigerIndexPrefixCompression": kindIgnoredValue,
	"wiredTigerDirectoryForIndexes": kindIgnoredBool, "directoryperdb": kindIgnoredBool, "journal": kindIgnoredBool,
	"nojournal": kindIgnoredBool, "enableEncryption": kindIgnoredBool, "encryptionKeyFile": kindIgnoredValue,
	"encryptionCipherMode": kindIgnoredValue, "oplogSize": kindValue, "logpath": kindValue,
	"logappend": kindBool, "quiet": kindIgnoredBool, "verbose": kindIgnoredBool, "v": kindIgnoredBool,
	"vv": kindIgnoredBool, "vvv": kindIgnoredBool, "fork": kindBool, "shutdown": kindBool, "pidfilepath": kindIgnoredValue,
	"timeZoneInfo": kindIgnoredValue, "ipv6": kindIgnoredBool, "maxConns": kindIgnoredValue,
	"unixSocketPrefix": kindIgnoredValue, "nounixsocket": kindIgnoredBool, "filePermissions": kindIgnoredValue,
	"slowms": kindIgnoredValue, "slowOpSampleRate": kindIgnoredValue, "profile": kindIgnoredValue,
	"syslog": kindIgnoredBool, "syslogFacility": kindIgnoredValue, "networkMessageCompressors": kindIgnoredValue,
	"transitionToAuth": kindIgnoredBool, "enableMajorityReadConcern": kindIgnoredValue,
	"upgrade": kindIgnoredBool, "repair": kindIgnoredBool, "shardsvr": kindIgnoredBool, "auditDestination": kindIgnoredValue,
	"clusterIpSourceAllowlist": kindIgnoredValue, "outputConfig": kindIgnoredBool,
}

// DefaultConfig is mongod's defaults: port 27017, bound to localhost only,
// dbpath /data/db.
func DefaultConfig() Config {
	return Config{ServerVersion: Version, Port: 27017, BindIP: []string{"127.0.0.1"}, DBPath: "/data/db", ClusterAuth: "keyFile",
		SetParameters: map[string]string{}, Parsed: map[string]any{}}
}

// ParseArgs parses mongod's command line (args without the program name),
// in both --flag value and --flag=value forms, then the --config YAML
// file if one is named; command-line values win as in mongod.
func ParseArgs(args []string) (Config, error) {
	c := DefaultConfig()
	c.Argv = append([]string{"mongod"}, args...)
	type setting struct{ name, val string }
	var set []setting
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" || a == "--" {
			return c, &OptionError{"Error parsing command line: too many positional options have been specified on the command line\ntry 'mongod --help' for more information"}
		}
		name := strings.TrimLeft(a, "-")
		val, hasVal := "", false
		if k := strings.IndexByte(name, '='); k >= 0 {
			name, val, hasVal = name[:k], name[k+1:], true
		}
		kind, ok := knownFlags[name]
		if !ok {
			return c, &OptionError{fmt.Sprintf("Error parsing command line: unrecognised option '%s'\ntry 'mongod --help' for more information", a)}
		}
		switch kind {
		case kindValue, kindIgnoredValue:
			if !hasVal {
				if i+1 >= len(args) {
					return c, &OptionError{fmt.Sprintf("Error parsing command line: the required argument for option '--%s' is missing\ntry 'mongod --help' for more information", name)}
				}
				i++
				val = args[i]
			}
		case kindBool, kindIgnoredBool:
			if hasVal && val != "true" && val != "false" && val != "1" && val != "0" {
				return c, &OptionError{fmt.Sprintf("Error parsing command line: the argument ('%s') for option '--%s' is invalid\ntry 'mongod --help' for more information", val, name)}
			}
			if !hasVal {
				val = "true"
			}
		}
		if kind == kindIgnoredValue || kind == kindIgnoredBool {
			c.Ignored = append(c.Ignored, "--"+name)
		}
		set = append(set, setting{name, val})
	}
	// --config first so the command line overrides it.
	for _, s := range set {
		if s.name == "config" || s.name == "f" {
			c.ConfigFile = s.val
		}
	}
	if c.ConfigFile != "" {
		if err := c.loadYAML(c.ConfigFile); err != nil {
			return c, err
		}
	}
	for _, s := range set {
		if err := c.apply(s.name, s.val); err != nil {
			return c, err
		}
	}
	sort.Strings(c.Ignored)
	return c, c.check()
}

func (c *Config) apply(name, val string) error {
	truthy := val == "true" || val == "1"
	switch name {
	case "replSet":
		c.ReplSet = val
		// mongod accepts "name/seed1,seed2"; the seeds only feed the default initiate config.
		if k := strings.IndexByte(val, '/'); k >= 0 {
			c.ReplSet = val[:k]
		}
		setParsed(c.Parsed, "replication.replSet", val)
	case "oplogSize":
		mb, err := strconv.Atoi(val)
		if err != nil || mb < 0 {
			return &OptionError{fmt.Sprintf("Error parsing command line: the argument ('%s') for option '--oplogSize' is invalid\ntry 'mongod --help' for more information", val)}
		}
		c.OplogSizeMB = mb
		setParsed(c.Parsed, "replication.oplogSizeMB", mb)
	case "port":
		p, err := strconv.Atoi(val)
		if err != nil || p < 0 || p > 65535 {
			return &OptionError{fmt.Sprintf("Error parsing command line: the argument ('%s') for option '--port' is invalid\ntry 'mongod --help' for more information", val)}
		}
		c.Port = p
		setParsed(c.Parsed, "net.port", p)
	case "bind_ip":
		c.BindIP = nil
		for _, h := range strings.Split(val, ",") {
			if h = strings.TrimSpace(h); h != "" {
				c.BindIP = append(c.BindIP, h)
			}
		}
		setParsed(c.Parsed, "net.bindIp", val)
	case "bind_ip_all":
		c.BindIPAll = truthy
		setParsed(c.Parsed, "net.bindIpAll", truthy)
	case "dbpath":
		c.DBPath = val
		setParsed(c.Parsed, "storage.dbPath", val)
	case "keyFile":
		c.KeyFile = val
		setParsed(c.Parsed, "security.keyFile", val)
	case "clusterAuthMode":
		switch val {
		case "keyFile", "sendKeyFile", "sendX509", "x509":
		default:
			return &OptionError{fmt.Sprintf("Bad value for parameter \"net.clusterAuthMode\": Invalid clusterAuthMode: %s", val)}
		}
		c.ClusterAuth = val
		setParsed(c.Parsed, "security.clusterAuthMode", val)
	case "auth":
		c.Auth = truthy
		setParsed(c.Parsed, "security.authorization", "enabled")
	case "noauth":
		c.Auth = false
		setParsed(c.Parsed, "security.authorization", "disabled")
	case "tlsMode", "sslMode":
		switch val {
		case "disabled", "allowTLS", "preferTLS", "requireTLS", "allowSSL", "preferSSL", "requireSSL":
		default:
			return &OptionError{fmt.Sprintf("Error parsing command line:  Unsupported value for tlsMode %s", val)}
		}
		c.TLSMode = strings.Replace(val, "SSL", "TLS", 1)
		setParsed(c.Parsed, "net.tls.mode", c.TLSMode)
	case "tlsCertificateKeyFile", "sslPEMKeyFile":
		c.TLSCertKeyFile = val
		setParsed(c.Parsed, "net.tls.certificateKeyFile", val)
	case "tlsCAFile", "sslCAFile":
		c.TLSCAFile = val
		setParsed(c.Parsed, "net.tls.CAFile", val)
	case "setParameter":
		k := strings.IndexByte(val, '=')
		if k <= 0 {
			return &OptionError{fmt.Sprintf("Illegal --setParameter parameter: \"%s\"", val)}
		}
		c.SetParameters[val[:k]] = val[k+1:]
		setParsed(c.Parsed, "setParameter."+val[:k], val[k+1:])
	case "config", "f":
		setParsed(c.Parsed, "config", val)
	case "version":
		c.ShowVersion = truthy
	case "logpath":
		c.LogPath = val
		setParsed(c.Parsed, "systemLog.path", val)
		setParsed(c.Parsed, "systemLog.destination", "file")
	case "logappend":
		c.LogAppend = truthy
		setParsed(c.Parsed, "systemLog.logAppend", truthy)
	case "fork":
		c.Fork = truthy
		setParsed(c.Parsed, "processManagement.fork", truthy)
	case "shutdown":
		c.Shutdown = truthy
	case "help", "h":
		c.ShowHelp = truthy
	}
	return nil
}

func (c *Config) check() error {
	if c.KeyFile != "" {
		c.Auth = true // a keyFile implies authorization, as in mongod
		st, err := os.Stat(c.KeyFile)
		if err != nil {
			return &OptionError{fmt.Sprintf("error getting file %s: %s", c.KeyFile, errText(err))}
		}
		if st.Mode().Perm()&0o077 != 0 {
			return &OptionError{fmt.Sprintf("permissions on %s are too open", c.KeyFile)}
		}
	}
	if c.Fork && c.LogPath == "" {
		return &OptionError{"BadValue: --fork has to be used with --logpath or --syslog"}
	}
	if (c.TLSMode == "requireTLS" || c.TLSMode == "preferTLS" || c.TLSMode == "allowTLS") && c.TLSCertKeyFile == "" {
		return &OptionError{"need tlsCertificateKeyFile or certificateSelector when TLS is enabled"}
	}
	return nil
}

func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

func setParsed(m map[string]any, dotted string, v any) {
	parts := strings.Split(dotted, ".")
	for _, p := range parts[:len(parts)-1] {
		sub, ok := m[p].(map[string]any)
		if !ok {
			sub = map[string]any{}
			m[p] = sub
		}
		m = sub
	}
	m[parts[len(parts)-1]] = v
}

// yamlKeys maps mongod's config-file options onto command-line flags.
var yamlKeys = map[string]string{
	"net.port": "port", "net.bindIp": "bind_ip", "net.bindIpAll": "bind_ip_all",
	"storage.dbPath": "dbpath", "replication.replSetName": "replSet", "replication.oplogSizeMB": "oplogSize", "replication.replSet": "replSet",
	"security.keyFile": "keyFile", "security.clusterAuthMode": "clusterAuthMode",
	"net.tls.mode": "tlsMode", "net.tls.certificateKeyFile": "tlsCertificateKeyFile", "net.tls.CAFile": "tlsCAFile",
	"systemLog.path": "logpath", "systemLog.logAppend": "logappend", "processManagement.fork": "fork",
	"net.ssl.mode": "sslMode", "net.ssl.PEMKeyFile": "sslPEMKeyFile", "net.ssl.CAFile": "sslCAFile",
}

// yamlIgnoredPrefixes are config sections mongod knows and the simulator
// does not model.
var yamlIgnoredPrefixes = []string{"storage.", "systemLog.", "processManagement.", "operationProfiling.",
	"net.tls.", "net.ssl.", "net.compression.", "net.maxIncomingConnections", "net.unixDomainSocket.",
	"net.ipv6", "security.enableEncryption", "security.encryption", "security.javascriptEnabled",
	"security.transitionToAuth", "security.clusterIpSourceAllowlist", "replication.oplogSizeMB",
	"replication.enableMajorityReadConcern", "sharding.", "auditLog.", "cloud.", "net.serviceExecutor"}

func (c *Config) loadYAML(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return &OptionError{fmt.Sprintf("Error reading config file: %s", errText(err))}
	}
	var root map[string]any
	if err := yaml.Unmarshal(data, &root); err != nil {
		return &OptionError{fmt.Sprintf("Error parsing YAML config file: %v", err)}
	}
	flat := map[string]any{}
	flatten("", root, flat)
	keys := make([]string, 0, len(flat))
	for k := range flat {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := flat[k]
		sval := fmt.Sprint(v)
		if strings.HasPrefix(k, "setParameter.") {
			if err := c.apply("setParameter", strings.TrimPrefix(k, "setParameter.")+"="+sval); err != nil {
				return err
			}
			continue
		}
		if k == "security.authorization" {
			if sval != "enabled" && sval != "disabled" {
				return &OptionError{fmt.Sprintf("Bad value for parameter \"security.authorization\": %s", sval)}
			}
			c.Auth = sval == "enabled"
			setParsed(c.Parsed, k, sval)
			continue
		}
		if flag, ok := yamlKeys[k]; ok {
			if list, ok := v.([]any); ok && flag == "bind_ip" {
				parts := make([]string, len(list))
				for i, x := range list {
					parts[i] = fmt.Sprint(x)
				}
				sval = strings.Join(parts, ",")
			}
			if err := c.apply(flag, sval); err != nil {
				return err
			}
			continue
		}
		ignored := false
		for _, p := range yamlIgnoredPrefixes {
			if strings.HasPrefix(k, p) || k == strings.TrimSuffix(p, ".") {
				ignored = true
				break
			}
		}
		if !ignored {
			return &OptionError{fmt.Sprintf("Error parsing YAML config file: Unrecognized option: %s", k)}
		}
		c.Ignored = append(c.Ignored, k)
		setParsed(c.Parsed, k, v)
	}
	return nil
}

func flatten(prefix string, m map[string]any, out map[string]any) {
	for k, v := range m {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		sub, isMap := v.(map[string]any)
		switch {
		case isMap && key == "setParameter":
			for sk, sv := range sub {
				out["setParameter."+sk] = sv
			}
		case isMap:
			flatten(key, sub, out)
		default:
			out[key] = v
		}
	}
}
