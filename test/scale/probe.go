package scale

import (
	"context"
	"sync"
	"time"

	"github.com/mgors/operator/actors/eventlog"
)

// Probe wraps the event store both rows append to and notes, per cluster,
// when an append starts: the moment the actor (or the baseline's
// reconciler) decided its first event for a change. The harness asks for
// the first append of a cluster after a fault with Expect.
type Probe struct {
	eventlog.Store

	mu      sync.Mutex
	waiting map[string]*expected // by namespace/name
}

type expected struct {
	after time.Time
	got   chan time.Time
}

// Append notes the time, then appends.
func (p *Probe) Append(ctx context.Context, s eventlog.Stream, recs ...eventlog.Record) error {
	now := time.Now()
	key := s.Namespace + "/" + s.Name
	p.mu.Lock()
	if e := p.waiting[key]; e != nil && !now.Before(e.after) {
		e.got <- now
		delete(p.waiting, key)
	}
	p.mu.Unlock()
	return p.Store.Append(ctx, s, recs...)
}

// Expect returns a channel that receives the start of the cluster's first
// append at or after after (one expectation per cluster at a time).
func (p *Probe) Expect(cluster string, after time.Time) <-chan time.Time {
	e := &expected{after: after, got: make(chan time.Time, 1)}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.waiting == nil {
		p.waiting = map[string]*expected{}
	}
	p.waiting[cluster] = e
	return e.got
}

// Cancel drops the cluster's expectation (it timed out).
func (p *Probe) Cancel(cluster string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.waiting, cluster)
}
