// Package sim is mongod-sim: a MongoDB replica-set member that speaks the
// wire protocol and behaves as mongod does for what an operator and its
// tests need (hello, replica-set administration, users, simple CRUD), so
// that the official driver and the shell cannot tell it from mongod.
package sim

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
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
	OplogSizeMB int
	Port        int
	BindIP      []string
	BindIPAll   bool
	DBPath      string
	KeyFile     string
	// TransitionToAuth is --transitionToAuth: with a keyFile, members still
	// authenticate to each other but clients need not.
	TransitionToAuth bool
	// RelaxPermChecks is --relaxPermChecks (security.relaxPermChecks): a root-owned keyfile may be group-readable.
	RelaxPermChecks bool
	ClusterAuth     string
	Auth            bool
	TLSMode         string
	TLSCertKeyFile  string
	TLSCAFile       string
	// TLSAllowNoCert is --tlsAllowConnectionsWithoutCertificates: with a CA
	// file, clients without a certificate are accepted (those with one are
	// still verified); without it mongod rejects them.
	TLSAllowNoCert bool
	// TLSAllowInvalidCerts and TLSAllowInvalidHostnames turn off the
	// verification of peers' certificates, or only of their host names.
	TLSAllowInvalidCerts     bool
	TLSAllowInvalidHostnames bool
	SetParameters            map[string]string
	ConfigFile               string
	ShowVersion              bool
	ShowHelp                 bool
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

// DefaultConfig is mongod's defaults: port 27017, bound to localhost only,
// dbpath /data/db.
func DefaultConfig() Config {
	return Config{ServerVersion: Version, Port: 27017, BindIP: []string{"127.0.0.1"}, DBPath: "/data/db", ClusterAuth: "keyFile",
		SetParameters: map[string]string{}, Parsed: map[string]any{}}
}

// ParseArgs parses mongod's command line as the default release does.
func ParseArgs(args []string) (Config, error) { return ParseArgsAs(Version, args) }

// ParseArgsAs parses mongod's command line (args without the program name)
// as the given release does, in both --flag value and --flag=value forms,
// then the --config YAML file if one is named; command-line values win as
// in mongod. An option the release does not know is refused.
func ParseArgsAs(version string, args []string) (Config, error) {
	c := DefaultConfig()
	c.ServerVersion = version
	mm := c.MajorMinor()
	c.Argv = append([]string{"mongod"}, args...)
	type setting struct {
		o    option
		name string
		val  any
	}
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
		o, ok := optionByFlag(name, mm)
		if !ok {
			return c, &OptionError{fmt.Sprintf("Error parsing command line: unrecognised option '%s'\ntry 'mongod --help' for more information", a)}
		}
		invalid := func() error {
			return &OptionError{fmt.Sprintf("Error parsing command line: the argument ('%s') for option '--%s' is invalid\ntry 'mongod --help' for more information", val, name)}
		}
		var typed any
		switch {
		case o.yaml == "systemLog.verbosity":
			// -vvv is level 3; --verbose alone 1, --verbose=vv 2
			typed = len(name)
			if name == "verbose" {
				typed = 1
				if hasVal {
					if strings.Trim(val, "v") != "" {
						return c, invalid()
					}
					typed = len(val)
				}
			}
		case o.kind == optSwitch || o.kind == optBool:
			b := true
			if o.kind == optBool && !hasVal && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
				val, hasVal = args[i], true
			}
			if hasVal {
				switch val {
				case "true", "1":
				case "false", "0":
					b = false
				default:
					return c, invalid()
				}
			}
			typed = b
		default:
			if !hasVal {
				if i+1 >= len(args) {
					return c, &OptionError{fmt.Sprintf("Error parsing command line: the required argument for option '--%s' is missing\ntry 'mongod --help' for more information", name)}
				}
				i++
				val = args[i]
			}
			var err error
			if typed, err = typedValue(o.kind, val); err != nil {
				return c, invalid()
			}
		}
		if o.secret { // getCmdLineOpts' argv hides it too
			if hasVal {
				c.Argv[i+1] = strings.SplitN(args[i], "=", 2)[0] + "=<password>"
			} else {
				c.Argv[i+1] = "<password>"
			}
		}
		set = append(set, setting{o, name, typed})
	}
	// --config first so the command line overrides it.
	for _, st := range set {
		if st.name == "config" || st.name == "f" {
			c.ConfigFile = st.val.(string)
		}
	}
	if c.ConfigFile != "" {
		if err := c.loadYAML(c.ConfigFile); err != nil {
			return c, err
		}
	}
	for _, st := range set {
		if err := c.set(st.o, st.name, "--"+st.name, st.val); err != nil {
			return c, err
		}
	}
	sort.Strings(c.Ignored)
	return c, c.check()
}

// typedValue converts a command-line value to the type getCmdLineOpts shows.
func typedValue(kind optKind, val string) (any, error) {
	switch kind {
	case optInt:
		return strconv.Atoi(val)
	case optDouble:
		return strconv.ParseFloat(val, 64)
	case optStrings:
		var out []string
		for _, p := range strings.Split(val, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		return out, nil
	}
	return val, nil
}

// switchValues are what a command-line switch means in its YAML setting.
var switchValues = map[string]any{
	"auth": "enabled", "noauth": "disabled", "nounixsocket": false, "noscripting": false,
	"nojournal": false, "configsvr": "configsvr", "shardsvr": "shardsvr", "syslog": "syslog",
}

// profileModes are --profile's levels as operationProfiling.mode names them.
var profileModes = map[int]string{0: "off", 1: "slowOp", 2: "all"}

// set records one option in getCmdLineOpts' parsed document and applies
// what the simulator models. flag is the command-line name ("" from the
// config file), shown is how the log names the option.
func (c *Config) set(o option, flag, shown string, val any) error {
	if v, ok := switchValues[flag]; ok && val == true {
		val = v
	}
	if flag == "profile" {
		mode, ok := profileModes[val.(int)]
		if !ok {
			return &OptionError{fmt.Sprintf("Bad value for parameter \"operationProfiling.mode\": %v", val)}
		}
		val = mode
	}
	path := o.yaml
	if path == "" {
		path = o.flag
	}
	key := path
	if !modelled[path] && !modelled[flag] && !slices.Contains(c.Ignored, shown) {
		c.Ignored = append(c.Ignored, shown)
	}
	if o.kind == optSection && flag == "" {
		key = shown
		if path == "setParameter" {
			val = fmt.Sprint(val) // mongod keeps parameters as strings until each parses its own
		}
	}
	if o.kind == optSection && flag == "setParameter" {
		s, _ := val.(string)
		k := strings.IndexByte(s, '=')
		if k <= 0 {
			return &OptionError{fmt.Sprintf("Illegal --setParameter parameter: \"%s\"", s)}
		}
		key, val = "setParameter."+s[:k], s[k+1:]
	}
	if o.secret {
		setParsed(c.Parsed, key, "<password>")
	} else if path != "help" && path != "h" && path != "version" && path != "shutdown" {
		setParsed(c.Parsed, key, val)
	}
	str := fmt.Sprint(val)
	truthy := val == true
	switch path {
	case "replication.replSet", "replication.replSetName":
		c.ReplSet = str
		// mongod accepts "name/seed1,seed2"; the seeds only feed the default initiate config.
		if k := strings.IndexByte(str, '/'); k >= 0 {
			c.ReplSet = str[:k]
		}
	case "replication.oplogSizeMB":
		mb, ok := val.(int)
		if !ok || mb < 0 {
			return &OptionError{fmt.Sprintf("Error parsing command line: the argument ('%s') for option '--oplogSize' is invalid\ntry 'mongod --help' for more information", str)}
		}
		c.OplogSizeMB = mb
	case "net.port":
		p, ok := val.(int)
		if !ok || p < 0 || p > 65535 {
			return &OptionError{fmt.Sprintf("Error parsing command line: the argument ('%s') for option '--port' is invalid\ntry 'mongod --help' for more information", str)}
		}
		c.Port = p
	case "net.bindIp":
		c.BindIP = nil
		for _, h := range strings.Split(str, ",") {
			if h = strings.TrimSpace(h); h != "" {
				c.BindIP = append(c.BindIP, h)
			}
		}
	case "net.bindIpAll":
		c.BindIPAll = truthy
	case "storage.dbPath":
		c.DBPath = str
	case "security.keyFile":
		c.KeyFile = str
	case "security.relaxPermChecks":
		c.RelaxPermChecks = truthy
	case "security.transitionToAuth":
		c.TransitionToAuth = truthy
	case "security.clusterAuthMode":
		switch str {
		case "keyFile", "sendKeyFile", "sendX509", "x509":
		default:
			return &OptionError{fmt.Sprintf("Bad value for parameter \"net.clusterAuthMode\": Invalid clusterAuthMode: %s", str)}
		}
		c.ClusterAuth = str
	case "security.authorization":
		if str != "enabled" && str != "disabled" {
			return &OptionError{fmt.Sprintf("Bad value for parameter \"security.authorization\": %s", str)}
		}
		c.Auth = str == "enabled"
	case "net.tls.mode", "net.ssl.mode":
		switch str {
		case "disabled", "allowTLS", "preferTLS", "requireTLS", "allowSSL", "preferSSL", "requireSSL":
		default:
			return &OptionError{fmt.Sprintf("Error parsing command line:  Unsupported value for tlsMode %s", str)}
		}
		c.TLSMode = strings.Replace(str, "SSL", "TLS", 1)
		setParsed(c.Parsed, key, c.TLSMode)
	case "net.tls.certificateKeyFile", "net.ssl.PEMKeyFile":
		c.TLSCertKeyFile = str
	case "net.tls.CAFile", "net.ssl.CAFile":
		c.TLSCAFile = str
	case "net.tls.allowConnectionsWithoutCertificates":
		c.TLSAllowNoCert = truthy
	case "net.tls.allowInvalidCertificates":
		c.TLSAllowInvalidCerts = truthy
	case "net.tls.allowInvalidHostnames":
		c.TLSAllowInvalidHostnames = truthy
	case "setParameter":
		c.SetParameters[strings.TrimPrefix(key, "setParameter.")] = fmt.Sprint(val)
	case "systemLog.path":
		c.LogPath = str
		if flag != "" {
			setParsed(c.Parsed, "systemLog.destination", "file")
		}
	case "systemLog.destination":
		if str != "file" && !slices.Contains(c.Ignored, shown) {
			c.Ignored = append(c.Ignored, shown) // syslog: the log stays on stdout
		}
	case "systemLog.logAppend":
		c.LogAppend = truthy
	case "processManagement.fork":
		c.Fork = truthy
	case "version":
		c.ShowVersion = truthy
	case "shutdown":
		c.Shutdown = truthy
	case "help", "h":
		c.ShowHelp = truthy
	}
	return nil
}

func (c *Config) check() error {
	if c.KeyFile != "" && !c.TransitionToAuth {
		c.Auth = true // a keyFile implies authorization, as in mongod
	}
	// Parameters the simulator knows are checked as mongod checks them; others are accepted.
	defs := serverParameters(*c)
	for _, k := range sortedKeys(c.SetParameters) {
		def, known := defs[k]
		if !known {
			continue
		}
		if !def.atStartup {
			return &OptionError{fmt.Sprintf("BadValue: Cannot use --setParameter to set \"%s\" at startup", k)}
		}
		if _, err := convertParam(def.value, c.SetParameters[k]); err != nil {
			return &OptionError{fmt.Sprintf("BadValue: Bad value for parameter \"%s\": %s", k, c.SetParameters[k])}
		}
	}
	if dest, _ := c.Parsed["systemLog"].(map[string]any); dest != nil && dest["destination"] == "file" && c.LogPath == "" {
		return &OptionError{"BadValue: systemLog.path is required if systemLog.destination is to a file"}
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
