package sim

import (
	"go.mongodb.org/mongo-driver/v2/bson"
)

// cmdAggregate supports the pipelines drivers generate for counting and
// simple queries: $match, $sort, $skip, $limit, $project, $count, and
// $group on a constant _id with {$sum: 1}.
func (c *conn) cmdAggregate(req *Request) (bson.D, error) {
	coll, _ := req.Body.Lookup("aggregate").StringValueOK()
	db := req.DB()
	arr, ok := req.Body.Lookup("pipeline").ArrayOK()
	if !ok {
		return nil, cerr(14, "'pipeline' option must be specified as an array")
	}
	docs, err := c.n.matching(req, db, coll, nil)
	if err != nil {
		return nil, err
	}
	stages, _ := arr.Values()
	for _, st := range stages {
		sd, _ := st.DocumentOK()
		e, err := sd.IndexErr(0)
		if err != nil {
			return nil, cerr(40323, "A pipeline stage specification object must contain exactly one field.")
		}
		v := e.Value()
		switch e.Key() {
		case "$match":
			f, _ := v.DocumentOK()
			match, err := ParseFilter(f)
			if err != nil {
				return nil, asCmdError(err)
			}
			var out []bson.Raw
			for _, d := range docs {
				if match(d) {
					out = append(out, d)
				}
			}
			docs = out
		case "$sort":
			s, _ := v.DocumentOK()
			if err := SortDocs(docs, s); err != nil {
				return nil, asCmdError(err)
			}
		case "$skip":
			k, _ := numberOK(v)
			if int(k) >= len(docs) {
				docs = nil
			} else {
				docs = docs[int(k):]
			}
		case "$limit":
			k, _ := numberOK(v)
			if int(k) < len(docs) {
				docs = docs[:int(k)]
			}
		case "$project":
			p, _ := v.DocumentOK()
			for i, d := range docs {
				if docs[i], err = Project(d, p, nil); err != nil {
					return nil, asCmdError(err)
				}
			}
		case "$currentOp":
			if docs, err = c.currentOpStage(req, v); err != nil {
				return nil, err
			}
		case "$collStats":
			spec, _ := v.DocumentOK()
			cs, e := c.n.collStatsStage(db, coll, spec)
			if e != nil {
				return nil, e
			}
			docs = []bson.Raw{mustRaw(cs)}
		case "$count":
			name, _ := v.StringValueOK()
			docs = []bson.Raw{mustRaw(bson.D{{Key: name, Value: int32(len(docs))}})}
		case "$group":
			g, _ := v.DocumentOK()
			out := bson.D{{Key: "_id", Value: g.Lookup("_id")}}
			els, _ := g.Elements()
			for _, f := range els[1:] {
				out = append(out, bson.E{Key: f.Key(), Value: int32(len(docs))})
			}
			if len(docs) == 0 {
				docs = nil
			} else {
				docs = []bson.Raw{mustRaw(out)}
			}
		default:
			return nil, cerr(40324, "Unrecognized pipeline stage name: '%s'", e.Key())
		}
	}
	batch := 101
	if b, ok := numberOK(req.Body.Lookup("cursor", "batchSize")); ok {
		batch = int(b)
	}
	return c.cursorReply(db+"."+coll, docs, batch, false, "firstBatch"), nil
}
