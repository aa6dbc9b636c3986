package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/test/localkube/kubelet"
)

// evidenceBound bounds each wait for a fault's evidence (a restart, a new pod,
// a Node NotReady).
const evidenceBound = 90 * time.Second

// inject carries out step s as fault id: resolves its target now, injects,
// holds, heals, and records what proves the fault happened. For a kill or a
// deletion the proof comes later (a restart, a new pod): inject then returns
// a function that waits for it and completes the Fault, which the runner runs
// while it waits for Healthy, so that the wait for evidence does not count as
// time to Healthy.
func (r *run) inject(ctx context.Context, id int, s Step) (*Fault, func()) {
	f := &Fault{ID: id, Kind: s.Kind, Start: time.Now()}
	var later func()
	var t *target
	if s.Cluster >= 0 && s.Cluster < len(r.clusters) {
		t = r.clusters[s.Cluster]
		f.Cluster = t.key
	}
	r.log.Info().Int("fault", id).Str("kind", string(s.Kind)).Str("cluster", f.Cluster).Str("target", string(s.Target)).
		Str("hold", s.Hold.String()).Msg("injecting")
	var err error
	switch s.Kind {
	case KillMongod:
		later, err = r.killMongod(ctx, f, t, s)
	case DeletePod:
		later, err = r.deletePod(ctx, f, t, s)
	case PausePrimary:
		err = r.pausePrimary(ctx, f, t, s)
	case PartitionPrimary, PartitionMinority:
		err = r.partition(ctx, f, t, s)
	case KillOperatorLeader:
		later, err = r.killLeader(ctx, f)
	case RestartControlPlane:
		err = r.restartControlPlane(ctx, f)
	case NodeDown:
		err = r.nodeDown(ctx, f, t, s)
	case MajorityLoss:
		err = r.majorityLoss(ctx, f, t, s)
	default:
		err = fmt.Errorf("unknown fault kind %q", s.Kind)
	}
	if err != nil {
		f.Happened = false
		f.Evidence = strings.TrimPrefix(f.Evidence+"; ", "; ") + "error: " + err.Error()
		r.log.Error().Int("fault", id).Err(err).Msg("fault not injected")
	}
	if f.Healed.IsZero() {
		f.Healed = time.Now()
	}
	return f, later
}

// member picks a data member of t in role, from the latest samples (waiting
// up to 30 s for one, as during an election there is no primary).
func (r *run) member(ctx context.Context, t *target, role Role) (string, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		var primary, secondary string
		var term int64 = -1
		for _, s := range r.members.of(t) {
			if s.Member == "" || t.arbiter[s.Member] || s.Error != "" || time.Since(s.At) > 3*time.Second {
				continue
			}
			switch s.State {
			case "PRIMARY":
				if s.Term > term {
					primary, term = s.Member, s.Term
				}
			case "SECONDARY":
				if secondary == "" {
					secondary = s.Member
				}
			}
		}
		switch {
		case role == RoleSecondary && secondary != "":
			return secondary, nil
		case (role == RolePrimary || role == RoleAny) && primary != "":
			return primary, nil
		case role == RoleAny && secondary != "":
			return secondary, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return "", fmt.Errorf("%s: no %s member in the latest samples: %w", t.key, role, errNoPrimary)
		}
		sleep(ctx, 500*time.Millisecond)
	}
}

// podState reads a pod's UID and a container's restart count.
func (r *run) podState(ctx context.Context, ns, pod, container string) (string, int32, error) {
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	p, err := r.kube.CoreV1().Pods(ns).Get(gctx, pod, metav1.GetOptions{})
	if err != nil {
		return "", 0, err
	}
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == container {
			return string(p.UID), c.RestartCount, nil
		}
	}
	return string(p.UID), 0, nil
}

// until polls cond every half second for at most bound.
func until(ctx context.Context, bound time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if cond() {
			return true
		}
		sleep(ctx, 500*time.Millisecond)
	}
	return false
}

// killMongod SIGKILLs mongod in a member's pod; evidence: its restart count went up.
func (r *run) killMongod(ctx context.Context, f *Fault, t *target, s Step) (func(), error) {
	host, err := r.member(ctx, t, s.Target)
	if err != nil {
		return nil, err
	}
	pod := podOf(host)
	f.Targets = []string{host}
	uid, before, err := r.podState(ctx, t.ns, pod, kube.MongodContainer)
	if err != nil {
		return nil, err
	}
	f.Start = time.Now()
	ev, err := r.faults.Kill(ctx, t.ns, pod, kube.MongodContainer)
	f.Healed = time.Now()
	if err != nil {
		return nil, err
	}
	return func() {
		var after int32
		var nowUID string
		f.Happened = until(ctx, evidenceBound, func() bool {
			u, n, err := r.podState(ctx, t.ns, pod, kube.MongodContainer)
			nowUID, after = u, n
			return err == nil && (n > before || u != uid)
		})
		f.Evidence = fmt.Sprintf("%s; mongod restartCount %d → %d", ev, before, after)
		if nowUID != uid {
			f.Evidence += " (pod replaced)"
		}
	}, nil
}

// deletePod force-deletes a member pod (grace 0); evidence: the pod came back
// with another UID.
func (r *run) deletePod(ctx context.Context, f *Fault, t *target, s Step) (func(), error) {
	host, err := r.member(ctx, t, s.Target)
	if err != nil {
		return nil, err
	}
	pod := podOf(host)
	f.Targets = []string{host}
	uid, _, err := r.podState(ctx, t.ns, pod, kube.MongodContainer)
	if err != nil {
		return nil, err
	}
	r.expectDeletion(t.ns+"/"+pod, f.ID)
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	f.Start = time.Now()
	err = r.kube.CoreV1().Pods(t.ns).Delete(dctx, pod, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	f.Healed = time.Now()
	if err != nil {
		return nil, err
	}
	return func() {
		var now string
		f.Happened = until(ctx, evidenceBound, func() bool {
			u, _, err := r.podState(ctx, t.ns, pod, kube.MongodContainer)
			now = u
			return err == nil && u != uid
		})
		f.Evidence = fmt.Sprintf("pod %s force-deleted: uid %s → %s", pod, uid, now)
	}, nil
}

// pausePrimary SIGSTOPs the primary past the election timeout, then SIGCONTs
// it; evidence: the samplers saw it unreachable or no longer primary.
func (r *run) pausePrimary(ctx context.Context, f *Fault, t *target, s Step) error {
	host, err := r.member(ctx, t, RolePrimary)
	if err != nil {
		return err
	}
	pod := podOf(host)
	f.Targets = []string{host}
	f.Start = time.Now()
	ev, err := r.faults.Pause(ctx, t.ns, pod)
	if err != nil {
		return err
	}
	sleep(ctx, s.Hold)
	// Resume even when ctx ended: a frozen member must not outlive the run.
	rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, rerr := r.faults.Resume(rctx, t.ns, pod)
	f.Healed = time.Now()
	saw := 0
	for _, m := range r.rec.samplesOf(t.key, f.Start.Add(time.Second), f.Healed) {
		if m.Member == host && (m.Error != "" || m.State != "PRIMARY") {
			saw++
		}
	}
	f.Happened = saw > 0
	f.Evidence = fmt.Sprintf("%s; %d samples saw %s unreachable or not primary while paused", ev, saw, host)
	return rerr
}

// partition cuts a member off from the others (the primary, or a secondary
// for a minority). Evidence: the rules dropped packets; without a drop
// counter, the member's isolation seen by the replica set itself (the
// isolated primary stepped down or another was elected; the primary reported
// the isolated secondary unreachable).
func (r *run) partition(ctx context.Context, f *Fault, t *target, s Step) error {
	host, err := r.member(ctx, t, s.Target)
	if err != nil {
		return err
	}
	var from []string
	for _, h := range t.hosts {
		if h != host {
			from = append(from, podOf(h))
		}
	}
	f.Targets = []string{host}
	tag := fmt.Sprintf("chaos-%s-f%d", t.name, f.ID)
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	f.Start = time.Now()
	if err := r.faults.Partition(pctx, tag, t.ns, []string{podOf(host)}, from); err != nil {
		_ = r.faults.Heal(context.Background(), tag)
		return err
	}
	seen := ""
	deadline := time.Now().Add(s.Hold)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if seen == "" && s.Kind == PartitionMinority {
			seen = r.isolationSeen(ctx, t, host)
		}
		sleep(ctx, time.Second)
	}
	drops, derr := r.faults.Drops(pctx, tag)
	hctx, hcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer hcancel()
	herr := r.faults.Heal(hctx, tag)
	f.Healed = time.Now()
	if derr != nil {
		f.Evidence = "no drop counter: " + derr.Error()
		return errors.Join(herr, derr)
	}
	f.Happened, f.Evidence = drops > 0, fmt.Sprintf("%d packets dropped by %s", drops, tag)
	if seen != "" {
		f.Evidence += "; " + seen
	}
	return herr
}

// isolationSeen asks the primary whether it sees host unhealthy, and host
// whether it sees the primary unhealthy; it returns the first such finding, or "".
func (r *run) isolationSeen(ctx context.Context, t *target, host string) string {
	primary, err := r.member(ctx, t, RolePrimary)
	if err != nil || primary == host {
		return ""
	}
	if seen := unhealthyFrom(ctx, t, primary, host); seen != "" {
		return seen
	}
	return unhealthyFrom(ctx, t, host, primary)
}

// unhealthyFrom asks observer's replSetGetStatus whether it sees host with
// health 0.
func unhealthyFrom(ctx context.Context, t *target, observer, host string) string {
	c, err := t.memberClient(observer)
	if err != nil {
		return ""
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.Disconnect(dctx)
	}()
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var st struct {
		Members []struct {
			Name     string  `bson:"name"`
			Health   float64 `bson:"health"`
			StateStr string  `bson:"stateStr"`
		} `bson:"members"`
	}
	if err := c.Database("admin").RunCommand(cctx, bson.D{{Key: "replSetGetStatus", Value: 1}}).Decode(&st); err != nil {
		return ""
	}
	for _, m := range st.Members {
		if m.Name == host && m.Health == 0 {
			return fmt.Sprintf("%s saw %s health 0 (%s) at %s", observer, host, m.StateStr, time.Now().Format(time.RFC3339Nano))
		}
	}
	return ""
}

// killLeader SIGKILLs the operator pod holding the Lease; evidence: its
// restart count went up or another replica took the Lease.
func (r *run) killLeader(ctx context.Context, f *Fault) (func(), error) {
	var holder string
	until(ctx, 30*time.Second, func() bool { holder = r.leases.holder(); return holder != "" })
	if holder == "" {
		return nil, errors.New("no valid holder of the leader Lease")
	}
	f.Targets = []string{operatorNamespace + "/" + holder}
	const container = "operator"
	uid, before, err := r.podState(ctx, operatorNamespace, holder, container)
	if err != nil {
		return nil, fmt.Errorf("the Lease holder %q is no operator pod: %w", holder, err)
	}
	f.Start = time.Now()
	ev, err := r.faults.Kill(ctx, operatorNamespace, holder, container)
	f.Healed = time.Now()
	if err != nil {
		return nil, err
	}
	return func() {
		var after int32
		var newHolder string
		f.Happened = until(ctx, evidenceBound, func() bool {
			u, n, err := r.podState(ctx, operatorNamespace, holder, container)
			after, newHolder = n, r.leases.holder()
			return (err == nil && (n > before || u != uid)) || (newHolder != "" && newHolder != holder)
		})
		f.Evidence = fmt.Sprintf("%s; leader %s restartCount %d → %d, Lease holder now %q", ev, holder, before, after, newHolder)
	}, nil
}

// restartControlPlane stops and starts etcd and the API server; evidence: the
// API server runs with another pid.
func (r *run) restartControlPlane(ctx context.Context, f *Fault) error {
	pidPath := filepath.Join(r.cfg.Dir, "run", "kube-apiserver.pid")
	before := firstField(pidPath)
	f.Targets = []string{"etcd", "kube-apiserver"}
	cctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	f.Start = time.Now()
	ev, err := r.faults.RestartControlPlane(cctx)
	f.Healed = time.Now()
	after := firstField(pidPath)
	f.Happened = err == nil && before != "" && after != "" && before != after
	f.Evidence = fmt.Sprintf("%s; pid file of kube-apiserver %s → %s", ev, before, after)
	return err
}

func firstField(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return ""
}

// nodeDown takes down the node of a member pod for at least the hold, and
// until the Node is NotReady; then brings it back and waits for Ready.
// Evidence: the Node went NotReady or Unknown and the pod's processes died.
func (r *run) nodeDown(ctx context.Context, f *Fault, t *target, s Step) error {
	host, err := r.member(ctx, t, s.Target)
	if err != nil {
		return err
	}
	pod := podOf(host)
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	p, err := r.kube.CoreV1().Pods(t.ns).Get(gctx, pod, metav1.GetOptions{})
	cancel()
	if err != nil {
		return err
	}
	node := p.Spec.NodeName
	f.Targets = []string{node, host}
	f.Start = time.Now()
	ev, err := r.faults.NodeDown(ctx, node)
	if err != nil {
		return err
	}
	pids, perr := kubelet.PodProcesses(r.cfg.Dir, t.ns, pod)
	died := perr == nil && len(pids) == 0
	hold := time.Now().Add(s.Hold)
	notReady := until(ctx, evidenceBound, func() bool {
		return r.nodeReady(ctx, node) == corev1.ConditionFalse || r.nodeReady(ctx, node) == corev1.ConditionUnknown
	})
	sleep(ctx, time.Until(hold))
	uerr := r.faults.NodeUp(context.WithoutCancel(ctx), node)
	f.Healed = time.Now()
	ready := until(ctx, evidenceBound, func() bool { return r.nodeReady(ctx, node) == corev1.ConditionTrue })
	f.Happened = notReady && died
	f.Evidence = fmt.Sprintf("%s; Node %s NotReady seen %t, pod %s processes gone %t, Ready again %t", ev, node, notReady, pod, died, ready)
	return uerr
}

// nodeReady is the Node's Ready condition status ("" when unreadable).
func (r *run) nodeReady(ctx context.Context, node string) corev1.ConditionStatus {
	gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	n, err := r.kube.CoreV1().Nodes().Get(gctx, node, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}
