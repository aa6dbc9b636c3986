package mongo

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Admin is the replica-set admin API the operator uses, one member at a
// time. Every call takes a context and adds its own deadline, so an actor is
// never blocked long by a member that does not answer. Errors are
// *ServerError (compare by code) or have the kind ErrUnreachable or ErrTimeout.
// mongo/mongotest has an in-memory implementation for tests.
type Admin interface {
	// Hello asks a member who it is; it needs no authentication and works in
	// every state, also before initiate.
	Hello(ctx context.Context, host string) (HelloReply, error)
	// Ping checks that a member answers commands.
	Ping(ctx context.Context, host string) error
	// Status is replSetGetStatus: ErrNotYetInitialized before initiate,
	// ErrInvalidReplicaSetConfig on a member that is not in its config.
	Status(ctx context.Context, host string) (*Status, error)
	// Config is replSetGetConfig.
	Config(ctx context.Context, host string) (Config, error)
	// Initiate is replSetInitiate; ErrAlreadyInitialized if the member has a config.
	Initiate(ctx context.Context, host string, config Config) error
	// Reconfig is replSetReconfig, forced or not; send it to the primary
	// unless forced.
	Reconfig(ctx context.Context, host string, config Config, force bool) error
	// StepDown asks the primary to step down and not run for seconds.
	StepDown(ctx context.Context, host string, seconds int) error
	// Freeze keeps a secondary from running for election for seconds (0 unfreezes).
	Freeze(ctx context.Context, host string, seconds int) error
	// CreateUser creates a user in the admin database; ErrDuplicateUser if it exists.
	CreateUser(ctx context.Context, host, user, password string, roles []Role) error
	// UserExists reports whether the admin database has the user.
	UserExists(ctx context.Context, host, user string) (bool, error)
	// UpdatePassword sets the password of a user of the admin database
	// (updateUser); ErrUserNotFound if there is no such user.
	UpdatePassword(ctx context.Context, host, user, password string) error
	// Login checks whether credentials open host: nil when they
	// authenticate, ErrAuthenticationFailed when the member refuses them.
	Login(ctx context.Context, host string, cred Credentials) error
	// Local reads a member's own replication state from its local database:
	// the config it holds and its newest oplog entry. It answers in every
	// state; on a REMOVED member, whose hello and replSetGetStatus say
	// nothing of either, it is the only way to learn how far it got.
	Local(ctx context.Context, host string) (Local, error)
	// ServerVersion is the member's binary version (buildInfo); it needs no
	// authentication.
	ServerVersion(ctx context.Context, host string) (string, error)
	// FeatureCompatibilityVersion is the set's FCV as host holds it.
	FeatureCompatibilityVersion(ctx context.Context, host string) (FCV, error)
	// SetFeatureCompatibilityVersion sets the FCV on the primary.
	SetFeatureCompatibilityVersion(ctx context.Context, host, version string) error
	// Parameters is getParameter of names on host, values as text
	// (params.go); SetParameters sets each at run time.
	Parameters(ctx context.Context, host string, names []string) (map[string]string, error)
	SetParameters(ctx context.Context, host string, values map[string]any) error
	// OplogSizeMB is host's oplog maximum size; ResizeOplog changes it
	// (replSetResizeOplog, at least 990 MB).
	OplogSizeMB(ctx context.Context, host string) (int64, error)
	ResizeOplog(ctx context.Context, host string, sizeMB int64) error
	// GrantConfigRole gives user (on the primary) the role those two need
	// (ConfigRole).
	GrantConfigRole(ctx context.Context, host, user string) error
	// Close releases every connection.
	Close(ctx context.Context) error
}

// Role is a role granted to a user.
type Role struct {
	Role string `bson:"role"`
	DB   string `bson:"db"`
}

// DefaultTimeout bounds every call unless Options.Timeout says otherwise.
const DefaultTimeout = 5 * time.Second

// Credentials say how the Client authenticates. The zero value does not
// authenticate. Formatting them never shows the secret.
type Credentials struct {
	// Username and Password are a SCRAM user of the admin database.
	Username string
	Password string
	// Keyfile, when set, authenticates as mongod's internal __system user
	// (source local) with the keyfile's contents as the password, as members
	// authenticate each other; this works before any user exists.
	Keyfile []byte
}

// AdminUser are credentials of a user of the admin database.
func AdminUser(username, password string) Credentials {
	return Credentials{Username: username, Password: password}
}

// KeyfileAuth are the credentials of the internal __system user.
func KeyfileAuth(keyfile []byte) Credentials { return Credentials{Keyfile: keyfile} }

// String never shows the password or the keyfile.
func (c Credentials) String() string {
	switch {
	case len(c.Keyfile) > 0:
		return "keyfile(__system)"
	case c.Username != "":
		return "user(" + c.Username + ")"
	}
	return "none"
}

// GoString never shows the password or the keyfile.
func (c Credentials) GoString() string { return c.String() }

// KeyfilePassword is the password mongod derives from a keyfile: its
// contents with all whitespace removed.
func KeyfilePassword(keyfile []byte) string {
	return strings.Join(strings.Fields(string(keyfile)), "")
}

// Options configure a Client.
type Options struct {
	// Timeout bounds each call; DefaultTimeout when zero.
	Timeout time.Duration
	// Credentials are used for every command but hello and ping.
	Credentials Credentials
	// Dial, when set, opens every connection (e.g. through a port-forward).
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// Resolver, when set and Dial is not, resolves member DNS names (e.g.
	// through the cluster's DNS from outside the cluster).
	Resolver *net.Resolver
	// TLS is the client TLS config when members require TLS.
	TLS *tls.Config
	// Log receives one debug line per call; never a secret.
	Log zerolog.Logger
	// Changed, when set, is called with a member's host when the driver's
	// own monitoring of it (the unauthenticated connection that hello uses)
	// sees it move: a new primary, a member gone or back, a new config
	// (monitor.go). It runs on the driver's goroutines and must not block.
	Changed func(host string)
	// Heartbeat is the driver's heartbeat frequency on the watched
	// connections; DefaultHeartbeat when zero.
	Heartbeat time.Duration
}

// Client is the Admin over the official driver: one direct connection
// (directConnection=true) per member host, authenticated or not, cached until
// Close. The unauthenticated one watches its member (Options.Changed).
type Client struct {
	opts Options

	mu     sync.Mutex
	authed map[string]*driver.Client
	plain  map[string]*driver.Client
	// watch are the monitors of the plain connections, by host.
	watch map[string]*monitor
	// sha1 remembers hosts where keyfile auth needed SCRAM-SHA-1.
	sha1   map[string]bool
	closed bool
}

var _ Admin = (*Client)(nil)

// NewClient is a Client; it connects lazily, on a host's first call.
func NewClient(opts Options) *Client {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = DefaultHeartbeat
	}
	return &Client{opts: opts, authed: map[string]*driver.Client{}, plain: map[string]*driver.Client{},
		watch: map[string]*monitor{}, sha1: map[string]bool{}}
}

type dialFunc func(ctx context.Context, network, address string) (net.Conn, error)

func (f dialFunc) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	return f(ctx, network, address)
}

var errClosed = errors.New("mongo: client closed")

// conn returns the cached driver client for host, creating it.
func (c *Client) conn(host string, auth bool) (*driver.Client, error) {
	host = NormalizeHost(host)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errClosed
	}
	cache := c.plain
	if auth {
		cache = c.authed
	}
	if dc, ok := cache[host]; ok {
		return dc, nil
	}
	o := clientOptions(c.opts, host, auth, c.sha1[host])
	var mon *monitor
	if auth {
		o.SetHeartbeatInterval(idleHeartbeat).SetServerMonitoringMode(options.ServerMonitoringModePoll)
	} else {
		o.SetHeartbeatInterval(c.opts.Heartbeat)
		if c.opts.Changed != nil {
			mon = newMonitor(host, c.opts.Changed)
			o.SetServerMonitor(mon.serverMonitor())
		}
	}
	dc, err := driver.Connect(o)
	if err != nil {
		return nil, err
	}
	cache[host] = dc
	if mon != nil {
		c.watch[host] = mon
	}
	return dc, nil
}

// clientOptions are the options of a direct connection to host, with
// opts's dialer and TLS, authenticated with opts's credentials when auth
// (SCRAM-SHA-1 for the keyfile when sha1: a member that refused SHA-256).
func clientOptions(opts Options, host string, auth, sha1 bool) *options.ClientOptions {
	o := options.Client().SetHosts([]string{host}).SetDirect(true).SetAppName("mgors").
		SetServerSelectionTimeout(opts.Timeout).SetConnectTimeout(opts.Timeout).
		SetMaxPoolSize(4).SetRetryWrites(false).SetRetryReads(false)
	switch {
	case opts.Dial != nil:
		o.SetDialer(dialFunc(opts.Dial))
	case opts.Resolver != nil:
		o.SetDialer(&net.Dialer{Resolver: opts.Resolver, Timeout: opts.Timeout, KeepAlive: 30 * time.Second})
	}
	if opts.TLS != nil {
		o.SetTLSConfig(opts.TLS)
	}
	if !auth {
		return o
	}
	cr := opts.Credentials
	switch {
	case len(cr.Keyfile) > 0:
		mech := "SCRAM-SHA-256"
		if sha1 {
			mech = "SCRAM-SHA-1"
		}
		o.SetAuth(options.Credential{AuthMechanism: mech, AuthSource: "local", Username: "__system", Password: KeyfilePassword(cr.Keyfile)})
	case cr.Username != "":
		o.SetAuth(options.Credential{AuthMechanism: "SCRAM-SHA-256", AuthSource: "admin", Username: cr.Username, Password: cr.Password})
	}
	return o
}

// Open is a new direct, authenticated connection to host for a long read (a
// backup's dump), apart from any Client's cached ones; the caller
// disconnects it. opts.Timeout bounds server selection and connecting
// (DefaultTimeout when zero); each command takes its context's deadline.
func Open(opts Options, host string) (*driver.Client, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	return driver.Connect(clientOptions(opts, NormalizeHost(host), true, false))
}

// opened tells host's monitor that a command on its connection returned.
func (c *Client) opened(host string) {
	c.mu.Lock()
	mon := c.watch[NormalizeHost(host)]
	c.mu.Unlock()
	if mon != nil {
		mon.opened()
	}
}

// drop forgets and disconnects a host's authenticated client.
func (c *Client) drop(host string) {
	host = NormalizeHost(host)
	c.mu.Lock()
	dc := c.authed[host]
	delete(c.authed, host)
	c.mu.Unlock()
	if dc != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = dc.Disconnect(ctx)
	}
}

// run sends one admin command with the call deadline and decodes the reply
// into out (when not nil). name is the command's name, for errors and logs.
func (c *Client) run(ctx context.Context, host, name string, auth bool, cmd bson.D, out any) error {
	return c.runIn(ctx, host, "admin", name, auth, cmd, out)
}

// runIn runs cmd in database db.
func (c *Client) runIn(ctx context.Context, host, db, name string, auth bool, cmd bson.D, out any) error {
	err := c.runOnce(ctx, host, db, name, auth, cmd, out)
	// Keyfile auth: mongod accepts __system over SCRAM-SHA-256 when the
	// internal user has SHA-256 credentials; fall back to SHA-1 once if not.
	if auth && len(c.opts.Credentials.Keyfile) > 0 && IsCode(err, CodeAuthenticationFailed) {
		c.mu.Lock()
		retry := !c.sha1[NormalizeHost(host)]
		c.sha1[NormalizeHost(host)] = true
		c.mu.Unlock()
		if retry {
			c.drop(host)
			err = c.runOnce(ctx, host, db, name, auth, cmd, out)
		}
	}
	// The command itself is never logged: createUser carries a password.
	c.opts.Log.Debug().Str("member", host).AnErr("err", err).Msg(name)
	return err
}

func (c *Client) runOnce(ctx context.Context, host, db, name string, auth bool, cmd bson.D, out any) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	dc, err := c.conn(host, auth)
	if err != nil {
		return classify(host, name, err)
	}
	res := dc.Database(db).RunCommand(ctx, cmd)
	if !auth {
		c.opened(host)
	}
	if err := res.Err(); err != nil {
		return classify(host, name, err)
	}
	if out == nil {
		return nil
	}
	if err := res.Decode(out); err != nil {
		return classify(host, name, err)
	}
	return nil
}

// Hello implements Admin.
func (c *Client) Hello(ctx context.Context, host string) (HelloReply, error) {
	var h HelloReply
	err := c.run(ctx, host, "hello", false, bson.D{{Key: "hello", Value: 1}}, &h)
	return h, err
}

// Ping implements Admin.
func (c *Client) Ping(ctx context.Context, host string) error {
	return c.run(ctx, host, "ping", false, bson.D{{Key: "ping", Value: 1}}, nil)
}

// Status implements Admin.
func (c *Client) Status(ctx context.Context, host string) (*Status, error) {
	var st Status
	if err := c.run(ctx, host, "replSetGetStatus", true, bson.D{{Key: "replSetGetStatus", Value: 1}}, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// Config implements Admin.
func (c *Client) Config(ctx context.Context, host string) (Config, error) {
	var reply struct {
		Config Config `bson:"config"`
	}
	err := c.run(ctx, host, "replSetGetConfig", true, bson.D{{Key: "replSetGetConfig", Value: 1}}, &reply)
	return reply.Config, err
}

// Initiate implements Admin.
func (c *Client) Initiate(ctx context.Context, host string, config Config) error {
	return c.run(ctx, host, "replSetInitiate", true, bson.D{{Key: "replSetInitiate", Value: config}}, nil)
}

// Reconfig implements Admin. A non-forced reconfig waits on the server for
// the current config to commit; maxTimeMS keeps that wait inside the call's
// deadline, so the answer is CurrentConfigNotCommittedYet rather than a
// client-side timeout.
func (c *Client) Reconfig(ctx context.Context, host string, config Config, force bool) error {
	cmd := bson.D{{Key: "replSetReconfig", Value: config}, {Key: "force", Value: force}}
	if !force {
		cmd = append(cmd, bson.E{Key: "maxTimeMS", Value: c.serverWait(ctx).Milliseconds()})
	}
	return c.run(ctx, host, "replSetReconfig", true, cmd, nil)
}

// serverWait is how long a command may wait on the server: four fifths of
// what is left of the call's deadline.
func (c *Client) serverWait(ctx context.Context) time.Duration {
	d := c.opts.Timeout
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		d = time.Until(dl)
	}
	return max(d*4/5, 100*time.Millisecond)
}

// StepDown implements Admin. Secondaries get to catch up for as long as the
// call allows (at most seconds-1), so the step-down is not refused for a lag
// the call could not have waited out anyway.
func (c *Client) StepDown(ctx context.Context, host string, seconds int) error {
	if seconds <= 0 {
		seconds = 60
	}
	catchUp := min(int(c.serverWait(ctx)/time.Second), seconds-1)
	cmd := bson.D{{Key: "replSetStepDown", Value: seconds}, {Key: "secondaryCatchUpPeriodSecs", Value: max(catchUp, 0)}}
	return c.run(ctx, host, "replSetStepDown", true, cmd, nil)
}

// Freeze implements Admin.
func (c *Client) Freeze(ctx context.Context, host string, seconds int) error {
	return c.run(ctx, host, "replSetFreeze", true, bson.D{{Key: "replSetFreeze", Value: seconds}}, nil)
}

// Retainer is an Admin that keeps connections to members: Retain closes
// those to hosts not in keep, such as members a scale-down removed, which
// would otherwise go on monitoring a name that no longer resolves.
type Retainer interface {
	Retain(keep []string)
}

var _ Retainer = (*Client)(nil)

// Retain implements Retainer. The connections are closed in the
// background, each within a second; a host asked again later reconnects.
func (c *Client) Retain(keep []string) {
	want := make(map[string]bool, len(keep))
	for _, h := range keep {
		want[NormalizeHost(h)] = true
	}
	var gone []*driver.Client
	c.mu.Lock()
	for _, m := range []map[string]*driver.Client{c.authed, c.plain} {
		for h, dc := range m {
			if !want[h] {
				gone = append(gone, dc)
				delete(m, h)
			}
		}
	}
	for h := range c.watch {
		if !want[h] {
			delete(c.watch, h)
		}
	}
	c.mu.Unlock()
	if len(gone) == 0 {
		return
	}
	go func() {
		for _, dc := range gone {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = dc.Disconnect(ctx)
			cancel()
		}
	}()
}

// Close implements Admin: it disconnects every cached connection.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	all := make([]*driver.Client, 0, len(c.authed)+len(c.plain))
	for _, m := range []map[string]*driver.Client{c.authed, c.plain} {
		for _, dc := range m {
			all = append(all, dc)
		}
	}
	c.authed, c.plain, c.watch, c.closed = map[string]*driver.Client{}, map[string]*driver.Client{}, map[string]*monitor{}, true
	c.mu.Unlock()
	var errs []error
	for _, dc := range all {
		if err := dc.Disconnect(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
