package sim

import (
	"context"
	"crypto/tls"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// Member states (spec §3).
const (
	StateStartup    = 0
	StatePrimary    = 1
	StateSecondary  = 2
	StateRecovering = 3
	StateStartup2   = 5
	StateUnknown    = 6
	StateArbiter    = 7
	StateDown       = 8
	StateRollback   = 9
	StateRemoved    = 10
)

var stateNames = map[int]string{0: "STARTUP", 1: "PRIMARY", 2: "SECONDARY", 3: "RECOVERING", 5: "STARTUP2",
	6: "UNKNOWN", 7: "ARBITER", 8: "DOWN", 9: "ROLLBACK", 10: "REMOVED"}

// Node is one simulated mongod process.
type Node struct {
	cfg       Config
	log       zerolog.Logger
	processID bson.ObjectID
	started   time.Time
	metrics   *serverMetrics
	params    *paramStore
	store     *Store
	keyFile   string // first internal-auth key (trimmed), empty without --keyFile
	// keys are all the keyfile's keys (one, or two while a key rotates):
	// any of them opens __system@local; outgoing connections try them in
	// order (internalAuth.go).
	keys      []string
	tlsConf   *tls.Config
	tlsSet    *tlsSettings
	bindAddrs []net.IP // specific addresses we listen on (nil entries for all)
	localIP   net.IP   // source address for outgoing connections
	// systemCreds caches the __system@local SCRAM credentials derived from the keyfile, by mechanism.
	systemCreds sync.Map

	// mu guards the replica-set state, the documents and the oplog; its
	// Unlock publishes view (replview.go), what hello and heartbeats read.
	// A write to one user collection holds it shared, with the
	// collection's own lock and logMu (collock.go).
	mu         nodeMu
	view       atomic.Pointer[replView]
	hbSeq      atomic.Uint64 // numbers heartbeat outcomes (hbResult.seq)
	topoCount  int64
	topoCh     chan struct{}
	rs         *RSConfig
	self       int // index in rs.Members, -1 when removed / no config
	state      int
	term       int64
	votedTerm  int64
	votedFor   int
	primary    int // member index believed primary, -1 unknown
	peers      map[string]*peerState
	electionAt time.Time
	takeoverAt time.Time
	catchUpAt  time.Time // when a pending catch-up takeover runs
	stepUntil  time.Time
	leaderTime bson.Timestamp
	leaderDate time.Time
	election   *electionMetrics // last election this node won
	voted      *voteMetrics     // last vote this node cast (electionParticipantMetrics)
	logMember  atomic.Value     // string: our host in the config, for the "member" log field
	writable   bool
	stepping   bool
	inShutdown bool
	configBusy bool
	maintTasks int    // replSetMaintenance tasks in progress: RECOVERING while > 0
	syncFrom   string // sync source asked for by replSetSyncFrom, "" none
	isSelfMemo map[string]bool

	oplog     []OplogEntry
	applied   OpTime
	commit    OpTime
	data      *Data
	committed *Data
	commitIdx int
	oplogCh   chan struct{}
	lastTS    bson.Timestamp // logMu's, see there
	rbid      int32
	cap       oplogCap
	isync     *initialSyncState // the running initial sync, if any
	stale     staleState        // too-stale sync sources and maintenance mode

	// logMu guards lastTS and the journal's queue (pending, appendSeq,
	// durableSeq, journalErr) for the writes that hold n.mu shared
	// (collock.go): they change them under n.mu shared plus logMu, so
	// they are read or changed under n.mu exclusive, or under n.mu (either
	// mode) plus logMu. Order: after n.mu and after a collection's lock;
	// nothing is taken under it.
	logMu sync.Mutex
	// applyHook, for tests, runs in a write holding n.mu shared, under
	// its collection's lock, between queueing its entries and applying
	// them (collock.go); set before the node serves.
	applyHook func(ns string)
	// the journal (journal.go): entries applied but not yet on disk, and
	// counts of the entries ever appended and ever made durable
	pending     []OplogEntry
	appendSeq   uint64
	durableSeq  uint64
	journalErr  error
	journalKick chan struct{}
	flushMu     sync.Mutex // one flush at a time; never taken under n.mu

	connMu    sync.Mutex
	conns     map[*conn]struct{}
	connCount int64
	connTotal int64
	cursors   cursorTable
	txns      txnTable // multi-document transactions and sessions' txnNumbers
	quit      chan struct{}
	done      chan struct{}
	listeners []net.Listener
	bg        sync.WaitGroup
	hbStop    map[string]chan struct{}
	shutdownN sync.Once
}

// peerState is what heartbeats tell us about another member.
type peerState struct {
	host          string
	health        float64
	state         int
	applied       OpTime
	durable       OpTime
	lastHB        time.Time
	lastHBRecv    time.Time
	lastOK        time.Time
	upSince       time.Time
	pingMs        int64
	msg           string
	cfgVersion    int
	cfgTerm       int64
	term          int64
	electionTime  bson.Timestamp
	authFailed    bool
	syncSource    string
	everResponded bool
	foldedSeq     uint64 // hbResult.seq of the newest heartbeat folded in
}

// NewNode opens dbpath, loads what survived, and prepares listeners; Run serves.
func NewNode(cfg Config, log zerolog.Logger) (*Node, error) {
	n := &Node{cfg: cfg, log: log, processID: bson.NewObjectID(), started: time.Now(), topoCh: make(chan struct{}),
		self: -1, primary: -1, votedFor: -1, peers: map[string]*peerState{}, data: NewData(), committed: NewData(),
		oplogCh: make(chan struct{}), journalKick: make(chan struct{}, 1), conns: map[*conn]struct{}{}, quit: make(chan struct{}), done: make(chan struct{}),
		hbStop: map[string]chan struct{}{}, isSelfMemo: map[string]bool{}, rbid: rand.Int32N(1 << 30), metrics: newServerMetrics(), params: newParamStore(cfg)}
	n.cursors.m = map[int64]*cursor{}
	n.mu.n = n
	if cfg.KeyFile != "" {
		keys, err := loadKeyFile(cfg.KeyFile, cfg.RelaxPermChecks)
		if err != nil {
			return nil, err
		}
		n.keyFile, n.keys = keys[0], keys
	}
	if cfg.TLSMode == "requireTLS" || cfg.TLSMode == "preferTLS" || cfg.TLSMode == "allowTLS" {
		ts, err := newTLSSettings(cfg)
		if err != nil {
			return nil, err
		}
		n.tlsSet, n.tlsConf = ts, ts.server
	}
	st, err := OpenStore(cfg.DBPath)
	if err != nil {
		return nil, err
	}
	n.store = st
	if err := n.load(); err != nil {
		_ = st.Close()
		return nil, err
	}
	if err := n.checkFCV(); err != nil {
		_ = st.Close()
		return nil, err
	}
	n.publishView() // of what load found
	return n, nil
}

func (n *Node) load() error {
	if raw, err := n.store.GetMeta("term"); err == nil && raw != nil {
		n.term, _ = raw.Lookup("term").AsInt64OK()
		n.votedTerm, _ = raw.Lookup("votedTerm").AsInt64OK()
		v, _ := raw.Lookup("votedFor").AsInt64OK()
		n.votedFor = int(v)
	}
	if err := n.loadOplogSizeLocked(); err != nil {
		return err
	}
	if err := n.loadDataLocked(); err != nil {
		return err
	}
	if raw, err := n.store.GetMeta("commit"); err == nil && raw != nil {
		n.advanceCommitLocked(parseOpTime(raw.Lookup("optime")))
	}
	if raw, err := n.store.GetMeta("config"); err == nil && raw != nil {
		c, err := ParseRSConfig(raw, true)
		if err != nil {
			return fmt.Errorf("stored replica set config is invalid: %w", err)
		}
		n.rs = c
	}
	return nil
}

// Run listens and serves until ctx ends or a shutdown command arrives.
func (n *Node) Run(ctx context.Context) error {
	if err := n.listen(); err != nil {
		_ = n.store.Close()
		return err
	}
	n.logI("CONTROL", 4615611, "MongoDB starting", func(e *zerolog.Event) {
		e.Int("pid", os.Getpid()).Int("port", n.cfg.Port).Str("dbPath", n.cfg.DBPath).Str("architecture", "64-bit")
	})
	// mongod's line 21951, plus the options accepted but not modelled (secrets are "<password>").
	n.logI("CONTROL", 21951, "Options set by command line", func(e *zerolog.Event) {
		e.Interface("options", n.cfg.Parsed)
		if len(n.cfg.Ignored) > 0 {
			e.Strs("notModelledBySimulator", n.cfg.Ignored)
		}
	})
	n.startupWarnings()
	if n.rs != nil && n.cfg.ReplSet == "" {
		n.logS("W", "REPL", 21558, "Document(s) exist in 'system.replset', but started without --replSet. Database contents may appear inconsistent with the writes that were visible when this node was running as part of a replica set.", nil)
		n.mu.Lock()
		n.rs = nil
		n.mu.Unlock()
	}
	if n.rs != nil {
		// Find ourselves in the stored config now that we listen (_isSelf needs it).
		go func() {
			self, err := n.findSelf(n.rs)
			if err != nil {
				self = -1
			}
			n.mu.Lock()
			if n.self < 0 && n.state == StateStartup {
				n.installConfigLocked(n.rs, false, self)
			}
			n.mu.Unlock()
		}()
	}
	n.bg.Add(1)
	go n.journalLoop()
	n.bg.Add(1)
	go n.tickLoop()
	n.bg.Add(1)
	go n.fetchLoop()
	n.bg.Add(1)
	go n.ttlLoop()
	for _, l := range n.listeners {
		n.logI("NETWORK", 23016, "Waiting for connections", func(e *zerolog.Event) { e.Str("addr", l.Addr().String()).Bool("ssl", n.tlsConf != nil) })
		go n.accept(l)
	}
	select {
	case <-ctx.Done():
		// Signalled shutdown: a primary first tries to hand over, as mongod
		// does within shutdownTimeoutMillisForSignaledShutdown (15 s).
		n.mu.Lock()
		primary := n.state == StatePrimary
		handover := false
		if primary {
			for i, m := range n.rs.Members {
				if p := n.peers[m.Host]; i != n.self && m.Electable() && p != nil && p.health == 1 {
					handover = true
				}
			}
			if !handover {
				n.stepDownLocked() // nobody to hand over to
			}
		}
		n.mu.Unlock()
		if primary && handover {
			if err := n.stepDown(10*time.Second, 15*time.Second, false, time.Now().Add(15*time.Second)); err != nil {
				_ = n.stepDown(10*time.Second, 0, true, time.Now())
			}
		}
	case <-n.quit:
	}
	n.shutdown()
	return nil
}

// requestShutdown asks a running node to stop (shutdown command, signals).
func (n *Node) requestShutdown() {
	n.shutdownN.Do(func() { close(n.quit) })
}

func (n *Node) shutdown() {
	n.logI("CONTROL", 20698, "Shutting down", nil)
	n.mu.Lock()
	n.inShutdown = true
	n.bumpTopologyLocked()
	for _, ch := range n.hbStop {
		close(ch)
	}
	n.hbStop = map[string]chan struct{}{}
	n.mu.Unlock()
	n.requestShutdown()
	for _, l := range n.listeners {
		_ = l.Close()
	}
	n.connMu.Lock()
	for c := range n.conns {
		_ = c.nc.Close()
	}
	n.connMu.Unlock()
	waited := make(chan struct{})
	go func() { n.bg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(3 * time.Second):
		// A heartbeat stuck on an unreachable peer must not hold the exit.
	}
	// A clean shutdown leaves nothing applied off the disk (mongod's
	// journal flush at shutdown).
	_ = n.syncJournal()
	n.mu.Lock()
	_ = n.store.Close()
	n.mu.Unlock()
	n.logI("CONTROL", 20565, "Now exiting", nil)
	close(n.done)
}

// logI writes one mongod-shaped structured log line.
func (n *Node) logI(component string, id int, msg string, attr func(*zerolog.Event)) {
	n.logS("I", component, id, msg, attr)
}

func (n *Node) logS(sev, component string, id int, msg string, attr func(*zerolog.Event)) {
	e := n.log.Log().Dict("t", zerolog.Dict().Str("$date", time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00"))).
		Str("s", sev).Str("c", component).Int("id", id).Str("ctx", "sim").Str("msg", msg)
	if m, ok := n.logMember.Load().(string); ok && m != "" {
		e = e.Str("member", m)
	}
	if attr != nil {
		d := zerolog.Dict()
		attr(d)
		e = e.Dict("attr", d)
	}
	e.Send()
}

// ---------------------------------------------------------------- topology

func (n *Node) bumpTopologyLocked() {
	n.topoCount++
	close(n.topoCh)
	n.topoCh = make(chan struct{})
}

// ---------------------------------------------------------------- errors

// clusterTimeFields are appended to replies in replica-set mode.
// It reads the replication view, so a reply never waits for n.mu for it.
func (n *Node) clusterTimeFields() bson.D {
	ts := n.replState().lastTS
	if ts.T == 0 {
		ts = bson.Timestamp{T: uint32(time.Now().Unix()), I: 1}
	}
	return bson.D{{Key: "$clusterTime", Value: bson.D{{Key: "clusterTime", Value: ts},
		{Key: "signature", Value: bson.D{{Key: "hash", Value: bson.Binary{Subtype: 0, Data: make([]byte, 20)}}, {Key: "keyId", Value: int64(0)}}}}},
		{Key: "operationTime", Value: ts}}
}

// ---------------------------------------------------------------- connections
