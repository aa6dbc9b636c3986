package scale

import (
	"slices"
	"sync"
	"time"

	"github.com/mgors/operator/actors"
	"github.com/mgors/operator/kube/api/v1alpha1"
)

// Observations collects how long each observation (World.Observe) took,
// in either row: what a reaction waits for. It is the actors' Metrics (the
// other measurements are dropped).
type Observations struct {
	mu  sync.Mutex
	got []time.Duration
}

var _ actors.Metrics = (*Observations)(nil)

// Add records one observation's duration.
func (o *Observations) Add(d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.got = append(o.got, d)
}

// Take returns the durations recorded since the last Take and forgets them.
func (o *Observations) Take() []time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := slices.Clone(o.got)
	o.got = o.got[:0]
	return out
}

// Observed implements actors.Metrics.
func (o *Observations) Observed(_ string, d time.Duration, _ error) { o.Add(d) }

// Phase implements actors.Metrics.
func (o *Observations) Phase(string, v1alpha1.Phase) {}

// Transition implements actors.Metrics.
func (o *Observations) Transition(string, v1alpha1.Phase, v1alpha1.Phase) {}

// Health implements actors.Metrics.
func (o *Observations) Health(string, actors.Health) {}

// Acted implements actors.Metrics.
func (o *Observations) Acted(string, actors.ActionKind, time.Duration, error) {}

// Forget implements actors.Metrics.
func (o *Observations) Forget(string) {}
