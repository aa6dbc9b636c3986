package mongo

import (
	"maps"
	"slices"

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

// horizonChange is rule 6: the desired members' horizons, all in one
// reconfig (mongod requires every member to have the same horizon names,
// so they cannot change one member at a time). It is a candidate only
// when every desired member is in the config and the desired horizons
// name the same horizons for every member.
func (p *planner) horizonChange() []Step {
	next := p.cur.Next()
	changed := false
	var names []string
	for i, d := range p.order {
		nm := next.Member(d.Host)
		if nm == nil {
			return nil
		}
		if i == 0 {
			names = horizonNames(d.Horizons)
		} else if !slices.Equal(names, horizonNames(d.Horizons)) {
			p.wait("the members' horizons differ in their names (mongod requires the same for all)")
			return nil
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
		what = "set the members' horizons " + names[0]
		for _, n := range names[1:] {
			what += ", " + n
		}
	}
	return []Step{p.step(ChangeHorizons, "", next, "%s", what)}
}

// hasHorizons reports whether any member of c has horizons: a member added
// to it must come with the same horizon names.
func (c Config) hasHorizons() bool {
	for _, m := range c.Members {
		if len(m.Horizons()) > 0 {
			return true
		}
	}
	return false
}
