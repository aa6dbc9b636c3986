package sim

import (
	"go.mongodb.org/mongo-driver/v2/bson"
)

// cmdReplSetSyncFrom makes a secondary sync from the given member, with
// mongod's checks (TopologyCoordinator::prepareSyncFromResponse); the member
// stays our sync source while heartbeats reach it.
func (c *conn) cmdReplSetSyncFrom(req *Request) (bson.D, error) {
	n := c.n
	target, ok := req.Body.Lookup("replSetSyncFrom").StringValueOK()
	if !ok {
		return nil, cerr(14, "Expected string for replSetSyncFrom")
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if e := n.checkStatusLocked(); e != nil {
		return nil, e
	}
	if n.self < 0 {
		return nil, cerr(95, "Removed and uninitialized nodes do not sync")
	}
	if n.state == StatePrimary {
		return nil, cerr(95, "primaries don't sync")
	}
	host, err := normalizeHost(target)
	if err != nil {
		return nil, cerr(9, "%v", err)
	}
	me := n.rs.Members[n.self]
	if host == me.Host {
		return nil, cerr(72, "I cannot sync from myself")
	}
	idx := -1
	for i, m := range n.rs.Members {
		if m.Host == host {
			idx = i
		}
	}
	if idx < 0 {
		return nil, cerr(74, "Could not find member \"%s\" in replica set", host)
	}
	tm := n.rs.Members[idx]
	if tm.ArbiterOnly {
		return nil, cerr(72, "Cannot sync from \"%s\" because it is an arbiter", host)
	}
	if !tm.BuildIndexes && me.BuildIndexes {
		return nil, cerr(72, "Cannot sync from \"%s\" because it does not build indexes", host)
	}
	p := n.peers[host]
	if p == nil || p.health != 1 {
		return nil, cerr(6, "I cannot reach the requested member: %s", host)
	}
	d := bson.D{}
	if int64(p.applied.TS.T)+10 < int64(n.applied.TS.T) {
		d = append(d, bson.E{Key: "warning", Value: "requested member \"" + host + "\" is more than 10 seconds behind us"})
	}
	if prev := n.syncSourceLocked(); prev != "" {
		d = append(d, bson.E{Key: "prevSyncTarget", Value: prev})
	}
	n.syncFrom = host
	n.bumpTopologyLocked() // the fetcher drops its current source
	return append(d, bson.E{Key: "syncFromRequested", Value: host}), nil
}
