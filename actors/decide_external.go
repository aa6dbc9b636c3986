package actors

import (
	"fmt"
	"maps"
	"strings"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
)

// External access (docs/design/external-access.md):
//  1. Each member and the arbiter has a Service of its own,
//     <pod>-external, of spec.externalAccess.type (ensureObjects, as the
//     other objects; removed with the member or with spec.externalAccess).
//  2. Each member's external address is observed (kube.ExternalAddress:
//     the DNS name spec.externalAccess.members gives, else the load
//     balancer's host name; never an IP, which mongod refuses in a
//     horizon) and recorded when it changes (ExternalAddressesChanged),
//     with why a member has none yet.
//  3. Once every member has one, the desired members carry them as their
//     horizons ({<horizon>: "host:port"}), and the membership planner
//     (mongo.Plan, rule 6) sends them in one reconfig: mongod requires the
//     same horizon names on every member. While one is missing, the
//     members keep the horizons the config has; a new member joins with
//     the config's horizon names (none when it has none, else only once
//     its address is known).
//  4. Without spec.externalAccess the desired members have no horizons:
//     the planner removes them from the config in one reconfig.

// ExternalObserved is one member's external address as observed: Address
// ("host:port") or Why there is none yet.
type ExternalObserved struct {
	Address string `json:"address,omitempty"`
	Why     string `json:"why,omitempty"`
}

// externalRecord is what the state should record of the external access
// observed for the desired members: the zero event without
// spec.externalAccess.
func externalRecord(m *v1alpha1.Mgors, desired []mongo.DesiredMember, obs map[string]ExternalObserved) ExternalAddressesChanged {
	if m.Spec.ExternalAccess == nil {
		return ExternalAddressesChanged{}
	}
	e := ExternalAddressesChanged{Horizon: m.HorizonName()}
	var missing []string
	for _, dm := range desired {
		o, ok := obs[dm.Name]
		switch {
		case ok && o.Address != "":
			if e.Addresses == nil {
				e.Addresses = map[string]string{}
			}
			e.Addresses[dm.Name] = o.Address
		case ok:
			missing = append(missing, dm.Name+": "+o.Why)
		default:
			missing = append(missing, dm.Name+": not observed yet")
		}
	}
	e.Missing = strings.Join(missing, "; ")
	return e
}

// sameExternal reports whether the state records e already.
func sameExternal(v *ExternalView, e ExternalAddressesChanged) bool {
	if v == nil {
		return e.Horizon == ""
	}
	return v.Horizon == e.Horizon && v.Missing == e.Missing && maps.Equal(v.Addresses, e.Addresses)
}

// withHorizons is desired with the horizons the config should carry
// (step 3 and 4 above); cur is the config the members hold (nil before
// the initiate). desired is not modified.
func withHorizons(desired []mongo.DesiredMember, v *ExternalView, cur *mongo.Config) []mongo.DesiredMember {
	out := make([]mongo.DesiredMember, len(desired))
	copy(out, desired)
	for i := range out {
		dm := &out[i]
		switch {
		case v == nil:
			dm.Horizons = nil
		case v.Missing == "" && v.Addresses[dm.Name] != "":
			dm.Horizons = map[string]string{v.Horizon: v.Addresses[dm.Name]}
		case cur != nil && cur.Member(dm.Host) != nil:
			dm.Horizons = cur.Member(dm.Host).Horizons()
		default:
			dm.Horizons = nil
		}
	}
	return out
}

// external records the external addresses when they changed, and gives
// the desired members their horizons for every later rule.
func (d *decider) external() {
	if e := externalRecord(d.in.Mgors, d.in.Desired, d.in.Obs.External); !sameExternal(d.s.External, e) {
		d.emit(e)
	}
	d.in.Desired = withHorizons(d.in.Desired, d.s.External, d.in.Obs.Config)
}

// externalConnectionString is the mongodb:// URI of the data members'
// external addresses, without credentials; "" until every data member of
// the spec has one.
func externalConnectionString(m *v1alpha1.Mgors, s State) string {
	v := s.External
	if v == nil || v.Missing != "" {
		return ""
	}
	n := m.Spec.Members
	if n == 0 {
		n = v1alpha1.DefaultMembers
	}
	hosts := make([]string, 0, n)
	for i := range n {
		a := v.Addresses[m.PodName(i)]
		if a == "" {
			return ""
		}
		hosts = append(hosts, a)
	}
	return fmt.Sprintf("mongodb://%s/?replicaSet=%s&authSource=admin&tls=true", strings.Join(hosts, ","), m.ReplSetName())
}
