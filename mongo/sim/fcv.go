package sim

import (
	"fmt"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// fcvID is the _id of the featureCompatibilityVersion document in admin.system.version.
const fcvID = "featureCompatibilityVersion"

// fcvDoc is getParameter's featureCompatibilityVersion: the stored document
// (version, and targetVersion/previousVersion while transitioning) or, with
// none stored yet, the binary's own major version.
func (n *Node) fcvDoc() bson.D {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.fcvDocLocked()
}

func (n *Node) fcvDocLocked() bson.D {
	if cl := n.data.Coll("admin", "system.version", false); cl != nil {
		if raw := cl.Get(bson.RawValue{Type: bson.TypeString, Value: bsoncoreString(fcvID)}); raw != nil {
			d := bson.D{}
			for _, k := range []string{"version", "targetVersion", "previousVersion"} {
				if v, ok := raw.Lookup(k).StringValueOK(); ok {
					d = append(d, bson.E{Key: k, Value: v})
				}
			}
			return d
		}
	}
	return bson.D{{Key: "version", Value: n.cfg.MajorMinor()}}
}

func bsoncoreString(s string) []byte {
	_, b, _ := bson.MarshalValue(s)
	return b
}

// FCVError is a stored featureCompatibilityVersion this binary cannot run
// with; mongod exits with code 62 (need downgrade).
type FCVError struct{ Msg string }

func (e *FCVError) Error() string { return e.Msg }

// checkFCV refuses to start on data whose featureCompatibilityVersion is
// newer than this binary, or older than the one before it (an 8.0 binary
// on 6.0 data), as mongod does: one release line at a time.
func (n *Node) checkFCV() error {
	v, _ := n.fcvDocLocked()[0].Value.(string)
	if v == "" || !lineLess(n.cfg.MajorMinor(), v) && !lineLess(v, n.cfg.PreviousMajorMinor()) {
		return nil
	}
	mm := n.cfg.MajorMinor()
	return &FCVError{fmt.Sprintf("UPGRADE PROBLEM: Found an invalid featureCompatibilityVersion document (ERROR: Location4926900: Invalid featureCompatibilityVersion document in admin.system.version: { _id: \"featureCompatibilityVersion\", version: \"%s\" }. See https://docs.mongodb.com/master/release-notes/%s-compatibility/#feature-compatibility.: Invalid feature compatibility version value '%s'; expected '%s' or '%s'. See https://docs.mongodb.com/master/release-notes/%s-compatibility/#feature-compatibility.). If the current featureCompatibilityVersion is below %s, see the documentation on upgrading at https://docs.mongodb.com/master/release-notes/%s/#upgrade-procedures.",
		v, mm, v, n.cfg.PreviousMajorMinor(), mm, mm, n.cfg.PreviousMajorMinor(), mm)}
}

// lineLess orders release lines "6.0" < "7.0" < "8.0".
func lineLess(a, b string) bool {
	var am, an, bm, bn int
	_, _ = fmt.Sscanf(a, "%d.%d", &am, &an)
	_, _ = fmt.Sscanf(b, "%d.%d", &bm, &bn)
	return am < bm || am == bm && an < bn
}

// cmdSetFeatureCompatibilityVersion moves the FCV to the binary's version
// or the previous one, through the transitional document (targetVersion,
// previousVersion) to the final one, both written to admin.system.version
// through the oplog so they replicate and survive restarts; it always waits
// for a majority, as mongod does.
func (c *conn) cmdSetFeatureCompatibilityVersion(req *Request) (bson.D, error) {
	n := c.n
	if e := requireAdmin(req, "setFeatureCompatibilityVersion"); e != nil {
		return nil, e
	}
	v := req.Body.Lookup("setFeatureCompatibilityVersion")
	want, ok := v.StringValueOK()
	if !ok {
		return nil, cerr(14, "BSON field 'setFeatureCompatibilityVersion.setFeatureCompatibilityVersion' is the wrong type '%s', expected type 'string'", typeName(v.Type))
	}
	cur, prev := n.cfg.MajorMinor(), n.cfg.PreviousMajorMinor()
	if want != cur && want != prev {
		return nil, cerr(2, "Invalid feature compatibility version value '%s'; expected '%s' or '%s'. See https://docs.mongodb.com/master/release-notes/%s-compatibility/#feature-compatibility.", want, prev, cur, cur)
	}
	confirm, err := req.Body.LookupErr("confirm")
	if err == nil && cur == "6.0" {
		return nil, cerr(40415, "BSON field 'setFeatureCompatibilityVersion.confirm' is an unknown field.")
	}
	actual, _ := n.fcvDoc()[0].Value.(string)
	if b, _ := confirm.BooleanOK(); cur != "6.0" && !b {
		if lineLess(actual, want) {
			return nil, cerr(7369100, "Once you have upgraded to %s, you will not be able to downgrade FCV and binary version without support assistance. Please re-run this command with 'confirm: true' to acknowledge this and continue with the FCV upgrade.", want)
		}
		return nil, cerr(7369100, "Once you have downgraded the FCV, if you choose to downgrade the binary version, it will require support assistance. Please re-run this command with 'confirm: true' to acknowledge this and continue with the FCV downgrade.")
	}
	var docs []bson.D
	doc := func(extra ...bson.E) bson.D {
		return append(bson.D{{Key: "_id", Value: fcvID}}, extra...)
	}
	switch {
	case actual == want:
		// already there: a no-op that still waits for a majority
	case lineLess(actual, want):
		docs = []bson.D{doc(bson.E{Key: "version", Value: actual}, bson.E{Key: "targetVersion", Value: want}), doc(bson.E{Key: "version", Value: want})}
	default:
		docs = []bson.D{doc(bson.E{Key: "version", Value: want}, bson.E{Key: "targetVersion", Value: want}, bson.E{Key: "previousVersion", Value: actual}),
			doc(bson.E{Key: "version", Value: want})}
	}
	if len(docs) > 0 {
		n.logI("COMMAND", 6744300, "setFeatureCompatibilityVersion command called", func(e *zerolog.Event) {
			e.Str("fromVersion", actual).Str("toVersion", want)
		})
	}
	for _, d := range docs {
		// an upsert: logged as an insert the first time, as mongod logs it
		op := opSpec{op: "u", ns: "admin.system.version", o: mustRaw(d), o2: mustRaw(bson.D{{Key: "_id", Value: fcvID}}), stmt: -1}
		n.mu.Lock()
		if n.data.Coll("admin", "system.version", false).Get(op.o.Lookup("_id")) == nil {
			op.op, op.o2 = "i", nil
		}
		_, err := n.writeOplogLocked([]opSpec{op}, false)
		n.mu.Unlock()
		if err != nil {
			return nil, cerr(10107, "not primary")
		}
	}
	wc := bson.D{{Key: "w", Value: "majority"}}
	if t, ok := req.Body.Lookup("writeConcern", "wtimeout").AsInt64OK(); ok {
		wc = append(wc, bson.E{Key: "wtimeout", Value: t})
	}
	out := bson.D{}
	if wce := n.awaitWriteConcern(&Request{Body: mustRaw(bson.D{{Key: "writeConcern", Value: wc}})}); wce != nil {
		out = append(out, bson.E{Key: "writeConcernError", Value: wce})
	}
	if len(docs) > 0 {
		n.logI("COMMAND", 6744302, "setFeatureCompatibilityVersion succeeded", func(e *zerolog.Event) {
			e.Str("fromVersion", actual).Str("toVersion", want)
		})
	}
	return out, nil
}
