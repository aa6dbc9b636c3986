package actors

import (
	"testing"
	"time"

	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube/api/v1alpha1"
)

// BenchmarkReplay measures rebuilding a state from records (decode each
// payload and fold it), as recovery and mgorsctl replay do; ns/op is per record.
func BenchmarkReplay(b *testing.B) {
	s := eventlog.Stream{Namespace: "db", Name: "demo", UID: "u-1"}
	events := []Event{
		SpecObserved{Generation: 1, Members: 3},
		MembersObserved{Primary: "demo-0", ConfigVersion: 1, Members: []MemberDigest{{Name: "demo-0", State: "PRIMARY", Healthy: true}}},
		ActionStarted{Action: ActReconfig, Target: "demo-0", ConfigVersion: 2},
		ActionFinished{Action: ActReconfig},
		PhaseChanged{From: v1alpha1.PhaseHealthy, To: v1alpha1.PhaseRecovering, Reason: "r"},
	}
	var recs []eventlog.Record
	for i := 0; i < 1000; i++ {
		r, err := Encode(s, int64(i+1), time.Unix(0, 0), "bench", "bench", events[i%len(events)])
		if err != nil {
			b.Fatal(err)
		}
		recs = append(recs, r)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += len(recs) {
		if _, err := Fold(Initial(), recs); err != nil {
			b.Fatal(err)
		}
	}
}
