package sim

import (
	"fmt"
	"hash/crc32"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

var explainVerbosities = map[string]bool{"queryPlanner": true, "executionStats": true, "allPlansExecution": true}

// explainable are the commands explain accepts, with where each keeps its filter.
var explainable = map[string]func(inner bson.Raw) bson.Raw{
	"find":          func(in bson.Raw) bson.Raw { d, _ := in.Lookup("filter").DocumentOK(); return d },
	"count":         func(in bson.Raw) bson.Raw { d, _ := in.Lookup("query").DocumentOK(); return d },
	"distinct":      func(in bson.Raw) bson.Raw { d, _ := in.Lookup("query").DocumentOK(); return d },
	"findAndModify": func(in bson.Raw) bson.Raw { d, _ := in.Lookup("query").DocumentOK(); return d },
	"findandmodify": func(in bson.Raw) bson.Raw { d, _ := in.Lookup("query").DocumentOK(); return d },
	"update":        func(in bson.Raw) bson.Raw { return firstStatement(in, "updates", "q") },
	"delete":        func(in bson.Raw) bson.Raw { return firstStatement(in, "deletes", "q") },
	"aggregate": func(in bson.Raw) bson.Raw {
		stages, _ := in.Lookup("pipeline").Array().Values()
		if len(stages) > 0 {
			if m, ok := stages[0].Document().Lookup("$match").DocumentOK(); ok {
				return m
			}
		}
		return nil
	},
}

func firstStatement(in bson.Raw, field, key string) bson.Raw {
	a, ok := in.Lookup(field).ArrayOK()
	if !ok {
		return nil
	}
	vals, _ := a.Values()
	if len(vals) == 0 {
		return nil
	}
	d, _ := vals[0].Document().Lookup(key).DocumentOK()
	return d
}

// accessStage chooses how a query reads its collection: IDHACK for an
// equality on _id alone, COLLSCAN otherwise. The index slice adds IXSCAN
// here (for filters an index answers) with its keys examined.
func accessStage(filter bson.Raw) bson.D {
	elems, _ := filter.Elements()
	if len(elems) == 1 && elems[0].Key() == "_id" {
		v := elems[0].Value()
		if d, ok := v.DocumentOK(); !ok || isEqOnly(d) {
			return bson.D{{Key: "stage", Value: "IDHACK"}}
		}
	}
	st := bson.D{{Key: "stage", Value: "COLLSCAN"}}
	if len(elems) > 0 {
		st = append(st, bson.E{Key: "filter", Value: filter})
	}
	return append(st, bson.E{Key: "direction", Value: "forward"})
}

func isEqOnly(d bson.Raw) bool {
	elems, _ := d.Elements()
	return len(elems) == 1 && elems[0].Key() == "$eq"
}

// cmdExplain explains find, aggregate, count, distinct, update, delete and
// findAndModify as mongod's classic planner does, running the query (never
// the write) for executionStats.
func (c *conn) cmdExplain(req *Request) (bson.D, error) {
	n := c.n
	inner, ok := req.Body.Lookup("explain").DocumentOK()
	if !ok {
		return nil, cerr(2, "explain command requires a nested object")
	}
	verbosity := "allPlansExecution"
	if v, err := req.Body.LookupErr("verbosity"); err == nil {
		s, _ := v.StringValueOK()
		if !explainVerbosities[s] {
			return nil, cerr(2, "verbosity string must be one of {'queryPlanner', 'executionStats', 'allPlansExecution'}")
		}
		verbosity = s
	}
	first, err := inner.IndexErr(0)
	if err != nil {
		return nil, cerr(2, "explain command requires a nested object")
	}
	name := first.Key()
	filterOf, ok := explainable[name]
	if !ok {
		return nil, cerr(59, "Explain failed due to unknown command: %s", name)
	}
	coll, ok := first.Value().StringValueOK()
	if !ok {
		return nil, cerr(73, "Invalid namespace specified '%s.%s'", req.DB(), first.Value().String())
	}
	db := req.DB()
	ns := db + "." + coll
	filter := filterOf(inner)
	if filter == nil {
		filter = mustRaw(bson.D{})
	}
	start := time.Now()
	var matched []bson.Raw
	var examined int
	if n.collExists(db, coll) {
		all, err := n.matching(&Request{Body: inner}, db, coll, mustRaw(bson.D{}))
		if err != nil {
			return nil, err
		}
		if matched, err = n.matching(&Request{Body: inner}, db, coll, filter); err != nil {
			return nil, err
		}
		examined = len(all)
	}
	access := accessStage(filter)
	keys := 0
	if !n.collExists(db, coll) {
		access = bson.D{{Key: "stage", Value: "EOF"}}
	} else if access[0].Value == "IDHACK" {
		keys, examined = len(matched), len(matched)
	}
	plan := planFor(name, inner, access)
	elapsed := time.Since(start).Milliseconds()
	planner := bson.D{{Key: "namespace", Value: ns}, {Key: "indexFilterSet", Value: false}, {Key: "parsedQuery", Value: filter},
		{Key: "queryHash", Value: planHash("q", filter)}, {Key: "planCacheKey", Value: planHash("p", filter)},
		{Key: "maxIndexedOrSolutionsReached", Value: false}, {Key: "maxIndexedAndSolutionsReached", Value: false},
		{Key: "maxScansToExplodeReached", Value: false}, {Key: "winningPlan", Value: plan}, {Key: "rejectedPlans", Value: bson.A{}}}
	var exec bson.D
	if verbosity != "queryPlanner" {
		returned := len(matched)
		if name == "update" || name == "delete" || name == "count" {
			returned = 0
		}
		exec = bson.D{{Key: "executionSuccess", Value: true}, {Key: "nReturned", Value: int32(returned)},
			{Key: "executionTimeMillis", Value: int32(elapsed)}, {Key: "totalKeysExamined", Value: int32(keys)},
			{Key: "totalDocsExamined", Value: int32(examined)},
			{Key: "executionStages", Value: withStats(plan, returned, examined, keys, elapsed)}}
		if verbosity == "allPlansExecution" {
			exec = append(exec, bson.E{Key: "allPlansExecution", Value: bson.A{}})
		}
	}
	out := bson.D{{Key: "explainVersion", Value: "1"}}
	if name == "aggregate" {
		cursor := bson.D{{Key: "queryPlanner", Value: planner}}
		if exec != nil {
			cursor = append(cursor, bson.E{Key: "executionStats", Value: exec})
		}
		stages := bson.A{bson.D{{Key: "$cursor", Value: cursor}}}
		vals, _ := inner.Lookup("pipeline").Array().Values()
		for i, v := range vals {
			if i == 0 && v.Document().Lookup("$match").Type != 0 {
				continue
			}
			stages = append(stages, v.Document())
		}
		out = append(out, bson.E{Key: "stages", Value: stages})
	} else {
		out = append(out, bson.E{Key: "queryPlanner", Value: planner})
		if exec != nil {
			out = append(out, bson.E{Key: "executionStats", Value: exec})
		}
	}
	cmd := bson.D{}
	_ = bson.Unmarshal(inner, &cmd)
	cmd = append(cmd, bson.E{Key: "$db", Value: db})
	return append(out, bson.E{Key: "command", Value: cmd},
		bson.E{Key: "serverInfo", Value: bson.D{{Key: "host", Value: strings.SplitN(n.hostPort(), ":", 2)[0]}, {Key: "port", Value: int32(n.cfg.Port)},
			{Key: "version", Value: n.cfg.ServerVersion}, {Key: "gitVersion", Value: n.cfg.GitVersion()}}},
		bson.E{Key: "serverParameters", Value: bson.D{{Key: "internalQueryFacetBufferSizeBytes", Value: int32(104857600)},
			{Key: "internalQueryFacetMaxOutputDocSizeBytes", Value: int32(104857600)},
			{Key: "internalLookupStageIntermediateDocumentMaxSizeBytes", Value: int32(104857600)},
			{Key: "internalDocumentSourceGroupMaxMemoryBytes", Value: int32(104857600)},
			{Key: "internalQueryMaxBlockingSortMemoryUsageBytes", Value: int32(104857600)},
			{Key: "internalQueryProhibitBlockingMergeOnMongoS", Value: int32(0)},
			{Key: "internalQueryMaxAddToSetBytes", Value: int32(104857600)},
			{Key: "internalDocumentSourceSetWindowFieldsMaxMemoryBytes", Value: int32(104857600)},
			{Key: "internalQueryFrameworkControl", Value: "trySbeRestricted"}}}), nil
}

// planFor wraps the access stage in the stages the command adds.
func planFor(name string, inner bson.Raw, access bson.D) bson.D {
	wrap := func(stage string, in bson.D) bson.D {
		return bson.D{{Key: "stage", Value: stage}, {Key: "inputStage", Value: in}}
	}
	switch name {
	case "count":
		return wrap("COUNT", access)
	case "distinct":
		return wrap("PROJECTION_DEFAULT", access)
	case "update":
		return wrap("UPDATE", access)
	case "delete":
		return wrap("DELETE", access)
	case "findAndModify", "findandmodify":
		if rm, _ := inner.Lookup("remove").BooleanOK(); rm {
			return wrap("DELETE", access)
		}
		return wrap("UPDATE", access)
	}
	plan := access
	if _, ok := inner.Lookup("sort").DocumentOK(); ok {
		plan = wrap("SORT", plan)
	}
	if _, ok := inner.Lookup("projection").DocumentOK(); ok {
		plan = wrap("PROJECTION_SIMPLE", plan)
	}
	return plan
}

// withStats adds executionStats' per-stage counters to a plan.
func withStats(plan bson.D, returned, examined, keys int, ms int64) bson.D {
	out := bson.D{}
	for _, e := range plan {
		if e.Key == "inputStage" {
			e.Value = withStats(e.Value.(bson.D), returned, examined, keys, ms)
		}
		out = append(out, e)
	}
	out = append(out, bson.E{Key: "nReturned", Value: int32(returned)}, bson.E{Key: "executionTimeMillisEstimate", Value: int32(ms)},
		bson.E{Key: "works", Value: int32(examined + 1)}, bson.E{Key: "advanced", Value: int32(returned)},
		bson.E{Key: "needTime", Value: int32(examined - returned)}, bson.E{Key: "needYield", Value: int32(0)},
		bson.E{Key: "saveState", Value: int32(0)}, bson.E{Key: "restoreState", Value: int32(0)}, bson.E{Key: "isEOF", Value: int32(1)})
	switch plan[0].Value {
	case "COLLSCAN":
		out = append(out, bson.E{Key: "docsExamined", Value: int32(examined)})
	case "IDHACK":
		out = append(out, bson.E{Key: "keysExamined", Value: int32(keys)}, bson.E{Key: "docsExamined", Value: int32(examined)})
	}
	return out
}

// planHash is a stable 8-hex-digit hash of a query's shape, like queryHash.
func planHash(salt string, filter bson.Raw) string {
	keys := []string{salt}
	elems, _ := filter.Elements()
	for _, e := range elems {
		keys = append(keys, e.Key())
	}
	return fmt.Sprintf("%08X", crc32.ChecksumIEEE([]byte(strings.Join(keys, ","))))
}
