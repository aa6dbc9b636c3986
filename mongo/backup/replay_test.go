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
// commands with the code that means "already done"; no-ops, local, config
// and system namespaces are left out; what is not replayed yet is an error.
func TestFlatten(t *testing.T) {
	raw := func(d bson.D) bson.Raw { b, _ := bson.Marshal(d); return b }
	uuid := bson.Binary{Subtype: 4, Data: make([]byte, 16)}
	ins := bson.D{{Key: "op", Value: "i"}, {Key: "ns", Value: "shop.orders"}, {Key: "ui", Value: uuid}, {Key: "o", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "ts", Value: bson.Timestamp{T: 1}}}
	upd := bson.D{{Key: "op", Value: "u"}, {Key: "ns", Value: "shop.orders"}, {Key: "ui", Value: uuid}, {Key: "o", Value: bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 2}}}, {Key: "o2", Value: bson.D{{Key: "_id", Value: 1}}}}
	cmd := func(o bson.D) bson.D {
		return bson.D{{Key: "op", Value: "c"}, {Key: "ns", Value: "shop.$cmd"}, {Key: "o", Value: o}}
	}
	for _, tc := range []struct {
		name   string
		entry  bson.D
		writes string // the writes' extended JSON, joined
		cmd    string // the command's extended JSON
		ignore int32
		err    bool
	}{
		{name: "insert", entry: ins, writes: `{"op":"i","ns":"shop.orders","o":{"_id":1}}`},
		{name: "update", entry: upd, writes: `{"op":"u","ns":"shop.orders","o":{"_id":1,"a":2},"o2":{"_id":1}}`},
		{name: "no-op", entry: bson.D{{Key: "op", Value: "n"}, {Key: "ns", Value: ""}, {Key: "o", Value: bson.D{{Key: "msg", Value: "new primary"}}}}},
		{name: "config", entry: bson.D{{Key: "op", Value: "i"}, {Key: "ns", Value: "config.transactions"}, {Key: "o", Value: bson.D{}}}},
		{name: "system.users", entry: bson.D{{Key: "op", Value: "i"}, {Key: "ns", Value: "admin.system.users"}, {Key: "o", Value: bson.D{}}}},
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
		writes, c, err := flatten(raw(tc.entry))
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
		gotCmd, ignore := "", int32(0)
		if c != nil {
			gotCmd, ignore = ext(raw(c.cmd)), c.ignore
			if c.db != "shop" {
				t.Errorf("%s: command on %s", tc.name, c.db)
			}
		}
		if gotCmd != tc.cmd || ignore != tc.ignore {
			t.Errorf("%s: command %s (ignore %d), want %s (ignore %d)", tc.name, gotCmd, ignore, tc.cmd, tc.ignore)
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
