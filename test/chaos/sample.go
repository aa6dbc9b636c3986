package chaos

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// The samplers' periods.
const (
	memberPeriod = 250 * time.Millisecond
	phasePeriod  = 500 * time.Millisecond
	leasePeriod  = 500 * time.Millisecond
	// sampleTimeout bounds one look at one member.
	sampleTimeout = time.Second
)

// The operator's Deployment and leader Lease (deploy/operator.yaml).
const (
	operatorNamespace = "mgors-system"
	operatorLease     = "mgors-operator"
)

// memberView keeps the latest sample of every member, for the runner's own
// decisions (who is primary now, is everyone back).
type memberView struct {
	mu     sync.Mutex
	latest map[string]MemberSample // by cluster + " " + member
}

func newMemberView() *memberView { return &memberView{latest: map[string]MemberSample{}} }

func (v *memberView) set(s MemberSample) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.latest[s.Cluster+" "+s.Member] = s
}

// of returns the latest samples of a cluster's hosts (missing ones zero).
func (v *memberView) of(t *target) []MemberSample {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]MemberSample, len(t.hosts))
	for i, h := range t.hosts {
		out[i] = v.latest[t.key+" "+h]
	}
	return out
}

// startSamplers starts every sampler; they stop with ctx.
func (r *run) startSamplers(ctx context.Context, wg *sync.WaitGroup) {
	for _, t := range r.clusters {
		for _, h := range t.hosts {
			wg.Add(1)
			go func() { defer wg.Done(); r.sampleMember(ctx, t, h) }()
		}
		if t.trust != nil {
			wg.Add(1)
			go func() { defer wg.Done(); r.follow(ctx, t) }()
		}
	}
	wg.Add(4)
	go func() { defer wg.Done(); r.followLogs(ctx) }()
	go func() { defer wg.Done(); r.samplePhases(ctx) }()
	go func() { defer wg.Done(); r.sampleLease(ctx) }()
	go func() { defer wg.Done(); r.watchPods(ctx) }()
}

// memberClient is a direct connection to one member with the admin
// credentials (none for an arbiter, which holds no users), over TLS when
// the Mgors has spec.tls.
func (t *target) memberClient(host string) (*mongo.Client, error) {
	o := options.Client().SetHosts([]string{host}).SetDirect(true).SetAppName("mgors-chaos-sampler").
		SetDialer(dialer()).SetServerSelectionTimeout(sampleTimeout).SetConnectTimeout(sampleTimeout).
		SetRetryReads(false).SetRetryWrites(false).SetMaxPoolSize(2)
	if !t.arbiter[host] {
		o.SetAuth(options.Credential{AuthMechanism: "SCRAM-SHA-256", AuthSource: "admin", Username: t.user, Password: t.password})
	}
	if t.trust != nil {
		o.SetTLSConfig(t.trust.config())
	}
	return mongo.Connect(o)
}

// sampleMember looks at one member every memberPeriod.
func (r *run) sampleMember(ctx context.Context, t *target, host string) {
	c, err := t.memberClient(host)
	if err != nil {
		r.log.Error().Err(err).Str("member", host).Msg("sampler")
		return
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.Disconnect(dctx)
	}()
	tick := time.NewTicker(memberPeriod)
	defer tick.Stop()
	for {
		s := lookAt(ctx, c, t, host)
		r.rec.member(s)
		r.members.set(s)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

type helloReply struct {
	IsWritablePrimary bool          `bson:"isWritablePrimary"`
	Secondary         bool          `bson:"secondary"`
	ArbiterOnly       bool          `bson:"arbiterOnly"`
	ElectionID        bson.ObjectID `bson:"electionId"`
}

type statusReply struct {
	MyState int   `bson:"myState"`
	Term    int64 `bson:"term"`
}

type configReply struct {
	Config struct {
		Version  int64 `bson:"version"`
		Term     int64 `bson:"term"`
		Settings struct {
			ReplicaSetID bson.ObjectID `bson:"replicaSetId"`
		} `bson:"settings"`
	} `bson:"config"`
}

// stateNames are the member states of replSetGetStatus's myState.
var stateNames = map[int]string{0: "STARTUP", 1: "PRIMARY", 2: "SECONDARY", 3: "RECOVERING", 5: "STARTUP2",
	6: "UNKNOWN", 7: "ARBITER", 8: "DOWN", 9: "ROLLBACK", 10: "REMOVED"}

// lookAt runs hello, replSetGetStatus and replSetGetConfig on one member.
func lookAt(ctx context.Context, c *mongo.Client, t *target, host string) MemberSample {
	s := MemberSample{Cluster: t.key, Member: host}
	cctx, cancel := context.WithTimeout(ctx, sampleTimeout)
	defer cancel()
	admin := c.Database("admin")
	var hello helloReply
	err := admin.RunCommand(cctx, bson.D{{Key: "hello", Value: 1}}).Decode(&hello)
	// The sample is stamped when hello returned, not when it was sent: a frozen
	// member answers the moment it is resumed, and a stamp from before would
	// make it seem to answer while it was still frozen.
	s.At = time.Now()
	if err != nil {
		s.Error = err.Error()
		return s
	}
	switch {
	case hello.IsWritablePrimary:
		s.State = "PRIMARY"
	case hello.Secondary:
		s.State = "SECONDARY"
	case hello.ArbiterOnly:
		s.State = "ARBITER"
	default:
		s.State = "OTHER"
	}
	if !hello.ElectionID.IsZero() {
		s.ElectionID = hello.ElectionID.Hex()
	}
	var st statusReply
	if err := admin.RunCommand(cctx, bson.D{{Key: "replSetGetStatus", Value: 1}}).Decode(&st); err == nil {
		if name, ok := stateNames[st.MyState]; ok {
			s.State = name
		}
		s.Term = st.Term
	}
	var cfg configReply
	if err := admin.RunCommand(cctx, bson.D{{Key: "replSetGetConfig", Value: 1}}).Decode(&cfg); err != nil {
		s.ConfigErr = err.Error()
	} else {
		s.ConfigVersion, s.ConfigTerm = cfg.Config.Version, cfg.Config.Term
		if !cfg.Config.Settings.ReplicaSetID.IsZero() {
			s.ReplicaSetID = cfg.Config.Settings.ReplicaSetID.Hex()
		}
	}
	return s
}

// samplePhases records every Mgors's phase every phasePeriod (nothing while the
// API server is away).
func (r *run) samplePhases(ctx context.Context) {
	tick := time.NewTicker(phasePeriod)
	defer tick.Stop()
	for {
		lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		l, err := r.mgors.Mgorses(r.ns).List(lctx, metav1.ListOptions{})
		cancel()
		if err == nil {
			now := time.Now()
			for _, m := range l.Items {
				r.rec.phase(PhaseSample{At: now, Cluster: m.Namespace + "/" + m.Name, Phase: string(m.Status.Phase),
					Current: m.Status.ObservedGeneration == m.Generation})
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// leaseObservation is one look at the leader Lease.
type leaseObservation struct {
	At     time.Time
	Holder string
	// Valid is true when the holder renewed within the lease duration.
	Valid bool
}

// leaseLog is the leader Lease over time.
type leaseLog struct {
	mu  sync.Mutex
	obs []leaseObservation
}

func (l *leaseLog) add(o leaseObservation) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.obs = append(l.obs, o)
}

// operatorDown reports whether no operator replica validly held the Lease at
// the last observation before at (false when nothing was observed yet).
func (l *leaseLog) operatorDown(at time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.obs) - 1; i >= 0; i-- {
		if !l.obs[i].At.After(at) {
			return !l.obs[i].Valid
		}
	}
	return false
}

// holder is the latest valid holder, "" if none.
func (l *leaseLog) holder() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.obs); n > 0 && l.obs[n-1].Valid {
		return l.obs[n-1].Holder
	}
	return ""
}

// text is the Lease history, one line per change of holder or validity.
func (l *leaseLog) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b []byte
	var last leaseObservation
	for i, o := range l.obs {
		if i == 0 || o.Holder != last.Holder || o.Valid != last.Valid {
			b = fmt.Appendf(b, "%s holder=%q valid=%t\n", o.At.Format(time.RFC3339Nano), o.Holder, o.Valid)
		}
		last = o
	}
	return string(b)
}

// sampleLease records the leader Lease's holder every leasePeriod.
func (r *run) sampleLease(ctx context.Context) {
	tick := time.NewTicker(leasePeriod)
	defer tick.Stop()
	for {
		lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		l, err := r.kube.CoordinationV1().Leases(operatorNamespace).Get(lctx, operatorLease, metav1.GetOptions{})
		cancel()
		if err == nil {
			now := time.Now()
			o := leaseObservation{At: now}
			if l.Spec.HolderIdentity != nil {
				o.Holder = *l.Spec.HolderIdentity
			}
			if o.Holder != "" && l.Spec.RenewTime != nil && l.Spec.LeaseDurationSeconds != nil {
				o.Valid = now.Before(l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second))
			}
			r.leases.add(o)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// watchPods records every member pod that gets a deletionTimestamp or vanishes,
// with the fault that deleted it (if one did) and whether the operator was
// down then. A gap in the watch (the API server restarting) is closed by a
// relist: a pod whose UID changed meanwhile was deleted during the gap.
func (r *run) watchPods(ctx context.Context) {
	known := map[string]string{}  // pod name → UID
	recorded := map[string]bool{} // UIDs whose deletion is recorded
	note := func(name, uid string) {
		if recorded[uid] {
			return
		}
		recorded[uid] = true
		at := time.Now()
		key := r.ns + "/" + name
		r.rec.deletion(PodDeletion{At: at, Pod: key, Fault: r.expectedFault(key), OperatorDown: r.leases.operatorDown(at)})
	}
	seen := func(p *corev1.Pod) {
		if old, ok := known[p.Name]; ok && old != string(p.UID) {
			note(p.Name, old)
		}
		known[p.Name] = string(p.UID)
		if p.DeletionTimestamp != nil {
			note(p.Name, string(p.UID))
		}
	}
	for ctx.Err() == nil {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		l, err := r.kube.CoreV1().Pods(r.ns).List(lctx, metav1.ListOptions{})
		cancel()
		if err != nil {
			sleep(ctx, time.Second)
			continue
		}
		present := map[string]bool{}
		for i := range l.Items {
			present[l.Items[i].Name] = true
			seen(&l.Items[i])
		}
		for name, uid := range known {
			if !present[name] {
				note(name, uid)
				delete(known, name)
			}
		}
		w, err := r.kube.CoreV1().Pods(r.ns).Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
		if err != nil {
			sleep(ctx, time.Second)
			continue
		}
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			if ev.Type == watch.Deleted {
				note(p.Name, string(p.UID))
				if known[p.Name] == string(p.UID) {
					delete(known, p.Name)
				}
				continue
			}
			seen(p)
		}
		w.Stop()
	}
}

// expectDeletion tells the pod watcher that fault id is about to delete pod (ns/name).
func (r *run) expectDeletion(pod string, id int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.expected[pod] = id
}

func (r *run) expectedFault(pod string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := r.expected[pod]
	delete(r.expected, pod)
	return id
}
