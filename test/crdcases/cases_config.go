package crdcases

// configCases are the invalid spec.config inputs (docs/design/mongod-config.md).
var configCases = []Case{
	{
		Name:  "a setParameter entry outside the table",
		Patch: `spec: {config: {setParameter: {authenticationMechanisms: "PLAIN"}}}`,
		Field: "spec.config",
		Rule:  "spec.config.setParameter accepts only",
	},
	{
		Name:  "a boolean parameter given a number",
		Patch: `spec: {config: {setParameter: {notablescan: "1"}}}`,
		Field: "spec.config",
		Rule:  `take "true" or "false"`,
	},
	{
		Name:  "a numeric parameter given a word",
		Patch: `spec: {config: {setParameter: {logLevel: "debug"}}}`,
		Field: "spec.config",
		Rule:  "numeric parameters take a whole number",
	},
	{
		Name:  "a logLevel above 5",
		Patch: `spec: {config: {setParameter: {logLevel: "9"}}}`,
		Field: "spec.config",
		Rule:  "spec.config.setParameter.logLevel must be 0 to 5",
	},
	{
		Name:  "a cache below 0.25 GB",
		Patch: `spec: {config: {wiredTigerCacheSizeGB: "0.1"}}`,
		Field: "spec.config.wiredTigerCacheSizeGB",
		Rule:  "from 0.25 to 10000",
	},
	{
		Name:  "a cache size that is not a number",
		Patch: `spec: {config: {wiredTigerCacheSizeGB: "2Gi"}}`,
		Field: "spec.config.wiredTigerCacheSizeGB",
		Rule:  "must be a decimal number of GB",
	},
	{
		Name:  "an unknown profiling mode",
		Patch: `spec: {config: {profiling: {mode: verbose}}}`,
		Field: "spec.config.profiling.mode",
		Rule:  "Unsupported value",
	},
}

func init() { Invalid = append(Invalid, configCases...) }
