package sim

import (
	"sort"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// cmdReplSetGetStatus builds the status document (spec §5).
func (c *conn) cmdReplSetGetStatus(*Request) (bson.D, error) {
	n := c.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if e := n.checkStatusLocked(); e != nil {
		return nil, e
	}
	if n.self < 0 {
		return nil, cerr(93, "Our replica set config is invalid or we are not a member of it")
	}
	now := time.Now()
	voting, mv, wv, wm := n.rs.Majorities()
	syncHost, syncID := "", int32(-1)
	if n.state != StatePrimary {
		syncHost = n.syncSourceLocked()
		for _, m := range n.rs.Members {
			if m.Host == syncHost && syncHost != "" {
				syncID = int32(m.ID)
			}
		}
	}
	wall := bson.NewDateTimeFromTime(now)
	appliedWall := n.applied.Date()
	d := bson.D{{Key: "set", Value: n.rs.ID}, {Key: "date", Value: wall}, {Key: "myState", Value: int32(n.state)},
		{Key: "term", Value: n.term}, {Key: "syncSourceHost", Value: syncHost}, {Key: "syncSourceId", Value: syncID},
		{Key: "heartbeatIntervalMillis", Value: n.rs.HeartbeatIntervalMillis}, {Key: "majorityVoteCount", Value: int32(mv)},
		{Key: "writeMajorityCount", Value: int32(wm)}, {Key: "votingMembersCount", Value: int32(voting)},
		{Key: "writableVotingMembersCount", Value: int32(wv)},
		{Key: "optimes", Value: bson.D{{Key: "lastCommittedOpTime", Value: n.commit.Doc()}, {Key: "lastCommittedWallTime", Value: n.commit.Date()},
			{Key: "readConcernMajorityOpTime", Value: n.commit.Doc()}, {Key: "appliedOpTime", Value: n.applied.Doc()},
			{Key: "durableOpTime", Value: n.applied.Doc()}, {Key: "lastAppliedWallTime", Value: appliedWall},
			{Key: "lastDurableWallTime", Value: appliedWall}}},
		// Every write is fsync'd before it is applied, so the last stable
		// recovery point is the majority commit point.
		{Key: "lastStableRecoveryTimestamp", Value: n.commit.TS},
	}
	if n.state == StatePrimary && n.election != nil && n.election.term == n.term {
		d = append(d, bson.E{Key: "electionCandidateMetrics", Value: n.election.doc()})
	}
	if n.voted != nil {
		d = append(d, bson.E{Key: "electionParticipantMetrics", Value: n.voted.doc()})
	}
	if is := n.initialSyncStatusLocked(); is != nil {
		d = append(d, bson.E{Key: "initialSyncStatus", Value: is})
	}
	members := bson.A{}
	order := make([]int, len(n.rs.Members))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return n.rs.Members[order[a]].ID < n.rs.Members[order[b]].ID })
	for _, i := range order {
		m := n.rs.Members[i]
		if i == n.self {
			md := bson.D{{Key: "_id", Value: int32(m.ID)}, {Key: "name", Value: m.Host}, {Key: "health", Value: 1.0},
				{Key: "state", Value: int32(n.state)}, {Key: "stateStr", Value: stateNames[n.state]},
				{Key: "uptime", Value: int32(time.Since(n.started).Seconds())}}
			if !m.ArbiterOnly {
				md = append(md, bson.E{Key: "optime", Value: n.applied.Doc()}, bson.E{Key: "optimeDate", Value: appliedWall},
					bson.E{Key: "lastAppliedWallTime", Value: appliedWall}, bson.E{Key: "lastDurableWallTime", Value: appliedWall})
			}
			md = append(md, bson.E{Key: "syncSourceHost", Value: syncHost}, bson.E{Key: "syncSourceId", Value: syncID},
				bson.E{Key: "infoMessage", Value: n.infoMessageLocked()})
			if n.state == StatePrimary {
				md = append(md, bson.E{Key: "electionTime", Value: n.leaderTime}, bson.E{Key: "electionDate", Value: bson.NewDateTimeFromTime(n.leaderDate)})
			}
			md = append(md, bson.E{Key: "configVersion", Value: int32(n.rs.Version)}, bson.E{Key: "configTerm", Value: int32(n.rs.Term)},
				bson.E{Key: "self", Value: true}, bson.E{Key: "lastHeartbeatMessage", Value: ""})
			members = append(members, md)
			continue
		}
		p := n.peers[m.Host]
		if p == nil {
			p = &peerState{health: -1, state: StateUnknown}
		}
		state := p.state
		stateStr := stateNames[state]
		if p.health == 0 {
			stateStr = "(not reachable/healthy)"
		}
		uptime := int32(0)
		if !p.upSince.IsZero() {
			uptime = int32(now.Sub(p.upSince).Seconds())
		}
		md := bson.D{{Key: "_id", Value: int32(m.ID)}, {Key: "name", Value: m.Host}, {Key: "health", Value: p.health},
			{Key: "state", Value: int32(state)}, {Key: "stateStr", Value: stateStr}, {Key: "uptime", Value: uptime}}
		if !m.ArbiterOnly {
			md = append(md, bson.E{Key: "optime", Value: p.applied.Doc()}, bson.E{Key: "optimeDurable", Value: p.durable.Doc()},
				bson.E{Key: "optimeDate", Value: p.applied.Date()}, bson.E{Key: "optimeDurableDate", Value: p.durable.Date()},
				bson.E{Key: "lastAppliedWallTime", Value: p.applied.Date()}, bson.E{Key: "lastDurableWallTime", Value: p.durable.Date()})
		}
		md = append(md, bson.E{Key: "lastHeartbeat", Value: bson.NewDateTimeFromTime(p.lastHB)},
			bson.E{Key: "lastHeartbeatRecv", Value: bson.NewDateTimeFromTime(p.lastHBRecv)},
			bson.E{Key: "pingMs", Value: p.pingMs}, bson.E{Key: "lastHeartbeatMessage", Value: p.msg})
		if p.authFailed {
			md = append(md, bson.E{Key: "authenticated", Value: false})
		}
		sid := int32(-1)
		for _, x := range n.rs.Members {
			if x.Host == p.syncSource {
				sid = int32(x.ID)
			}
		}
		md = append(md, bson.E{Key: "syncSourceHost", Value: p.syncSource}, bson.E{Key: "syncSourceId", Value: sid},
			bson.E{Key: "infoMessage", Value: ""})
		if state == StatePrimary && p.health == 1 {
			md = append(md, bson.E{Key: "electionTime", Value: p.electionTime}, bson.E{Key: "electionDate", Value: bson.DateTime(int64(p.electionTime.T) * 1000)})
		}
		md = append(md, bson.E{Key: "configVersion", Value: int32(p.cfgVersion)}, bson.E{Key: "configTerm", Value: int32(p.cfgTerm)})
		members = append(members, md)
	}
	d = append(d, bson.E{Key: "members", Value: members})
	return d, nil
}
