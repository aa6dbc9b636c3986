package eventlog

import (
	"context"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

// legacySegment is a segment as stores before chunks wrote it:
// every record as a JSON line under log.jsonl.
func legacySegment(k *Kube, s Stream, index int, recs ...Record) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: k.meta(s, segmentName(s, index)), Data: map[string]string{legacyKey: string(lines(recs...))}}
	cm.Annotations = map[string]string{
		annotationFirst: "1", annotationLast: "0", annotationIndex: strconv.Itoa(index),
	}
	return cm
}

// A stream written by an older operator (legacy segments) loads, and appends
// continue it in new segments, never inside a legacy one.
func TestKubeReadsLegacySegments(t *testing.T) {
	ctx := context.Background()
	s := Stream{Namespace: "db", Name: "demo", UID: "u-1"}
	c := apiServerLike()
	k := NewKube(c)
	k.SegmentBytes = 600
	for i, seg := range []*corev1.ConfigMap{
		legacySegment(k, s, 1, rec(s, 1, "A"), rec(s, 2, "B")),
		legacySegment(k, s, 2, rec(s, 3, "C")),
	} {
		if _, err := c.CoreV1().ConfigMaps(s.Namespace).Create(ctx, seg, metav1.CreateOptions{}); err != nil {
			t.Fatalf("segment %d: %v", i+1, err)
		}
	}
	for seq := int64(4); seq <= 8; seq++ {
		if err := k.Append(ctx, s, rec(s, seq, "D")); err != nil {
			t.Fatalf("append %d: %v", seq, err)
		}
	}
	legacy, err := c.CoreV1().ConfigMaps(s.Namespace).Get(ctx, segmentName(s, 2), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(legacy.Data) != 1 {
		t.Fatalf("the legacy segment was extended: keys %v", legacy.Data)
	}
	_, recs, err := NewKube(c).Load(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 8 || CheckSequence(0, recs) != nil || recs[1].Type != "B" || recs[7].Type != "D" {
		t.Fatalf("loaded %+v", recs)
	}
}

// An append sends its records and at most one chunk: the patch does not grow
// with the segment, no segment is ever sent whole again, and the segment's
// keys are chunks, not records.
func TestKubeAppendSendsOnlyTheEvent(t *testing.T) {
	ctx := context.Background()
	s := Stream{Namespace: "db", Name: "demo", UID: "u-1"}
	c := apiServerLike()
	var patches []int
	c.PrependReactor("*", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		switch a.GetVerb() {
		case "patch":
			patches = append(patches, len(a.(k8stesting.PatchAction).GetPatch()))
		case "update":
			t.Errorf("an append updated %s whole", a.(k8stesting.UpdateAction).GetObject().(metav1.Object).GetName())
		}
		return false, nil, nil
	})
	k := NewKube(c)
	k.SegmentBytes = 64 << 10 // one segment, several chunks
	for seq := int64(1); seq <= 120; seq++ {
		if err := k.Append(ctx, s, rec(s, seq, "MembersObserved")); err != nil {
			t.Fatal(err)
		}
	}
	if len(patches) != 119 {
		t.Fatalf("%d patches for 119 appends after the first", len(patches))
	}
	line, _ := EncodeLine(rec(s, 120, "MembersObserved"))
	for i, n := range patches {
		if n > 2*(k.ChunkBytes+len(line))+200 { // JSON escapes each quote
			t.Fatalf("append %d sent %d bytes for a %d-byte record (chunks hold %d)", i+2, n, len(line), k.ChunkBytes)
		}
	}
	seg, err := c.CoreV1().ConfigMaps(s.Namespace).Get(ctx, segmentName(s, 1), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if most := 120*len(line)/k.ChunkBytes + 2; len(seg.Data) > most {
		t.Fatalf("120 records in %d keys, want at most %d chunks", len(seg.Data), most)
	}
	// A new store (a restarted operator) goes on in the open chunk.
	k2 := NewKube(c)
	if err := k2.Append(ctx, s, rec(s, 121, "MembersObserved")); err != nil {
		t.Fatal(err)
	}
	_, recs, err := NewKube(c).Load(ctx, s)
	if err != nil || len(recs) != 121 || CheckSequence(0, recs) != nil {
		t.Fatalf("loaded %d records: %v", len(recs), err)
	}
}

func TestDecodeSegmentRefusesWhatIsNotARecord(t *testing.T) {
	s := Stream{Namespace: "db", Name: "demo", UID: "u-1"}
	line := func(seq int64) string { b, _ := EncodeLine(rec(s, seq, "A")); return string(b) }
	for name, data := range map[string]map[string]string{
		"foreign key":     {chunkKey(1): line(1), "notes": "x"},
		"seq off its key": {chunkKey(1): line(2)},
		"empty chunk":     {chunkKey(1): ""},
		"bad record":      {chunkKey(1): "{"},
		"torn chunk":      {chunkKey(1): line(1) + strings.TrimSuffix(line(2), "\n")},
		"torn legacy":     {legacyKey: strings.TrimSuffix(line(1), "\n")[:20]},
	} {
		if _, err := SegmentRecords(corev1.ConfigMap{Data: data}); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	recs, err := SegmentRecords(corev1.ConfigMap{Data: map[string]string{
		chunkKey(10): line(10) + line(11), legacyKey: line(8) + line(9), chunkKey(12): line(12),
	}})
	if err != nil || len(recs) != 5 || CheckSequence(7, recs) != nil {
		t.Fatalf("a segment with legacy lines and chunks: %v %v", recs, err)
	}
	if _, ok := chunkSeq(chunkKey(1 << 62)); !ok {
		t.Error("a large seq's key does not read back")
	}
}

// A snapshot's compaction keeps the segments holding the KeepRecords records
// before it: Load starts after the snapshot, History still has them.
func TestKubeKeepsHistoryBeforeTheSnapshot(t *testing.T) {
	ctx := context.Background()
	s := Stream{Namespace: "db", Name: "demo", UID: "u-1"}
	for _, keep := range []int64{0, 10} {
		k := NewKube(apiServerLike())
		k.SegmentBytes = 600 // a few records per segment
		k.KeepRecords = keep
		for seq := int64(1); seq <= 40; seq++ {
			if err := k.Append(ctx, s, rec(s, seq, "A")); err != nil {
				t.Fatalf("append %d: %v", seq, err)
			}
		}
		if err := k.SaveSnapshot(ctx, s, Snapshot{Seq: 38}); err != nil {
			t.Fatal(err)
		}
		_, recs, err := k.Load(ctx, s)
		if err != nil || len(recs) != 2 || recs[0].Seq != 39 {
			t.Fatalf("keep %d: loaded %d records from %v, %v; want 39 and 40", keep, len(recs), recs, err)
		}
		hist, err := k.History(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if hist[len(hist)-1].Seq != 40 || CheckSequence(hist[0].Seq-1, hist) != nil {
			t.Fatalf("keep %d: history %v is not the log's tail", keep, hist)
		}
		kept := 38 - hist[0].Seq + 1
		switch {
		case keep == 0 && hist[0].Seq <= 28:
			t.Errorf("keep 0: history starts at %d, compaction kept too much", hist[0].Seq)
		case keep > 0 && kept < keep:
			t.Errorf("keep %d: %d records before the snapshot kept", keep, kept)
		}
	}
}
