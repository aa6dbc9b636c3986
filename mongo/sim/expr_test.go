package sim

import (
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// evalJSON evaluates the expression e (extended JSON) on doc and returns
// {"v": result} as relaxed extended JSON, or "ERR <code>".
func evalJSON(t *testing.T, e, doc string) string {
	t.Helper()
	var wrap, d bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(`{"e": `+e+`}`), false, &wrap); err != nil {
		t.Fatalf("%s: %v", e, err)
	}
	if err := bson.UnmarshalExtJSON([]byte(doc), false, &d); err != nil {
		t.Fatalf("%s: %v", doc, err)
	}
	v, err := newEvalCtx(d, time.UnixMilli(0), nil).eval(wrap.Lookup("e"))
	if err != nil {
		var ce *CmdError
		ok := errors.As(err, &ce)
		if !ok {
			t.Fatalf("%s: non-command error %v", e, err)
		}
		return "ERR " + codeName(ce.Code)
	}
	out := bson.D{}
	if v.Type != 0 {
		out = bson.D{{Key: "v", Value: v}}
	}
	j, err := bson.MarshalExtJSON(out, true, false)
	if err != nil {
		t.Fatal(err)
	}
	return string(j)
}

// exprCases are expressions, a document, and what mongod answers.
var exprCases = []struct{ expr, doc, want string }{
	// field paths and variables
	{`"$a.b"`, `{"a": {"b": 5}}`, `{"v":{"$numberInt":"5"}}`},
	{`"$a.b"`, `{"a": [{"b": 1}, {"c": 2}, 7, {"b": 3}]}`, `{"v":[{"$numberInt":"1"},{"$numberInt":"3"}]}`},
	{`"$a.b"`, `{"a": [[{"b": 1}]]}`, `{"v":[[{"$numberInt":"1"}]]}`},
	{`"$nope"`, `{}`, `{}`},
	{`"$$ROOT.a"`, `{"a": "x"}`, `{"v":"x"}`},
	{`"$$CURRENT"`, `{"a": 1}`, `{"v":{"a":{"$numberInt":"1"}}}`},
	{`"$$REMOVE"`, `{}`, `{}`},
	{`"$$NOW"`, `{}`, `{"v":{"$date":{"$numberLong":"0"}}}`},
	{`"$$nope"`, `{}`, `ERR Location17276`},
	{`"$"`, `{}`, `ERR Location16872`},
	{`{"$let": {"vars": {"x": 2, "y": "$a"}, "in": {"$multiply": ["$$x", "$$y"]}}}`, `{"a": 3}`, `{"v":{"$numberInt":"6"}}`},
	{`{"$let": {"vars": {"X": 1}, "in": 1}}`, `{}`, `ERR Location16867`},
	{`{"$literal": "$a"}`, `{"a": 1}`, `{"v":"$a"}`},
	{`{"$foo": 1}`, `{}`, `ERR InvalidPipelineOperator`},
	{`{"$add": 1, "$sub": 2}`, `{}`, `ERR Location15983`},
	{`{"a": "$x", "b": "$missing"}`, `{"x": 1}`, `{"v":{"a":{"$numberInt":"1"}}}`},
	{`["$missing", 1]`, `{}`, `{"v":[null,{"$numberInt":"1"}]}`},
	// arithmetic and promotion
	{`{"$add": [1, 2]}`, `{}`, `{"v":{"$numberInt":"3"}}`},
	{`{"$add": [2147483647, 1]}`, `{}`, `{"v":{"$numberLong":"2147483648"}}`},
	{`{"$add": [{"$numberLong": "9223372036854775807"}, 1]}`, `{}`, `{"v":{"$numberDouble":"9.223372036854776E+18"}}`},
	{`{"$add": [1, 2.5]}`, `{}`, `{"v":{"$numberDouble":"3.5"}}`},
	{`{"$add": ["$d", 1000]}`, `{"d": {"$date": {"$numberLong": "0"}}}`, `{"v":{"$date":{"$numberLong":"1000"}}}`},
	{`{"$add": ["$d", "$d"]}`, `{"d": {"$date": {"$numberLong": "0"}}}`, `ERR Location16612`},
	{`{"$add": [1, null]}`, `{}`, `{"v":null}`},
	{`{"$add": [1, "x"]}`, `{}`, `ERR TypeMismatch`},
	{`{"$subtract": ["$d", "$e"]}`, `{"d": {"$date": {"$numberLong": "5000"}}, "e": {"$date": {"$numberLong": "1000"}}}`, `{"v":{"$numberLong":"4000"}}`},
	{`{"$subtract": [10, 2.5]}`, `{}`, `{"v":{"$numberDouble":"7.5"}}`},
	{`{"$multiply": [65536, 65536]}`, `{}`, `{"v":{"$numberLong":"4294967296"}}`},
	{`{"$multiply": ["a", 2]}`, `{}`, `ERR TypeMismatch`},
	{`{"$divide": [7, 2]}`, `{}`, `{"v":{"$numberDouble":"3.5"}}`},
	{`{"$divide": [1, 0]}`, `{}`, `ERR BadValue`},
	{`{"$mod": [7, 3]}`, `{}`, `{"v":{"$numberInt":"1"}}`},
	{`{"$mod": [7.5, 2]}`, `{}`, `{"v":{"$numberDouble":"1.5"}}`},
	{`{"$abs": -5}`, `{}`, `{"v":{"$numberInt":"5"}}`},
	{`{"$abs": "x"}`, `{}`, `ERR Location28765`},
	{`{"$ceil": 1.2}`, `{}`, `{"v":{"$numberDouble":"2.0"}}`},
	{`{"$floor": -1.2}`, `{}`, `{"v":{"$numberDouble":"-2.0"}}`},
	{`{"$round": [2.5, 0]}`, `{}`, `{"v":{"$numberDouble":"2.0"}}`},
	{`{"$round": [1234, -2]}`, `{}`, `{"v":{"$numberInt":"1200"}}`},
	{`{"$trunc": [1.789, 1]}`, `{}`, `{"v":{"$numberDouble":"1.7"}}`},
	{`{"$pow": [2, 10]}`, `{}`, `{"v":{"$numberInt":"1024"}}`},
	{`{"$pow": [2, -1]}`, `{}`, `{"v":{"$numberDouble":"0.5"}}`},
	{`{"$pow": [0, -1]}`, `{}`, `ERR Location28764`},
	{`{"$sqrt": 16}`, `{}`, `{"v":{"$numberDouble":"4.0"}}`},
	{`{"$sqrt": -1}`, `{}`, `ERR Location28714`},
	{`{"$abs": [1, 2]}`, `{}`, `ERR Location16020`},
	{`{"$pow": [1, {"$numberLong": "1000000000000000000"}]}`, `{}`, `{"v":{"$numberLong":"1"}}`},
	{`{"$pow": [-1, 3]}`, `{}`, `{"v":{"$numberInt":"-1"}}`},
	{`{"$pow": [0, 0]}`, `{}`, `{"v":{"$numberInt":"1"}}`},
	{`{"$range": [0, 2147483647]}`, `{}`, `ERR ExceededMemoryLimit`},
	{`{"$slice": [[1, 2, 3], 1, 2147483647]}`, `{}`, `{"v":[{"$numberInt":"2"},{"$numberInt":"3"}]}`},
	{`{"$slice": [[1, 2, 3], 1, {"$numberLong": "9223372036854775807"}]}`, `{}`, `ERR Location28728`},
	{`{"$substrBytes": ["abc", 1, {"$numberLong": "9223372036854775807"}]}`, `{}`, `{"v":"bc"}`},
	{`{"$substrCP": ["abc", 1, 2147483647]}`, `{}`, `{"v":"bc"}`},
	{`{"$substrCP": ["abc", 1, {"$numberLong": "9223372036854775807"}]}`, `{}`, `ERR Location34453`},
	// comparison, boolean, conditional
	{`{"$eq": ["$a", 5]}`, `{"a": 5.0}`, `{"v":true}`},
	{`{"$eq": ["$missing", null]}`, `{}`, `{"v":false}`},
	{`{"$lt": ["$missing", null]}`, `{}`, `{"v":true}`},
	{`{"$gt": ["a", 1]}`, `{}`, `{"v":true}`},
	{`{"$cmp": [1, 2]}`, `{}`, `{"v":{"$numberInt":"-1"}}`},
	{`{"$and": [1, "x", []]}`, `{}`, `{"v":true}`},
	{`{"$and": [1, 0]}`, `{}`, `{"v":false}`},
	{`{"$or": [null, "$missing"]}`, `{}`, `{"v":false}`},
	{`{"$not": [0]}`, `{}`, `{"v":true}`},
	{`{"$cond": [{"$gt": ["$a", 1]}, "big", "small"]}`, `{"a": 2}`, `{"v":"big"}`},
	{`{"$cond": {"if": false, "then": 1, "else": 2}}`, `{}`, `{"v":{"$numberInt":"2"}}`},
	{`{"$cond": {"if": false, "then": 1}}`, `{}`, `ERR Location17082`},
	{`{"$ifNull": ["$a", "$b", "d"]}`, `{"b": 2}`, `{"v":{"$numberInt":"2"}}`},
	{`{"$switch": {"branches": [{"case": false, "then": 1}, {"case": true, "then": 2}]}}`, `{}`, `{"v":{"$numberInt":"2"}}`},
	{`{"$switch": {"branches": [{"case": false, "then": 1}]}}`, `{}`, `ERR Location40066`},
	{`{"$switch": {"branches": []}}`, `{}`, `ERR Location40068`},
	{`{"$ifNull": ["$a"]}`, `{}`, `ERR Location1257300`},
	{`{"$let": {"in": 1}}`, `{}`, `ERR Location16876`},
	{`{"$map": {"input": [1], "as": "x"}}`, `{}`, `ERR Location16882`},
	{`{"$filter": {"input": [1], "cond": true, "bad": 1}}`, `{}`, `ERR Location28647`},
	{`{"$reduce": {"input": [1], "in": 1}}`, `{}`, `ERR Location40078`},
	// strings
	{`{"$concat": ["a", "b"]}`, `{}`, `{"v":"ab"}`},
	{`{"$concat": ["a", 1]}`, `{}`, `ERR Location16702`},
	{`{"$concat": ["a", null]}`, `{}`, `{"v":null}`},
	{`{"$toUpper": "abé"}`, `{}`, `{"v":"ABé"}`},
	{`{"$toLower": null}`, `{}`, `{"v":""}`},
	{`{"$substr": ["hello", 1, 3]}`, `{}`, `{"v":"ell"}`},
	{`{"$substrCP": ["héllo", 1, 2]}`, `{}`, `{"v":"él"}`},
	{`{"$strLenCP": "héllo"}`, `{}`, `{"v":{"$numberInt":"5"}}`},
	{`{"$strLenCP": 1}`, `{}`, `ERR Location34471`},
	{`{"$split": ["a,b,c", ","]}`, `{}`, `{"v":["a","b","c"]}`},
	{`{"$split": ["a", ""]}`, `{}`, `ERR Location40087`},
	{`{"$trim": {"input": "  x  "}}`, `{}`, `{"v":"x"}`},
	{`{"$trim": {"input": "xxaxx", "chars": "x"}}`, `{}`, `{"v":"a"}`},
	{`{"$indexOfCP": ["hello", "l"]}`, `{}`, `{"v":{"$numberInt":"2"}}`},
	{`{"$indexOfCP": ["hello", "z"]}`, `{}`, `{"v":{"$numberInt":"-1"}}`},
	{`{"$regexMatch": {"input": "Hello", "regex": "^h", "options": "i"}}`, `{}`, `{"v":true}`},
	{`{"$regexMatch": {"input": 1, "regex": "a"}}`, `{}`, `ERR Location51104`},
	{`{"$regexFind": {"input": "héllo wörld", "regex": "w(ö)(x)?"}}`, `{}`, `{"v":{"match":"wö","idx":{"$numberInt":"6"},"captures":["ö",null]}}`},
	{`{"$regexFind": {"input": "abc", "regex": "z"}}`, `{}`, `{"v":null}`},
	{`{"$regexFindAll": {"input": "a1b22", "regex": "[0-9]+"}}`, `{}`, `{"v":[{"match":"1","idx":{"$numberInt":"1"},"captures":[]},{"match":"22","idx":{"$numberInt":"3"},"captures":[]}]}`},
	{`{"$regexFindAll": {"input": null, "regex": "a"}}`, `{}`, `{"v":[]}`},
	{`{"$meta": "textScore"}`, `{}`, `ERR Location40218`},
	{`{"$toDecimal": 1}`, `{}`, `ERR BadValue`},
	// arrays
	{`{"$size": [[1, 2, 3]]}`, `{}`, `{"v":{"$numberInt":"3"}}`},
	{`{"$size": "$missing"}`, `{}`, `ERR Location17124`},
	{`{"$arrayElemAt": [[1, 2, 3], -1]}`, `{}`, `{"v":{"$numberInt":"3"}}`},
	{`{"$arrayElemAt": [[1, 2, 3], 5]}`, `{}`, `{}`},
	{`{"$arrayElemAt": ["x", 0]}`, `{}`, `ERR Location28689`},
	{`{"$first": [[4, 5]]}`, `{}`, `{"v":{"$numberInt":"4"}}`},
	{`{"$last": [[4, 5]]}`, `{}`, `{"v":{"$numberInt":"5"}}`},
	{`{"$in": [2, [1, 2]]}`, `{}`, `{"v":true}`},
	{`{"$in": [2, "x"]}`, `{}`, `ERR Location40081`},
	{`{"$filter": {"input": [1, 2, 3, 4], "as": "n", "cond": {"$gt": ["$$n", 2]}}}`, `{}`, `{"v":[{"$numberInt":"3"},{"$numberInt":"4"}]}`},
	{`{"$filter": {"input": "x", "cond": true}}`, `{}`, `ERR Location28651`},
	{`{"$map": {"input": [1, 2], "in": {"$add": ["$$this", 1]}}}`, `{}`, `{"v":[{"$numberInt":"2"},{"$numberInt":"3"}]}`},
	{`{"$reduce": {"input": [1, 2, 3], "initialValue": 0, "in": {"$add": ["$$value", "$$this"]}}}`, `{}`, `{"v":{"$numberInt":"6"}}`},
	{`{"$concatArrays": [[1], [2, 3]]}`, `{}`, `{"v":[{"$numberInt":"1"},{"$numberInt":"2"},{"$numberInt":"3"}]}`},
	{`{"$concatArrays": [[1], 2]}`, `{}`, `ERR Location28664`},
	{`{"$slice": [[1, 2, 3, 4], -2]}`, `{}`, `{"v":[{"$numberInt":"3"},{"$numberInt":"4"}]}`},
	{`{"$slice": [[1, 2, 3, 4], 1, 2]}`, `{}`, `{"v":[{"$numberInt":"2"},{"$numberInt":"3"}]}`},
	{`{"$isArray": [[1]]}`, `{}`, `{"v":true}`},
	{`{"$reverseArray": [[1, 2]]}`, `{}`, `{"v":[{"$numberInt":"2"},{"$numberInt":"1"}]}`},
	{`{"$range": [0, 10, 4]}`, `{}`, `{"v":[{"$numberInt":"0"},{"$numberInt":"4"},{"$numberInt":"8"}]}`},
	// types
	{`{"$type": "$missing"}`, `{}`, `{"v":"missing"}`},
	{`{"$type": 1}`, `{}`, `{"v":"int"}`},
	{`{"$toString": 1.5}`, `{}`, `{"v":"1.5"}`},
	{`{"$toString": 3.14159265}`, `{}`, `{"v":"3.14159"}`},
	{`{"$toString": 123456789012.5}`, `{}`, `{"v":"1.23457e+11"}`},
	{`{"$toString": 2.0}`, `{}`, `{"v":"2"}`},
	{`{"$toString": "$d"}`, `{"d": {"$date": {"$numberLong": "1500"}}}`, `{"v":"1970-01-01T00:00:01.500Z"}`},
	{`{"$toInt": "42"}`, `{}`, `{"v":{"$numberInt":"42"}}`},
	{`{"$toInt": 4.9}`, `{}`, `{"v":{"$numberInt":"4"}}`},
	{`{"$toInt": "x"}`, `{}`, `ERR ConversionFailure`},
	{`{"$toLong": true}`, `{}`, `{"v":{"$numberLong":"1"}}`},
	{`{"$toDouble": "2.5"}`, `{}`, `{"v":{"$numberDouble":"2.5"}}`},
	{`{"$toBool": ""}`, `{}`, `{"v":true}`},
	{`{"$toBool": 0}`, `{}`, `{"v":false}`},
	{`{"$convert": {"input": "x", "to": "int", "onError": -1}}`, `{}`, `{"v":{"$numberInt":"-1"}}`},
	{`{"$convert": {"input": null, "to": "int", "onNull": 0}}`, `{}`, `{"v":{"$numberInt":"0"}}`},
	{`{"$convert": {"input": "5", "to": 16}}`, `{}`, `{"v":{"$numberInt":"5"}}`},
	// objects
	{`{"$mergeObjects": [{"a": 1}, null, {"b": 2, "a": 3}]}`, `{}`, `{"v":{"a":{"$numberInt":"3"},"b":{"$numberInt":"2"}}}`},
	{`{"$mergeObjects": [{"a": 1}, 2]}`, `{}`, `ERR Location40400`},
	{`{"$objectToArray": {"a": 1}}`, `{}`, `{"v":[{"k":"a","v":{"$numberInt":"1"}}]}`},
	{`{"$arrayToObject": [[["a", 1], ["b", 2]]]}`, `{}`, `{"v":{"a":{"$numberInt":"1"},"b":{"$numberInt":"2"}}}`},
	{`{"$arrayToObject": [[{"k": "a", "v": 1}]]}`, `{}`, `{"v":{"a":{"$numberInt":"1"}}}`},
	{`{"$getField": "a.b"}`, `{"a.b": 7}`, `{"v":{"$numberInt":"7"}}`},
	{`{"$getField": {"field": "x", "input": {"x": 1}}}`, `{}`, `{"v":{"$numberInt":"1"}}`},
	{`{"$setField": {"field": "a.b", "input": {"x": 1}, "value": 2}}`, `{}`, `{"v":{"x":{"$numberInt":"1"},"a.b":{"$numberInt":"2"}}}`},
	{`{"$unsetField": {"field": "x", "input": {"x": 1, "y": 2}}}`, `{}`, `{"v":{"y":{"$numberInt":"2"}}}`},
	{`{"$setField": {"field": "x", "input": "$$ROOT", "value": "$$REMOVE"}}`, `{"x": 1, "y": 2}`, `{"v":{"y":{"$numberInt":"2"}}}`},
	// dates
	{`{"$year": "$d"}`, `{"d": {"$date": "2024-03-05T06:07:08.009Z"}}`, `{"v":{"$numberInt":"2024"}}`},
	{`{"$month": "$d"}`, `{"d": {"$date": "2024-03-05T06:07:08.009Z"}}`, `{"v":{"$numberInt":"3"}}`},
	{`{"$dayOfMonth": "$d"}`, `{"d": {"$date": "2024-03-05T06:07:08.009Z"}}`, `{"v":{"$numberInt":"5"}}`},
	{`{"$hour": {"date": "$d", "timezone": "+02:00"}}`, `{"d": {"$date": "2024-03-05T06:07:08.009Z"}}`, `{"v":{"$numberInt":"8"}}`},
	{`{"$minute": "$d"}`, `{"d": {"$date": "2024-03-05T06:07:08.009Z"}}`, `{"v":{"$numberInt":"7"}}`},
	{`{"$second": "$d"}`, `{"d": {"$date": "2024-03-05T06:07:08.009Z"}}`, `{"v":{"$numberInt":"8"}}`},
	{`{"$year": "x"}`, `{}`, `ERR Location16006`},
	{`{"$dateToString": {"date": "$d"}}`, `{"d": {"$date": "2024-03-05T06:07:08.009Z"}}`, `{"v":"2024-03-05T06:07:08.009Z"}`},
	{`{"$dateToString": {"date": "$d", "format": "%Y/%m/%d %j"}}`, `{"d": {"$date": "2024-03-05T06:07:08.009Z"}}`, `{"v":"2024/03/05 065"}`},
	{`{"$dateToString": {"date": "$x", "onNull": "none"}}`, `{}`, `{"v":"none"}`},
	{`{"$isoWeek": "$d"}`, `{"d": {"$date": "2024-01-01T00:00:00Z"}}`, `{"v":{"$numberInt":"1"}}`},
	{`{"$isoDayOfWeek": "$d"}`, `{"d": {"$date": "2024-01-07T00:00:00Z"}}`, `{"v":{"$numberInt":"7"}}`},
	{`{"$dateAdd": {"startDate": "$d", "unit": "month", "amount": 1}}`, `{"d": {"$date": "2024-01-31T10:00:00Z"}}`, `{"v":{"$date":{"$numberLong":"1709200800000"}}}`},
	{`{"$dateSubtract": {"startDate": "$d", "unit": "hour", "amount": 2}}`, `{"d": {"$date": "2024-01-31T10:00:00Z"}}`, `{"v":{"$date":{"$numberLong":"1706688000000"}}}`},
	{`{"$dateAdd": {"startDate": "$d", "unit": "fortnight", "amount": 1}}`, `{"d": {"$date": "2024-01-31T10:00:00Z"}}`, `ERR Location5439014`},
	{`{"$dateDiff": {"startDate": "$a", "endDate": "$b", "unit": "day"}}`, `{"a": {"$date": "2024-01-31T23:00:00Z"}, "b": {"$date": "2024-02-01T01:00:00Z"}}`, `{"v":{"$numberLong":"1"}}`},
	{`{"$dateDiff": {"startDate": "$a", "endDate": "$b", "unit": "month"}}`, `{"a": {"$date": "2023-12-31T00:00:00Z"}, "b": {"$date": "2024-02-01T00:00:00Z"}}`, `{"v":{"$numberLong":"2"}}`},
	{`{"$dateFromParts": {"year": 2024, "month": 2, "day": 30}}`, `{}`, `{"v":{"$date":{"$numberLong":"1709251200000"}}}`},
	{`{"$dateToParts": {"date": "$d"}}`, `{"d": {"$date": "2024-03-05T06:07:08.009Z"}}`, `{"v":{"year":{"$numberInt":"2024"},"month":{"$numberInt":"3"},"day":{"$numberInt":"5"},"hour":{"$numberInt":"6"},"minute":{"$numberInt":"7"},"second":{"$numberInt":"8"},"millisecond":{"$numberInt":"9"}}}`},
	{`{"$dateFromString": {"dateString": "2024-03-05T06:07:08.009Z"}}`, `{}`, `{"v":{"$date":{"$numberLong":"1709618828009"}}}`},
	{`{"$dateFromString": {"dateString": "05/03/2024", "format": "%d/%m/%Y"}}`, `{}`, `{"v":{"$date":{"$numberLong":"1709596800000"}}}`},
	{`{"$dateFromString": {"dateString": "nope", "onError": "bad"}}`, `{}`, `{"v":"bad"}`},
	{`{"$dateTrunc": {"date": "$d", "unit": "hour"}}`, `{"d": {"$date": "2024-03-05T06:07:08.009Z"}}`, `{"v":{"$date":{"$numberLong":"1709618400000"}}}`},
	{`{"$dateTrunc": {"date": "$d", "unit": "month", "binSize": 2}}`, `{"d": {"$date": "2024-04-05T06:07:08.009Z"}}`, `{"v":{"$date":{"$numberLong":"1709251200000"}}}`},
	{`{"$dateTrunc": {"date": "$d", "unit": "week"}}`, `{"d": {"$date": "2024-03-06T06:07:08.009Z"}}`, `{"v":{"$date":{"$numberLong":"1709424000000"}}}`},
	// trigonometry, bits, sizes, timestamps
	{`{"$sin": 0}`, `{}`, `{"v":{"$numberDouble":"0.0"}}`},
	{`{"$asin": 2}`, `{}`, `ERR Location50989`},
	{`{"$radiansToDegrees": 3.141592653589793}`, `{}`, `{"v":{"$numberDouble":"180.0"}}`},
	{`{"$bitAnd": [12, 10]}`, `{}`, `{"v":{"$numberInt":"8"}}`},
	{`{"$bitOr": [12, {"$numberLong": "1"}]}`, `{}`, `{"v":{"$numberLong":"13"}}`},
	{`{"$bitNot": 0}`, `{}`, `{"v":{"$numberInt":"-1"}}`},
	{`{"$bsonSize": {"$literal": {}}}`, `{}`, `{"v":{"$numberInt":"5"}}`},
	{`{"$binarySize": "abc"}`, `{}`, `{"v":{"$numberInt":"3"}}`},
	{`{"$tsSecond": "$ts"}`, `{"ts": {"$timestamp": {"t": 100, "i": 7}}}`, `{"v":{"$numberLong":"100"}}`},
	{`{"$tsIncrement": "$ts"}`, `{"ts": {"$timestamp": {"t": 100, "i": 7}}}`, `{"v":{"$numberLong":"7"}}`},
	{`{"$indexOfBytes": ["héllo", "l"]}`, `{}`, `{"v":{"$numberInt":"3"}}`},
	// set and search operators
	{`{"$setUnion": [[1, 2], [2, 3]]}`, `{}`, `{"v":[{"$numberInt":"1"},{"$numberInt":"2"},{"$numberInt":"3"}]}`},
	{`{"$setIntersection": [[1, 2, 2], [2, 3]]}`, `{}`, `{"v":[{"$numberInt":"2"}]}`},
	{`{"$setDifference": [[1, 2], [2.0]]}`, `{}`, `{"v":[{"$numberInt":"1"}]}`},
	{`{"$setEquals": [[1, 2], [2, 1, 1]]}`, `{}`, `{"v":true}`},
	{`{"$setIsSubset": [[1], [1, 2]]}`, `{}`, `{"v":true}`},
	{`{"$setUnion": [[1], 2]}`, `{}`, `ERR Location17043`},
	{`{"$allElementsTrue": [[1, true, "x"]]}`, `{}`, `{"v":true}`},
	{`{"$anyElementTrue": [[0, null]]}`, `{}`, `{"v":false}`},
	{`{"$indexOfArray": [["a", "b"], "b"]}`, `{}`, `{"v":{"$numberInt":"1"}}`},
	{`{"$sortArray": {"input": [3, 1, 2], "sortBy": -1}}`, `{}`, `{"v":[{"$numberInt":"3"},{"$numberInt":"2"},{"$numberInt":"1"}]}`},
	{`{"$zip": {"inputs": [[1, 2], ["a"]]}}`, `{}`, `{"v":[[{"$numberInt":"1"},"a"]]}`},
	// more strings and numbers
	{`{"$strcasecmp": ["abc", "ABC"]}`, `{}`, `{"v":{"$numberInt":"0"}}`},
	{`{"$replaceAll": {"input": "a-b-c", "find": "-", "replacement": "+"}}`, `{}`, `{"v":"a+b+c"}`},
	{`{"$replaceOne": {"input": "a-b-c", "find": "-", "replacement": "+"}}`, `{}`, `{"v":"a+b-c"}`},
	{`{"$log10": 100}`, `{}`, `{"v":{"$numberDouble":"2.0"}}`},
	{`{"$ln": 0}`, `{}`, `ERR Location28766`},
	{`{"$isNumber": "1"}`, `{}`, `{"v":false}`},
	{`{"$sum": [[1, 2, "x"]]}`, `{}`, `{"v":{"$numberInt":"3"}}`},
	{`{"$avg": [1, 2]}`, `{}`, `{"v":{"$numberDouble":"1.5"}}`},
	{`{"$max": [[1, 5, 3]]}`, `{}`, `{"v":{"$numberInt":"5"}}`},
	{`{"$median": {"input": [3, 1, 2, 10], "method": "approximate"}}`, `{}`, `{"v":{"$numberDouble":"2.0"}}`},
	{`{"$percentile": {"input": "$s", "p": [0.5, 0.9, 1], "method": "approximate"}}`, `{"s": [5, 1, 4, 2, 3]}`,
		`{"v":[{"$numberDouble":"3.0"},{"$numberDouble":"5.0"},{"$numberDouble":"5.0"}]}`},
	{`{"$median": {"input": [], "method": "approximate"}}`, `{}`, `{"v":null}`},
	{`{"$percentile": {"input": [1], "p": [2], "method": "approximate"}}`, `{}`, `ERR Location7750302`},
}

func TestExprEvaluator(t *testing.T) {
	for _, c := range exprCases {
		if got := evalJSON(t, c.expr, c.doc); got != c.want {
			t.Errorf("%s on %s:\n got %s\nwant %s", c.expr, c.doc, got, c.want)
		}
	}
}

// FuzzExprEval: no expression, however malformed, panics the evaluator.
func FuzzExprEval(f *testing.F) {
	for _, c := range exprCases {
		var r bson.Raw
		if err := bson.UnmarshalExtJSON([]byte(`{"e": `+c.expr+`, "d": `+c.doc+`}`), false, &r); err == nil {
			f.Add([]byte(r))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		in := bson.Raw(b)
		var full bson.D // decoding checks nested values too, as the wire layer's BSON check would
		if in.Validate() != nil || bson.Unmarshal(b, &full) != nil {
			return
		}
		d, ok := in.Lookup("d").DocumentOK()
		if !ok {
			d = emptyDoc
		}
		_, _ = newEvalCtx(d, time.UnixMilli(0), nil).eval(in.Lookup("e"))
	})
}

// Operators newer than the member's mongod version are unknown, as on that mongod.
func TestOperatorsByVersion(t *testing.T) {
	median := val(bson.D{{Key: "$median", Value: bson.D{{Key: "input", Value: bson.A{1, 2}}, {Key: "method", Value: "approximate"}}}})
	bitAnd := val(bson.D{{Key: "$bitAnd", Value: bson.A{3, 1}}})
	for _, c := range []struct {
		version string
		expr    bson.RawValue
		known   bool
	}{{"6.0", median, false}, {"7.0", median, true}, {"8.0", median, true}, {"6.0", bitAnd, false}, {"6.3", bitAnd, true}, {"", median, true}} {
		x := newEvalCtx(emptyDoc, time.UnixMilli(0), nil)
		x.version = c.version
		_, err := x.eval(c.expr)
		if c.known != (err == nil) || err != nil && !isCode(err, 168) {
			t.Errorf("%s on %q: %v", c.expr, c.version, err)
		}
	}
	acc := mustRaw(bson.D{{Key: "m", Value: bson.D{{Key: "$median", Value: bson.D{{Key: "input", Value: "$x"}, {Key: "method", Value: "approximate"}}}}}})
	els, _ := acc.Elements()
	if _, err := parseAccumulators(els, "6.0"); !isCode(err, 15952) {
		t.Errorf("$median accumulator on 6.0: %v", err)
	}
	if _, err := parseAccumulators(els, "7.0"); err != nil {
		t.Errorf("$median accumulator on 7.0: %v", err)
	}
}
