package main

import (
	"context"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	k8smetrics "k8s.io/client-go/tools/metrics"

	"github.com/mgors/operator/actors"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
)

// metrics are the operator's Prometheus series. Labels are cluster names,
// phases, actions and methods: bounded sets, never member data.
type metrics struct {
	phase       *prometheus.GaugeVec
	transitions *prometheus.CounterVec
	observe     *prometheus.HistogramVec
	act         *prometheus.HistogramVec
	actErrors   *prometheus.CounterVec
	mailbox     *prometheus.GaugeVec
	apiLatency  *prometheus.HistogramVec
	apiResults  *prometheus.CounterVec
	mongoCalls  *prometheus.HistogramVec
	mongoErrors *prometheus.CounterVec

	memberState *prometheus.GaugeVec
	lag         *prometheus.GaugeVec
	primary     *prometheus.GaugeVec
	voters      *prometheus.GaugeVec
	answering   *prometheus.GaugeVec
	needed      *prometheus.GaugeVec
	elections   *prometheus.CounterVec
	lastBackup  *prometheus.GaugeVec

	mu      sync.Mutex
	members map[string][]string // by cluster, the members last reported
	terms   map[string]int64    // by cluster, the last term seen
}

var phases = []v1alpha1.Phase{v1alpha1.PhaseProvisioning, v1alpha1.PhaseInitiating, v1alpha1.PhaseHealthy, v1alpha1.PhaseRecovering}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		phase: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "mgors_cluster_phase",
			Help: "1 for the phase each cluster is in, 0 for the others."}, []string{"cluster", "phase"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mgors_phase_transitions_total",
			Help: "Phase changes, by cluster and the phases left and entered."}, []string{"cluster", "from", "to"}),
		observe: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "mgors_observe_duration_seconds",
			Help: "Time one observation of a cluster took.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 14)}, []string{"cluster", "result"}),
		act: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "mgors_act_duration_seconds",
			Help: "Time one action took.", Buckets: prometheus.ExponentialBuckets(0.005, 2, 14)}, []string{"cluster", "action", "result"}),
		actErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mgors_action_errors_total",
			Help: "Actions that failed, by cluster and action."}, []string{"cluster", "action"}),
		mailbox: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "mgors_mailbox_depth",
			Help: "Messages waiting in each cluster actor's mailbox."}, []string{"cluster"}),
		apiLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "mgors_kube_request_duration_seconds",
			Help: "Kubernetes API request latency, by verb.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 15)}, []string{"verb"}),
		apiResults: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mgors_kube_requests_total",
			Help: "Kubernetes API requests, by verb and status code."}, []string{"verb", "code"}),
		mongoCalls: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "mgors_mongo_call_duration_seconds",
			Help: "MongoDB admin call latency, by command.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 15)}, []string{"command"}),
		mongoErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mgors_mongo_call_errors_total",
			Help: "MongoDB admin calls that failed, by command."}, []string{"command"}),
	}
	m.memberState = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "mgors_member_state",
		Help: "1 for the replica-set state each member is in (mongod's stateStr, as the primary reports it), 0 for the others."}, []string{"cluster", "member", "state"})
	m.lag = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "mgors_member_replication_lag_seconds",
		Help: "How many seconds of writes a data member's last applied write trails the primary's; absent without a primary."}, []string{"cluster", "member"})
	m.primary = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "mgors_cluster_primary",
		Help: "1 when a writable primary answered the last observation, else 0."}, []string{"cluster"})
	m.voters = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "mgors_cluster_voting_members",
		Help: "Voting members in the replica-set config."}, []string{"cluster"})
	m.answering = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "mgors_cluster_voting_members_answering",
		Help: "Voting members that answered the last observation."}, []string{"cluster"})
	m.needed = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "mgors_cluster_votes_needed",
		Help: "Votes an election needs (a majority of the voting members)."}, []string{"cluster"})
	m.elections = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mgors_elections_total",
		Help: "Elections seen: increases of the replica-set term between observations."}, []string{"cluster"})
	m.lastBackup = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "mgors_backup_last_success_timestamp_seconds",
		Help: "The point in time (Unix seconds, the members' clock) the cluster's newest Succeeded backup restores to; no series before its first."}, []string{"cluster"})
	m.members, m.terms = map[string][]string{}, map[string]int64{}
	reg.MustRegister(m.phase, m.transitions, m.observe, m.act, m.actErrors, m.mailbox, m.apiLatency, m.apiResults, m.mongoCalls, m.mongoErrors,
		m.memberState, m.lag, m.primary, m.voters, m.answering, m.needed, m.elections, m.lastBackup)
	k8smetrics.Register(k8smetrics.RegisterOpts{RequestLatency: apiLatency{m}, RequestResult: apiResult{m}})
	return m
}

func result(err error) string {
	if err != nil {
		return "error"
	}
	return "ok"
}

// Phase implements actors.Metrics.
func (m *metrics) Phase(cluster string, p v1alpha1.Phase) {
	for _, x := range phases {
		v := 0.0
		if x == p {
			v = 1
		}
		m.phase.WithLabelValues(cluster, string(x)).Set(v)
	}
}

// Transition implements actors.Metrics.
func (m *metrics) Transition(cluster string, from, to v1alpha1.Phase) {
	m.transitions.WithLabelValues(cluster, string(from), string(to)).Inc()
}

// Observed implements actors.Metrics.
func (m *metrics) Observed(cluster string, d time.Duration, err error) {
	m.observe.WithLabelValues(cluster, result(err)).Observe(d.Seconds())
}

// memberStates are the states mgors_member_state has a series for.
var memberStates = []mongo.MemberState{mongo.StateStartup, mongo.StatePrimary, mongo.StateSecondary, mongo.StateRecovering,
	mongo.StateStartup2, mongo.StateUnknown, mongo.StateArbiter, mongo.StateDown, mongo.StateRollback, mongo.StateRemoved}

// Health implements actors.Metrics: the members' states and lag, the votes,
// elections as term increases (the first term seen is not one), and the
// newest backup's point in time.
func (m *metrics) Health(cluster string, h actors.Health) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := make([]string, 0, len(h.Members))
	for _, mh := range h.Members {
		now = append(now, mh.Name)
		for _, s := range memberStates {
			v := 0.0
			if s.String() == mh.State {
				v = 1
			}
			m.memberState.WithLabelValues(cluster, mh.Name, s.String()).Set(v)
		}
		if mh.HasLag {
			m.lag.WithLabelValues(cluster, mh.Name).Set(mh.Lag)
		} else {
			m.lag.DeleteLabelValues(cluster, mh.Name)
		}
	}
	for _, gone := range m.members[cluster] {
		if !slices.Contains(now, gone) {
			m.memberState.DeletePartialMatch(prometheus.Labels{"cluster": cluster, "member": gone})
			m.lag.DeleteLabelValues(cluster, gone)
		}
	}
	m.members[cluster] = now
	primary := 0.0
	if h.Primary {
		primary = 1
	}
	m.primary.WithLabelValues(cluster).Set(primary)
	m.voters.WithLabelValues(cluster).Set(float64(h.Voters))
	m.answering.WithLabelValues(cluster).Set(float64(h.VotersAnswering))
	m.needed.WithLabelValues(cluster).Set(float64(h.Majority))
	if !h.LastBackup.IsZero() {
		m.lastBackup.WithLabelValues(cluster).Set(float64(h.LastBackup.Unix()))
	}
	m.elections.WithLabelValues(cluster).Add(0) // the series exists from the first observation
	if h.Term > 0 {                             // 0: no status was read
		if last, ok := m.terms[cluster]; ok && h.Term > last {
			m.elections.WithLabelValues(cluster).Add(float64(h.Term - last))
		}
		m.terms[cluster] = max(m.terms[cluster], h.Term)
	}
}

// Acted implements actors.Metrics.
func (m *metrics) Acted(cluster string, a actors.ActionKind, d time.Duration, err error) {
	m.act.WithLabelValues(cluster, string(a), result(err)).Observe(d.Seconds())
	if err != nil {
		m.actErrors.WithLabelValues(cluster, string(a)).Inc()
	}
}

// Forget implements actors.Metrics: a deleted cluster's series go.
func (m *metrics) Forget(cluster string) {
	for _, v := range []interface {
		DeletePartialMatch(prometheus.Labels) int
	}{m.phase, m.transitions, m.observe, m.act, m.actErrors, m.mailbox,
		m.memberState, m.lag, m.primary, m.voters, m.answering, m.needed, m.elections, m.lastBackup} {
		v.DeletePartialMatch(prometheus.Labels{"cluster": cluster})
	}
	m.mu.Lock()
	delete(m.members, cluster)
	delete(m.terms, cluster)
	m.mu.Unlock()
}

// mailboxStats counts a cluster actor's queued messages.
type mailboxStats struct{ g prometheus.Gauge }

func (m *metrics) mailboxStats(cluster string) actor.MailboxMiddleware {
	return mailboxStats{m.mailbox.WithLabelValues(cluster)}
}

func (s mailboxStats) MailboxStarted()             {}
func (s mailboxStats) MessagePosted(interface{})   { s.g.Inc() }
func (s mailboxStats) MessageReceived(interface{}) { s.g.Dec() }
func (s mailboxStats) MailboxEmpty()               { s.g.Set(0) }

type apiLatency struct{ m *metrics }

func (a apiLatency) Observe(_ context.Context, verb string, _ url.URL, d time.Duration) {
	a.m.apiLatency.WithLabelValues(verb).Observe(d.Seconds())
}

type apiResult struct{ m *metrics }

func (a apiResult) Increment(_ context.Context, code, verb, _ string) {
	a.m.apiResults.WithLabelValues(verb, code).Inc()
}

// timedAdmin measures every MongoDB admin call.
type timedAdmin struct {
	mongo.Admin
	m *metrics
}

// Retain passes mongo.Retainer on to the wrapped client.
func (t timedAdmin) Retain(keep []string) {
	if r, ok := t.Admin.(mongo.Retainer); ok {
		r.Retain(keep)
	}
}

func (t timedAdmin) time(cmd string, start time.Time, err error) error {
	t.m.mongoCalls.WithLabelValues(cmd).Observe(time.Since(start).Seconds())
	if err != nil {
		t.m.mongoErrors.WithLabelValues(cmd).Inc()
	}
	return err
}

func (t timedAdmin) Hello(ctx context.Context, host string) (mongo.HelloReply, error) {
	start := time.Now()
	h, err := t.Admin.Hello(ctx, host)
	return h, t.time("hello", start, err)
}

func (t timedAdmin) Status(ctx context.Context, host string) (*mongo.Status, error) {
	start := time.Now()
	s, err := t.Admin.Status(ctx, host)
	return s, t.time("replSetGetStatus", start, err)
}

func (t timedAdmin) Config(ctx context.Context, host string) (mongo.Config, error) {
	start := time.Now()
	c, err := t.Admin.Config(ctx, host)
	return c, t.time("replSetGetConfig", start, err)
}

func (t timedAdmin) Initiate(ctx context.Context, host string, c mongo.Config) error {
	start := time.Now()
	return t.time("replSetInitiate", start, t.Admin.Initiate(ctx, host, c))
}

func (t timedAdmin) Reconfig(ctx context.Context, host string, c mongo.Config, force bool) error {
	start := time.Now()
	return t.time("replSetReconfig:force="+strconv.FormatBool(force), start, t.Admin.Reconfig(ctx, host, c, force))
}

func (t timedAdmin) UserExists(ctx context.Context, host, user string) (bool, error) {
	start := time.Now()
	ok, err := t.Admin.UserExists(ctx, host, user)
	return ok, t.time("usersInfo", start, err)
}

func (t timedAdmin) ServerVersion(ctx context.Context, host string) (string, error) {
	start := time.Now()
	v, err := t.Admin.ServerVersion(ctx, host)
	return v, t.time("buildInfo", start, err)
}

func (t timedAdmin) FeatureCompatibilityVersion(ctx context.Context, host string) (mongo.FCV, error) {
	start := time.Now()
	f, err := t.Admin.FeatureCompatibilityVersion(ctx, host)
	return f, t.time("getParameter:featureCompatibilityVersion", start, err)
}

func (t timedAdmin) SetFeatureCompatibilityVersion(ctx context.Context, host, version string) error {
	start := time.Now()
	return t.time("setFeatureCompatibilityVersion", start, t.Admin.SetFeatureCompatibilityVersion(ctx, host, version))
}

func (t timedAdmin) Parameters(ctx context.Context, host string, names []string) (map[string]string, error) {
	start := time.Now()
	p, err := t.Admin.Parameters(ctx, host, names)
	return p, t.time("getParameter", start, err)
}

func (t timedAdmin) SetParameters(ctx context.Context, host string, values map[string]any) error {
	start := time.Now()
	return t.time("setParameter", start, t.Admin.SetParameters(ctx, host, values))
}

func (t timedAdmin) OplogSizeMB(ctx context.Context, host string) (int64, error) {
	start := time.Now()
	mb, err := t.Admin.OplogSizeMB(ctx, host)
	return mb, t.time("collStats:local.oplog.rs", start, err)
}

func (t timedAdmin) ResizeOplog(ctx context.Context, host string, sizeMB int64) error {
	start := time.Now()
	return t.time("replSetResizeOplog", start, t.Admin.ResizeOplog(ctx, host, sizeMB))
}

func (t timedAdmin) GrantConfigRole(ctx context.Context, host, user string) error {
	start := time.Now()
	return t.time("grantRolesToUser:"+mongo.ConfigRole, start, t.Admin.GrantConfigRole(ctx, host, user))
}
