package sim

import (
	"crypto/tls"
	"net"
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// defaultHorizon is mongod's reserved name for a member's own host.
const defaultHorizon = "__default"

// parseHorizons reads a member's horizons: {name: "host:port"} (split
// horizon), with mongod's checks; it returns them sorted by name, as mongod
// keeps them.
func parseHorizons(v bson.RawValue, host string) (bson.D, error) {
	d, ok := v.DocumentOK()
	if !ok {
		return nil, cfgErr("BSON field 'MemberConfig.horizons' is the wrong type '%s', expected type 'object'", typeName(v.Type))
	}
	elems, err := d.Elements()
	if err != nil {
		return nil, cfgErr("%v", err)
	}
	if len(elems) == 0 {
		return nil, cfgErr("The horizons field cannot be empty, if present.")
	}
	var out bson.D
	names := map[string]bool{}
	for _, e := range elems {
		name := e.Key()
		s, ok := e.Value().StringValueOK()
		switch {
		case !ok:
			return nil, cfgErr("horizons.%s field has non-string value of type %s", name, typeName(e.Value().Type))
		case name == defaultHorizon:
			return nil, cfgErr("Horizon name \"%s\" is reserved for internal mongodb usage", defaultHorizon)
		case name == "":
			return nil, cfgErr("Horizons cannot have empty names")
		case names[name]:
			return nil, cfgErr("Duplicate horizon name found \"%s\".", name)
		}
		h, err := normalizeHost(s)
		if err != nil {
			return nil, err
		}
		names[name] = true
		out = append(out, bson.E{Key: name, Value: h})
	}
	seen := map[string]bool{host: true}
	for _, e := range out {
		h := e.Value.(string)
		if seen[h] {
			return nil, cfgErr("Duplicate horizon member found \"%s\".", h)
		}
		seen[h] = true
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// validateHorizons: every member has the same horizon names, and no
// host:port appears twice across all members and horizons.
func (c *RSConfig) validateHorizons() error {
	namesOf := func(m Member) map[string]bool {
		s := map[string]bool{}
		for _, e := range m.Horizons {
			s[e.Key] = true
		}
		return s
	}
	want := namesOf(c.Members[0])
	missing := map[string]bool{}
	count := map[string]int{}
	for _, m := range c.Members {
		got := namesOf(m)
		same := len(got) == len(want)
		for k := range got {
			if !want[k] {
				missing[k], same = true, false
			}
		}
		for k := range want {
			if !got[k] {
				missing[k], same = true, false
			}
		}
		if same {
			count[m.Host]++
			for _, e := range m.Horizons {
				count[e.Value.(string)]++
			}
		}
	}
	if len(missing) > 0 {
		return cfgErr("Saw a replica set member with a different horizon mapping than the others.  The following horizons were not universally present:%s", listed(missing))
	}
	dup := map[string]bool{}
	for h, n := range count {
		if n > 1 {
			dup[h] = true
		}
	}
	if len(dup) > 0 {
		return cfgErr("The following hostnames are not unique across all horizons and host specifications in the replica set:%s", listed(dup))
	}
	return nil
}

// listed renders names as mongod does in these messages: " a, b".
func listed(set map[string]bool) string {
	names := make([]string, 0, len(set))
	for k := range set {
		names = append(names, " "+k)
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

// hostIn is the member's host:port as seen through the named horizon.
func (m Member) hostIn(horizon string) string {
	for _, e := range m.Horizons {
		if e.Key == horizon {
			return e.Value.(string)
		}
	}
	return m.Host
}

// horizon is the horizon a client connected through: the one of our
// own horizons whose host name is the TLS SNI name the client sent, else
// the default (mongod's SplitHorizon::determineHorizon).
func (c *conn) horizon(v *replView) string {
	tc, ok := c.nc.(*tls.Conn)
	if !ok || v.rs == nil || v.self < 0 {
		return defaultHorizon
	}
	sni := tc.ConnectionState().ServerName
	if sni == "" {
		return defaultHorizon
	}
	for _, e := range v.rs.Members[v.self].Horizons {
		if h, _, err := net.SplitHostPort(e.Value.(string)); err == nil && strings.EqualFold(h, sni) {
			return e.Key
		}
	}
	return defaultHorizon
}
