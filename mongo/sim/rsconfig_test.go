package sim

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func TestRSConfigValidate(t *testing.T) {
	m := func(id int, host string, extra ...bson.E) bson.D {
		return append(bson.D{{Key: "_id", Value: id}, {Key: "host", Value: host}}, extra...)
	}
	tests := []struct {
		name    string
		members bson.A
		want    string
	}{
		{"ok", bson.A{m(0, "a:1"), m(1, "b:1")}, ""},
		{"default port", bson.A{m(0, "a")}, ""},
		{"dup id", bson.A{m(0, "a:1"), m(0, "b:1")}, "Found two member configurations with same _id field, members.0._id == members.1._id == 0"},
		{"dup host", bson.A{m(0, "a:1"), m(1, "A:1")}, "same host field"},
		{"no electable", bson.A{m(0, "a:1", bson.E{Key: "priority", Value: 0})}, "at least one non-arbiter member with priority > 0"},
		{"votes 2", bson.A{m(0, "a:1", bson.E{Key: "votes", Value: 2})}, "value must be <= 1"},
		{"nonvoting priority", bson.A{m(0, "a:1"), m(1, "b:1", bson.E{Key: "votes", Value: 0})}, "priority must be 0 when non-voting (votes:0)"},
		{"hidden priority", bson.A{m(0, "a:1"), m(1, "b:1", bson.E{Key: "hidden", Value: true})}, "priority must be 0 when hidden=true"},
		{"localhost mix", bson.A{m(0, "localhost:1"), m(1, "b:1")}, "found 1 out of 2"},
		{"arbiter no vote", bson.A{m(0, "a:1"), m(1, "b:1", bson.E{Key: "arbiterOnly", Value: true}, bson.E{Key: "votes", Value: 0})}, "Arbiter must vote"},
		{"empty", bson.A{}, "contains 0 members, but must have at least 1 and no more than  50"},
		{"unknown field", bson.A{m(0, "a:1", bson.E{Key: "bogus", Value: 1})}, "is an unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := mustRaw(bson.D{{Key: "_id", Value: "rs"}, {Key: "members", Value: tt.members}})
			c, err := ParseRSConfig(raw, false)
			if err == nil {
				err = c.Validate()
			}
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("want %q, got %v", tt.want, err)
			}
		})
	}
}

func TestMajoritiesAndConfigOrder(t *testing.T) {
	c := &RSConfig{Members: []Member{{Votes: 1}, {Votes: 1}, {Votes: 1, ArbiterOnly: true}, {Votes: 0}, {Votes: 1, NewlyAdded: true}}}
	v, mv, wv, wm := c.Majorities()
	if v != 3 || mv != 2 || wv != 2 || wm != 2 {
		t.Fatal(v, mv, wv, wm)
	}
	if !configNewer(2, 1, 1, 1) || configNewer(5, 1, 1, 2) || !configNewer(1, 3, 9, 2) || !configNewer(10, -1, 9, 4) {
		t.Fatal("config ordering")
	}
	if id := electionID(1); id.Hex() != "7fffffff0000000000000001" {
		t.Fatal(id.Hex())
	}
}

func TestMatchSortProject(t *testing.T) {
	docs := []bson.Raw{
		mustRaw(bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: int32(5)}, {Key: "s", Value: "b"}, {Key: "tags", Value: bson.A{"x", "y"}}}),
		mustRaw(bson.D{{Key: "_id", Value: 2}, {Key: "n", Value: 7.5}, {Key: "s", Value: "a"}}),
		mustRaw(bson.D{{Key: "_id", Value: 3}, {Key: "n", Value: int64(1)}, {Key: "sub", Value: bson.D{{Key: "k", Value: "v"}}}}),
	}
	count := func(f bson.D) int {
		n := 0
		for _, d := range docs {
			if ok, err := Match(d, mustRaw(f)); err != nil {
				t.Fatal(err)
			} else if ok {
				n++
			}
		}
		return n
	}
	cases := []struct {
		f    bson.D
		want int
	}{
		{bson.D{}, 3},
		{bson.D{{Key: "n", Value: 5}}, 1},
		{bson.D{{Key: "n", Value: bson.D{{Key: "$gt", Value: 1}}}}, 2},
		{bson.D{{Key: "n", Value: bson.D{{Key: "$gte", Value: 1}, {Key: "$lt", Value: 7}}}}, 2},
		{bson.D{{Key: "n", Value: bson.D{{Key: "$ne", Value: 5}}}}, 2},
		{bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{1, 3, 9}}}}}, 2},
		{bson.D{{Key: "tags", Value: "y"}}, 1},
		{bson.D{{Key: "sub.k", Value: "v"}}, 1},
		{bson.D{{Key: "s", Value: bson.D{{Key: "$exists", Value: false}}}}, 1},
		{bson.D{{Key: "$or", Value: bson.A{bson.D{{Key: "s", Value: "a"}}, bson.D{{Key: "_id", Value: 3}}}}}, 2},
	}
	for _, c := range cases {
		if got := count(c.f); got != c.want {
			t.Errorf("%v: got %d want %d", c.f, got, c.want)
		}
	}
	sorted := append([]bson.Raw(nil), docs...)
	if err := SortDocs(sorted, mustRaw(bson.D{{Key: "n", Value: -1}})); err != nil {
		t.Fatal(err)
	}
	if id, _ := sorted[0].Lookup("_id").AsInt64OK(); id != 2 {
		t.Fatalf("sort: %v", sorted[0])
	}
	p, err := Project(docs[0], mustRaw(bson.D{{Key: "s", Value: 1}, {Key: "_id", Value: 0}}), nil)
	if err != nil || p.String() != `{"s": "b"}` {
		t.Fatalf("project: %v %v", p, err)
	}
	parsed, err := ParseUpdate(mustRaw(bson.D{{Key: "$set", Value: bson.D{{Key: "a.b", Value: 1}}}, {Key: "$inc", Value: bson.D{{Key: "n", Value: 2}}}, {Key: "$unset", Value: bson.D{{Key: "s", Value: ""}}}}), nil)
	if err != nil {
		t.Fatal(err)
	}
	u, err := parsed.Apply(docs[0], nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := u.Lookup("n").Int32OK(); n != 7 {
		t.Fatalf("inc: %v", u)
	}
	if _, err := u.LookupErr("s"); err == nil {
		t.Fatalf("unset: %v", u)
	}
	if v, _ := u.Lookup("a", "b").AsInt64OK(); v != 1 {
		t.Fatalf("set dotted: %v", u)
	}
}
