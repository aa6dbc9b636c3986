package backup

import (
	"errors"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestFlatten: what the replay does with each kind of oplog entry. Writes
// are stripped to op, ns, o, o2 (never the source's collection UUID);
// a transaction is unwrapped; index and collection commands become the
// commands with the code that means "already done"; users' and roles'
// writes are applied but for the kept users'; a view definition written is
// the view dropped and created again, one removed the view dropped;
// no-ops, local, config and other system namespaces are left out; what is
// not replayed yet (a rename, a view's collMod) is an error.
func TestFlatten(t *testing.T) {
	raw := func(d bson.D) bson.Raw { b, _ := bson.Marshal(d); return b }
	uuid := bson.Binary{Subtype: 4, Data: make([]byte, 16)}
	ins := bson.D{{Key: "op", Value: "i"}, {Key: "ns", Value: "shop.orders"}, {Key: "ui", Value: uuid}, {Key: "o", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "ts", Value: bson.Timestamp{T: 1}}}
	upd := bson.D{{Key: "op", Value: "u"}, {Key: "ns", Value: "shop.orders"}, {Key: "ui", Value: uuid}, {Key: "o", Value: bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 2}}}, {Key: "o2", Value: bson.D{{Key: "_id", Value: 1}}}}
	user := func(op, id string, o, o2 bson.D) bson.D {
		e := bson.D{{Key: "op", Value: op}, {Key: "ns", Value: "admin.system.users"}, {Key: "o", Value: o}}
		if o2 != nil {
			e = append(e, bson.E{Key: "o2", Value: o2})
		}
		return e
	}
	cmd := func(o bson.D) bson.D {
		return bson.D{{Key: "op", Value: "c"}, {Key: "ns", Value: "shop.$cmd"}, {Key: "o", Value: o}}
	}
	for _, tc := range []struct {
		name   string
		entry  bson.D
		writes string // the writes' extended JSON, joined
		cmd    string // the command's extended JSON
		ignore int32
		then   string // the command sent after it
		err    bool
	}{
		{name: "insert", entry: ins, writes: `{"op":"i","ns":"shop.orders","o":{"_id":1}}`},
		{name: "update", entry: upd, writes: `{"op":"u","ns":"shop.orders","o":{"_id":1,"a":2},"o2":{"_id":1}}`},
		{name: "no-op", entry: bson.D{{Key: "op", Value: "n"}, {Key: "ns", Value: ""}, {Key: "o", Value: bson.D{{Key: "msg", Value: "new primary"}}}}},
		{name: "config", entry: bson.D{{Key: "op", Value: "i"}, {Key: "ns", Value: "config.transactions"}, {Key: "o", Value: bson.D{}}}},
		{name: "system.profile", entry: bson.D{{Key: "op", Value: "i"}, {Key: "ns", Value: "shop.system.profile"}, {Key: "o", Value: bson.D{}}}},
		{name: "a user created", entry: user("i", "admin.app", bson.D{{Key: "_id", Value: "admin.app"}, {Key: "user", Value: "app"}}, nil),
			writes: `{"op":"i","ns":"admin.system.users","o":{"_id":"admin.app","user":"app"}}`},
		{name: "a user updated", entry: user("u", "admin.app", bson.D{{Key: "_id", Value: "admin.app"}, {Key: "user", Value: "app"}}, bson.D{{Key: "_id", Value: "admin.app"}}),
			writes: `{"op":"u","ns":"admin.system.users","o":{"_id":"admin.app","user":"app"},"o2":{"_id":"admin.app"}}`},
		{name: "a kept user created", entry: user("i", "admin.mgors-operator", bson.D{{Key: "_id", Value: "admin.mgors-operator"}}, nil)},
		{name: "a kept user updated", entry: user("u", "admin.mgors-operator", bson.D{{Key: "$v", Value: 2}}, bson.D{{Key: "_id", Value: "admin.mgors-operator"}})},
		{name: "a kept user dropped", entry: user("d", "admin.mgors-operator", bson.D{{Key: "_id", Value: "admin.mgors-operator"}}, nil)},
		{name: "a role created", entry: bson.D{{Key: "op", Value: "i"}, {Key: "ns", Value: "admin.system.roles"}, {Key: "o", Value: bson.D{{Key: "_id", Value: "shop.reader"}}}},
			writes: `{"op":"i","ns":"admin.system.roles","o":{"_id":"shop.reader"}}`},
		{name: "a view created", entry: bson.D{{Key: "op", Value: "i"}, {Key: "ns", Value: "shop.system.views"},
			{Key: "o", Value: bson.D{{Key: "_id", Value: "shop.v.w"}, {Key: "viewOn", Value: "c"}, {Key: "pipeline", Value: bson.A{}}}}},
			cmd: `{"drop":"v.w"}`, ignore: 26, then: `{"create":"v.w","viewOn":"c","pipeline":[]}`},
		{name: "a view replaced", entry: bson.D{{Key: "op", Value: "u"}, {Key: "ns", Value: "shop.system.views"},
			{Key: "o", Value: bson.D{{Key: "_id", Value: "shop.v"}, {Key: "viewOn", Value: "d"}, {Key: "pipeline", Value: bson.A{}}}}, {Key: "o2", Value: bson.D{{Key: "_id", Value: "shop.v"}}}},
			cmd: `{"drop":"v"}`, ignore: 26, then: `{"create":"v","viewOn":"d","pipeline":[]}`},
		{name: "a view modified by a diff", entry: bson.D{{Key: "op", Value: "u"}, {Key: "ns", Value: "shop.system.views"},
			{Key: "o", Value: bson.D{{Key: "$v", Value: 2}, {Key: "diff", Value: bson.D{}}}}, {Key: "o2", Value: bson.D{{Key: "_id", Value: "shop.v"}}}}, err: true},
		{name: "a view dropped", entry: bson.D{{Key: "op", Value: "d"}, {Key: "ns", Value: "shop.system.views"}, {Key: "o", Value: bson.D{{Key: "_id", Value: "shop.v"}}}},
			cmd: `{"drop":"v"}`, ignore: 26},
		{name: "a view created by a command", entry: cmd(bson.D{{Key: "create", Value: "v"}, {Key: "viewOn", Value: "c"}, {Key: "pipeline", Value: bson.A{}}}),
			cmd: `{"create":"v","viewOn":"c","pipeline":[]}`, ignore: 48},
		{name: "a view modified by a command", entry: cmd(bson.D{{Key: "collMod", Value: "v"}, {Key: "viewOn", Value: "d"}}), err: true},
		{name: "transaction", entry: cmd(bson.D{{Key: "applyOps", Value: bson.A{ins, upd}}}),
			writes: `{"op":"i","ns":"shop.orders","o":{"_id":1}} {"op":"u","ns":"shop.orders","o":{"_id":1,"a":2},"o2":{"_id":1}}`},
		{name: "create", entry: cmd(bson.D{{Key: "create", Value: "c"}, {Key: "capped", Value: true}}), cmd: `{"create":"c","capped":true}`, ignore: 48},
		{name: "drop", entry: cmd(bson.D{{Key: "drop", Value: "c"}}), cmd: `{"drop":"c"}`, ignore: 26},
		{name: "createIndexes", entry: cmd(bson.D{{Key: "createIndexes", Value: "c"}, {Key: "v", Value: 2}, {Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}}),
			cmd: `{"createIndexes":"c","indexes":[{"v":2,"key":{"a":1},"name":"a_1"}]}`},
		{name: "dropIndexes", entry: cmd(bson.D{{Key: "dropIndexes", Value: "c"}, {Key: "index", Value: "a_1"}}), cmd: `{"dropIndexes":"c","index":"a_1"}`, ignore: 27},
		{name: "startIndexBuild", entry: cmd(bson.D{{Key: "startIndexBuild", Value: "c"}})},
		{name: "rename", entry: cmd(bson.D{{Key: "renameCollection", Value: "shop.c"}, {Key: "to", Value: "shop.d"}}), err: true},
		{name: "prepared transaction", entry: append(cmd(bson.D{{Key: "applyOps", Value: bson.A{ins}}}), bson.E{Key: "prepare", Value: true}), err: true},
		{name: "partial transaction", entry: append(cmd(bson.D{{Key: "applyOps", Value: bson.A{ins}}}), bson.E{Key: "partialTxn", Value: true}), err: true},
	} {
		writes, c, err := flatten(raw(tc.entry), func(id string) bool { return id == "admin.mgors-operator" })
		if tc.err {
			if !errors.Is(err, ErrUnsupportedOp) {
				t.Errorf("%s: %v, want ErrUnsupportedOp", tc.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		got := ""
		for i, w := range writes {
			if i > 0 {
				got += " "
			}
			got += ext(w)
		}
		if got != tc.writes {
			t.Errorf("%s: writes %s, want %s", tc.name, got, tc.writes)
		}
		gotCmd, ignore, then := "", int32(0), ""
		if c != nil {
			gotCmd, ignore = ext(raw(c.cmd)), c.ignore
			if c.db != "shop" {
				t.Errorf("%s: command on %s", tc.name, c.db)
			}
			if c.then != nil {
				then = ext(raw(c.then.cmd))
			}
		}
		if gotCmd != tc.cmd || ignore != tc.ignore || then != tc.then {
			t.Errorf("%s: command %s (ignore %d) then %s, want %s (ignore %d) then %s", tc.name, gotCmd, ignore, then, tc.cmd, tc.ignore, tc.then)
		}
	}
}

func ext(b bson.Raw) string {
	s, err := bson.MarshalExtJSON(b, false, false)
	if err != nil {
		return fmt.Sprint(err)
	}
	return string(s)
}
