package sim

import (
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// cmdHello answers hello / isMaster / ismaster (spec §2), waiting for a
// topology change when the client sends topologyVersion and maxAwaitTimeMS.
func (c *conn) cmdHello(req *Request) (bson.D, error) {
	n := c.n
	legacy := req.Name() != "hello"
	body := req.Body
	if v, err := body.LookupErr("client"); err == nil {
		if c.sawHello {
			return nil, cerr(186, "The client metadata document may only be sent in the first hello")
		}
		c.client, _ = v.DocumentOK()
	}
	c.sawHello = true
	helloOk, _ := body.Lookup("helloOk").BooleanOK()
	if helloOk {
		c.helloOk = true
	}
	if b, _ := body.Lookup("internalClient").DocumentOK(); b != nil {
		_ = b
	}
	tv, tvErr := body.LookupErr("topologyVersion")
	mat, matErr := body.LookupErr("maxAwaitTimeMS")
	if (tvErr == nil) != (matErr == nil) {
		return nil, cerr(31368, "A request to wait for changes in the topology must include both 'maxAwaitTimeMS' and 'topologyVersion'")
	}
	if tvErr == nil {
		tvd, _ := tv.DocumentOK()
		pid, _ := tvd.Lookup("processId").ObjectIDOK()
		counter, _ := tvd.Lookup("counter").AsInt64OK()
		wait, _ := mat.AsInt64OK()
		if wait < 0 {
			return nil, cerr(31373, "maxAwaitTimeMS must be a non-negative integer")
		}
		if counter < 0 {
			return nil, cerr(31372, "topologyVersion must have a non-negative counter")
		}
		v := n.replState()
		if pid == n.processID {
			if counter > v.topoCount {
				return nil, cerr(31382, "Received a topology version with the same process ID and a higher counter. Received: %d, current: %d", counter, v.topoCount)
			}
			if counter == v.topoCount {
				t := time.NewTimer(time.Duration(wait) * time.Millisecond)
				select {
				case <-v.topoChanged:
				case <-t.C:
				case <-n.quit:
				}
				t.Stop()
			}
		}
	}
	// The answer is built from the replication view: hello never waits
	// for n.mu, which writes hold while they apply (replview.go).
	v := n.replState()
	if v.inShutdown {
		return nil, &CmdError{Code: 91, Msg: "The server is in quiesce mode and will shut down",
			Extra: bson.D{{Key: "remainingQuiesceTimeMillis", Value: int64(0)}, {Key: "topologyVersion", Value: v.topologyVersion(n.processID)}}}
	}
	var d bson.D
	if helloOk {
		d = append(d, bson.E{Key: "helloOk", Value: true})
	}
	d = append(d, n.helloReplFields(v, !legacy, c.horizon(v))...)
	d = append(d, bson.D{
		{Key: "maxBsonObjectSize", Value: int32(maxBSONSize)}, {Key: "maxMessageSizeBytes", Value: int32(maxMessageSize)},
		{Key: "maxWriteBatchSize", Value: int32(maxWriteBatchSize)}, {Key: "localTime", Value: bson.NewDateTimeFromTime(time.Now())},
		{Key: "logicalSessionTimeoutMinutes", Value: int32(30)}, {Key: "connectionId", Value: int32(c.id)},
		{Key: "minWireVersion", Value: int32(0)}, {Key: "maxWireVersion", Value: n.cfg.MaxWireVersion()}, {Key: "readOnly", Value: false},
	}...)
	if s, ok := body.Lookup("saslSupportedMechs").StringValueOK(); ok {
		if mechs := n.userMechanisms(s); mechs != nil {
			d = append(d, bson.E{Key: "saslSupportedMechs", Value: mechs})
		}
	}
	if sa, ok := body.Lookup("speculativeAuthenticate").DocumentOK(); ok {
		if r := c.speculativeAuth(sa, req.DB()); r != nil {
			d = append(d, bson.E{Key: "speculativeAuthenticate", Value: r})
		}
	}
	return d, nil
}

// helloReplFieldsLocked is helloReplFields of the state under n.mu.
func (n *Node) helloReplFieldsLocked(modern bool, horizon string) bson.D {
	return n.helloReplFields(n.viewLocked(), modern, horizon)
}

// helloReplFields builds the replication part of hello (spec §2.2) from
// a view. horizon names the split horizon whose host names to answer with.
func (n *Node) helloReplFields(v *replView, modern bool, horizon string) bson.D {
	primaryKey, delayKey := "isWritablePrimary", "secondaryDelaySecs"
	if !modern {
		primaryKey, delayKey = "ismaster", "slaveDelay"
	}
	if n.cfg.ReplSet == "" {
		return bson.D{{Key: primaryKey, Value: true}, {Key: "topologyVersion", Value: v.topologyVersion(n.processID)}}
	}
	d := bson.D{{Key: "topologyVersion", Value: v.topologyVersion(n.processID)}}
	if v.rs == nil || v.self < 0 {
		return append(d, bson.E{Key: primaryKey, Value: false}, bson.E{Key: "secondary", Value: false},
			bson.E{Key: "info", Value: "Does not have a valid replica set config"}, bson.E{Key: "isreplicaset", Value: true})
	}
	var hosts, passives, arbiters []string
	for _, m := range v.rs.Members {
		if m.Hidden || m.SecondaryDelaySecs > 0 {
			continue
		}
		switch {
		case m.ArbiterOnly:
			arbiters = append(arbiters, m.hostIn(horizon))
		case m.Priority > 0 && !m.NewlyAdded:
			hosts = append(hosts, m.hostIn(horizon))
		default:
			passives = append(passives, m.hostIn(horizon))
		}
	}
	d = append(d, bson.E{Key: "hosts", Value: hosts})
	if len(passives) > 0 {
		d = append(d, bson.E{Key: "passives", Value: passives})
	}
	if len(arbiters) > 0 {
		d = append(d, bson.E{Key: "arbiters", Value: arbiters})
	}
	me := v.rs.Members[v.self]
	isPrimary := v.canAcceptWrites()
	secondary := v.state == StateSecondary || v.state == StatePrimary && !v.writable && !v.stepping
	d = append(d, bson.E{Key: "setName", Value: v.rs.ID}, bson.E{Key: "setVersion", Value: int32(v.rs.Version)},
		bson.E{Key: primaryKey, Value: isPrimary}, bson.E{Key: "secondary", Value: secondary})
	if v.primary >= 0 && v.primary < len(v.rs.Members) {
		d = append(d, bson.E{Key: "primary", Value: v.rs.Members[v.primary].hostIn(horizon)})
	}
	if me.ArbiterOnly {
		d = append(d, bson.E{Key: "arbiterOnly", Value: true})
	} else if me.Priority == 0 {
		d = append(d, bson.E{Key: "passive", Value: true})
	}
	if me.Hidden {
		d = append(d, bson.E{Key: "hidden", Value: true})
	}
	if !me.BuildIndexes {
		d = append(d, bson.E{Key: "buildIndexes", Value: false})
	}
	if me.SecondaryDelaySecs > 0 {
		d = append(d, bson.E{Key: delayKey, Value: me.SecondaryDelaySecs})
	}
	if len(me.Tags) > 0 {
		d = append(d, bson.E{Key: "tags", Value: me.Tags})
	}
	d = append(d, bson.E{Key: "me", Value: me.hostIn(horizon)})
	if v.state == StatePrimary {
		d = append(d, bson.E{Key: "electionId", Value: electionID(v.term)})
	}
	lw := bson.D{{Key: "opTime", Value: v.applied.Doc()}, {Key: "lastWriteDate", Value: v.applied.Date()}}
	if !v.commit.IsZero() {
		lw = append(lw, bson.E{Key: "majorityOpTime", Value: v.commit.Doc()}, bson.E{Key: "majorityWriteDate", Value: v.commit.Date()})
	}
	d = append(d, bson.E{Key: "lastWrite", Value: lw})
	return d
}

// electionID is OID::fromTerm: 7fffffff followed by the term big-endian.
func electionID(term int64) bson.ObjectID {
	var id bson.ObjectID
	id[0], id[1], id[2], id[3] = 0x7f, 0xff, 0xff, 0xff
	for i := 0; i < 8; i++ {
		id[11-i] = byte(term >> (8 * i))
	}
	return id
}
