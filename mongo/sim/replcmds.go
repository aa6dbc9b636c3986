package sim

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
)

func (n *Node) requireReplSet() *CmdError {
	if n.cfg.ReplSet == "" {
		return cerr(76, "This node was not started with replication enabled.")
	}
	return nil
}

// cmdReplSetInitiate follows spec §4 step by step.
func (c *conn) cmdReplSetInitiate(req *Request) (bson.D, error) {
	n := c.n
	if n.cfg.ReplSet == "" {
		return nil, cerr(76, "This node was not started with replication enabled.")
	}
	var extra bson.D
	cfgDoc, isDoc := req.Body.Lookup("replSetInitiate").DocumentOK()
	if isDoc {
		if els, _ := cfgDoc.Elements(); len(els) == 0 {
			isDoc = false
		}
	}
	n.mu.Lock()
	if n.rs != nil {
		n.mu.Unlock()
		return nil, cerr(23, "already initialized")
	}
	if n.configBusy {
		n.mu.Unlock()
		return nil, cerr(109, "Cannot run replSetInitiate because the node is currently updating its configuration")
	}
	n.configBusy = true
	n.mu.Unlock()
	defer func() { n.mu.Lock(); n.configBusy = false; n.mu.Unlock() }()
	if !isDoc {
		me := n.defaultHost()
		members := bson.A{bson.D{{Key: "_id", Value: int32(0)}, {Key: "host", Value: me}}}
		if k := strings.IndexByte(n.cfgReplSetRaw(), '/'); k >= 0 {
			for i, s := range strings.Split(n.cfgReplSetRaw()[k+1:], ",") {
				members = append(members, bson.D{{Key: "_id", Value: int32(i + 1)}, {Key: "host", Value: s}})
			}
		}
		cfgDoc = mustRaw(bson.D{{Key: "_id", Value: n.cfg.ReplSet}, {Key: "version", Value: int32(1)}, {Key: "members", Value: members}})
		extra = bson.D{{Key: "info2", Value: "no configuration specified. Using a default configuration for the set"}, {Key: "me", Value: me}}
		n.logI("REPL", 21356, "replSetInitiate: no configuration specified. Using a default configuration for the set", nil)
	}
	if _, err := cfgDoc.LookupErr("settings", "replicaSetId"); err == nil {
		return nil, cerr(93, "replica set configuration cannot contain 'replicaSetId' field when called from replSetInitiate")
	}
	cfg, err := ParseRSConfig(cfgDoc, false)
	if err != nil {
		return nil, cerr(93, "%s", err.Error())
	}
	cfg.Term = 0
	cfg.ReplicaSetID = bson.NewObjectID()
	if cfg.ID != n.cfg.ReplSet {
		return nil, cerr(93, "Rejecting initiate with a set name that differs from command line set name, initiate set name: %s, command line set name: %s", cfg.ID, n.cfg.ReplSet)
	}
	if err := cfg.Validate(); err != nil {
		return nil, cerr(93, "%s", err.Error())
	}
	if cfg.Version != 1 {
		return nil, cerr(93, "Configuration used to initiate a replica set must  have version 1, but found %d", cfg.Version)
	}
	self, err := n.findSelf(cfg)
	if err != nil {
		return nil, cerr(93, "%s", err.Error())
	}
	if self < 0 {
		return nil, cerr(93, "No host described in new configuration with {version: 1, term: 0} for replica set %s maps to this node", cfg.ID)
	}
	if m := cfg.Members[self]; !m.Electable() {
		return nil, cerr(93, "This node, %s, with _id %d is not electable under the new configuration with {version: 1, term: 0} for replica set %s", m.Host, m.ID, cfg.ID)
	}
	// Quorum check: every other member must answer affirmatively.
	n.mu.Lock()
	hb := n.heartbeatRequestLocked(true)
	hbTimeout := time.Duration(cfg.HeartbeatTimeoutSecs) * time.Second
	n.mu.Unlock()
	type res struct {
		host string
		r    any
		err  error
	}
	var failures []string
	ch := make(chan res, len(cfg.Members))
	for i, m := range cfg.Members {
		if i == self {
			continue
		}
		go func(h string) {
			r, err := n.callPeer(h, hb, hbTimeout)
			ch <- res{h, r, err}
		}(m.Host)
	}
	for range len(cfg.Members) - 1 {
		x := <-ch
		r, _ := x.r.(bson.Raw)
		if x.err != nil {
			var ce *CmdError
			if errors.As(x.err, &ce) && ce.Code == 185 {
				return nil, cerr(103, "Our set name did not match that of %s", x.host)
			}
			failures = append(failures, fmt.Sprintf("%s failed with %s", x.host, connErrText(x.host, x.err)))
			continue
		}
		if v, _ := r.Lookup("configVersion").AsInt64OK(); v >= 1 {
			return nil, cerr(103, "Our config version of 1 is no larger than the version on %s, which is %d", x.host, v)
		}
		if hd, _ := r.Lookup("hasData").BooleanOK(); hd {
			return nil, cerr(110, "'%s' has data already, cannot initiate set.", x.host)
		}
	}
	if len(failures) > 0 {
		sort.Strings(failures)
		return nil, cerr(74, "replSetInitiate quorum check failed because not all proposed set members responded affirmatively: %s", strings.Join(failures, ", "))
	}
	n.mu.Lock()
	if n.data.HasUserData() {
		n.mu.Unlock()
		return nil, cerr(110, "'%s' has data already, cannot initiate set.", cfg.Members[self].Host)
	}
	n.state = StateStartup
	n.installConfigLocked(cfg, true, self)
	n.state = StateSecondary
	// "initiating set" entry, written as term 0 before any election.
	e := NewOplogEntry(OpTime{TS: n.nextTSLocked(), T: 0}, "n", "", mustRaw(bson.D{{Key: "msg", Value: "initiating set"}}), nil, time.Now())
	// The set's featureCompatibilityVersion is the initiating binary's line,
	// written to admin.system.version as mongod does: it replicates with the
	// data, and a later binary keeps it until setFeatureCompatibilityVersion.
	fcv := NewOplogEntry(OpTime{TS: n.nextTSLocked(), T: 0}, "i", "admin.system.version",
		mustRaw(bson.D{{Key: "_id", Value: fcvID}, {Key: "version", Value: n.cfg.MajorMinor()}}), nil, time.Now())
	if err := n.store.AppendOplog([]OplogEntry{e, fcv}); err == nil {
		n.data.Apply(fcv)
		n.oplog = append(n.oplog, e, fcv)
		n.applied = fcv.OpTime()
	}
	n.bumpTopologyLocked()
	n.mu.Unlock()
	n.logI("REPL", 21357, "replSetInitiate config object parses ok", func(e *zerolog.Event) { e.Int("numMembers", len(cfg.Members)) })
	return extra, nil
}

func (n *Node) cfgReplSetRaw() string {
	for i, a := range n.cfg.Argv {
		if a == "--replSet" && i+1 < len(n.cfg.Argv) {
			return n.cfg.Argv[i+1]
		}
		if strings.HasPrefix(a, "--replSet=") {
			return strings.TrimPrefix(a, "--replSet=")
		}
	}
	return n.cfg.ReplSet
}

// defaultHost is "hostname:port", what mongod puts in a default config.
func (n *Node) defaultHost() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "localhost"
	}
	if !n.cfg.BindIPAll && len(n.cfg.BindIP) > 0 && n.cfg.BindIP[0] != "0.0.0.0" {
		if isLocalhostRef(n.cfg.BindIP[0] + ":1") {
			h = n.cfg.BindIP[0]
			if h == "127.0.0.1" {
				h = "localhost"
			}
		}
	}
	return fmt.Sprintf("%s:%d", strings.ToLower(h), n.cfg.Port)
}

func (n *Node) checkStatusLocked() *CmdError {
	if n.cfg.ReplSet == "" {
		return cerr(76, "not running with --replSet")
	}
	if n.rs == nil {
		return cerr(94, "no replset config has been received")
	}
	return nil
}
