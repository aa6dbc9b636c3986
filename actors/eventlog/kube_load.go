package eventlog

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Load lists the stream's segments and snapshot and decodes them in order.
func (k *Kube) Load(ctx context.Context, s Stream) (*Snapshot, []Record, error) {
	if err := s.valid(); err != nil {
		return nil, nil, err
	}
	st := k.state(s)
	st.mu.Lock()
	defer st.mu.Unlock()
	return k.loadLocked(ctx, s, st)
}

// History is every record the stream's segments hold, those a snapshot
// covers but its compaction kept (KeepRecords) included, in seq order: what
// a person reads; an actor loads with Load.
func (k *Kube) History(ctx context.Context, s Stream) ([]Record, error) {
	if err := s.valid(); err != nil {
		return nil, err
	}
	_, all, _, err := k.read(ctx, s)
	return all, err
}

// read lists the stream's ConfigMaps with one List (a quorum read: no
// resourceVersion, so never a stale cache): its snapshot, every record of its
// segments in order, and the segments.
func (k *Kube) read(ctx context.Context, s Stream) (*Snapshot, []Record, []corev1.ConfigMap, error) {
	cctx, cancel := k.call(ctx)
	defer cancel()
	list, err := k.client.CoreV1().ConfigMaps(s.Namespace).List(cctx, metav1.ListOptions{
		LabelSelector: LabelUID + "=" + s.UID,
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("eventlog: listing the log of %s: %w", s, err)
	}
	var snap *Snapshot
	var segments []corev1.ConfigMap
	for _, cm := range list.Items {
		switch {
		case cm.Name == snapshotName(s):
			snap = &Snapshot{}
			if err := json.Unmarshal([]byte(cm.Data[snapshotKey]), snap); err != nil {
				return nil, nil, nil, fmt.Errorf("eventlog: %s: snapshot %s: %w", s, cm.Name, err)
			}
		case strings.HasPrefix(cm.Name, s.Name+"-eventlog-"+uidPrefix(s)+"-"):
			segments = append(segments, cm)
		}
	}
	sort.Slice(segments, func(i, j int) bool { return segmentIndex(segments[i]) < segmentIndex(segments[j]) })
	var all []Record
	for _, seg := range segments {
		recs, err := SegmentRecords(seg)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("eventlog: %s: segment %s: %w", s, seg.Name, err)
		}
		all = append(all, recs...)
	}
	return snap, all, segments, nil
}

// loadLocked reads the whole stream and leaves st pointing at the newest
// segment, as the API server holds it.
func (k *Kube) loadLocked(ctx context.Context, s Stream, st *kubeStream) (*Snapshot, []Record, error) {
	snap, all, segments, err := k.read(ctx, s)
	if err != nil {
		return nil, nil, err
	}
	base := int64(0)
	if snap != nil {
		base = snap.Seq
	}
	recs := after(all, base)
	if err := CheckSequence(base, recs); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", s, err)
	}
	st.loaded, st.last, st.head, st.index = true, base, nil, 0
	if n := len(recs); n > 0 {
		st.last = recs[n-1].Seq
	}
	if n := len(segments); n > 0 {
		newest := segments[n-1]
		st.index = segmentIndex(newest)
		if _, legacy := newest.Data[legacyKey]; !legacy {
			st.head = &segmentHead{name: newest.Name, resourceVersion: newest.ResourceVersion, size: dataSize(newest.Data)}
			st.head.chunk = lastChunk(newest.Data)
			st.head.lines = newest.Data[st.head.chunk]
		}
	}
	return snap, recs, nil
}

// SegmentRecords returns a segment ConfigMap's records in seq order (tools
// that follow a log by watching its ConfigMaps read them with it): the legacy JSON
// lines first (a segment written before records were kept in chunks), then
// each chunk's lines in key order. A key that is not a chunk's, a chunk that
// does not begin with its key's record, or a torn line is an error: nothing
// is skipped silently.
func SegmentRecords(cm corev1.ConfigMap) ([]Record, error) {
	var out []Record
	keys := make([]string, 0, len(cm.Data))
	for key := range cm.Data {
		if key != legacyKey {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys) // zero-padded: the order of the seqs
	if _, ok := cm.Data[legacyKey]; ok {
		keys = append([]string{legacyKey}, keys...)
	}
	for _, key := range keys {
		seq, ok := chunkSeq(key)
		if !ok && key != legacyKey {
			return nil, fmt.Errorf("key %q is not a chunk's", key)
		}
		d, err := Decode(strings.NewReader(cm.Data[key]))
		if err != nil {
			return nil, fmt.Errorf("chunk %s: %w", key, err)
		}
		if d.TornTail {
			return nil, fmt.Errorf("chunk %s ends in a partial line", key)
		}
		if ok && (len(d.Records) == 0 || d.Records[0].Seq != seq) {
			return nil, fmt.Errorf("chunk %s does not begin with record %d", key, seq)
		}
		out = append(out, d.Records...)
	}
	return out, nil
}

// lastChunk is the key of a segment's newest chunk, "" when it has none.
func lastChunk(data map[string]string) string {
	newest := ""
	for key := range data {
		if _, ok := chunkSeq(key); ok && key > newest {
			newest = key
		}
	}
	return newest
}

func segmentIndex(cm corev1.ConfigMap) int {
	n, err := strconv.Atoi(cm.Annotations[annotationIndex])
	if err != nil {
		return 0
	}
	return n
}
