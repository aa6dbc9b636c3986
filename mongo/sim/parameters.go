package sim

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// parameter is one server parameter: its default, and when mongod lets it
// be set (--setParameter at startup, the setParameter command at runtime).
type parameter struct {
	value            any
	atStartup, atRun bool
}

// serverParameters are the parameters mongod-sim knows, with mongod's
// defaults; featureCompatibilityVersion is answered from admin.system.version.
func serverParameters(cfg Config) map[string]parameter {
	return map[string]parameter{
		"authenticationMechanisms":                    {bson.A{"SCRAM-SHA-1", "SCRAM-SHA-256"}, true, false},
		"scramIterationCount":                         {int32(10000), true, true},
		"scramSHA256IterationCount":                   {int32(15000), true, true},
		"enableLocalhostAuthBypass":                   {true, true, false},
		"logLevel":                                    {int32(0), true, true},
		"quiet":                                       {false, true, true},
		"replElectionTimeoutOffsetLimitFraction":      {0.15, true, false},
		"periodicNoopIntervalSecs":                    {int32(10), true, false},
		"clusterAuthMode":                             {cfg.ClusterAuth, false, true},
		"tlsMode":                                     {tlsModeOr(cfg.TLSMode), false, true},
		"cursorTimeoutMillis":                         {int64(600000), true, true},
		"transactionLifetimeLimitSeconds":             {int32(60), true, true},
		"maxTransactionLockRequestTimeoutMillis":      {int32(5), true, true},
		"ttlMonitorEnabled":                           {true, true, true},
		"ttlMonitorSleepSecs":                         {int32(60), true, false},
		"notablescan":                                 {false, true, true},
		"diagnosticDataCollectionEnabled":             {true, true, true},
		"maxIndexBuildMemoryUsageMegabytes":           {int32(200), true, true},
		"oplogFetcherUsesExhaust":                     {true, true, false},
		"waitForSecondaryBeforeNoopWriteMS":           {int32(10), true, true},
		"wiredTigerConcurrentReadTransactions":        {int32(128), true, true},
		"wiredTigerConcurrentWriteTransactions":       {int32(128), true, true},
		"disableJavaScriptJIT":                        {true, true, true},
		"internalQueryExecYieldIterations":            {int32(1000), true, true},
		"connPoolMaxConnsPerHost":                     {int32(200), true, false},
		"heartBeatFrequencyMS":                        {int32(10000), true, false},
		"enableTestCommands":                          {false, true, false},
		"tcmallocReleaseRate":                         {1.0, true, true},
		"redactClientLogData":                         {false, false, true},
		"logComponentVerbosity":                       {bson.D{{Key: "verbosity", Value: int32(0)}}, true, true},
		"watchdogPeriodSeconds":                       {int32(-1), true, true},
		"auditAuthorizationSuccess":                   {false, true, true},
		"allowDiskUseByDefault":                       {true, true, true},
		"internalQueryFrameworkControl":               {"trySbeRestricted", true, true},
		"initialSyncMethod":                           {"logical", true, false},
		"storageEngineConcurrencyAdjustmentAlgorithm": {"throughputProbing", true, false},
	}
}

// paramStore holds the parameters' current values.
type paramStore struct {
	mu     sync.Mutex
	defs   map[string]parameter
	values map[string]any
}

// newParamStore applies --setParameter values, typed as each default is;
// names the simulator does not know are kept as strings.
func newParamStore(cfg Config) *paramStore {
	p := &paramStore{defs: serverParameters(cfg), values: map[string]any{}}
	for k, def := range p.defs {
		p.values[k] = def.value
	}
	for k, v := range cfg.SetParameters {
		if def, ok := p.defs[k]; ok {
			if typed, err := convertParam(def.value, v); err == nil {
				p.values[k] = typed
				continue
			}
		} else {
			p.defs[k] = parameter{value: v, atStartup: true}
		}
		p.values[k] = v
	}
	return p
}

// convertParam converts a value to the type of a parameter's default.
func convertParam(like any, v any) (any, error) {
	s := fmt.Sprint(v)
	if rv, ok := v.(bson.RawValue); ok {
		switch like.(type) {
		case bool:
			if b, ok := rv.BooleanOK(); ok {
				return b, nil
			}
			if f, ok := numberOK(rv); ok {
				return f != 0, nil
			}
			return nil, fmt.Errorf("expected a boolean")
		case int32, int64, float64:
			f, ok := numberOK(rv)
			if !ok {
				return nil, fmt.Errorf("expected a number")
			}
			s = strconv.FormatFloat(f, 'f', -1, 64)
		case string:
			str, ok := rv.StringValueOK()
			if !ok {
				return nil, fmt.Errorf("expected a string")
			}
			return str, nil
		default:
			return rv, nil
		}
	}
	switch like.(type) {
	case bool:
		return strconv.ParseBool(s)
	case int32:
		n, err := strconv.ParseInt(s, 10, 32)
		return int32(n), err
	case int64:
		return strconv.ParseInt(s, 10, 64)
	case float64:
		return strconv.ParseFloat(s, 64)
	}
	return s, nil
}

func tlsModeOr(m string) string {
	if m == "" {
		return "disabled"
	}
	return m
}

func (p *paramStore) get(name string) (any, parameter, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	def, ok := p.defs[name]
	return p.values[name], def, ok
}

func (p *paramStore) names() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.defs))
	for k := range p.defs {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func isCommandOption(k string) bool { return strings.HasPrefix(k, "$") || genericArgs[k] }

func (c *conn) paramValue(name string) (any, parameter, bool) {
	if name == "featureCompatibilityVersion" {
		return c.n.fcvDoc(), parameter{atRun: false, atStartup: false}, true
	}
	return c.n.params.get(name)
}

func (c *conn) cmdGetParameter(req *Request) (bson.D, error) {
	if e := requireAdmin(req, "getParameter"); e != nil {
		return nil, e
	}
	v := req.Body.Lookup("getParameter")
	all, details := false, false
	if s, ok := v.StringValueOK(); ok && s == "*" {
		all = true
	}
	if d, ok := v.DocumentOK(); ok {
		all, _ = d.Lookup("allParameters").BooleanOK()
		details, _ = d.Lookup("showDetails").BooleanOK()
	}
	var names []string
	if all {
		names = append([]string{"featureCompatibilityVersion"}, c.n.params.names()...)
	} else {
		elems, _ := req.Body.Elements()
		for _, e := range elems[1:] {
			if !isCommandOption(e.Key()) {
				names = append(names, e.Key())
			}
		}
	}
	var out bson.D
	for _, name := range names {
		val, def, ok := c.paramValue(name)
		if !ok {
			continue
		}
		if details {
			val = bson.D{{Key: "value", Value: val}, {Key: "settableAtRuntime", Value: def.atRun}, {Key: "settableAtStartup", Value: def.atStartup}}
		}
		out = append(out, bson.E{Key: name, Value: val})
	}
	if len(out) == 0 {
		return nil, cerr(72, "no option found to get")
	}
	return out, nil
}

// cmdSetParameter changes runtime-settable parameters and answers with the
// previous value ("was"), as mongod does; unknown and startup-only
// parameters are refused with InvalidOptions (72).
func (c *conn) cmdSetParameter(req *Request) (bson.D, error) {
	if e := requireAdmin(req, "setParameter"); e != nil {
		return nil, e
	}
	elems, _ := req.Body.Elements()
	type change struct {
		name string
		val  any
	}
	var changes []change
	var was any
	for _, e := range elems[1:] {
		name := e.Key()
		if isCommandOption(name) {
			continue
		}
		if name == "featureCompatibilityVersion" {
			return nil, cerr(72, "not allowed to change [featureCompatibilityVersion] at runtime; use setFeatureCompatibilityVersion")
		}
		cur, def, ok := c.n.params.get(name)
		if !ok {
			return nil, cerr(72, "attempted to set unrecognized parameter [%s], use help:true to see options ", name)
		}
		if !def.atRun {
			return nil, cerr(72, "not allowed to change [%s] at runtime", name)
		}
		val, err := convertParam(def.value, e.Value())
		if err != nil {
			return nil, cerr(2, "Invalid value for parameter %s: %v", name, err)
		}
		if was == nil {
			was = cur
		}
		changes = append(changes, change{name, val})
	}
	if len(changes) == 0 {
		return nil, cerr(72, "no option found to set, use help:true to see options ")
	}
	p := c.n.params
	p.mu.Lock()
	for _, ch := range changes {
		p.values[ch.name] = ch.val
	}
	p.mu.Unlock()
	return bson.D{{Key: "was", Value: was}}, nil
}
