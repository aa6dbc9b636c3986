package actors

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
)

// helloTimeout bounds each member's hello (and buildInfo) in an
// observation, below the admin client's own call deadline: a member whose pod
// runs but whose mongod does not answer (killed, hung, partitioned) costs the
// observation this much, once, as every member is asked at the same time.
const helloTimeout = 2 * time.Second

// observeMembers asks each member hello (no credentials), all at once, and
// returns the member to read the replica set from: the primary, or the
// member with the newest config; "" when no member holds a config. A member
// whose pod is absent or not Running is not dialed (unreachable): nothing
// listens there, and asking would cost the driver's whole server selection.
func (w *KubeWorld) observeMembers(ctx context.Context, admin mongo.Admin, desired []mongo.DesiredMember, o *Observation) string {
	type answer struct {
		dm      mongo.DesiredMember
		hello   mongo.HelloReply
		err     error
		version string
	}
	answers := make(chan answer, len(desired))
	asked := 0
	for _, dm := range desired {
		if why := notRunning(o.Pods, dm.Name); why != "" {
			o.Members[dm.Host] = MemberView{Name: dm.Name, Host: dm.Host, Arbiter: dm.Arbiter, Err: why}
			continue
		}
		asked++
		go func() {
			hctx, cancel := context.WithTimeout(ctx, helloTimeout)
			defer cancel()
			h, err := admin.Hello(hctx, dm.Host)
			var version string
			if err == nil { // the binary that answers, not the image asked for
				version, _ = admin.ServerVersion(hctx, dm.Host)
			}
			answers <- answer{dm, h, err, version}
		}()
	}
	best := ""
	var bestVersion int64
	for range asked {
		a := <-answers
		mv := MemberView{Name: a.dm.Name, Host: a.dm.Host, Arbiter: a.dm.Arbiter}
		if a.err != nil {
			mv.Err = a.err.Error()
		} else {
			mv.Answers = true
			mv.Version = a.version
			mv.HasConfig = a.hello.SetName != ""
			mv.ConfigVersion = a.hello.SetVersion
			mv.Primary = a.hello.IsWritablePrimary
			mv.LastWrite = a.hello.LastWrite.OpTime
			if mv.Primary {
				o.Primary = a.dm.Host
			}
			if mv.HasConfig && (best == "" || mv.ConfigVersion > bestVersion) {
				best, bestVersion = a.dm.Host, mv.ConfigVersion
			}
		}
		o.Members[a.dm.Host] = mv
	}
	if o.Primary != "" {
		return o.Primary
	}
	return best
}

// Watch implements Watcher: the admin clients of m call wake when the
// driver's monitoring sees a member move (mongo.Options.Changed).
func (w *KubeWorld) Watch(m *v1alpha1.Mgors, wake func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.wakers == nil {
		w.wakers = map[string]func(){}
	}
	w.wakers[string(m.UID)] = wake
}

// changed is the mongo.Options.Changed of the cluster uid's admin clients:
// it wakes the actor Watch registered last, if any (the driver calls it on
// its own goroutines).
func (w *KubeWorld) changed(uid string) func(host string) {
	return func(string) {
		w.mu.Lock()
		wake := w.wakers[uid]
		w.mu.Unlock()
		if wake != nil {
			wake()
		}
	}
}

// notRunning says why a member's pod cannot answer ("" when it may): it does
// not exist, or it is not Running (Pending: not started yet; Succeeded or
// Failed: its containers ended). A pod being deleted is still asked: its
// mongod runs, and may be the primary, until its grace period ends.
func notRunning(pods map[string]PodView, name string) string {
	p, ok := pods[name]
	switch {
	case !ok:
		return "not reachable: pod " + name + " does not exist"
	case p.Phase == "":
		return "not reachable: pod " + name + " has no phase yet"
	case p.Phase != string(corev1.PodRunning):
		return "not reachable: pod " + name + " is " + p.Phase
	}
	return ""
}

// observeReplicaSet reads the config and status from source, each
// survivor's own status when there is no primary, and the troubled members.
func (w *KubeWorld) observeReplicaSet(ctx context.Context, admin mongo.Admin, source string, o *Observation) {
	if source == "" {
		return // no member holds a config
	}
	if cfg, err := admin.Config(ctx, source); err == nil {
		o.Config, o.ConfigFrom = &cfg, source
	} else {
		o.ConfigErr = fmt.Sprintf("replSetGetConfig on %s: %v", source, err)
	}
	if f, err := admin.FeatureCompatibilityVersion(ctx, source); err == nil && o.Config != nil {
		o.FCV = f.Version
	}
	if st, err := admin.Status(ctx, source); err == nil {
		o.Status = st
		for _, ms := range st.Members {
			for host, mv := range o.Members {
				if mongo.SameHost(host, ms.Name) {
					mv.State = ms.State
					o.Members[host] = mv
				}
			}
		}
	}
	if o.Primary == "" && o.Config != nil {
		// No primary: each survivor's own view is the evidence of a majority loss.
		var hosts []string
		for host, mv := range o.Members {
			if mv.Answers && mv.HasConfig {
				hosts = append(hosts, host)
			}
		}
		o.Statuses = map[string]*mongo.Status{}
		for host, st := range statusesOf(ctx, admin, hosts) {
			if st.err == nil {
				o.Statuses[host] = st.status
			}
		}
	}
	w.observeTroubled(ctx, admin, o)
}

// observeTroubled asks each member that answers hello but is not PRIMARY,
// SECONDARY or ARBITER for its own replSetGetStatus (bounded like every
// call): its state, infoMessage and initial sync progress are the evidence of
// a member that came back empty or is stuck (decide_stuck.go); only the
// member itself reports them. A member without a config says whether it is
// empty (NotYetInitialized) or REMOVED (InvalidReplicaSetConfig). A REMOVED
// member (after a forced reconfig or a removal) tells its optime neither in
// hello nor in replSetGetStatus; its local database does, and that says
// whether it diverged from the survivor of a force.
func (w *KubeWorld) observeTroubled(ctx context.Context, admin mongo.Admin, o *Observation) {
	var hosts []string
	for host, mv := range o.Members {
		if mv.Answers && !mv.Arbiter && (!mv.HasConfig || !mv.State.Healthy()) {
			hosts = append(hosts, host)
		}
	}
	for host, st := range statusesOf(ctx, admin, hosts) {
		mv := o.Members[host]
		if mv.State == mongo.StateRemoved {
			mv.Removed = true
		}
		switch err := st.err; {
		case err == nil:
			mv.OwnState, mv.InitialSync = st.status.MyState, st.status.InitialSyncStatus
			if self := st.status.Self(); self != nil {
				mv.InfoMessage = self.InfoMessage
			}
		case errors.Is(err, mongo.ErrNotYetInitialized):
			mv.Empty = true
		case errors.Is(err, mongo.ErrInvalidReplicaSetConfig):
			mv.Removed = true
			if l, err := admin.Local(ctx, host); err == nil {
				mv.LastWrite = l.LastOplog
			}
		}
		o.Members[host] = mv
	}
}

// statusAnswer is one member's own replSetGetStatus, or why it failed.
type statusAnswer struct {
	status *mongo.Status
	err    error
}

// statusesOf asks each host for its own replSetGetStatus at once, so a member
// that hangs costs one call's deadline, not one per member asked after it.
func statusesOf(ctx context.Context, admin mongo.Admin, hosts []string) map[string]statusAnswer {
	type answer struct {
		host string
		statusAnswer
	}
	answers := make(chan answer, len(hosts))
	for _, host := range hosts {
		go func() {
			st, err := admin.Status(ctx, host)
			answers <- answer{host, statusAnswer{st, err}}
		}()
	}
	out := make(map[string]statusAnswer, len(hosts))
	for range hosts {
		a := <-answers
		out[a.host] = a.statusAnswer
	}
	return out
}
