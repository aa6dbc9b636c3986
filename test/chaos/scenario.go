package chaos

import (
	"context"
	"time"

	"github.com/rs/zerolog"
	"k8s.io/client-go/kubernetes"

	"github.com/mgors/operator/kube/client"
)

// Scenario replaces the seeded schedule of faults in Run (Config.Scenario):
// it runs after the warm-up, under the workload and the samplers, injects its
// own faults with Scene.Faults, records them with Scene.Record, and returns
// once the run may end (Run then stops the workload, reads the final state
// and collects the logs as after a schedule). An error ends the run with it.
type Scenario func(ctx context.Context, s *Scene) error

// Scene is what a Scenario sees of its run.
type Scene struct{ r *run }

// ClusterRef is one Mgors of the run.
type ClusterRef struct {
	Namespace, Name string
	// Hosts are the voting members' host:port, data members first.
	Hosts []string
}

// Kube and Mgors are the run's clients; Faults its injector; Dir the localkube
// cluster's directory; Log the run's logger.
func (s *Scene) Kube() kubernetes.Interface { return s.r.kube }
func (s *Scene) Mgors() client.Interface    { return s.r.mgors }
func (s *Scene) Faults() Faults             { return s.r.faults }
func (s *Scene) Dir() string                { return s.r.cfg.Dir }
func (s *Scene) Log() zerolog.Logger        { return s.r.log }

// Clusters are the run's Mgors, in the order of History.Clusters.
func (s *Scene) Clusters() []ClusterRef {
	var out []ClusterRef
	for _, t := range s.r.clusters {
		out = append(out, ClusterRef{Namespace: t.ns, Name: t.name, Hosts: append([]string(nil), t.hosts...)})
	}
	return out
}

// Member picks a data member of the i-th cluster in role from the latest
// samples (as the schedule's faults do).
func (s *Scene) Member(ctx context.Context, i int, role Role) (string, error) {
	return s.r.member(ctx, s.r.clusters[i], role)
}

// Samples are the member samples of the i-th cluster taken in [from, to].
func (s *Scene) Samples(i int, from, to time.Time) []MemberSample {
	return s.r.rec.samplesOf(s.r.clusters[i].key, from, to)
}

// WaitHealthy waits, within Config.Healthy, until every cluster is Healthy as
// the schedule's heals are judged (the Mgors Healthy at its generation, every
// member pod Ready, the samples since since show every member and one primary).
func (s *Scene) WaitHealthy(ctx context.Context, since time.Time) (time.Time, error) {
	return s.r.waitHealthy(ctx, since)
}

// ExpectDeletion tells the run's pod watcher that the fault the scenario
// records next deletes pod (namespace/name): the checker then knows who
// deleted it (a deletion by no fault while no operator led is a violation).
func (s *Scene) ExpectDeletion(pod string) {
	s.r.rec.mu.Lock()
	id := len(s.r.rec.h.Faults) + 1
	s.r.rec.mu.Unlock()
	s.r.expectDeletion(pod, id)
}

// Record adds a fault to the history and returns its ID (f.ID is ignored).
func (s *Scene) Record(f Fault) int {
	s.r.rec.mu.Lock()
	defer s.r.rec.mu.Unlock()
	f.ID = len(s.r.rec.h.Faults) + 1
	s.r.rec.h.Faults = append(s.r.rec.h.Faults, f)
	return f.ID
}

// KeepSecret adds to the run's secret scan values its Secrets no longer
// hold at the end, such as the key a keyfile rotation retired: no log,
// Event, event log or status may show them either, and the report redacts
// them. Give each key alone, never a composite value.
func (s *Scene) KeepSecret(values ...string) {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	s.r.kept = append(s.r.kept, values...)
}
