package scale

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// faults is the fault schedule, the same for both rows: c.Faults clusters
// (every N/Faults-th), one fault every c.Spacing, each undone once its
// reaction came (or the wait ended).
type faults struct {
	h        *harness
	env      *Env
	members  *Members
	kubelet  *Kubelet
	clusters []*v1alpha1.Mgors
	c        Config

	mu sync.Mutex
	// delivered are, for the kills, how long after the write's answer the
	// harness's own watch of the pods saw it; undelivered counts the kills
	// it did not see within the wait.
	delivered   []time.Duration
	undelivered int
}

// inject does one fault to m and returns when its write was answered; undo
// puts it back.
type inject func(ctx context.Context, m *v1alpha1.Mgors) (undo func(context.Context), err error)

// run injects one kind of fault into each chosen cluster and returns the
// reactions (from the fault write's answer to the start of the cluster's
// first append after the write was sent), how many had none within the
// wait, and the fault writes' round trips.
func (f *faults) run(ctx context.Context, do inject) (reactions []time.Duration, missed int, writes []time.Duration) {
	n := min(f.c.Faults, len(f.clusters))
	if n <= 0 {
		return nil, 0, nil
	}
	stride := len(f.clusters) / n
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		m := f.clusters[i*stride]
		key := m.Namespace + "/" + m.Name
		sent := time.Now()
		got := f.env.Store.Expect(key, sent)
		undo, err := do(ctx, m)
		answered := time.Now()
		if err != nil {
			f.env.Store.Cancel(key)
			f.c.Log.Warn().Err(err).Str("cluster", key).Msg("fault not injected")
			mu.Lock()
			missed++
			mu.Unlock()
			continue
		}
		wg.Go(func() {
			t := time.NewTimer(f.c.Wait)
			defer t.Stop()
			select {
			case at := <-got:
				mu.Lock()
				reactions = append(reactions, max(at.Sub(answered), 0))
				writes = append(writes, answered.Sub(sent))
				mu.Unlock()
			case <-t.C:
				f.env.Store.Cancel(key)
				mu.Lock()
				missed++
				mu.Unlock()
			case <-ctx.Done():
			}
			sleep(ctx, time.Second) // let the first decision be acted on before undoing
			undo(ctx)
		})
		sleep(ctx, f.c.Spacing)
	}
	wg.Wait()
	return reactions, missed, writes
}

// kill takes member 0 down: its mongod stops answering, then its pod is
// written not Ready (the write the reaction is measured from).
func (f *faults) kill(ctx context.Context, m *v1alpha1.Mgors) (func(context.Context), error) {
	host := m.MemberHost(0, clusterDomain)
	rs := f.members.set(host)
	rs.Stop(host)
	pod := m.PodName(0)
	f.kubelet.Track(pod)
	rv, err := f.kubelet.Down(ctx, pod, true)
	answered := time.Now()
	if err != nil {
		rs.Start(host)
		return nil, err
	}
	seen := make(chan struct{})
	go func() {
		defer close(seen)
		at, ok := f.kubelet.Seen(ctx, pod, rv, f.c.Wait)
		f.mu.Lock()
		defer f.mu.Unlock()
		if !ok {
			f.undelivered++
			return
		}
		f.delivered = append(f.delivered, max(at.Sub(answered), 0))
	}()
	return func(ctx context.Context) {
		<-seen // the watch saw the kill before the pod is let up
		rs.Start(host)
		_, _ = f.kubelet.Down(ctx, pod, false)
	}, nil
}

// deliveries are the kills' delivery times so far and how many were not seen.
func (f *faults) deliveries() ([]time.Duration, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.delivered), f.undelivered
}

// spec pauses the cluster (a spec change that asks for no work), and
// unpauses it to undo.
func (f *faults) spec(ctx context.Context, m *v1alpha1.Mgors) (func(context.Context), error) {
	if err := f.pause(ctx, m, true); err != nil {
		return nil, err
	}
	return func(ctx context.Context) { _ = f.pause(ctx, m, false) }, nil
}

func (f *faults) pause(ctx context.Context, m *v1alpha1.Mgors, paused bool) error {
	b, err := json.Marshal(map[string]any{"spec": map[string]any{"paused": paused}})
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = f.h.mc.Mgorses(m.Namespace).Patch(cctx, m.Name, types.MergePatchType, b, metav1.PatchOptions{})
	return err
}
