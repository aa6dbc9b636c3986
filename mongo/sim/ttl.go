package sim

import (
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// ttlLoop is mongod's TTL monitor: every ttlMonitorSleepSecs (60 unless
// set) a writable primary deletes the documents its TTL indexes expire,
// through oplog deletes that secondaries follow.
func (n *Node) ttlLoop() {
	defer n.bg.Done()
	for {
		t := time.NewTimer(n.ttlSleep())
		select {
		case <-n.quit:
			t.Stop()
			return
		case <-t.C:
		}
		n.expireTTL(time.Now())
	}
}

// ttlSleep reads ttlMonitorSleepSecs each round, so setParameter applies.
func (n *Node) ttlSleep() time.Duration {
	if v, _, _ := n.params.get("ttlMonitorSleepSecs"); v != nil {
		if secs, ok := v.(int32); ok && secs > 0 {
			return time.Duration(secs) * time.Second
		}
	}
	return 60 * time.Second
}

// expireTTL deletes, in one pass, every document whose earliest date under
// a TTL index is more than expireAfterSeconds before now.
func (n *Node) expireTTL(now time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if v, _, _ := n.params.get("ttlMonitorEnabled"); v == false {
		return
	}
	if n.cfg.ReplSet != "" && (n.state != StatePrimary || !n.writable) {
		return
	}
	for _, db := range n.data.DBNames() {
		for _, name := range n.data.CollNames(db) {
			cl := n.data.Coll(db, name, false)
			for _, ix := range cl.Indexes {
				if !ix.HasTTL {
					continue
				}
				ns := db + "." + name
				ops := expiredDeletes(cl, ix, ns, now)
				if len(ops) == 0 {
					continue
				}
				if _, err := n.writeOplogLocked(ops, false); err != nil {
					return
				}
				n.logI("INDEX", 5479200, "Deleted expired documents using index", func(e *zerolog.Event) {
					e.Str("namespace", ns).Str("index", ix.Name).Int("numDeleted", len(ops))
				})
			}
		}
	}
}

// expiredDeletes are the delete ops for the documents ix expires at now.
func expiredDeletes(cl *Collection, ix *Index, ns string, now time.Time) []opSpec {
	var ops []opSpec
	cutoff := now.UnixMilli() - ix.TTL*1000
	cl.Each(func(doc bson.Raw) bool {
		if ix.Partial != nil {
			if ok, _ := Match(doc, ix.Partial); !ok {
				return true
			}
		}
		vals, _ := indexedValues(doc, ix.fields[0])
		earliest, found := int64(0), false
		for _, v := range vals {
			if ms, ok := v.DateTimeOK(); ok && (!found || ms < earliest) {
				earliest, found = ms, true
			}
		}
		if found && earliest <= cutoff {
			ops = append(ops, opSpec{op: "d", ns: ns, o: mustRaw(bson.D{{Key: "_id", Value: doc.Lookup("_id")}})})
		}
		return true
	})
	return ops
}
