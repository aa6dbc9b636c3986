package eventlog

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// Kube keeps each stream in the cluster itself, as segment ConfigMaps named
// <name>-eventlog-<n> beside the Mgors and owned by it, so the log goes when the
// Mgors goes and survives the operator moving to another node. Each segment
// holds up to SegmentBytes of JSON lines; a snapshot ConfigMap lets older
// segments be deleted, so the log stays bounded.
//
// Writes use the ConfigMap's resourceVersion: a second writer (a deposed leader)
// gets a conflict and ErrSequence, never an interleaved log.
type Kube struct {
	client kubernetes.Interface
	// SegmentBytes is the most data one segment ConfigMap holds (the API
	// server's limit is 1 MiB per object).
	SegmentBytes int
	// CallTimeout bounds each API call.
	CallTimeout time.Duration

	mu      sync.Mutex
	streams map[Stream]*kubeStream
}

// kubeStream caches what the store knows of a stream's newest segment.
type kubeStream struct {
	mu      sync.Mutex
	loaded  bool
	last    int64
	segment *corev1.ConfigMap // newest segment, nil when none exists
	index   int               // newest segment's index, 0 when none
}

// Labels and annotations of the log's ConfigMaps.
const (
	LabelEventLog    = "mgors.io/eventlog"
	LabelUID         = "mgors.io/uid"
	annotationFirst  = "mgors.io/first-seq"
	annotationLast   = "mgors.io/last-seq"
	annotationIndex  = "mgors.io/segment"
	segmentKey       = "log.jsonl"
	snapshotKey      = "snapshot.json"
	defaultSegment   = 512 << 10
	defaultKubeCalls = 10 * time.Second
)

// NewKube returns a store that keeps logs in ConfigMaps through client.
func NewKube(client kubernetes.Interface) *Kube {
	return &Kube{client: client, SegmentBytes: defaultSegment, CallTimeout: defaultKubeCalls, streams: map[Stream]*kubeStream{}}
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

// Append adds the records to the newest segment, or starts a new one when it is full.
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
	err = k.appendLocked(ctx, s, st, lines, first, last)
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

func (k *Kube) appendLocked(ctx context.Context, s Stream, st *kubeStream, lines []byte, first, last int64) error {
	cms := k.client.CoreV1().ConfigMaps(s.Namespace)
	if st.segment != nil && len(st.segment.Data[segmentKey])+len(lines) <= k.SegmentBytes {
		seg := st.segment.DeepCopy()
		seg.Data[segmentKey] += string(lines)
		seg.Annotations[annotationLast] = strconv.FormatInt(last, 10)
		cctx, cancel := k.call(ctx)
		defer cancel()
		updated, err := cms.Update(cctx, seg, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		st.segment = updated
		return nil
	}
	seg := &corev1.ConfigMap{ObjectMeta: k.meta(s, segmentName(s, st.index+1)), Data: map[string]string{segmentKey: string(lines)}}
	seg.Annotations = map[string]string{
		annotationFirst: strconv.FormatInt(first, 10),
		annotationLast:  strconv.FormatInt(last, 10),
		annotationIndex: strconv.Itoa(st.index + 1),
	}
	cctx, cancel := k.call(ctx)
	defer cancel()
	created, err := cms.Create(cctx, seg, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	st.segment, st.index = created, st.index+1
	return nil
}

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

func (k *Kube) loadLocked(ctx context.Context, s Stream, st *kubeStream) (*Snapshot, []Record, error) {
	cctx, cancel := k.call(ctx)
	defer cancel()
	list, err := k.client.CoreV1().ConfigMaps(s.Namespace).List(cctx, metav1.ListOptions{
		LabelSelector: LabelUID + "=" + s.UID,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("eventlog: listing the log of %s: %w", s, err)
	}
	var snap *Snapshot
	var segments []corev1.ConfigMap
	for _, cm := range list.Items {
		switch {
		case cm.Name == snapshotName(s):
			snap = &Snapshot{}
			if err := json.Unmarshal([]byte(cm.Data[snapshotKey]), snap); err != nil {
				return nil, nil, fmt.Errorf("eventlog: %s: snapshot %s: %w", s, cm.Name, err)
			}
		case strings.HasPrefix(cm.Name, s.Name+"-eventlog-"+uidPrefix(s)+"-"):
			segments = append(segments, cm)
		}
	}
	sort.Slice(segments, func(i, j int) bool { return segmentIndex(segments[i]) < segmentIndex(segments[j]) })
	var all []Record
	for _, seg := range segments {
		d, err := Decode(strings.NewReader(seg.Data[segmentKey]))
		if err != nil {
			return nil, nil, fmt.Errorf("eventlog: %s: segment %s: %w", s, seg.Name, err)
		}
		if d.TornTail {
			return nil, nil, fmt.Errorf("eventlog: %s: segment %s ends in a partial line", s, seg.Name)
		}
		all = append(all, d.Records...)
	}
	base := int64(0)
	if snap != nil {
		base = snap.Seq
	}
	recs := after(all, base)
	if err := CheckSequence(base, recs); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", s, err)
	}
	st.loaded, st.last, st.segment, st.index = true, base, nil, 0
	if n := len(recs); n > 0 {
		st.last = recs[n-1].Seq
	}
	if n := len(segments); n > 0 {
		newest := segments[n-1].DeepCopy()
		if newest.Annotations == nil {
			newest.Annotations = map[string]string{}
		}
		if newest.Data == nil {
			newest.Data = map[string]string{}
		}
		st.segment, st.index = newest, segmentIndex(*newest)
	}
	return snap, recs, nil
}

func segmentIndex(cm corev1.ConfigMap) int {
	n, err := strconv.Atoi(cm.Annotations[annotationIndex])
	if err != nil {
		return 0
	}
	return n
}

// SaveSnapshot writes the snapshot ConfigMap, then deletes the segments it
// covers entirely, keeping the newest so the next append knows where to go.
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
		if err != nil || last > snap.Seq {
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
	st.loaded, st.last, st.segment, st.index = false, 0, nil, 0
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
