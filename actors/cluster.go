package actors

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/scheduler"
	"github.com/rs/zerolog"

	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
)

// World is what a Cluster actor observes and acts on: the Kubernetes API and the
// members, through kube and mongo. Every method bounds its own calls with the
// context's deadline; the actor calls them off its mailbox, never inside Receive.
type World interface {
	// Observe looks at the cluster's objects, pods and members,
	// authenticating to the members as auth (the state's).
	Observe(ctx context.Context, m *v1alpha1.Mgors, desired []mongo.DesiredMember, auth Auth) (Observation, error)
	// Act carries out one action.
	Act(ctx context.Context, m *v1alpha1.Mgors, a Action) error
	// WriteStatus writes the status when it differs from what is stored.
	WriteStatus(ctx context.Context, m *v1alpha1.Mgors, st v1alpha1.MgorsStatus) error
	// Event records a Kubernetes Event on the Mgors, for `kubectl describe`.
	Event(m *v1alpha1.Mgors, warning bool, reason, message string)
}

// Deps is what every Cluster actor shares.
type Deps struct {
	Store eventlog.Store
	World World
	Log   zerolog.Logger
	// Writer names this operator instance in the records it writes.
	Writer string
	// WriterTerms (sharded) makes each actor the Manager spawns a writer of
	// its own, Writer#n, n numbering the actors spawned in this process: a
	// Mgors that moves away and comes back is a new writer in its log, so a
	// log's writers follow one another and none returns.
	WriterTerms bool
	// ClusterDomain is the cluster's DNS domain, for member host names.
	ClusterDomain string
	// Interval is the period of the observation timer.
	Interval time.Duration
	// ObserveTimeout and ActTimeout bound one observation and one action.
	ObserveTimeout, ActTimeout time.Duration
	// SnapshotEvery is how many records pass between snapshots (0: never).
	SnapshotEvery int64
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// AfterAppend, when set, is called after each record is durable and before
	// anything else happens: the recovery tests crash the operator there.
	AfterAppend func(eventlog.Record)
	// Metrics receives the actor's measurements (nil: none).
	Metrics Metrics
	// Mailbox, when set, gives each Cluster actor's mailbox a statistics hook
	// (the mailbox-depth metric).
	Mailbox func(cluster string) actor.MailboxMiddleware
	// Lease, when set, says whether this replica may still write: it is asked
	// right before every append, action and status write, and an error stops
	// the actor for good (Fenced). Nil: always.
	Lease func() error
	// Fenced, when set (sharded), is told by the Manager that a cluster's
	// actor stopped for good (see Fenced); it must not block. When unset, the
	// Manager spawns the actor again after FenceRespawn (0: 30 s).
	Fenced       func(Fenced)
	FenceRespawn time.Duration
	// Released, when set, is told by the Manager that a drained cluster's
	// actor stopped (ClusterDrain); it must not block.
	Released func(namespace, name, uid string)
	// Gate bounds the writing steps in flight across all actors (gate.go);
	// nil: no bound.
	Gate *Gate
}

// Metrics is what the actors report; cmd wires it to Prometheus.
type Metrics interface {
	Phase(cluster string, phase v1alpha1.Phase)
	Transition(cluster string, from, to v1alpha1.Phase)
	Observed(cluster string, d time.Duration, err error)
	// Health is each successful observation's summary (healthOf).
	Health(cluster string, h Health)
	Acted(cluster string, action ActionKind, d time.Duration, err error)
	Forget(cluster string)
}

func (d *Deps) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// Messages a Cluster actor receives from the Manager.
type (
	// Update carries the Mgors as last seen by the watch.
	Update struct{ Mgors *v1alpha1.Mgors }
	// Poke asks for an observation now: an owned object changed.
	Poke struct{ Reason string }
)

// Messages a Cluster actor sends itself from its goroutines.
type (
	tick struct{}
	// soon is the quick re-observation of a cluster that is not Healthy,
	// or at a backup schedule's fire; at is when it was set to come.
	soon struct{ at time.Time }
	// drain asks the actor to stop once the step under way ends.
	drain     struct{}
	recovered struct {
		state State
		err   error
	}
	observed struct {
		obs Observation
		err error
		dur time.Duration
	}
	persisted struct {
		recs   []eventlog.Record
		events []Event
		action *Action
		err    error
		// fencedBy names the other writer (or the lost Lease) that stops the actor.
		fencedBy string
	}
	acted struct {
		action   Action
		err      error
		facts    []Event // what a successful action reports (carry)
		dur      time.Duration
		fencedBy string
	}
)

// cluster is the Cluster actor: one per Mgors incarnation (namespace, name, UID).
// Its mailbox only ever does quick work; observing, persisting and acting run in
// goroutines that report back by message, one step at a time.
type cluster struct {
	deps   *Deps
	stream eventlog.Stream
	log    zerolog.Logger

	mgors     *v1alpha1.Mgors
	latest    *latestSpec // shared with the producer: the spec a restart starts from
	state     State
	ready     bool // the state was recovered from the log
	busy      bool // a step (observe, persist, act) is under way
	again     bool // something asked for an observation while busy
	lastObs   *Observation
	sinceSnap int64
	stopTimer func()
	soonAt    time.Time // when the quick re-observation scheduled comes (zero: none)
	quiet     int       // observations in a row that wrote nothing
	draining  bool      // stop when the step under way ends (ClusterDrain)

	wake   *wakeup       // nil unless the World is a Watcher (wake.go)
	status *statusWriter // shared with the producer, as latest
	jobs   *jobs         // shared with the producer, as latest (backup.go)
}

// latestSpec is the newest Mgors an actor was sent, kept outside the actor so
// that the incarnation a supervisor restart produces starts from it.
type latestSpec struct {
	mu sync.Mutex
	m  *v1alpha1.Mgors
}

func (l *latestSpec) get() *v1alpha1.Mgors {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.m.DeepCopy()
}

func (l *latestSpec) set(m *v1alpha1.Mgors) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.m = m.DeepCopy()
}

// NewClusterProps returns the props of a Cluster actor for one Mgors incarnation.
func NewClusterProps(deps *Deps, m *v1alpha1.Mgors) *actor.Props {
	stream := eventlog.Stream{Namespace: m.Namespace, Name: m.Name, UID: string(m.UID)}
	// The producer builds every incarnation of the actor (the first, and each
	// restart by the supervisor) from the newest spec the actor was sent, never
	// the one it was spawned with: a restart must not act on an old spec.
	latest, status, jobs := &latestSpec{m: m.DeepCopy()}, &statusWriter{}, newJobs()
	var opts []actor.PropsOption
	if deps.Mailbox != nil {
		opts = append(opts, actor.WithMailbox(actor.Unbounded(deps.Mailbox(stream.Key()))))
	}
	return actor.PropsFromProducer(func() actor.Actor {
		return &cluster{
			deps: deps, stream: stream, mgors: latest.get(), latest: latest, state: Initial(), status: status, jobs: jobs,
			log: deps.Log.With().Str("cluster", stream.Key()).Str("uid", stream.UID).Logger(),
		}
	}, opts...)
}

// Receive handles one message; nothing here blocks.
func (c *cluster) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		c.recover(ctx)
	case *actor.Restarting, *actor.Stopping:
		if c.stopTimer != nil {
			c.stopTimer()
			c.stopTimer = nil
		}
	case *actor.Stopped:
		c.jobs.stop()
		if c.deps.Metrics != nil {
			c.deps.Metrics.Forget(c.stream.Key())
		}
		if f, ok := c.deps.World.(interface{ Forget(*v1alpha1.Mgors) }); ok {
			f.Forget(c.mgors)
		}
	case Update:
		if msg.Mgors != nil && string(msg.Mgors.UID) == c.stream.UID {
			c.mgors = msg.Mgors.DeepCopy()
			c.latest.set(c.mgors)
			c.observe(ctx)
		}
	case drain:
		c.draining = true
		c.observe(ctx) // stops now when no step is under way
	case ClusterDeleted:
		c.release()
	case Poke, tick:
		c.observe(ctx)
	case membersMoved:
		if c.wake != nil { // nil in an incarnation not yet recovered
			c.wake.take()
		}
		c.observe(ctx)
	case soon:
		if msg.at.Equal(c.soonAt) {
			c.soonAt = time.Time{} // a timer replaced by an earlier one leaves it
		}
		c.observe(ctx)
	case recovered:
		c.onRecovered(ctx, msg)
	case observed:
		c.onObserved(ctx, msg)
	case persisted:
		c.onPersisted(ctx, msg)
	case acted:
		c.onActed(ctx, msg)
	case jobDone:
		c.onJobDone(ctx, msg)
	}
}

// async runs f off the mailbox and sends its result to self. A panic in f is
// turned into an error message: goroutines are not supervised.
func async(ctx actor.Context, f func() any, onPanic func(error) any) {
	root, self := ctx.ActorSystem().Root, ctx.Self()
	go func() {
		var msg any
		defer func() {
			if r := recover(); r != nil {
				msg = onPanic(fmt.Errorf("panic: %v\n%s", r, debug.Stack()))
			}
			root.Send(self, msg)
		}()
		msg = f()
	}()
}

// recover rebuilds the state from the log (snapshot, then records), off the mailbox.
func (c *cluster) recover(ctx actor.Context) {
	c.busy = true
	deps, stream := c.deps, c.stream
	async(ctx, func() any {
		defer deps.Gate.enter()()
		lctx, cancel := context.WithTimeout(context.Background(), deps.ObserveTimeout)
		defer cancel()
		snap, recs, err := deps.Store.Load(lctx, stream)
		if err != nil {
			return recovered{err: err}
		}
		s := Initial()
		if snap != nil {
			if err := unmarshalState(snap.State, &s); err != nil {
				return recovered{err: fmt.Errorf("snapshot at seq %d: %w", snap.Seq, err)}
			}
		}
		s, err = Fold(s, recs)
		return recovered{state: s, err: err}
	}, func(err error) any { return recovered{err: err} })
}

func (c *cluster) onRecovered(ctx actor.Context, msg recovered) {
	if msg.err != nil {
		// Without its log the actor must not act: fail, and let the supervisor
		// restart it with back-off.
		panic(fmt.Errorf("recovering the event log of %s: %w", c.stream, msg.err))
	}
	c.state, c.ready, c.busy = msg.state, true, false
	c.log.Info().Int64("seq", c.state.Seq).Str("phase", string(c.state.Phase)).Msg("recovered from the event log; observing before acting")
	c.stopTimer = every(ctx, c.deps.Interval, tick{})
	c.watchMembers(ctx)
	c.observe(ctx)
}

// observe starts an observation unless a step is under way (then it runs next).
func (c *cluster) observe(ctx actor.Context) {
	if c.draining && !c.busy {
		ctx.Stop(ctx.Self()) // nothing under way: the Manager acknowledges the drain
		return
	}
	if !c.ready || c.busy {
		c.again = true
		return
	}
	c.busy, c.again = true, false
	deps, m, auth := c.deps, c.subject(), c.state.Auth
	desired := mongo.Desired(m, deps.ClusterDomain)
	async(ctx, func() any {
		start := time.Now()
		octx, cancel := context.WithTimeout(context.Background(), deps.ObserveTimeout)
		defer cancel()
		obs, err := deps.World.Observe(octx, m, desired, auth)
		return observed{obs: obs, err: err, dur: time.Since(start)}
	}, func(err error) any { return observed{err: err} })
}

func (c *cluster) onObserved(ctx actor.Context, msg observed) {
	if c.deps.Metrics != nil {
		c.deps.Metrics.Observed(c.stream.Key(), msg.dur, msg.err)
	}
	if msg.err != nil {
		c.log.Warn().Err(msg.err).Msg("observation failed; retrying on the next tick")
		c.idle(ctx, false)
		return
	}
	obs := msg.obs
	if obs.At.IsZero() {
		obs.At = c.deps.now() // the schedules' next fire in the status counts from it
	}
	c.tendArchive(&obs)
	c.lastObs = &obs
	if c.deps.Metrics != nil {
		h := healthOf(obs)
		h.LastBackup = lastBackup(c.state)
		c.deps.Metrics.Health(c.stream.Key(), h)
	}
	c.tendJobs(ctx, nil)
	in := Inputs{Mgors: c.mgors, Desired: mongo.Desired(c.mgors, c.deps.ClusterDomain), Obs: obs, Now: c.deps.now(),
		Results: c.jobs.pending()}
	d := Decide(c.state, in)
	if len(d.Events) == 0 {
		c.writeStatus(ctx)
		c.idle(ctx, false)
		return
	}
	c.persist(ctx, d.Events, d.Action, "observation")
}

// persist appends the events (write-ahead) off the mailbox; onPersisted folds
// them and only then carries out the action.
func (c *cluster) persist(ctx actor.Context, events []Event, action *Action, cause string) {
	now := c.deps.now()
	recs := make([]eventlog.Record, 0, len(events))
	for i, e := range events {
		r, err := Encode(c.stream, c.state.Seq+int64(i)+1, now, cause, c.deps.Writer, e)
		if err != nil {
			panic(err) // an event that cannot be encoded is a programming error
		}
		recs = append(recs, r)
	}
	deps, stream, seq := c.deps, c.stream, c.state.Seq
	async(ctx, func() any {
		defer deps.Gate.enter()() // first: the Lease is asked once the wait is over
		if err := deps.mayWrite(); err != nil {
			return persisted{err: err, fencedBy: err.Error()}
		}
		pctx, cancel := context.WithTimeout(context.Background(), deps.ObserveTimeout)
		defer cancel()
		err := deps.Store.Append(pctx, stream, recs...)
		p := persisted{recs: recs, events: events, action: action, err: err}
		if errors.Is(err, eventlog.ErrSequence) {
			p.fencedBy = deps.otherWriter(stream, seq)
		}
		return p
	}, func(err error) any { return persisted{err: err} })
}

func (c *cluster) onPersisted(ctx actor.Context, msg persisted) {
	if msg.fencedBy != "" {
		c.fence(ctx, msg.fencedBy)
		return
	}
	if msg.err != nil {
		if errors.Is(msg.err, eventlog.ErrSequence) {
			// Only this writer's own records are past our view (an append
			// that failed yet was committed): restart, which reloads them.
			panic(fmt.Errorf("event log of %s changed under this actor: %w", c.stream, msg.err))
		}
		c.log.Warn().Err(msg.err).Msg("persisting events failed; nothing was carried out, retrying on the next tick")
		c.idle(ctx, false)
		return
	}
	for i, r := range msg.recs {
		before := c.state
		c.state = Evolve(c.state, r.Seq, r.Time, msg.events[i])
		c.announce(r, before, msg.events[i])
		if c.deps.AfterAppend != nil {
			c.deps.AfterAppend(r)
		}
	}
	c.jobsRecorded(ctx, msg.events)
	c.sinceSnap += int64(len(msg.recs))
	c.maybeSnapshot(ctx)
	c.writeStatus(ctx)
	if msg.action == nil {
		c.idle(ctx, true)
		return
	}
	c.carryOut(ctx, *msg.action)
}

func (c *cluster) carryOut(ctx actor.Context, a Action) {
	deps, m := c.deps, c.subject()
	async(ctx, func() any {
		defer deps.Gate.enter()() // first: the Lease is asked once the wait is over
		if err := deps.mayWrite(); err != nil {
			return acted{action: a, err: err, fencedBy: err.Error()}
		}
		start := time.Now()
		actx, cancel := context.WithTimeout(context.Background(), deps.ActTimeout)
		defer cancel()
		facts, err := carry(actx, deps.World, m, a)
		return acted{action: a, err: err, dur: time.Since(start), facts: facts}
	}, func(err error) any { return acted{action: a, err: err} })
}

func (c *cluster) onActed(ctx actor.Context, msg acted) {
	if msg.fencedBy != "" {
		c.fence(ctx, msg.fencedBy) // not carried out: the next owner settles its ActionStarted
		return
	}
	if c.deps.Metrics != nil {
		c.deps.Metrics.Acted(c.stream.Key(), msg.action.Kind, msg.dur, msg.err)
	}
	c.again = true // look at the action's effect as soon as its result is recorded
	if msg.action.Kind == ActRemoveAnnotation && msg.err == nil && c.mgors.Annotations[msg.action.Host] != "" {
		// The watch brings the object without it soon; until then this copy
		// must not show a handled approval again.
		delete(c.mgors.Annotations, msg.action.Host)
		c.latest.set(c.mgors)
	}
	events := Conclude(msg.action, msg.err)
	if msg.err == nil {
		events = append(events, msg.facts...)
	}
	c.persist(ctx, events, nil, "result of "+string(msg.action.Kind))
}

// idle ends a step, and starts the next observation if one was asked for,
// or schedules a quick one (see lookAgain).
func (c *cluster) idle(ctx actor.Context, wrote bool) {
	c.busy = false
	if c.draining {
		c.observe(ctx) // stops
		return
	}
	if wrote {
		c.quiet = 0
	} else {
		c.quiet++
	}
	if c.again {
		c.observe(ctx)
		return
	}
	// A timer is replaced by an earlier one (a cluster that starts to move
	// while it waits for a schedule's fire); the later one still comes.
	now := c.deps.now()
	if d := lookAgain(c.state, c.mgors, c.quiet, c.deps.Interval, now); d > 0 && (c.soonAt.IsZero() || now.Add(d).Before(c.soonAt)) {
		c.soonAt = now.Add(d)
		scheduler.NewTimerScheduler(ctx).SendOnce(d, ctx.Self(), soon{at: c.soonAt})
	}
}

func (c *cluster) maybeSnapshot(ctx actor.Context) {
	if c.deps.SnapshotEvery <= 0 || c.sinceSnap < c.deps.SnapshotEvery {
		return
	}
	c.sinceSnap = 0
	b, err := marshalState(c.state)
	if err != nil {
		c.log.Warn().Err(err).Msg("encoding a snapshot failed")
		return
	}
	snap := eventlog.Snapshot{Seq: c.state.Seq, Time: c.deps.now(), State: b}
	deps, stream, log := c.deps, c.stream, c.log
	go func() {
		defer recoverIn(log, "saving a snapshot")
		defer deps.Gate.enter()()
		sctx, cancel := context.WithTimeout(context.Background(), deps.ObserveTimeout)
		defer cancel()
		if err := deps.Store.SaveSnapshot(sctx, stream, snap); err != nil {
			log.Warn().Err(err).Msg("saving a snapshot failed; the log is kept whole")
		}
	}()
}

// recoverIn logs a panic in a goroutine whose result nobody waits for (status
// writes, snapshots): both are retried by the next step, and a panic there
// must not kill the process (goroutines are not supervised).
func recoverIn(log zerolog.Logger, what string) {
	if r := recover(); r != nil {
		log.Error().Str("err", fmt.Sprint(r)).Str("stack", string(debug.Stack())).Msg("panic " + what + "; recovered, retried after the next step")
	}
}
