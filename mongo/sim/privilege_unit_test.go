package sim

import "testing"

func TestResourceCovers(t *testing.T) {
	db := func(d string) Resource { return Resource{DB: d} }
	ns := func(d, c string) Resource { return Resource{DB: d, Collection: c} }
	cases := []struct {
		p, target Resource
		want      bool
	}{
		{Resource{Any: true}, clusterRes(), true},
		{Resource{Any: true}, ns("local", "oplog.rs"), true},
		{clusterRes(), db("admin"), false},
		{db("app"), clusterRes(), false},
		{db("app"), db("app"), true},
		{db("app"), ns("app", "c"), true},
		{db("app"), ns("app", "system.users"), false},
		{db("app"), ns("other", "c"), false},
		{Resource{}, ns("app", "c"), true},
		{Resource{}, db("app"), true},
		{Resource{}, ns("local", "oplog.rs"), false},
		{Resource{}, ns("config", "c"), false},
		{Resource{}, db("local"), false},
		{Resource{}, ns("app", "system.js"), false},
		{db("local"), ns("local", "oplog.rs"), true},
		{db("local"), ns("local", "replset.minvalid"), false},
		{ns("app", "c"), ns("app", "c"), true},
		{ns("app", "c"), ns("app", "d"), false},
		{ns("app", "c"), db("app"), false},
		{ns("", "system.users"), ns("hr", "system.users"), true},
		{ns("", "c"), ns("x", "c"), true},
	}
	for _, c := range cases {
		if got := c.p.covers(c.target); got != c.want {
			t.Errorf("%+v covers %+v: %v, want %v", c.p, c.target, got, c.want)
		}
	}
	if !allowed([]Privilege{{Resource: db("app"), Actions: []string{"anyAction"}}}, ns("app", "c"), "find", "dropCollection") {
		t.Error("anyAction does not grant every action")
	}
}

func TestBuiltinRolesByVersion(t *testing.T) {
	if builtinRoleExists("directShardOperations", "admin", "7.0") || builtinRoleExists("directShardOperations", "admin", "6.0") {
		t.Error("directShardOperations before 8.0")
	}
	if !builtinRoleExists("directShardOperations", "admin", "8.0") {
		t.Error("no directShardOperations in 8.0")
	}
	if builtinRoleExists("root", "app", "7.0") || !builtinRoleExists("read", "app", "7.0") {
		t.Error("admin-only roles")
	}
	has := func(mm string) bool {
		return allowed(builtinPrivileges("root", "admin", mm), clusterRes(), "issueDirectShardOperations")
	}
	if has("7.0") || !has("8.0") {
		t.Error("root's issueDirectShardOperations by version")
	}
}
