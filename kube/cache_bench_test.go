package kube

import (
	"encoding/json"
	"runtime"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// BenchmarkCachedStatefulSetHeap is the live heap one cached StatefulSet of
// a cluster holds, decoded from the object the operator builds, whole
// (heap-B/whole) and as Transform leaves it in the informer (heap-B/cached).
// Measured, never asserted.
func BenchmarkCachedStatefulSetHeap(b *testing.B) {
	replicas := int32(3)
	raw, err := json.Marshal(StatefulSet(sample(), Options{ClusterDomain: "cluster.local", Replicas: &replicas}))
	if err != nil {
		b.Fatal(err)
	}
	const n = 1000
	held := func(transform bool) float64 {
		keep := make([]any, n)
		before := liveHeap()
		for i := range keep {
			s := &appsv1.StatefulSet{}
			if err := json.Unmarshal(raw, s); err != nil {
				b.Fatal(err)
			}
			keep[i] = s
			if transform {
				keep[i], _ = Transform(s)
			}
		}
		after := liveHeap()
		runtime.KeepAlive(keep)
		return float64(after-before) / n
	}
	for range b.N {
		b.ReportMetric(held(false), "heap-B/whole")
		b.ReportMetric(held(true), "heap-B/cached")
	}
}

func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	return int64(s.HeapAlloc)
}
