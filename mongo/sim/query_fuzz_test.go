package sim

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// FuzzQueryLanguage feeds arbitrary documents to the filter, update,
// projection and sort parsers and applies what parses: nothing may panic.
func FuzzQueryLanguage(f *testing.F) {
	for _, s := range []string{
		`{"a.b":{"$elemMatch":{"$gt":1}},"$or":[{"x":{"$type":["int","array"]}}]}`,
		`{"$set":{"a.$[x].b":1,"c.0":2},"$push":{"d":{"$each":[1],"$sort":{"k":1},"$slice":-1,"$position":0}}}`,
		`{"a.$":1,"b":{"$slice":[1,2]},"c":{"$elemMatch":{"k":1}}}`,
		`{"$rename":{"a":"b.c"},"$pull":{"d":{"k":{"$gte":1}}},"$bit":{"e":{"xor":1}}}`,
		`{"a":{"$regex":"^x","$options":"imsx"},"b":{"$mod":[3,1]},"c":{"$all":[{"$elemMatch":{"z":1}}]}}`,
	} {
		var d bson.Raw
		if err := bson.UnmarshalExtJSON([]byte(s), false, &d); err != nil {
			f.Fatal(err)
		}
		f.Add([]byte(d))
	}
	doc := mustRaw(bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: bson.A{bson.D{{Key: "b", Value: 1}, {Key: "k", Value: int64(2)}}, 3, bson.A{4}}},
		{Key: "c", Value: bson.D{{Key: "0", Value: "x"}}}, {Key: "d", Value: bson.A{bson.D{{Key: "k", Value: 1.5}}}}, {Key: "e", Value: int32(7)}})
	f.Fuzz(func(t *testing.T, data []byte) {
		spec := bson.Raw(data)
		if spec.Validate() != nil {
			return
		}
		if m, err := ParseFilter(spec); err == nil {
			m(doc)
		}
		if u, err := ParseUpdate(spec, []bson.Raw{mustRaw(bson.D{{Key: "x", Value: bson.D{{Key: "$gt", Value: 0}}}})}); err == nil {
			_, _ = u.Apply(doc, spec, false)
			_, _ = u.Upsert(spec)
		}
		if p, err := ParseProjection(spec, spec); err == nil {
			_, _ = p.Apply(doc)
		}
		_ = SortDocs([]bson.Raw{doc, doc}, spec)
	})
}
