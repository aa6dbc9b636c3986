package scale

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
	"github.com/mgors/operator/mongo/mongotest"
)

// Members are the simulated mongod members of every cluster: one in-memory
// mongotest.ReplicaSet per Mgors, made by the harness with the Mgors and
// reached by member host name. Admin is the mongo.Admin the World dials: it
// counts every command.
type Members struct {
	mu     sync.RWMutex
	byHost map[string]*mongotest.ReplicaSet
	sets   []*mongotest.ReplicaSet
	// commands counts the calls the World made, one per mongod command.
	commands atomic.Int64
}

// NewMembers is an empty set of simulated clusters.
func NewMembers() *Members { return &Members{byHost: map[string]*mongotest.ReplicaSet{}} }

// Add makes the members of m, up and not initiated, as pods that just
// started would be.
func (s *Members) Add(m *v1alpha1.Mgors, clusterDomain string) *mongotest.ReplicaSet {
	desired := mongo.Desired(m, clusterDomain)
	rs := mongotest.New(m.ReplSetName())
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range desired {
		rs.AddNode(d.Host)
		s.byHost[mongo.NormalizeHost(d.Host)] = rs
	}
	s.sets = append(s.sets, rs)
	return rs
}

// Commands is the number of mongod commands the World sent so far.
func (s *Members) Commands() int64 { return s.commands.Load() }

// ForgetCalls drops what every fake recorded (nobody reads it here), so the
// heap measured is the operator's, not a growing call log.
func (s *Members) ForgetCalls() {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, rs := range s.sets {
		rs.ForgetCalls()
	}
}

// set is the fake replica set host belongs to.
func (s *Members) set(host string) *mongotest.ReplicaSet {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.byHost[mongo.NormalizeHost(host)]
}

// Admin is the mongo.Admin of every simulated cluster.
func (s *Members) Admin() mongo.Admin { return router{s: s} }

// of is the set host belongs to; an unknown host answers as a member that
// is not there (a fake with no members).
func (s *Members) of(host string) mongo.Admin {
	s.commands.Add(1)
	s.mu.RLock()
	rs := s.byHost[mongo.NormalizeHost(host)]
	s.mu.RUnlock()
	if rs == nil {
		return nowhere
	}
	return rs
}

var nowhere = mongotest.New("nowhere")

// router sends each call to the set of the host it names.
type router struct{ s *Members }

var _ mongo.Admin = router{}

func (r router) Hello(ctx context.Context, host string) (mongo.HelloReply, error) {
	return r.s.of(host).Hello(ctx, host)
}
func (r router) Ping(ctx context.Context, host string) error { return r.s.of(host).Ping(ctx, host) }
func (r router) Status(ctx context.Context, host string) (*mongo.Status, error) {
	return r.s.of(host).Status(ctx, host)
}
func (r router) Config(ctx context.Context, host string) (mongo.Config, error) {
	return r.s.of(host).Config(ctx, host)
}
func (r router) Initiate(ctx context.Context, host string, c mongo.Config) error {
	return r.s.of(host).Initiate(ctx, host, c)
}
func (r router) Reconfig(ctx context.Context, host string, c mongo.Config, force bool) error {
	return r.s.of(host).Reconfig(ctx, host, c, force)
}
func (r router) StepDown(ctx context.Context, host string, seconds int) error {
	return r.s.of(host).StepDown(ctx, host, seconds)
}
func (r router) Freeze(ctx context.Context, host string, seconds int) error {
	return r.s.of(host).Freeze(ctx, host, seconds)
}
func (r router) CreateUser(ctx context.Context, host, user, password string, roles []mongo.Role) error {
	return r.s.of(host).CreateUser(ctx, host, user, password, roles)
}
func (r router) UserExists(ctx context.Context, host, user string) (bool, error) {
	return r.s.of(host).UserExists(ctx, host, user)
}
func (r router) UpdatePassword(ctx context.Context, host, user, password string) error {
	return r.s.of(host).UpdatePassword(ctx, host, user, password)
}
func (r router) Login(ctx context.Context, host string, cred mongo.Credentials) error {
	return r.s.of(host).Login(ctx, host, cred)
}
func (r router) Local(ctx context.Context, host string) (mongo.Local, error) {
	return r.s.of(host).Local(ctx, host)
}
func (r router) ServerVersion(ctx context.Context, host string) (string, error) {
	return r.s.of(host).ServerVersion(ctx, host)
}
func (r router) FeatureCompatibilityVersion(ctx context.Context, host string) (mongo.FCV, error) {
	return r.s.of(host).FeatureCompatibilityVersion(ctx, host)
}
func (r router) SetFeatureCompatibilityVersion(ctx context.Context, host, version string) error {
	return r.s.of(host).SetFeatureCompatibilityVersion(ctx, host, version)
}

func (r router) Parameters(ctx context.Context, host string, names []string) (map[string]string, error) {
	return r.s.of(host).Parameters(ctx, host, names)
}
func (r router) SetParameters(ctx context.Context, host string, values map[string]any) error {
	return r.s.of(host).SetParameters(ctx, host, values)
}
func (r router) OplogSizeMB(ctx context.Context, host string) (int64, error) {
	return r.s.of(host).OplogSizeMB(ctx, host)
}
func (r router) ResizeOplog(ctx context.Context, host string, sizeMB int64) error {
	return r.s.of(host).ResizeOplog(ctx, host, sizeMB)
}
func (r router) GrantConfigRole(ctx context.Context, host, user string) error {
	return r.s.of(host).GrantConfigRole(ctx, host, user)
}

// Close is a no-op: the sets outlive every client the World builds.
func (r router) Close(context.Context) error { return nil }
