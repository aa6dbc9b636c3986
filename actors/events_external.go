package actors

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The event of spec.externalAccess (decide_external.go,
// docs/design/external-access.md).

// ExternalAddressesChanged records the members' external addresses as
// observed: Addresses by pod name ("host:port", DNS names only), the
// horizon that carries them, and Missing, why a member has none yet ("" when
// every member has one: then the config's horizons follow). An empty
// event (no Horizon) records that spec.externalAccess was removed. Never a
// secret: addresses are what clients connect to.
type ExternalAddressesChanged struct {
	Horizon   string            `json:"horizon,omitempty"`
	Addresses map[string]string `json:"addresses,omitempty"`
	Missing   string            `json:"missing,omitempty"`
}

func (ExternalAddressesChanged) Type() string { return "ExternalAddressesChanged" }

func init() { register(ExternalAddressesChanged{}) }

// ExternalView is the external access the state last recorded.
type ExternalView struct {
	Horizon   string            `json:"horizon"`
	Addresses map[string]string `json:"addresses,omitempty"`
	Missing   string            `json:"missing,omitempty"`
}

// foldExternal folds the external access event into the state (part of Evolve).
func foldExternal(s State, e Event) State {
	if e, ok := e.(ExternalAddressesChanged); ok {
		if e.Horizon == "" {
			s.External = nil
		} else {
			s.External = &ExternalView{Horizon: e.Horizon, Addresses: maps.Clone(e.Addresses), Missing: e.Missing}
		}
	}
	return s
}

// externalMessage is the Kubernetes Event of an ExternalAddressesChanged.
func externalMessage(e ExternalAddressesChanged) string {
	if e.Horizon == "" {
		return "external access removed: the members' horizons go"
	}
	var parts []string
	for _, pod := range slices.Sorted(maps.Keys(e.Addresses)) {
		parts = append(parts, pod+" "+e.Addresses[pod])
	}
	msg := fmt.Sprintf("horizon %s: %s", e.Horizon, strings.Join(parts, ", "))
	if e.Missing != "" {
		msg += "; waiting: " + e.Missing
	}
	return msg
}
