package sim

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func extJSON(t *testing.T, s string) bson.Raw {
	t.Helper()
	var d bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(s), false, &d); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return d
}

// Null and missing through arrays, as mongod's null query semantics define.
func TestMatchNullSemantics(t *testing.T) {
	docs := map[string]string{
		"a_empty_subobject":   `{"a":{}}`,
		"a_null":              `{"a":null}`,
		"a_number":            `{"a":4}`,
		"b_not_null":          `{"a":{"b":"hi"}}`,
		"b_null":              `{"a":{"b":null}}`,
		"no_a":                `{}`,
		"a_double_array":      `{"a":[[]]}`,
		"a_empty_array":       `{"a":[]}`,
		"obj_some_b_missing":  `{"a":[{"b":3},{}]}`,
		"obj_no_b_nulls":      `{"a":[{"b":1},{"b":3}]}`,
		"value_array_nulls":   `{"a":[null,null]}`,
		"value_array_no_null": `{"a":[1,"string",4]}`,
	}
	cases := []struct {
		filter string
		want   []string
	}{
		{`{"a":{"$eq":null}}`, []string{"a_null", "no_a", "value_array_nulls"}},
		{`{"a.b":{"$eq":null}}`, []string{"a_empty_subobject", "a_null", "a_number", "b_null", "no_a", "obj_some_b_missing"}},
		{`{"a.b":{"$ne":null}}`, []string{"b_not_null", "a_double_array", "a_empty_array", "obj_no_b_nulls", "value_array_nulls", "value_array_no_null"}},
		{`{"a.b":{"$exists":false}}`, []string{"a_empty_subobject", "a_null", "a_number", "no_a", "a_double_array", "a_empty_array", "value_array_nulls", "value_array_no_null"}},
		{`{"a":{"$elemMatch":{"$ne":null}}}`, []string{"a_double_array", "obj_some_b_missing", "obj_no_b_nulls", "value_array_no_null"}},
		{`{"a":{"$elemMatch":{"b":{"$eq":null}}}}`, []string{"a_double_array", "obj_some_b_missing"}},
	}
	for _, c := range cases {
		f, err := ParseFilter(extJSON(t, c.filter))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{}
		for _, w := range c.want {
			want[w] = true
		}
		for name, d := range docs {
			if got := f(extJSON(t, d)); got != want[name] {
				t.Errorf("%s on %s (%s): got %v", c.filter, name, d, got)
			}
		}
	}
}

func TestCompareValuesOrder(t *testing.T) {
	ordered := []string{`{"v":{"$minKey":1}}`, `{"v":null}`, `{"v":{"$numberDouble":"NaN"}}`, `{"v":-1}`, `{"v":{"$numberDecimal":"1.5"}}`,
		`{"v":2}`, `{"v":"a"}`, `{"v":{"a":1}}`, `{"v":{"a":1,"b":1}}`, `{"v":{"b":0}}`, `{"v":[1]}`, `{"v":{"$oid":"000000000000000000000000"}}`,
		`{"v":false}`, `{"v":true}`, `{"v":{"$date":0}}`, `{"v":{"$maxKey":1}}`}
	for i := 0; i+1 < len(ordered); i++ {
		a, b := extJSON(t, ordered[i]).Lookup("v"), extJSON(t, ordered[i+1]).Lookup("v")
		if compareValues(a, b) >= 0 || compareValues(b, a) <= 0 {
			t.Errorf("%s should sort before %s", ordered[i], ordered[i+1])
		}
	}
}

func TestCompareLargeIntegersWithDoubles(t *testing.T) {
	big := toRaw(int64(9007199254740993))
	dbl := toRaw(9007199254740992.0)
	if compareValues(big, dbl) <= 0 || compareValues(dbl, big) >= 0 {
		t.Fatal("2^53+1 must sort after the double 2^53")
	}
	if compareValues(toRaw(int32(2)), toRaw(2.5)) >= 0 || compareValues(toRaw(int64(3)), toRaw(3.0)) != 0 {
		t.Fatal("small integers against doubles")
	}
}

func TestParseUpdateErrors(t *testing.T) {
	cases := []struct {
		update string
		code   int32
		msg    string
	}{
		{`{"$set":{"a":1},"b":1}`, 9, "Unknown modifier: b. Expected a valid update modifier or pipeline-style update specified as an array"},
		{`{"$set":{"a.b":1,"a":2}}`, 40, "Updating the path 'a' would create a conflict at 'a'"},
		{`{"$set":{"a.b.c":1},"$inc":{"a.b":2}}`, 40, "Updating the path 'a.b' would create a conflict at 'a.b'"},
		{`{"$set":{"$.a":1}}`, 2, "Cannot have positional (i.e. '$') element in the first position in path '$.a'"},
		{`{"$set":{"a.$.b.$":1}}`, 2, "Too many positional (i.e. '$') elements found in path 'a.$.b.$'"},
		{`{"$set":{"":1}}`, 56, "An empty update path is not valid."},
		{`{"$rename":{"a":"a.b"}}`, 2, "The source and target field for $rename must not be on the same path: a: \"a.b\""},
		{`{"$rename":{"a":1}}`, 2, "The 'to' field for $rename must be a string: a: 1"},
		{`{"$mul":{"a":"x"}}`, 14, "Cannot multiply with non-numeric argument: {a: \"x\"}"},
		{`{"$bit":{"a":{"nand":1}}}`, 2, "The $bit modifier only supports 'and', 'or', and 'xor', not 'nand' which is an unknown operator: {nand: 1}"},
		{`{"$push":{"a":{"$each":[1],"$foo":1}}}`, 2, "Unrecognized clause in $push: $foo"},
		{`{"$addToSet":{"a":{"$each":1}}}`, 2, "The argument to $each in $addToSet must be an array but it was of type int"},
		{`{"$pullAll":{"a":1}}`, 2, "$pullAll requires an array argument but was given a int"},
		{`{"$currentDate":{"a":{"$type":"x"}}}`, 2, "The '$type' string field is required to be 'date' or 'timestamp': {$type: \"x\"}"},
		{`{"$pull":{"a":{"$foo":1}}}`, 2, "unknown operator: $foo"},
	}
	for _, c := range cases {
		_, err := ParseUpdate(extJSON(t, c.update), nil)
		ce := asCmdError(err)
		if err == nil || ce.Code != c.code || ce.Msg != c.msg {
			t.Errorf("%s: got %v, want %d %q", c.update, err, c.code, c.msg)
		}
	}
	if _, err := ParseUpdate(extJSON(t, `{"$set":{"a.$[x]":1}}`), []bson.Raw{extJSON(t, `{"X":1}`)}); asCmdError(err).Code != 2 {
		t.Errorf("upper-case array filter identifier: %v", err)
	}
	if _, err := ParseUpdate(extJSON(t, `{"$set":{"a.$[x]":1}}`), []bson.Raw{extJSON(t, `{"x":1}`), extJSON(t, `{"x":2}`)}); asCmdError(err).Code != 9 {
		t.Errorf("duplicate array filter: %v", err)
	}
}

func TestUpdateResultSizeLimit(t *testing.T) {
	u, err := ParseUpdate(mustRaw(bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: string(make([]byte, 9<<20))}, {Key: "b", Value: string(make([]byte, 9<<20))}}}}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.Apply(mustRaw(bson.D{{Key: "_id", Value: 1}}), nil, false); asCmdError(err).Code != 17419 {
		t.Fatalf("want 17419, got %v", err)
	}
}

// Malformed logical operators inside array filters, upsert queries and
// positional projections are errors or ignored, never a panic.
func TestMalformedLogicalOperators(t *testing.T) {
	bad := mustRaw(bson.D{{Key: "$and", Value: 5}, {Key: "x", Value: 1}})
	if _, err := ParseUpdate(mustRaw(bson.D{{Key: "$set", Value: bson.D{{Key: "a.$[x]", Value: 1}}}}), []bson.Raw{bad}); err == nil {
		t.Fatal("array filter with $and: 5 accepted")
	}
	u, err := ParseUpdate(mustRaw(bson.D{{Key: "$set", Value: bson.D{{Key: "b", Value: 1}}}}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.Upsert(bad); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseProjection(mustRaw(bson.D{{Key: "a.$", Value: 1}}), bad); err == nil {
		t.Fatal("positional projection without a query field accepted")
	}
}
