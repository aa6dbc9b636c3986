package eventlog

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Kube keeps each stream in the cluster itself, as segment ConfigMaps named
// <name>-eventlog-<uid8>-<n> beside the Mgors and owned by it, so the log goes
// when the Mgors goes and survives the operator moving to another node. A
// segment holds up to SegmentBytes of records as JSON lines, in chunks: one
// data key per chunk (the zero-padded seq of its first record), each up to
// ChunkBytes; a snapshot ConfigMap lets older segments be deleted, so the log
// stays bounded.
//
// An append is a JSON merge patch that rewrites the open chunk only (or starts
// the next one) and carries the segment's resourceVersion as its precondition,
// and asks for the answer as metadata only: the store keeps the newest
// segment's name, resourceVersion, size and open chunk, never the rest of its
// data, so an append costs what its records and one chunk cost, not what the
// segment holds. Chunks, not a key per record, because the API server tracks
// managed fields per data key (docs/performance.md). A second writer (a
// deposed leader) gets a conflict and ErrSequence, never an interleaved log.
type Kube struct {
	client kubernetes.Interface
	writer segmentWriter
	// SegmentBytes is the most record data one segment ConfigMap holds (the
	// API server's limit is 1 MiB per object).
	SegmentBytes int
	// ChunkBytes is the most one data key holds, unless a single append is
	// larger: an append re-sends at most this much besides its records.
	ChunkBytes int
	// CallTimeout bounds each API call.
	CallTimeout time.Duration
	// KeepRecords is how many records before a snapshot its compaction keeps
	// (whole segments: a few more), for a person reading why the cluster got
	// where it is (History, `mgorsctl replay`); 0 keeps none.
	KeepRecords int64

	mu      sync.Mutex
	streams map[Stream]*kubeStream
}

// kubeStream is what the store knows of a stream: its last seq and the newest
// segment's head.
type kubeStream struct {
	mu     sync.Mutex
	loaded bool
	last   int64
	head   *segmentHead // newest segment when the store appends to it, else nil
	index  int          // newest segment's index, 0 when none
}

// segmentHead is all an append needs of the segment it extends.
type segmentHead struct {
	name            string
	resourceVersion string
	size            int // bytes of data keys and values
	// chunk is the open chunk's key and lines; key is "" when the next
	// append starts a chunk.
	chunk, lines string
}

// Labels and annotations of the log's ConfigMaps.
const (
	LabelEventLog   = "mgors.io/eventlog"
	LabelUID        = "mgors.io/uid"
	annotationFirst = "mgors.io/first-seq"
	annotationLast  = "mgors.io/last-seq"
	annotationIndex = "mgors.io/segment"
	// legacyKey held a whole segment as JSON lines before records had a key
	// each; such segments are read, never extended.
	legacyKey        = "log.jsonl"
	snapshotKey      = "snapshot.json"
	defaultSegment   = 16 << 10
	defaultChunk     = 4 << 10
	defaultKubeCalls = 10 * time.Second
)

// NewKube returns a store that keeps logs in ConfigMaps through client. Its
// appends go through the clientset's REST client, answered with metadata only;
// a clientset without one (client-go's fake) is written through its typed
// client, whose answers carry the whole ConfigMap.
func NewKube(client kubernetes.Interface) *Kube {
	var w segmentWriter = typedWriter{client: client}
	if rc, ok := client.CoreV1().RESTClient().(*rest.RESTClient); ok && rc != nil {
		w = restWriter{client: rc}
	}
	return &Kube{client: client, writer: w, SegmentBytes: defaultSegment, ChunkBytes: defaultChunk, CallTimeout: defaultKubeCalls, streams: map[Stream]*kubeStream{}}
}

// Name is "kube".
func (k *Kube) Name() string { return "kube" }

func (k *Kube) state(s Stream) *kubeStream {
	k.mu.Lock()
	defer k.mu.Unlock()
	st, ok := k.streams[s]
	if !ok {
		st = &kubeStream{}
		k.streams[s] = st
	}
	return st
}

func (k *Kube) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, k.CallTimeout)
}

// Names carry a piece of the UID: a re-created Mgors may meet its predecessor's
// ConfigMaps before garbage collection removes them.
func segmentName(s Stream, index int) string {
	return fmt.Sprintf("%s-eventlog-%s-%06d", s.Name, uidPrefix(s), index)
}
func snapshotName(s Stream) string {
	return fmt.Sprintf("%s-eventlog-%s-snapshot", s.Name, uidPrefix(s))
}

func uidPrefix(s Stream) string {
	if len(s.UID) > 8 {
		return s.UID[:8]
	}
	return s.UID
}

func (k *Kube) meta(s Stream, name string) metav1.ObjectMeta {
	t := true
	return metav1.ObjectMeta{
		Name:      name,
		Namespace: s.Namespace,
		Labels:    map[string]string{LabelEventLog: s.Name, LabelUID: s.UID},
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "mgors.io/v1alpha1", Kind: "Mgors", Name: s.Name,
			UID: types.UID(s.UID), Controller: &t,
		}},
	}
}

// Append adds the records to the newest segment, or starts a new one when it
// is full or written in the legacy format.
func (k *Kube) Append(ctx context.Context, s Stream, recs ...Record) error {
	if err := s.valid(); err != nil {
		return err
	}
	st := k.state(s)
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.loaded {
		if _, _, err := k.loadLocked(ctx, s, st); err != nil {
			return err
		}
	}
	if err := checkContinues(s, st.last, recs); err != nil {
		return err
	}
	lines, err := encodeLines(recs)
	if err != nil {
		return err
	}
	first, last := recs[0].Seq, recs[len(recs)-1].Seq
	err = k.appendLocked(ctx, s, st, string(lines), first, last)
	if err != nil {
		st.loaded = false // reload before the next append: someone else may have written
		if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("%w: %s: another writer changed the log: %w", ErrSequence, s, err)
		}
		return fmt.Errorf("eventlog: appending to %s: %w", s, err)
	}
	st.last = last
	return nil
}

func (k *Kube) appendLocked(ctx context.Context, s Stream, st *kubeStream, lines string, first, last int64) error {
	cctx, cancel := k.call(ctx)
	defer cancel()
	if h := st.head; h != nil && h.size+len(lines) <= k.SegmentBytes {
		key, value, grown := chunkKey(first), lines, len(chunkKey(first))+len(lines)
		if h.chunk != "" && len(h.lines)+len(lines) <= k.ChunkBytes {
			key, value, grown = h.chunk, h.lines+lines, len(lines)
		}
		body, err := appendPatch(h.resourceVersion, last, key, value)
		if err != nil {
			return err
		}
		rv, err := k.writer.patch(cctx, s.Namespace, h.name, body)
		if err != nil {
			return err
		}
		h.resourceVersion, h.size = rv, h.size+grown
		h.chunk, h.lines = key, value
		return nil
	}
	index := st.index + 1
	key := chunkKey(first)
	seg := &corev1.ConfigMap{ObjectMeta: k.meta(s, segmentName(s, index)), Data: map[string]string{key: lines}}
	seg.Annotations = map[string]string{
		annotationFirst: strconv.FormatInt(first, 10),
		annotationLast:  strconv.FormatInt(last, 10),
		annotationIndex: strconv.Itoa(index),
	}
	rv, err := k.writer.create(cctx, seg)
	if err != nil {
		return err
	}
	st.head = &segmentHead{name: seg.Name, resourceVersion: rv, size: len(key) + len(lines), chunk: key, lines: lines}
	st.index = index
	return nil
}

// SaveSnapshot writes the snapshot ConfigMap, then deletes the segments it
// covers entirely, keeping the newest so the next append knows where to go and
// those holding any of the KeepRecords records before the snapshot.
// It is fenced like an append: a writer whose view of the log is stale (the
// log grew past its last append or load) gets ErrSequence and writes nothing.
func (k *Kube) SaveSnapshot(ctx context.Context, s Stream, snap Snapshot) error {
	if err := s.valid(); err != nil {
		return err
	}
	st := k.state(s)
	st.mu.Lock()
	defer st.mu.Unlock()
	viewed, last := st.loaded, st.last
	cur, _, err := k.loadLocked(ctx, s, st)
	if err != nil {
		return err
	}
	if err := checkView(s, viewed, last, st.last); err != nil {
		return err
	}
	if snap.Seq > st.last {
		return snapshotAheadError(s, snap.Seq, st.last)
	}
	if cur != nil && snap.Seq <= cur.Seq {
		return nil // a late writer's older snapshot: the newer one covers it
	}
	if snap.Schema == 0 {
		snap.Schema = SchemaVersion
	}
	b, err := json.Marshal(snap)
	if err != nil {
		return fmt.Errorf("eventlog: encoding snapshot: %w", err)
	}
	cms := k.client.CoreV1().ConfigMaps(s.Namespace)
	want := &corev1.ConfigMap{ObjectMeta: k.meta(s, snapshotName(s)), Data: map[string]string{snapshotKey: string(b)}}
	cctx, cancel := k.call(ctx)
	defer cancel()
	have, err := cms.Get(cctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = cms.Create(cctx, want, metav1.CreateOptions{})
	case err == nil:
		have.Data = want.Data
		_, err = cms.Update(cctx, have, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("eventlog: saving the snapshot of %s: %w", s, err)
	}
	// Compact: every segment but the newest whose records are all covered.
	lctx, lcancel := k.call(ctx)
	defer lcancel()
	list, err := cms.List(lctx, metav1.ListOptions{LabelSelector: LabelUID + "=" + s.UID})
	if err != nil {
		return fmt.Errorf("eventlog: listing the log of %s: %w", s, err)
	}
	for _, cm := range list.Items {
		if cm.Name == snapshotName(s) || segmentIndex(cm) >= st.index {
			continue
		}
		last, err := strconv.ParseInt(cm.Annotations[annotationLast], 10, 64)
		if err != nil || last > snap.Seq-k.KeepRecords {
			continue
		}
		dctx, dcancel := k.call(ctx)
		err = cms.Delete(dctx, cm.Name, metav1.DeleteOptions{})
		dcancel()
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("eventlog: compacting %s: %w", s, err)
		}
	}
	return nil
}

// Delete removes every ConfigMap of the stream (garbage collection does the
// same when the Mgors goes; this is for tools and tests).
func (k *Kube) Delete(ctx context.Context, s Stream) error {
	if err := s.valid(); err != nil {
		return err
	}
	st := k.state(s)
	st.mu.Lock()
	defer st.mu.Unlock()
	cms := k.client.CoreV1().ConfigMaps(s.Namespace)
	cctx, cancel := k.call(ctx)
	defer cancel()
	list, err := cms.List(cctx, metav1.ListOptions{LabelSelector: LabelUID + "=" + s.UID})
	if err != nil {
		return fmt.Errorf("eventlog: listing the log of %s: %w", s, err)
	}
	st.loaded, st.last, st.head, st.index = false, 0, nil, 0
	for _, cm := range list.Items {
		dctx, dcancel := k.call(ctx)
		err := cms.Delete(dctx, cm.Name, metav1.DeleteOptions{})
		dcancel()
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("eventlog: deleting the log of %s: %w", s, err)
		}
	}
	return nil
}

// StreamsIn lists the streams kept in a namespace ("" for all), for tools.
func (k *Kube) StreamsIn(ctx context.Context, namespace string) ([]Stream, error) {
	cctx, cancel := k.call(ctx)
	defer cancel()
	list, err := k.client.CoreV1().ConfigMaps(namespace).List(cctx, metav1.ListOptions{LabelSelector: LabelUID})
	if err != nil {
		return nil, fmt.Errorf("eventlog: listing logs: %w", err)
	}
	seen := map[Stream]bool{}
	var out []Stream
	for _, cm := range list.Items {
		s := Stream{Namespace: cm.Namespace, Name: cm.Labels[LabelEventLog], UID: cm.Labels[LabelUID]}
		if s.Name != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out, nil
}
