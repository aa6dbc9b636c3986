package sim

import (
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// OpTime orders oplog entries: by term, then timestamp, as mongod does.
type OpTime struct {
	TS bson.Timestamp
	T  int64
}

// Less reports whether o is before p.
func (o OpTime) Less(p OpTime) bool {
	if o.T != p.T {
		return o.T < p.T
	}
	return o.TS.T < p.TS.T || o.TS.T == p.TS.T && o.TS.I < p.TS.I
}

// IsZero is the null optime of an empty oplog.
func (o OpTime) IsZero() bool { return o.TS.T == 0 && o.TS.I == 0 }

// Doc is the {ts, t} document mongod reports; a null optime has t -1.
func (o OpTime) Doc() bson.D {
	t := o.T
	if o.IsZero() {
		t = -1
	}
	return bson.D{{Key: "ts", Value: o.TS}, {Key: "t", Value: t}}
}

// Date is the wall-clock date of an optime (its seconds).
func (o OpTime) Date() bson.DateTime { return bson.DateTime(int64(o.TS.T) * 1000) }

func parseOpTime(v bson.RawValue) OpTime {
	d, ok := v.DocumentOK()
	if !ok {
		return OpTime{}
	}
	var o OpTime
	if tv, err := d.LookupErr("ts"); err == nil {
		t, i, _ := tv.TimestampOK()
		o.TS = bson.Timestamp{T: t, I: i}
	}
	if tv, err := d.LookupErr("t"); err == nil {
		o.T, _ = tv.AsInt64OK()
	}
	if o.T < 0 {
		o.T = 0
	}
	return o
}

// OplogEntry is one local.oplog.rs document.
type OplogEntry struct {
	TS   bson.Timestamp
	T    int64
	Op   string // i, u, d, c, n
	NS   string
	O    bson.Raw
	O2   bson.Raw
	Wall time.Time
	Raw  bson.Raw
	// Session (lsid id), TxnNumber and StmtID name the retryable write or
	// transaction that wrote it; StmtID is -1 when absent. RetryImage is
	// mongod's needsRetryImage: findAndModify's reply document to keep.
	Session    string
	TxnNumber  int64
	StmtID     int32
	RetryImage string
}

// OpTime of the entry.
func (e OplogEntry) OpTime() OpTime { return OpTime{TS: e.TS, T: e.T} }

// NewOplogEntry builds and encodes an entry.
// extra carries lsid/txnNumber/stmtId of a retryable write.
func NewOplogEntry(ot OpTime, op, ns string, o, o2 bson.Raw, wall time.Time, extra ...bson.E) OplogEntry {
	e := OplogEntry{TS: ot.TS, T: ot.T, Op: op, NS: ns, O: o, O2: o2, Wall: wall}
	d := bson.D{{Key: "op", Value: op}, {Key: "ns", Value: ns}, {Key: "o", Value: o}}
	if o2 != nil {
		d = append(d, bson.E{Key: "o2", Value: o2})
	}
	d = append(d, extra...)
	d = append(d, bson.E{Key: "ts", Value: ot.TS}, bson.E{Key: "t", Value: ot.T}, bson.E{Key: "v", Value: int64(2)},
		bson.E{Key: "wall", Value: bson.NewDateTimeFromTime(wall)})
	e.Raw, _ = bson.Marshal(d)
	e.readSession()
	return e
}

func (e *OplogEntry) readSession() {
	e.StmtID = -1
	lsid, ok := e.Raw.Lookup("lsid").DocumentOK()
	if !ok {
		return
	}
	num, ok := e.Raw.Lookup("txnNumber").AsInt64OK()
	if !ok {
		return
	}
	e.Session, e.TxnNumber = sessionKey(lsid), num
	if s, ok := e.Raw.Lookup("stmtId").Int32OK(); ok {
		e.StmtID = s
	}
	e.RetryImage, _ = e.Raw.Lookup("needsRetryImage").StringValueOK()
}

// DecodeOplogEntry parses an entry received from a sync source or the store.
func DecodeOplogEntry(raw bson.Raw) (OplogEntry, error) {
	if err := raw.Validate(); err != nil {
		return OplogEntry{}, err
	}
	e := OplogEntry{Raw: raw}
	t, i, ok := raw.Lookup("ts").TimestampOK()
	if !ok {
		return e, fmt.Errorf("oplog entry without ts")
	}
	e.TS = bson.Timestamp{T: t, I: i}
	e.T, _ = raw.Lookup("t").AsInt64OK()
	e.Op, _ = raw.Lookup("op").StringValueOK()
	e.NS, _ = raw.Lookup("ns").StringValueOK()
	e.O, _ = raw.Lookup("o").DocumentOK()
	e.O2, _ = raw.Lookup("o2").DocumentOK()
	if ms, ok := raw.Lookup("wall").DateTimeOK(); ok {
		e.Wall = time.UnixMilli(ms)
	}
	e.readSession()
	return e, nil
}
