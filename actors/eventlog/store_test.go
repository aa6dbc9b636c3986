package eventlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	mgorsfake "github.com/mgors/operator/kube/client/fake"
)

func rec(s Stream, seq int64, typ string) Record {
	return Record{
		Seq: seq, Time: time.Date(2026, 11, 29, 12, 0, 0, int(seq), time.UTC),
		Cluster: s.Key(), UID: s.UID, Type: typ, Version: 1, Cause: "test",
		Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, seq)),
	}
}

// stores returns a fresh instance of every Store, so one conformance test
// holds them all to the same rules.
func stores(t *testing.T) map[string]Store {
	f, err := NewFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	k := NewKube(apiServerLike())
	k.SegmentBytes = 600 // a few records per segment, to exercise rotation
	return map[string]Store{"memory": NewMemory(), "file": f, "kube": k}
}

func TestStoreConformance(t *testing.T) {
	ctx := context.Background()
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			s := Stream{Namespace: "db", Name: "demo", UID: "u-1"}
			other := Stream{Namespace: "db", Name: "demo", UID: "u-2"} // a re-created Mgors

			snap, recs, err := st.Load(ctx, s)
			if err != nil || snap != nil || len(recs) != 0 {
				t.Fatalf("empty stream loads %v %v %v", snap, recs, err)
			}
			if err := st.Append(ctx, s, rec(s, 1, "A"), rec(s, 2, "B")); err != nil {
				t.Fatal(err)
			}
			for i := int64(3); i <= 12; i++ {
				if err := st.Append(ctx, s, rec(s, i, "C")); err != nil {
					t.Fatalf("append %d: %v", i, err)
				}
			}
			// Gaps and repeats are refused.
			if err := st.Append(ctx, s, rec(s, 14, "X")); !errors.Is(err, ErrSequence) {
				t.Fatalf("gap: err = %v, want ErrSequence", err)
			}
			if err := st.Append(ctx, s, rec(s, 12, "X")); !errors.Is(err, ErrSequence) {
				t.Fatalf("repeat: err = %v, want ErrSequence", err)
			}
			// Another incarnation is another stream.
			if err := st.Append(ctx, other, rec(other, 1, "A")); err != nil {
				t.Fatal(err)
			}
			_, recs, err = st.Load(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != 12 || CheckSequence(0, recs) != nil {
				t.Fatalf("loaded %d records, sequence err %v", len(recs), CheckSequence(0, recs))
			}
			if string(recs[4].Data) != `{"n":5}` || recs[4].Type != "C" || !recs[4].Time.Equal(rec(s, 5, "C").Time) {
				t.Fatalf("record 5 round-tripped as %+v", recs[4])
			}
			// Snapshots compact; loading returns the snapshot and what follows it.
			if err := st.SaveSnapshot(ctx, s, Snapshot{Seq: 15, State: json.RawMessage(`{}`)}); err == nil {
				t.Fatal("a snapshot ahead of the log was accepted")
			}
			if err := st.SaveSnapshot(ctx, s, Snapshot{Seq: 10, Time: time.Now(), State: json.RawMessage(`{"phase":"Healthy"}`)}); err != nil {
				t.Fatal(err)
			}
			snap, recs, err = st.Load(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			if snap == nil || snap.Seq != 10 || string(snap.State) != `{"phase":"Healthy"}` {
				t.Fatalf("snapshot = %+v", snap)
			}
			if len(recs) != 2 || recs[0].Seq != 11 || recs[1].Seq != 12 {
				t.Fatalf("after the snapshot: %+v", recs)
			}
			// An older snapshot saved late (a stopped actor's goroutine) is
			// ignored: the records the newer one compacted are gone.
			if err := st.SaveSnapshot(ctx, s, Snapshot{Seq: 7, Time: time.Now(), State: json.RawMessage(`{"phase":"Recovering"}`)}); err != nil {
				t.Fatal(err)
			}
			if snap, recs, _ := st.Load(ctx, s); snap == nil || snap.Seq != 10 || len(recs) != 2 {
				t.Fatalf("an older snapshot replaced a newer one: %+v %d records", snap, len(recs))
			}
			if err := st.Append(ctx, s, rec(s, 13, "D")); err != nil {
				t.Fatalf("append after snapshot: %v", err)
			}
			_, recs, _ = st.Load(ctx, s)
			if len(recs) != 3 || recs[2].Seq != 13 {
				t.Fatalf("after append: %+v", recs)
			}
			if _, recs, _ := st.Load(ctx, other); len(recs) != 1 {
				t.Fatalf("the other incarnation has %d records", len(recs))
			}
			if err := st.Delete(ctx, s); err != nil {
				t.Fatal(err)
			}
			if snap, recs, _ := st.Load(ctx, s); snap != nil || len(recs) != 0 {
				t.Fatalf("deleted stream still loads %v %v", snap, recs)
			}
		})
	}
}

// A second writer (a deposed leader with a stale view) must fail, not interleave.
func TestStoreSecondWriterRefused(t *testing.T) {
	ctx := context.Background()
	s := Stream{Namespace: "db", Name: "demo", UID: "u-1"}
	for name, mk := range map[string]func(t *testing.T) (Store, Store){
		"file": func(t *testing.T) (Store, Store) {
			dir := t.TempDir()
			a, _ := NewFile(dir)
			b, _ := NewFile(dir)
			return a, b
		},
		"kube": func(t *testing.T) (Store, Store) {
			c := apiServerLike()
			return NewKube(c), NewKube(c)
		},
	} {
		t.Run(name, func(t *testing.T) {
			a, b := mk(t)
			if err := a.Append(ctx, s, rec(s, 1, "A")); err != nil {
				t.Fatal(err)
			}
			if _, _, err := b.Load(ctx, s); err != nil {
				t.Fatal(err)
			}
			if err := a.Append(ctx, s, rec(s, 2, "A")); err != nil {
				t.Fatal(err)
			}
			// b still believes the log ends at 1.
			if err := b.Append(ctx, s, rec(s, 2, "B")); !errors.Is(err, ErrSequence) {
				t.Fatalf("a stale writer's append: err = %v, want ErrSequence", err)
			}
			_, recs, err := a.Load(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				if r.Type == "B" {
					t.Fatal("the stale writer's record is in the log")
				}
			}
		})
	}
}

// apiServerLike is a fake clientset whose ConfigMaps, like the API server's,
// get a resourceVersion on every write and refuse a stale one.
func apiServerLike() *fake.Clientset {
	return mgorsfake.Versioned(fake.NewClientset(), "configmaps")
}

// A snapshot is fenced like an append: a writer whose view of the log is stale
// (another writer appended after its last load) or that has no view at all
// saves nothing; the current writer's snapshot is saved.
func TestStoreStaleSnapshotRefused(t *testing.T) {
	ctx := context.Background()
	s := Stream{Namespace: "db", Name: "demo", UID: "u-1"}
	for name, mk := range map[string]func(t *testing.T) (Store, Store, Store){
		"file": func(t *testing.T) (Store, Store, Store) {
			dir := t.TempDir()
			a, _ := NewFile(dir)
			b, _ := NewFile(dir)
			c, _ := NewFile(dir)
			return a, b, c
		},
		"kube": func(t *testing.T) (Store, Store, Store) {
			c := apiServerLike()
			return NewKube(c), NewKube(c), NewKube(c)
		},
	} {
		t.Run(name, func(t *testing.T) {
			a, b, blind := mk(t)
			if err := a.Append(ctx, s, rec(s, 1, "A")); err != nil {
				t.Fatal(err)
			}
			if _, _, err := b.Load(ctx, s); err != nil {
				t.Fatal(err)
			}
			if err := a.Append(ctx, s, rec(s, 2, "A")); err != nil {
				t.Fatal(err)
			}
			if err := b.SaveSnapshot(ctx, s, Snapshot{Seq: 1, State: []byte(`{"by":"B"}`)}); !errors.Is(err, ErrSequence) {
				t.Fatalf("a stale writer's snapshot: err = %v, want ErrSequence", err)
			}
			if err := blind.SaveSnapshot(ctx, s, Snapshot{Seq: 2, State: []byte(`{"by":"blind"}`)}); !errors.Is(err, ErrSequence) {
				t.Fatalf("a snapshot without a view of the log: err = %v, want ErrSequence", err)
			}
			if err := a.SaveSnapshot(ctx, s, Snapshot{Seq: 2, State: []byte(`{"by":"A"}`)}); err != nil {
				t.Fatalf("the current writer's snapshot: %v", err)
			}
			snap, _, err := a.Load(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			if snap == nil || string(snap.State) != `{"by":"A"}` {
				t.Fatalf("snapshot %+v, want the current writer's", snap)
			}
		})
	}
}
