package v1alpha1

// MongodConfig is the validated subset of mongod's options a user may set
// (docs/design/mongod-config.md). Options mongod reads only at startup roll
// the members one at a time (secondaries first, the primary after a
// step-down); setParameter entries mongod can change at run time are applied
// to the running members without a restart.
//
// +kubebuilder:validation:XValidation:rule="!has(self.setParameter) || self.setParameter.all(k, k in ['connPoolMaxConnsPerHost', 'cursorTimeoutMillis', 'diagnosticDataCollectionEnabled', 'logLevel', 'maxIndexBuildMemoryUsageMegabytes', 'maxTransactionLockRequestTimeoutMillis', 'notablescan', 'oplogFetcherUsesExhaust', 'periodicNoopIntervalSecs', 'transactionLifetimeLimitSeconds', 'ttlMonitorEnabled', 'ttlMonitorSleepSecs'])",message="spec.config.setParameter accepts only connPoolMaxConnsPerHost, cursorTimeoutMillis, diagnosticDataCollectionEnabled, logLevel, maxIndexBuildMemoryUsageMegabytes, maxTransactionLockRequestTimeoutMillis, notablescan, oplogFetcherUsesExhaust, periodicNoopIntervalSecs, transactionLifetimeLimitSeconds, ttlMonitorEnabled, ttlMonitorSleepSecs (docs/design/mongod-config.md)"
// +kubebuilder:validation:XValidation:rule="!has(self.setParameter) || self.setParameter.all(k, !(k in ['diagnosticDataCollectionEnabled', 'notablescan', 'oplogFetcherUsesExhaust', 'ttlMonitorEnabled']) || self.setParameter[k] in ['true', 'false'])",message="spec.config.setParameter: diagnosticDataCollectionEnabled, notablescan, oplogFetcherUsesExhaust and ttlMonitorEnabled take \"true\" or \"false\""
// +kubebuilder:validation:XValidation:rule="!has(self.setParameter) || self.setParameter.all(k, k in ['diagnosticDataCollectionEnabled', 'notablescan', 'oplogFetcherUsesExhaust', 'ttlMonitorEnabled'] || self.setParameter[k].matches('^[0-9]{1,9}$'))",message="spec.config.setParameter: numeric parameters take a whole number from 0 to 999999999, e.g. \"1\""
// +kubebuilder:validation:XValidation:rule="!has(self.setParameter) || !('logLevel' in self.setParameter) || self.setParameter['logLevel'] in ['0', '1', '2', '3', '4', '5']",message="spec.config.setParameter.logLevel must be 0 to 5"
type MongodConfig struct {
	// WiredTigerCacheSizeGB is the WiredTiger cache size in GB
	// (storage.wiredTiger.engineConfig.cacheSizeGB), 0.25 to 10000, e.g.
	// "1.5". Unset: mongod's default (half of the RAM minus 1 GB, at least
	// 256 MB). Set it below the container's memory limit: mongod sizes its
	// default from the node's RAM, not the limit. A change rolls the members.
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9]+([.][0-9]+)?$') && double(self) >= 0.25 && double(self) <= 10000.0",message="spec.config.wiredTigerCacheSizeGB must be a decimal number of GB from 0.25 to 10000, e.g. \"1.5\""
	// +optional
	WiredTigerCacheSizeGB string `json:"wiredTigerCacheSizeGB,omitempty"`

	// Profiling is the database profiler (operationProfiling): mongod's
	// --profile and --slowms. A change rolls the members: the profile
	// command changes one database at a time and is lost at a restart.
	// +optional
	Profiling *ProfilingConfig `json:"profiling,omitempty"`

	// SetParameter are server parameters (mongod's --setParameter), name to
	// value. Only the parameters in the table of docs/design/mongod-config.md
	// are accepted. Those mongod can change at run time (logLevel,
	// cursorTimeoutMillis, notablescan, ...) are applied to the running
	// members with setParameter, without a restart; the startup-only ones
	// (connPoolMaxConnsPerHost, oplogFetcherUsesExhaust,
	// periodicNoopIntervalSecs, ttlMonitorSleepSecs) roll the members. Adding
	// or removing an entry rolls too, so that a removed parameter returns to
	// mongod's default.
	// +kubebuilder:validation:MaxProperties=16
	// +optional
	SetParameter map[string]ParameterValue `json:"setParameter,omitempty"`
}

// ParameterValue is a server parameter's value, as mongod's --setParameter
// takes it.
// +kubebuilder:validation:MaxLength=32
type ParameterValue string

// ProfilingMode is the profiler's level: off, slowOp or all.
// +kubebuilder:validation:Enum=off;slowOp;all
type ProfilingMode string

// ProfilingConfig is the database profiler of every database.
type ProfilingConfig struct {
	// Mode is off (the default), slowOp (profile operations slower than
	// slowOpThresholdMs) or all.
	// +kubebuilder:default=off
	// +optional
	Mode ProfilingMode `json:"mode,omitempty"`

	// SlowOpThresholdMs is the time in milliseconds above which an
	// operation is slow (logged, and profiled under slowOp). mongod's
	// default is 100.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600000
	// +optional
	SlowOpThresholdMs *int32 `json:"slowOpThresholdMs,omitempty"`
}

// ParameterKind is the type of a server parameter's value.
type ParameterKind string

const (
	// ParameterBool takes "true" or "false".
	ParameterBool ParameterKind = "bool"
	// ParameterInt takes a whole number.
	ParameterInt ParameterKind = "int"
)

// Parameter is one server parameter spec.config.setParameter accepts.
type Parameter struct {
	Kind ParameterKind
	// Runtime is true when mongod's setParameter command changes it on a
	// running member; false when mongod reads it only at startup.
	Runtime bool
}

// Parameters are the server parameters spec.config.setParameter accepts,
// as MongoDB 5.0 to 8.0 define them (the CEL rules on MongodConfig list
// the same names; a schema test holds them together). Parameters that
// touch authentication, TLS or shutdown are the operator's and left out.
var Parameters = map[string]Parameter{
	"connPoolMaxConnsPerHost":                {ParameterInt, false},
	"cursorTimeoutMillis":                    {ParameterInt, true},
	"diagnosticDataCollectionEnabled":        {ParameterBool, true},
	"logLevel":                               {ParameterInt, true},
	"maxIndexBuildMemoryUsageMegabytes":      {ParameterInt, true},
	"maxTransactionLockRequestTimeoutMillis": {ParameterInt, true},
	"notablescan":                            {ParameterBool, true},
	"oplogFetcherUsesExhaust":                {ParameterBool, false},
	"periodicNoopIntervalSecs":               {ParameterInt, false},
	"transactionLifetimeLimitSeconds":        {ParameterInt, true},
	"ttlMonitorEnabled":                      {ParameterBool, true},
	"ttlMonitorSleepSecs":                    {ParameterInt, false},
}

// RuntimeParameters are the entries of spec.config.setParameter that
// mongod changes at run time, name to value (nil when there are none).
func (m *Mgors) RuntimeParameters() map[string]string {
	var out map[string]string
	if m.Spec.Config == nil {
		return nil
	}
	for k, v := range m.Spec.Config.SetParameter {
		if Parameters[k].Runtime {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = string(v)
		}
	}
	return out
}
