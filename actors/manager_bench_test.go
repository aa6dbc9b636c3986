package actors

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube/api/v1alpha1"
)

// BenchmarkManagerHeapPerCluster is the heap a Manager holds per Healthy
// cluster it runs (actor, state, mailbox, latest spec; the fake world's
// share included, the event store's excluded by SnapshotEvery): what a
// sharded replica saves for each cluster it does not own.
func BenchmarkManagerHeapPerCluster(b *testing.B) {
	for _, n := range []int{30, 90} {
		b.Run(fmt.Sprintf("clusters=%d", n), func(b *testing.B) {
			for range b.N {
				store := eventlog.NewMemory()
				world := &worlds{by: map[string]*fakeWorld{}}
				deps := testDeps(store, world)
				deps.Interval = time.Second
				sys := actor.NewActorSystem()
				mgr, err := sys.Root.SpawnNamed(NewManagerProps(deps), "manager")
				if err != nil {
					b.Fatal(err)
				}
				var before, after runtime.MemStats
				runtime.GC()
				runtime.GC()
				runtime.ReadMemStats(&before)
				for i := range n {
					m := mgors()
					m.Name, m.UID = fmt.Sprintf("rs-%02d", i), k8stypes.UID(fmt.Sprintf("uid-%02d", i))
					sys.Root.Send(mgr, ClusterChanged{Mgors: m})
				}
				deadline := time.Now().Add(3 * time.Minute)
				for healthy := 0; healthy < n; {
					if time.Now().After(deadline) {
						b.Fatal("the clusters did not all become Healthy")
					}
					time.Sleep(50 * time.Millisecond)
					healthy = 0
					for i := range n {
						name := fmt.Sprintf("rs-%02d", i)
						m := &v1alpha1.Mgors{}
						m.Namespace, m.Name = "db", name
						if world.of(m).phase("db/"+name) == v1alpha1.PhaseHealthy {
							healthy++
						}
					}
				}
				runtime.GC()
				runtime.GC()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(n), "heap-B/cluster")
				_ = sys.Root.PoisonFuture(mgr).Wait()
			}
		})
	}
}
