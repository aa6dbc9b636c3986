package mongo

import (
	"maps"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Horizons returns a member's horizons ({name: "host:port"}), nil when it
// has none.
func (m Member) Horizons() map[string]string {
	var out map[string]string
	switch h := m.Extra["horizons"].(type) {
	case map[string]string:
		out = maps.Clone(h)
	case map[string]any:
		out = map[string]string{}
		for k, v := range h {
			if s, ok := v.(string); ok {
				out[k] = s
			}
		}
	case bson.D: // as the driver decodes a nested document
		out = map[string]string{}
		for _, e := range h {
			if s, ok := e.Value.(string); ok {
				out[e.Key] = s
			}
		}
	case bson.M:
		return Member{Extra: bson.M{"horizons": map[string]any(h)}}.Horizons()
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// setHorizons sets (or, for none, removes) a member's horizons.
func (m *Member) setHorizons(h map[string]string) {
	if len(h) == 0 {
		delete(m.Extra, "horizons")
		if len(m.Extra) == 0 {
			m.Extra = nil
		}
		return
	}
	if m.Extra == nil {
		m.Extra = map[string]any{}
	}
	m.Extra["horizons"] = maps.Clone(h)
}

// horizonNames are the sorted names of a member's horizons.
func horizonNames(h map[string]string) []string {
	return slices.Sorted(maps.Keys(h))
}

// horizonChange is rule 6: the horizons of the desired members in the
// config, all in one reconfig (mongod requires every member to have the
// same horizon names, so they cannot change one member at a time). A
// desired member not in the config yet joins after, with the names the
// config has then (rule 2); a member of the config that is not desired
// keeps its horizons, so no change is sent until it left (rule 1). It is a
// candidate only when the desired horizons name the same horizons for
// every member.
func (p *planner) horizonChange() []Step {
	next := p.cur.Next()
	for _, m := range next.Members {
		if !p.desired(m.Host) && len(m.Horizons()) > 0 {
			p.wait("%s leaves the config before the members' horizons change (mongod requires the same names on every member)", m.Host)
			return nil
		}
	}
	changed := false
	var names []string
	for i, d := range p.order {
		if i == 0 {
			names = horizonNames(d.Horizons)
		} else if !slices.Equal(names, horizonNames(d.Horizons)) {
			p.wait("the members' horizons differ in their names (mongod requires the same for all)")
			return nil
		}
		nm := next.Member(d.Host)
		if nm == nil {
			continue // joins later (rule 2)
		}
		if !maps.Equal(nm.Horizons(), d.Horizons) {
			nm.setHorizons(d.Horizons)
			changed = true
		}
	}
	if !changed {
		return nil
	}
	what := "remove the members' horizons"
	if len(names) > 0 {
		what = "set the members' horizons " + strings.Join(names, ", ")
	}
	return []Step{p.step(ChangeHorizons, "", next, "%s", what)}
}

// desired reports whether host is a desired member's.
func (p *planner) desired(host string) bool {
	for _, d := range p.order {
		if SameHost(d.Host, host) {
			return true
		}
	}
	return false
}

// joiningHorizons are the horizons a desired member joins the config with:
// its own when they have the config's names, none when the config has none
// (rule 6 then gives every member its horizons at once); ok is false when
// it cannot join yet (the config has horizons and the member none, or
// other names: rule 6 renames the members in the config first).
func (c Config) joiningHorizons(d DesiredMember) (map[string]string, string, bool) {
	var have []string
	if len(c.Members) > 0 {
		have = horizonNames(c.Members[0].Horizons())
	}
	want := horizonNames(d.Horizons)
	switch {
	case slices.Equal(have, want):
		return d.Horizons, "", true
	case len(have) == 0:
		return nil, "", true
	case len(want) == 0:
		return nil, "its external address is known: the config's members have horizons, and mongod requires them of every member", false
	}
	return nil, "the members in the config have the horizons " + strings.Join(want, ", ") + " (rule 6 renames them first): mongod requires the same names on every member", false
}
