package actors

import "strings"

// The event and the action of a spec.config change (decide_config.go,
// docs/design/mongod-config.md).

// ActApplyConfig applies spec.config's runtime options to one running
// member: setParameter of each runtime parameter, and replSetResizeOplog
// for spec.storage.oplogSizeMB.
const ActApplyConfig ActionKind = "ApplyConfig"

// ActGrantConfigRole creates mongo.ConfigRole (setParameter and
// replSetResizeOplog on the cluster) and grants it to the operator's own
// user, on the primary, before the first ApplyConfig made as that user.
const ActGrantConfigRole ActionKind = "GrantConfigRole"

// ConfigChanged records the mongod options the spec asks for (spec.config
// and spec.storage.oplogSizeMB, flattened: wiredTigerCacheSizeGB, profile,
// slowms, setParameter.<name>, oplogSizeMB), and for those that changed on
// an initiated set how each reaches the members: Restart rolls them (the
// pod template changed), Runtime is applied to the running members, Later
// reaches only members whose oplog is created from now on (an oplog below
// mongod's 990 MB run-time minimum). Values are never secrets: the
// parameters that carry any are refused by the schema.
type ConfigChanged struct {
	Options map[string]string `json:"options,omitempty"`
	Restart []string          `json:"restart,omitempty"`
	Runtime []string          `json:"runtime,omitempty"`
	Later   []string          `json:"later,omitempty"`
}

func (ConfigChanged) Type() string { return "ConfigChanged" }

func init() { register(ConfigChanged{}) }

// foldConfig folds the config event into the state (part of Evolve).
func foldConfig(s State, e Event) State {
	switch e := e.(type) {
	case ConfigChanged:
		s.MongodOptions = e.Options
	case ActionFinished:
		if e.Action == ActGrantConfigRole && s.InFlight != nil && s.InFlight.Action == e.Action {
			s.ConfigRole = true
		}
	case AuthSwitched:
		if e.To == AuthOperator {
			s.ConfigRole = false // perhaps a user re-created: grant again (it may be repeated)
		}
	}
	return s
}

// configChangedMessage says how a config change reaches the members, for
// its Kubernetes Event; "" when nothing runs yet.
func configChangedMessage(e ConfigChanged) string {
	var parts []string
	if len(e.Restart) > 0 {
		parts = append(parts, strings.Join(e.Restart, ", ")+": needs a restart, members roll one at a time (secondaries first, the primary after a step-down)")
	}
	if len(e.Runtime) > 0 {
		parts = append(parts, strings.Join(e.Runtime, ", ")+": applied to the running members without a restart")
	}
	if len(e.Later) > 0 {
		parts = append(parts, strings.Join(e.Later, ", ")+": reaches only members whose oplog is created from now on (replSetResizeOplog takes 990 MB or more)")
	}
	return strings.Join(parts, "; ")
}
