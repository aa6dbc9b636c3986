package sim

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/wiremessage"
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
	keyFile   string // internal-auth key (trimmed), empty without --keyFile
	tlsConf   *tls.Config
	bindAddrs []net.IP // specific addresses we listen on (nil entries for all)
	localIP   net.IP   // source address for outgoing connections
	// systemCreds caches the __system@local SCRAM credentials derived from the keyfile, by mechanism.
	systemCreds sync.Map

	mu         sync.Mutex
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
	lastTS    bson.Timestamp
	rbid      int32
	cap       oplogCap
	isync     *initialSyncState // the running initial sync, if any
	stale     staleState        // too-stale sync sources and maintenance mode

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
}

// NewNode opens dbpath, loads what survived, and prepares listeners; Run serves.
func NewNode(cfg Config, log zerolog.Logger) (*Node, error) {
	n := &Node{cfg: cfg, log: log, processID: bson.NewObjectID(), started: time.Now(), topoCh: make(chan struct{}),
		self: -1, primary: -1, votedFor: -1, peers: map[string]*peerState{}, data: NewData(), committed: NewData(),
		oplogCh: make(chan struct{}), conns: map[*conn]struct{}{}, quit: make(chan struct{}), done: make(chan struct{}),
		hbStop: map[string]chan struct{}{}, isSelfMemo: map[string]bool{}, rbid: rand.Int32N(1 << 30), metrics: newServerMetrics(), params: newParamStore(cfg)}
	n.cursors.m = map[int64]*cursor{}
	if cfg.KeyFile != "" {
		keys, err := loadKeyFile(cfg.KeyFile, cfg.RelaxPermChecks)
		if err != nil {
			return nil, err
		}
		n.keyFile = keys[0] // the first key authenticates outgoing connections
	}
	if cfg.TLSMode == "requireTLS" || cfg.TLSMode == "preferTLS" || cfg.TLSMode == "allowTLS" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCertKeyFile, cfg.TLSCertKeyFile)
		if err != nil {
			return nil, &OptionError{fmt.Sprintf("cannot read certificate file: %s %v", cfg.TLSCertKeyFile, err)}
		}
		n.tlsConf = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
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
		n.rs = nil
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
	n.mu.Lock()
	_ = n.store.Close()
	n.mu.Unlock()
	n.logI("CONTROL", 20565, "Now exiting", nil)
	close(n.done)
}

func (n *Node) listen() error {
	ips, err := bindIPs(n.cfg)
	if err != nil {
		return err
	}
	var addrs []string
	for _, ip := range ips {
		if ip.IsUnspecified() {
			// One wildcard covers every address; "::" is dual-stack on Linux.
			addrs, n.bindAddrs = []string{ip.String()}, []net.IP{nil}
			break
		}
		addrs = append(addrs, ip.String())
		n.bindAddrs = append(n.bindAddrs, ip)
	}
	for _, a := range addrs {
		l, err := net.Listen("tcp", net.JoinHostPort(a, strconv.Itoa(n.cfg.Port)))
		if err != nil {
			for _, x := range n.listeners {
				_ = x.Close()
			}
			return &ListenError{fmt.Sprintf("Error setting up listener: SocketException: Address already in use (%s:%d)", a, n.cfg.Port)}
		}
		n.listeners = append(n.listeners, l)
	}
	// Outgoing connections leave from our own specific address.
	for _, ip := range n.bindAddrs {
		if ip != nil && !ip.IsUnspecified() {
			n.localIP = ip
			break
		}
	}
	return nil
}

// bindIPs resolves --bind_ip (names to their IPv4 addresses, as mongod
// does without --ipv6); --bind_ip_all is the IPv4 wildcard. A wildcard
// sorts first: "::" before "0.0.0.0" before specific addresses.
func bindIPs(cfg Config) ([]net.IP, error) {
	if cfg.BindIPAll {
		return []net.IP{net.IPv4zero}, nil
	}
	var out []net.IP
	for _, h := range cfg.BindIP {
		if ip := net.ParseIP(h); ip != nil {
			out = append(out, ip)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		found, err := net.DefaultResolver.LookupIP(ctx, "ip4", h)
		cancel()
		if err != nil || len(found) == 0 {
			return nil, &OptionError{fmt.Sprintf("getaddrinfo(\"%s\") failed: Name or service not known", h)}
		}
		out = append(out, found...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		rank := func(ip net.IP) int {
			switch {
			case ip.Equal(net.IPv6unspecified):
				return 0
			case ip.IsUnspecified():
				return 1
			}
			return 2
		}
		return rank(out[i]) < rank(out[j])
	})
	return out, nil
}

// ListenError is a port that cannot be bound; mongod exits with code 48.
type ListenError struct{ Msg string }

func (e *ListenError) Error() string { return e.Msg }

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

func (n *Node) topologyVersionLocked() bson.D {
	return bson.D{{Key: "processId", Value: n.processID}, {Key: "counter", Value: n.topoCount}}
}

// ---------------------------------------------------------------- errors

// CmdError is a command failure in mongod's shape.
type CmdError struct {
	Code   int32
	Msg    string
	Labels []string
	Extra  bson.D
}

func (e *CmdError) Error() string { return fmt.Sprintf("%s (%d): %s", codeName(e.Code), e.Code, e.Msg) }

func cerr(code int32, format string, a ...any) *CmdError {
	return &CmdError{Code: code, Msg: fmt.Sprintf(format, a...)}
}

var codeNames = map[int32]string{
	1: "InternalError", 2: "BadValue", 4: "NoSuchKey", 6: "HostUnreachable", 9: "FailedToParse", 11: "UserNotFound",
	13: "Unauthorized", 14: "TypeMismatch", 18: "AuthenticationFailed", 23: "AlreadyInitialized", 26: "NamespaceNotFound",
	31: "RoleNotFound", 40: "ConflictingUpdateOperators", 43: "CursorNotFound", 48: "NamespaceExists", 50: "MaxTimeMSExpired",
	59: "CommandNotFound", 64: "WriteConcernTimeout", 72: "InvalidOptions",
	73: "InvalidNamespace", 74: "NodeNotFound", 76: "NoReplicationEnabled", 79: "UnknownReplWriteConcern",
	91: "ShutdownInProgress", 93: "InvalidReplicaSetConfig", 94: "NotYetInitialized", 95: "NotSecondary",
	100: "UnsatisfiableWriteConcern", 103: "NewReplicaSetConfigurationIncompatible", 104: "NodeNotElectable",
	109: "ConfigurationInProgress", 110: "CannotInitializeNodeWithData", 117: "ConflictingOperationInProgress",
	20: "IllegalOperation", 112: "WriteConflict", 225: "TransactionTooOld", 239: "SnapshotTooOld", 246: "SnapshotUnavailable",
	251: "NoSuchTransaction", 256: "TransactionCommitted", 263: "OperationNotSupportedInTransaction",
	186: "ClientMetadataCannotBeMutated", 189: "PrimarySteppedDown", 223: "IllegalOpMsgFlag", 262: "ExceededTimeLimit",
	303: "SplitHorizonChange", 308: "CurrentConfigNotCommittedYet", 352: "UnsupportedOpQueryCommand",
	10107: "NotWritablePrimary", 11000: "DuplicateKey", 11600: "InterruptedAtShutdown", 11602: "InterruptedDueToReplStateChange",
	13435: "NotPrimaryNoSecondaryOk", 13436: "NotPrimaryOrSecondary", 51003: "Location51003", 31368: "Location31368",
	31372: "Location31372", 31382: "Location31382", 40621: "Location40621",
	17: "ProtocolError", 66: "ImmutableField", 115: "CommandNotSupported", 125: "CommandFailed",
	28: "PathNotViable", 52: "DollarPrefixedFieldName", 54: "NotSingleValueField", 56: "EmptyFieldName",
	27: "IndexNotFound", 67: "CannotCreateIndex", 85: "IndexOptionsConflict",
	86: "IndexKeySpecsConflict", 171: "CannotIndexParallelArrays", 197: "InvalidIndexSpecificationOption",
	185: "InconsistentReplicaSetNames", 31373: "Location31373", 51024: "Location51024", 96: "OperationFailed",
	// aggregation
	15: "Overflow", 146: "ExceededMemoryLimit", 168: "InvalidPipelineOperator", 241: "ConversionFailure",
}

func codeName(c int32) string {
	if s, ok := codeNames[c]; ok {
		return s
	}
	return fmt.Sprintf("Location%d", c)
}

var notPrimaryCodes = map[int32]bool{10107: true, 13435: true, 13436: true, 189: true, 11602: true}
var retryableCodes = map[int32]bool{10107: true, 13435: true, 13436: true, 189: true, 91: true, 11600: true,
	11602: true, 262: true, 6: true, 7: true, 89: true, 9001: true}

func (n *Node) errorDoc(e *CmdError, retryableWrite bool) bson.D {
	d := bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: e.Msg}, {Key: "code", Value: e.Code}, {Key: "codeName", Value: codeName(e.Code)}}
	d = append(d, e.Extra...)
	labels := e.Labels
	if retryableWrite && retryableCodes[e.Code] {
		labels = append(labels, "RetryableWriteError")
	}
	if len(labels) > 0 {
		d = append(d, bson.E{Key: "errorLabels", Value: labels})
	}
	if n.cfg.ReplSet != "" && (notPrimaryCodes[e.Code] || (e.Code == 91 || e.Code == 11600)) {
		n.mu.Lock()
		d = append(d, bson.E{Key: "topologyVersion", Value: n.topologyVersionLocked()})
		n.mu.Unlock()
	}
	return d
}

// clusterTimeFields are appended to replies in replica-set mode.
func (n *Node) clusterTimeFields() bson.D {
	n.mu.Lock()
	ts := n.lastTS
	if ts.T == 0 {
		ts = bson.Timestamp{T: uint32(time.Now().Unix()), I: 1}
	}
	n.mu.Unlock()
	return bson.D{{Key: "$clusterTime", Value: bson.D{{Key: "clusterTime", Value: ts},
		{Key: "signature", Value: bson.D{{Key: "hash", Value: bson.Binary{Subtype: 0, Data: make([]byte, 20)}}, {Key: "keyId", Value: int64(0)}}}}},
		{Key: "operationTime", Value: ts}}
}

// ---------------------------------------------------------------- connections

type conn struct {
	n     *Node
	nc    net.Conn
	id    int64
	local bool // peer is a loopback address
	users []authedUser
	// authzCache holds the users' privileges resolved for one authzGen.
	authzCache *authzCache
	internal   atomic.Bool // set by the handler goroutine, read by closeClientConns
	sawHello   bool
	sasl       *saslConv
	client     bson.Raw
	helloOk    bool
}

func (n *Node) accept(l net.Listener) {
	for {
		nc, err := l.Accept()
		if err != nil {
			select {
			case <-n.quit:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		go n.serveConn(nc)
	}
}

func (n *Node) serveConn(nc net.Conn) {
	raw := nc
	nc, err := n.acceptTLS(raw)
	if err != nil {
		if errors.Is(err, errPlainOnRequireTLS) {
			n.logI("NETWORK", 22988, "Error receiving request from client. Ending connection from remote", func(e *zerolog.Event) {
				e.Str("remote", raw.RemoteAddr().String()).Str("err", err.Error())
			})
		}
		_ = raw.Close()
		return
	}
	n.connMu.Lock()
	n.connTotal++
	c := &conn{n: n, nc: nc, id: n.connTotal}
	n.conns[c] = struct{}{}
	n.connCount++
	n.connMu.Unlock()
	if ta, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		c.local = ta.IP.IsLoopback()
	}
	defer func() {
		if r := recover(); r != nil {
			n.logS("E", "NETWORK", 22988, "Connection handler panicked; closing only this connection", func(e *zerolog.Event) { e.Interface("panic", fmt.Sprint(r)) })
		}
		_ = nc.Close()
		n.connMu.Lock()
		delete(n.conns, c)
		n.connCount--
		n.connMu.Unlock()
	}()
	for {
		msg, err := ReadMessage(nc)
		if err != nil {
			if errors.Is(err, errBadMessage) {
				n.logI("NETWORK", 22989, "Error receiving request from client. Ending connection from remote", func(e *zerolog.Event) {
					e.Str("remote", nc.RemoteAddr().String()).Str("err", err.Error()).Int64("connectionId", c.id)
				})
			}
			return
		}
		n.metrics.bytesIn.Add(int64(len(msg)))
		n.metrics.requests.Add(1)
		req, err := ParseMessage(msg)
		if err != nil {
			n.logI("NETWORK", 22989, "Error receiving request from client. Ending connection from remote", func(e *zerolog.Event) {
				e.Str("remote", nc.RemoteAddr().String()).Str("err", err.Error()).Int64("connectionId", c.id)
			})
			return
		}
		reply, closeAfter := c.handle(req)
		if req.MoreToCome {
			continue
		}
		if reply == nil {
			return // shutdown: close without replying
		}
		b, err := bson.Marshal(reply)
		if err != nil {
			b, _ = bson.Marshal(n.errorDoc(cerr(1, "cannot encode reply: %v", err), false))
		}
		var out []byte
		if req.Legacy {
			out = EncodeReply(wiremessage.NextRequestID(), req.RequestID, b)
		} else {
			out = EncodeMsg(wiremessage.NextRequestID(), req.RequestID, 0, b)
		}
		_ = nc.SetWriteDeadline(time.Now().Add(60 * time.Second))
		if _, err := nc.Write(out); err != nil {
			return
		}
		n.metrics.bytesOut.Add(int64(len(out)))
		if closeAfter {
			return
		}
	}
}

// closeClientConns drops every client connection except internal ones,
// as mongod does on ROLLBACK or REMOVED.
func (n *Node) closeClientConns() {
	n.connMu.Lock()
	defer n.connMu.Unlock()
	for c := range n.conns {
		if !c.internal.Load() {
			_ = c.nc.Close()
		}
	}
}
