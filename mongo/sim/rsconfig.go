package sim

import (
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Member is one members[] entry of a replica-set config.
type Member struct {
	ID                 int
	Host               string
	ArbiterOnly        bool
	BuildIndexes       bool
	Hidden             bool
	Priority           float64
	Tags               bson.D
	SecondaryDelaySecs int64
	Votes              int
	NewlyAdded         bool
	Horizons           bson.D // split horizon: name → host:port, sorted by name
}

// Voter reports whether the member's vote counts (newlyAdded ones do not).
func (m Member) Voter() bool { return m.Votes > 0 && !m.NewlyAdded }

// Electable is a member that may become primary.
func (m Member) Electable() bool { return !m.ArbiterOnly && m.Priority > 0 && !m.NewlyAdded }

// RSConfig is a replica-set configuration with mongod's defaults filled in.
type RSConfig struct {
	ID                         string
	Version                    int
	Term                       int64
	Members                    []Member
	ChainingAllowed            bool
	HeartbeatIntervalMillis    int64
	HeartbeatTimeoutSecs       int64
	ElectionTimeoutMillis      int64
	CatchUpTimeoutMillis       int64
	CatchUpTakeoverDelayMillis int64
	ReplicaSetID               bson.ObjectID
	Configsvr                  bool
	WriteConcernMajorityJD     bool
}

// ConfigError is a config rejected by validation (reported as 93 or 103
// depending on the command).
type ConfigError struct{ Msg string }

func (e *ConfigError) Error() string { return e.Msg }

func cfgErr(format string, a ...any) error { return &ConfigError{fmt.Sprintf(format, a...)} }

// ParseRSConfig reads a config document as replSetInitiate/Reconfig or
// the store receive it.
func ParseRSConfig(doc bson.Raw, allowNewlyAdded bool) (*RSConfig, error) {
	c := &RSConfig{ChainingAllowed: true, HeartbeatIntervalMillis: 2000, HeartbeatTimeoutSecs: 10,
		ElectionTimeoutMillis: 10000, CatchUpTimeoutMillis: -1, CatchUpTakeoverDelayMillis: 30000,
		WriteConcernMajorityJD: true, Version: 1}
	elems, err := doc.Elements()
	if err != nil {
		return nil, cfgErr("%v", err)
	}
	haveMembers := false
	for _, e := range elems {
		v := e.Value()
		switch e.Key() {
		case "_id":
			s, ok := v.StringValueOK()
			if !ok {
				return nil, cfgErr("BSON field 'ReplSetConfig._id' is the wrong type '%s', expected type 'string'", typeName(v.Type))
			}
			c.ID = s
		case "version":
			n, ok := v.AsInt64OK()
			if !ok && v.Type == bson.TypeDouble {
				n, ok = int64(v.Double()), true
			}
			if !ok || n < 1 || n > math.MaxInt32 {
				return nil, cfgErr("BSON field 'version' value must be >= 1, actual value '%v'", v)
			}
			c.Version = int(n)
		case "term":
			n, ok := numberOK(v)
			if !ok {
				return nil, cfgErr("BSON field 'term' is the wrong type")
			}
			c.Term = int64(n)
		case "protocolVersion":
			n, ok := numberOK(v)
			if !ok || n != 1 {
				return nil, cfgErr("Support for replication protocol version %v was removed in MongoDB 4.0. Downgrade to MongoDB version 4.0 and upgrade your protocol version to 1 before upgrading your MongoDB version", v)
			}
		case "writeConcernMajorityJournalDefault":
			c.WriteConcernMajorityJD, _ = v.BooleanOK()
		case "configsvr":
			c.Configsvr, _ = v.BooleanOK()
		case "members":
			arr, ok := v.ArrayOK()
			if !ok {
				return nil, cfgErr("BSON field 'ReplSetConfig.members' is the wrong type '%s', expected type 'array'", typeName(v.Type))
			}
			vals, _ := arr.Values()
			for i, mv := range vals {
				md, ok := mv.DocumentOK()
				if !ok {
					return nil, cfgErr("BSON field 'ReplSetConfig.members.%d' is the wrong type '%s', expected type 'object'", i, typeName(mv.Type))
				}
				m, err := parseMember(md, allowNewlyAdded)
				if err != nil {
					return nil, err
				}
				c.Members = append(c.Members, m)
			}
			haveMembers = true
		case "settings":
			sd, ok := v.DocumentOK()
			if !ok {
				return nil, cfgErr("BSON field 'ReplSetConfig.settings' is the wrong type '%s', expected type 'object'", typeName(v.Type))
			}
			if err := c.parseSettings(sd); err != nil {
				return nil, err
			}
		default:
			return nil, cfgErr("BSON field 'ReplSetConfig.%s' is an unknown field.", e.Key())
		}
	}
	if c.ID == "" {
		return nil, cfgErr("BSON field 'ReplSetConfig._id' is missing but a required field")
	}
	if !haveMembers {
		return nil, cfgErr("BSON field 'ReplSetConfig.members' is missing but a required field")
	}
	return c, nil
}

func numberOK(v bson.RawValue) (float64, bool) {
	if v.Type == bson.TypeBoolean {
		if v.Boolean() {
			return 1, true
		}
		return 0, true
	}
	return v.AsFloat64OK()
}

func parseMember(d bson.Raw, allowNewlyAdded bool) (Member, error) {
	m := Member{BuildIndexes: true, Priority: 1, Votes: 1}
	havePriority := false
	elems, err := d.Elements()
	if err != nil {
		return m, cfgErr("%v", err)
	}
	haveID, haveHost := false, false
	var horizons bson.RawValue
	for _, e := range elems {
		v := e.Value()
		switch e.Key() {
		case "_id":
			n, ok := numberOK(v)
			if !ok || v.Type == bson.TypeBoolean {
				return m, cfgErr("BSON field 'MemberConfig._id' is the wrong type '%s', expected types '[long, int, decimal, double']", typeName(v.Type))
			}
			if n < 0 {
				return m, cfgErr("_id field value of %v is out of range.", n)
			}
			m.ID, haveID = int(n), true
		case "host":
			s, ok := v.StringValueOK()
			if !ok {
				return m, cfgErr("BSON field 'MemberConfig.host' is the wrong type '%s', expected type 'string'", typeName(v.Type))
			}
			h, err := normalizeHost(s)
			if err != nil {
				return m, err
			}
			m.Host, haveHost = h, true
		case "arbiterOnly":
			m.ArbiterOnly, _ = v.BooleanOK()
		case "buildIndexes":
			m.BuildIndexes, _ = v.BooleanOK()
		case "hidden":
			m.Hidden, _ = v.BooleanOK()
		case "priority":
			n, ok := numberOK(v)
			if !ok || n < 0 || n > 1000 {
				return m, cfgErr("priority field value of %v is out of range", v)
			}
			m.Priority, havePriority = n, true
		case "votes":
			n, ok := numberOK(v)
			if !ok {
				return m, cfgErr("BSON field 'votes' is the wrong type")
			}
			if n > 1 {
				return m, cfgErr("BSON field 'votes' value must be <= 1, actual value '%v'", n)
			}
			if n < 0 {
				return m, cfgErr("BSON field 'votes' value must be >= 0, actual value '%v'", n)
			}
			m.Votes = int(n)
		case "tags":
			td, ok := v.DocumentOK()
			if !ok {
				return m, cfgErr("BSON field 'tags' is the wrong type")
			}
			_ = bson.Unmarshal(td, &m.Tags)
		case "secondaryDelaySecs", "slaveDelay":
			n, ok := numberOK(v)
			if !ok || n < 0 || n > 31622400 {
				return m, cfgErr("secondaryDelaySecs field value of %v is out of range", v)
			}
			m.SecondaryDelaySecs = int64(n)
		case "horizons":
			horizons = v
		case "newlyAdded":
			if !allowNewlyAdded {
				return m, cfgErr("Cannot provide newlyAdded field to member config during reconfig.")
			}
			m.NewlyAdded, _ = v.BooleanOK()
		default:
			return m, cfgErr("BSON field 'MemberConfig.%s' is an unknown field.", e.Key())
		}
	}
	if !haveID {
		return m, cfgErr("BSON field 'MemberConfig._id' is missing but a required field")
	}
	if !haveHost {
		return m, cfgErr("BSON field 'MemberConfig.host' is missing but a required field")
	}
	if horizons.Type != 0 {
		h, err := parseHorizons(horizons, m.Host)
		if err != nil {
			return m, err
		}
		m.Horizons = h
	}
	if m.ArbiterOnly && !havePriority {
		m.Priority = 0
	}
	if m.ArbiterOnly && m.Priority == 1 {
		m.Priority = 0
	}
	return m, nil
}

func (c *RSConfig) parseSettings(d bson.Raw) error {
	elems, err := d.Elements()
	if err != nil {
		return cfgErr("%v", err)
	}
	for _, e := range elems {
		v := e.Value()
		n, isNum := numberOK(v)
		pos := func(name string, min float64) error {
			if !isNum || n < min {
				return cfgErr("%s field value must be greater than %v", name, min-1)
			}
			return nil
		}
		switch e.Key() {
		case "chainingAllowed":
			c.ChainingAllowed, _ = v.BooleanOK()
		case "heartbeatIntervalMillis":
			if err := pos("heartbeatIntervalMillis", 1); err != nil {
				return err
			}
			c.HeartbeatIntervalMillis = int64(n)
		case "heartbeatTimeoutSecs":
			if err := pos("heartbeatTimeoutSecs", 1); err != nil {
				return err
			}
			c.HeartbeatTimeoutSecs = int64(n)
		case "electionTimeoutMillis":
			if err := pos("electionTimeoutMillis", 1); err != nil {
				return err
			}
			c.ElectionTimeoutMillis = int64(n)
		case "catchUpTimeoutMillis":
			if err := pos("catchUpTimeoutMillis", -1); err != nil {
				return err
			}
			c.CatchUpTimeoutMillis = int64(n)
		case "catchUpTakeoverDelayMillis":
			if err := pos("catchUpTakeoverDelayMillis", -1); err != nil {
				return err
			}
			c.CatchUpTakeoverDelayMillis = int64(n)
		case "replicaSetId":
			oid, ok := v.ObjectIDOK()
			if !ok {
				return cfgErr("replicaSetId field must be an ObjectId")
			}
			c.ReplicaSetID = oid
		case "getLastErrorDefaults":
			gd, _ := v.DocumentOK()
			w := gd.Lookup("w")
			wt := gd.Lookup("wtimeout")
			wn, _ := numberOK(w)
			wtn, _ := numberOK(wt)
			if (w.Type != 0 && wn != 1) || (wt.Type != 0 && wtn != 0) {
				return cfgErr("getLastErrorDefaults must be {w: 1, wtimeout: 0}; use setDefaultRWConcern instead")
			}
		case "getLastErrorModes":
		default:
			return cfgErr("BSON field 'ReplSetConfig.settings.%s' is an unknown field.", e.Key())
		}
	}
	return nil
}

// normalizeHost makes the port explicit, as mongod does.
func normalizeHost(s string) (string, error) {
	if s == "" {
		return "", cfgErr("Empty host-port string")
	}
	h, p, err := net.SplitHostPort(s)
	if err != nil {
		if strings.Contains(err.Error(), "missing port") {
			return strings.ToLower(s) + ":27017", nil
		}
		return "", cfgErr("FailedToParse: %v", err)
	}
	if n, err := strconv.Atoi(p); err != nil || n <= 0 || n > 65535 {
		return "", cfgErr("Port number %s out of range parsing HostAndPort from \"%s\"", p, s)
	}
	return strings.ToLower(net.JoinHostPort(h, p)), nil
}

func isLocalhostRef(host string) bool {
	h, _, _ := net.SplitHostPort(host)
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// Validate applies mongod's structural rules (spec §3.1).
func (c *RSConfig) Validate() error {
	n := len(c.Members)
	if n < 1 || n > 50 {
		return cfgErr("Replica set configuration contains %d members, but must have at least 1 and no more than  50", n)
	}
	voters, electable, arbiters, local := 0, 0, 0, 0
	for i, m := range c.Members {
		for j := 0; j < i; j++ {
			if c.Members[j].ID == m.ID {
				return cfgErr("Found two member configurations with same _id field, members.%d._id == members.%d._id == %d", j, i, m.ID)
			}
			if c.Members[j].Host == m.Host {
				return cfgErr("Found two member configurations with same host field, members.%d.host == members.%d.host == %s", j, i, m.Host)
			}
		}
		if m.Votes > 0 {
			voters++
		}
		if m.Electable() || (m.NewlyAdded && !m.ArbiterOnly && m.Priority > 0) {
			electable++
		}
		if m.ArbiterOnly {
			arbiters++
			if m.Votes == 0 {
				return cfgErr("Arbiter must vote (cannot have 0 votes)")
			}
			if len(m.Tags) > 0 {
				return cfgErr("Cannot set tags on arbiters.")
			}
		}
		if m.Priority != 0 {
			if m.Votes == 0 {
				return cfgErr("priority must be 0 when non-voting (votes:0)")
			}
			if m.SecondaryDelaySecs > 0 {
				return cfgErr("priority must be 0 when secondaryDelaySecs is used")
			}
			if m.Hidden {
				return cfgErr("priority must be 0 when hidden=true")
			}
			if !m.BuildIndexes {
				return cfgErr("priority must be 0 when buildIndexes=false")
			}
		}
		if isLocalhostRef(m.Host) {
			local++
		}
	}
	if voters < 1 || voters > 7 {
		return cfgErr("Replica set configuration contains %d voting members, but must be at least 1 and no more than 7", voters)
	}
	if electable == 0 {
		return cfgErr("Replica set configuration must contain at least one non-arbiter member with priority > 0")
	}
	if local != 0 && local != n {
		return cfgErr("Either all host names in a replica set configuration must be localhost references, or none must be; found %d out of %d", local, n)
	}
	if err := c.validateHorizons(); err != nil {
		return err
	}
	if arbiters > 1 {
		return cfgErr("Multiple arbiters are not allowed unless all nodes were started with with --setParameter 'allowMultipleArbiters=true'")
	}
	return nil
}

// Majorities derived from the config (spec §3).
func (c *RSConfig) Majorities() (voting, majorityVote, writableVoting, writeMajority int) {
	arb := 0
	for _, m := range c.Members {
		if m.Voter() {
			voting++
			if m.ArbiterOnly {
				arb++
			}
		}
	}
	majorityVote = voting/2 + 1
	writableVoting = voting - arb
	writeMajority = min(majorityVote, writableVoting)
	return
}

// MemberByID returns the index of the member with this _id, or -1.
func (c *RSConfig) MemberByID(id int) int {
	for i, m := range c.Members {
		if m.ID == id {
			return i
		}
	}
	return -1
}

// Doc renders the config with defaults, as replSetGetConfig returns it.
func (c *RSConfig) Doc(includeNewlyAdded bool) bson.D {
	members := bson.A{}
	for _, m := range c.Members {
		tags := m.Tags
		if tags == nil {
			tags = bson.D{}
		}
		md := bson.D{{Key: "_id", Value: int32(m.ID)}, {Key: "host", Value: m.Host}, {Key: "arbiterOnly", Value: m.ArbiterOnly},
			{Key: "buildIndexes", Value: m.BuildIndexes}, {Key: "hidden", Value: m.Hidden}, {Key: "priority", Value: m.Priority},
			{Key: "tags", Value: tags}}
		if len(m.Horizons) > 0 {
			md = append(md, bson.E{Key: "horizons", Value: m.Horizons})
		}
		md = append(md, bson.E{Key: "secondaryDelaySecs", Value: m.SecondaryDelaySecs}, bson.E{Key: "votes", Value: int32(m.Votes)})
		if m.NewlyAdded && includeNewlyAdded {
			md = append(md, bson.E{Key: "newlyAdded", Value: true})
		}
		members = append(members, md)
	}
	d := bson.D{{Key: "_id", Value: c.ID}, {Key: "version", Value: int32(c.Version)}, {Key: "term", Value: int32(c.Term)}}
	if c.Configsvr {
		d = append(d, bson.E{Key: "configsvr", Value: true})
	}
	d = append(d, bson.E{Key: "members", Value: members}, bson.E{Key: "protocolVersion", Value: int64(1)},
		bson.E{Key: "writeConcernMajorityJournalDefault", Value: c.WriteConcernMajorityJD},
		bson.E{Key: "settings", Value: bson.D{
			{Key: "chainingAllowed", Value: c.ChainingAllowed},
			{Key: "heartbeatIntervalMillis", Value: int32(c.HeartbeatIntervalMillis)},
			{Key: "heartbeatTimeoutSecs", Value: int32(c.HeartbeatTimeoutSecs)},
			{Key: "electionTimeoutMillis", Value: int32(c.ElectionTimeoutMillis)},
			{Key: "catchUpTimeoutMillis", Value: int32(c.CatchUpTimeoutMillis)},
			{Key: "catchUpTakeoverDelayMillis", Value: int32(c.CatchUpTakeoverDelayMillis)},
			{Key: "getLastErrorModes", Value: bson.D{}},
			{Key: "getLastErrorDefaults", Value: bson.D{{Key: "w", Value: int32(1)}, {Key: "wtimeout", Value: int32(0)}}},
			{Key: "replicaSetId", Value: c.ReplicaSetID},
		}})
	return d
}

// Raw encodes the full config (with newlyAdded) for storage and heartbeats.
func (c *RSConfig) Raw() bson.Raw {
	b, _ := bson.Marshal(c.Doc(true))
	return b
}

// Newer reports whether (version, term) of c is after that of o, using
// mongod's rule: if either term is -1 (force), compare versions only.
func (c *RSConfig) Newer(version int, term int64) bool {
	return configNewer(c.Version, c.Term, version, term)
}

func configNewer(v1 int, t1 int64, v2 int, t2 int64) bool {
	if t1 == -1 || t2 == -1 || t1 == t2 {
		return v1 > v2
	}
	return t1 > t2
}

// Clone copies a config deeply enough for edits.
func (c *RSConfig) Clone() *RSConfig {
	cp := *c
	cp.Members = append([]Member(nil), c.Members...)
	return &cp
}
