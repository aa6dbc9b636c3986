package mongo

import (
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// MemberState is a replica-set member state as mongod numbers it.
type MemberState int

// The member states (mongo-replset-spec §3).
const (
	StateStartup    MemberState = 0
	StatePrimary    MemberState = 1
	StateSecondary  MemberState = 2
	StateRecovering MemberState = 3
	StateStartup2   MemberState = 5
	StateUnknown    MemberState = 6
	StateArbiter    MemberState = 7
	StateDown       MemberState = 8
	StateRollback   MemberState = 9
	StateRemoved    MemberState = 10
)

// String is mongod's stateStr.
func (s MemberState) String() string {
	switch s {
	case StateStartup:
		return "STARTUP"
	case StatePrimary:
		return "PRIMARY"
	case StateSecondary:
		return "SECONDARY"
	case StateRecovering:
		return "RECOVERING"
	case StateStartup2:
		return "STARTUP2"
	case StateUnknown:
		return "UNKNOWN"
	case StateArbiter:
		return "ARBITER"
	case StateDown:
		return "DOWN"
	case StateRollback:
		return "ROLLBACK"
	case StateRemoved:
		return "REMOVED"
	}
	return "UNKNOWN"
}

// Healthy reports whether a member in this state serves the set: PRIMARY,
// SECONDARY or ARBITER.
func (s MemberState) Healthy() bool {
	return s == StatePrimary || s == StateSecondary || s == StateArbiter
}

// OpTime is a position in the oplog, ordered by term and then timestamp.
type OpTime struct {
	TS bson.Timestamp `bson:"ts"`
	T  int64          `bson:"t"`
}

// Compare orders optimes as mongod does: by term, then timestamp.
func (o OpTime) Compare(p OpTime) int {
	switch {
	case o.T < p.T:
		return -1
	case o.T > p.T:
		return 1
	case o.TS.T < p.TS.T:
		return -1
	case o.TS.T > p.TS.T:
		return 1
	case o.TS.I < p.TS.I:
		return -1
	case o.TS.I > p.TS.I:
		return 1
	}
	return 0
}

// IsZero reports an absent optime (arbiters, members never heard from).
func (o OpTime) IsZero() bool { return o.TS.T == 0 && o.TS.I == 0 }

// Status is the typed answer of replSetGetStatus, as one member sees the set.
type Status struct {
	Set                        string         `bson:"set"`
	Date                       time.Time      `bson:"date"`
	MyState                    MemberState    `bson:"myState"`
	Term                       int64          `bson:"term"`
	SyncSourceHost             string         `bson:"syncSourceHost,omitempty"`
	HeartbeatIntervalMillis    int64          `bson:"heartbeatIntervalMillis,omitempty"`
	MajorityVoteCount          int            `bson:"majorityVoteCount,omitempty"`
	WriteMajorityCount         int            `bson:"writeMajorityCount,omitempty"`
	VotingMembersCount         int            `bson:"votingMembersCount,omitempty"`
	WritableVotingMembersCount int            `bson:"writableVotingMembersCount,omitempty"`
	Members                    []MemberStatus `bson:"members"`
	// Optimes holds the observer's commit point: the last write it knows a
	// majority holds.
	Optimes StatusOptimes `bson:"optimes,omitempty"`
	// InitialSyncStatus is the observer's own initial sync progress, present
	// while it is in initial sync (STARTUP2; mongod 4.2.1+).
	InitialSyncStatus *InitialSyncStatus `bson:"initialSyncStatus,omitempty"`
}

// InitialSyncStatus is replSetGetStatus.initialSyncStatus (the part we read):
// how far an initial sync got and how many attempts failed. mongod exits
// (fassert, "The maximum number of retries have been exhausted for initial
// sync") once FailedInitialSyncAttempts reaches MaxFailedInitialSyncAttempts.
type InitialSyncStatus struct {
	FailedInitialSyncAttempts    int64     `bson:"failedInitialSyncAttempts"`
	MaxFailedInitialSyncAttempts int64     `bson:"maxFailedInitialSyncAttempts"`
	ApproxTotalDataSize          int64     `bson:"approxTotalDataSize,omitempty"`
	ApproxTotalBytesCopied       int64     `bson:"approxTotalBytesCopied,omitempty"`
	InitialSyncStart             time.Time `bson:"initialSyncStart,omitempty"`
	TotalElapsedMillis           int64     `bson:"totalInitialSyncElapsedMillis,omitempty"`
	AppliedOps                   int64     `bson:"appliedOps,omitempty"`
	// Attempts are the failed attempts, oldest first.
	Attempts []InitialSyncAttempt `bson:"initialSyncAttempts,omitempty"`
}

// InitialSyncAttempt is one failed initial sync attempt.
type InitialSyncAttempt struct {
	DurationMillis int64  `bson:"durationMillis"`
	Status         string `bson:"status"`
	SyncSource     string `bson:"syncSource"`
}

// Progress says in words how far the initial sync got, for events.
func (s *InitialSyncStatus) Progress() string {
	if s == nil {
		return ""
	}
	out := fmt.Sprintf("initial sync: %d of ~%d bytes copied, %d ops applied, %d of %d attempts failed, %s elapsed",
		s.ApproxTotalBytesCopied, s.ApproxTotalDataSize, s.AppliedOps, s.FailedInitialSyncAttempts, s.MaxFailedInitialSyncAttempts,
		(time.Duration(s.TotalElapsedMillis) * time.Millisecond).Round(time.Second))
	if n := len(s.Attempts); n > 0 {
		out += "; last failure: " + s.Attempts[n-1].Status
	}
	return out
}

// Exhausted reports whether the initial sync used up its attempts: mongod
// stops (fassert) and a restart begins again from nothing.
func (s *InitialSyncStatus) Exhausted() bool {
	return s != nil && s.MaxFailedInitialSyncAttempts > 0 && s.FailedInitialSyncAttempts >= s.MaxFailedInitialSyncAttempts
}

// StatusOptimes is replSetGetStatus's optimes document (the part we read).
type StatusOptimes struct {
	LastCommittedOpTime OpTime `bson:"lastCommittedOpTime"`
}

// MemberStatus is one member's entry in a Status.
type MemberStatus struct {
	ID                   int         `bson:"_id"`
	Name                 string      `bson:"name"`
	Health               float64     `bson:"health"`
	State                MemberState `bson:"state"`
	StateStr             string      `bson:"stateStr"`
	Uptime               int64       `bson:"uptime,omitempty"`
	Optime               OpTime      `bson:"optime,omitempty"`
	OptimeDate           time.Time   `bson:"optimeDate,omitempty"`
	ConfigVersion        int64       `bson:"configVersion"`
	ConfigTerm           int64       `bson:"configTerm"`
	Self                 bool        `bson:"self,omitempty"`
	LastHeartbeatMessage string      `bson:"lastHeartbeatMessage,omitempty"`
	LastHeartbeatRecv    time.Time   `bson:"lastHeartbeatRecv,omitempty"`
	SyncSourceHost       string      `bson:"syncSourceHost,omitempty"`
	// InfoMessage is what the member says of itself, e.g. "Could not find
	// member to sync from" when it is too stale to catch up (mongod fills it
	// for the observer's own entry).
	InfoMessage string `bson:"infoMessage,omitempty"`
}

// Up reports whether the observing member hears from this one.
func (m MemberStatus) Up() bool {
	return m.Health > 0 && m.State != StateDown && m.State != StateUnknown && m.State != StateRemoved
}

// Member returns the entry for a host, or nil.
func (s *Status) Member(host string) *MemberStatus {
	if s == nil {
		return nil
	}
	for i := range s.Members {
		if SameHost(s.Members[i].Name, host) {
			return &s.Members[i]
		}
	}
	return nil
}

// Primary returns the member the observer sees as PRIMARY, or nil.
func (s *Status) Primary() *MemberStatus {
	if s == nil {
		return nil
	}
	for i := range s.Members {
		if s.Members[i].State == StatePrimary && s.Members[i].Up() {
			return &s.Members[i]
		}
	}
	return nil
}

// Self returns the observing member's own entry, or nil.
func (s *Status) Self() *MemberStatus {
	if s == nil {
		return nil
	}
	for i := range s.Members {
		if s.Members[i].Self {
			return &s.Members[i]
		}
	}
	return nil
}

// HelloReply is the typed answer of hello: who a member is and what it knows
// of its set, without authentication.
type HelloReply struct {
	IsWritablePrimary bool     `bson:"isWritablePrimary"`
	Secondary         bool     `bson:"secondary"`
	ArbiterOnly       bool     `bson:"arbiterOnly,omitempty"`
	Hidden            bool     `bson:"hidden,omitempty"`
	IsReplicaSet      bool     `bson:"isreplicaset,omitempty"`
	SetName           string   `bson:"setName,omitempty"`
	SetVersion        int64    `bson:"setVersion,omitempty"`
	Hosts             []string `bson:"hosts,omitempty"`
	Passives          []string `bson:"passives,omitempty"`
	Arbiters          []string `bson:"arbiters,omitempty"`
	Primary           string   `bson:"primary,omitempty"`
	Me                string   `bson:"me,omitempty"`
	Info              string   `bson:"info,omitempty"`
	MaxWireVersion    int32    `bson:"maxWireVersion"`
	MinWireVersion    int32    `bson:"minWireVersion"`
	// LastWrite is the member's own last applied write (absent on arbiters and
	// before initiate): how far a member that left the config got.
	LastWrite LastWrite `bson:"lastWrite,omitempty"`
}

// LastWrite is hello's lastWrite document.
type LastWrite struct {
	OpTime OpTime `bson:"opTime"`
}

// HasConfig reports whether the member holds a replica-set config it is part
// of. A member without one (never initiated, or REMOVED) says "isreplicaset".
func (h HelloReply) HasConfig() bool { return h.SetName != "" }
