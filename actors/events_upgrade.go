package actors

import "github.com/mgors/operator/kube/api/v1alpha1"

// The events and the action of a version change (decide_upgrade.go,
// docs/design/upgrade.md).

// ActSetFCV sets the replica set's featureCompatibilityVersion, on the
// primary, to the line of the version every member runs.
const ActSetFCV ActionKind = "SetFeatureCompatibilityVersion"

// VersionsObserved records a change in the binary versions the members run
// (buildInfo, by pod name) or in the set's featureCompatibilityVersion. A
// member that does not answer keeps its last known version.
type VersionsObserved struct {
	FCV     string            `json:"fcv,omitempty"`
	Members map[string]string `json:"members,omitempty"`
}

// UpgradeStarted records a change of spec.version accepted: the members
// restart on To's image one at a time (secondaries and the arbiter first,
// the primary after a step-down), then the FCV follows. A downgrade to the
// FCV's own line is one too (Downgrade).
type UpgradeStarted struct {
	From string `json:"from"`
	To   string `json:"to"`
	// FCV is the set's featureCompatibilityVersion when it was accepted.
	FCV       string `json:"fcv,omitempty"`
	Downgrade bool   `json:"downgrade,omitempty"`
}

// VersionRefused records a spec.version MongoDB cannot run on the set's data
// (more than one major version above its FCV, or below it): nothing is
// rolled, the members keep Running, until the spec or the FCV changes.
type VersionRefused struct {
	Version string `json:"version"`
	Running string `json:"running"`
	FCV     string `json:"fcv"`
	Reason  string `json:"reason"`
}

// FCVSet records that the set's featureCompatibilityVersion moved, From the
// upgrade's start To the line every member runs.
type FCVSet struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// UpgradeFinished records that every member runs Version and the FCV is its
// line (or, for a downgrade on the same line, stayed it).
type UpgradeFinished struct {
	Version string `json:"version"`
	FCV     string `json:"fcv"`
}

func (VersionsObserved) Type() string { return "VersionsObserved" }
func (UpgradeStarted) Type() string   { return "UpgradeStarted" }
func (VersionRefused) Type() string   { return "VersionRefused" }
func (FCVSet) Type() string           { return "FCVSet" }
func (UpgradeFinished) Type() string  { return "UpgradeFinished" }

func init() {
	register(VersionsObserved{})
	register(UpgradeStarted{})
	register(VersionRefused{})
	register(FCVSet{})
	register(UpgradeFinished{})
}

// foldUpgrade folds the version events into the state (part of Evolve).
func foldUpgrade(s State, e Event) State {
	switch e := e.(type) {
	case SpecObserved:
		if s.Version == "" {
			s.Version = e.Version // the version the cluster was created at
			if s.Version == "" {
				s.Version = v1alpha1.DefaultVersion
			}
		}
		if s.VersionRefused != nil && e.Version != s.VersionRefused.Version {
			s.VersionRefused = nil // the spec moved on: judged afresh
		}
	case VersionsObserved:
		s.Versions = e
	case UpgradeStarted:
		started := e
		s.Version, s.Upgrade, s.VersionRefused = e.To, &started, nil
	case VersionRefused:
		refused := e
		s.VersionRefused = &refused
	case FCVSet:
		s.Versions.FCV = e.To
	case UpgradeFinished:
		s.Upgrade = nil
	}
	return s
}
