package chaos

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/mgors/operator/actors/eventlog"
)

// A snapshot deletes the segments it covers; the records the run followed
// before that are still in the collected log, in order, without duplicates.
func TestFollowedLogKeepsCompactedRecords(t *testing.T) {
	ctx := context.Background()
	kc := fake.NewClientset()
	store := eventlog.NewKube(kc)
	store.SegmentBytes = 600 // a few records per segment
	s := eventlog.Stream{Namespace: "db", Name: "demo", UID: "u-1"}
	f := newFollowedLogs()
	follow := func() {
		l, err := kc.CoreV1().ConfigMaps("db").List(ctx, metav1.ListOptions{LabelSelector: eventlog.LabelEventLog})
		if err != nil {
			t.Fatal(err)
		}
		for i := range l.Items {
			f.add(&l.Items[i])
		}
	}
	for seq := int64(1); seq <= 20; seq++ {
		rec := eventlog.Record{Seq: seq, Time: time.Date(2026, 12, 2, 12, 0, 0, int(seq), time.UTC), Cluster: s.Key(),
			UID: s.UID, Type: "Test", Version: 1, Data: json.RawMessage(`{}`)}
		if err := store.Append(ctx, s, rec); err != nil {
			t.Fatal(err)
		}
		follow()
	}
	if err := store.SaveSnapshot(ctx, s, eventlog.Snapshot{Seq: 18}); err != nil {
		t.Fatal(err)
	}
	_, loaded, err := store.Load(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded) != 2 {
		t.Fatalf("the store loads %d records after the snapshot, want 2", len(loaded))
	}
	got := f.merged(s, loaded)
	if len(got) != 20 {
		t.Fatalf("merged %d records, want 20", len(got))
	}
	for i, rec := range got {
		if rec.Seq != int64(i+1) {
			t.Fatalf("record %d has seq %d", i, rec.Seq)
		}
	}
	if other := f.merged(eventlog.Stream{Namespace: "db", Name: "demo", UID: "u-2"}, nil); len(other) != 0 {
		t.Errorf("another incarnation's stream has %d records", len(other))
	}
}
