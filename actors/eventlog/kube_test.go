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

// legacySegment is a segment as stores before one key per record wrote it:
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

// An append sends its records only: the patch does not grow with the segment,
// and no segment is ever sent whole again.
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
	for seq := int64(1); seq <= 300; seq++ {
		if err := k.Append(ctx, s, rec(s, seq, "MembersObserved")); err != nil {
			t.Fatal(err)
		}
	}
	if len(patches) != 299 {
		t.Fatalf("%d patches for 299 appends after the first", len(patches))
	}
	line, _ := EncodeLine(rec(s, 300, "MembersObserved"))
	for i, n := range patches {
		if n > 2*len(line)+100 {
			t.Fatalf("append %d sent %d bytes for a %d-byte record", i+2, n, len(line))
		}
	}
}

func TestDecodeSegmentRefusesWhatIsNotARecord(t *testing.T) {
	s := Stream{Namespace: "db", Name: "demo", UID: "u-1"}
	line := func(seq int64) string { b, _ := EncodeLine(rec(s, seq, "A")); return string(b) }
	for name, data := range map[string]map[string]string{
		"foreign key":     {recordKey(1): line(1), "notes": "x"},
		"seq off its key": {recordKey(1): line(2)},
		"bad record":      {recordKey(1): "{"},
		"torn legacy":     {legacyKey: strings.TrimSuffix(line(1), "\n")[:20]},
	} {
		if _, err := decodeSegment(corev1.ConfigMap{Data: data}); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	recs, err := decodeSegment(corev1.ConfigMap{Data: map[string]string{
		recordKey(10): line(10), legacyKey: line(8) + line(9), recordKey(11): line(11),
	}})
	if err != nil || len(recs) != 4 || CheckSequence(7, recs) != nil {
		t.Fatalf("a segment with legacy lines and keys: %v %v", recs, err)
	}
	if _, ok := keySeq(recordKey(1 << 62)); !ok {
		t.Error("a large seq's key does not read back")
	}
}
