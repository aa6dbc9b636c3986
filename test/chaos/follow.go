package chaos

import (
	"context"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgors/operator/actors/eventlog"
)

// followedLogs keeps every event-log record the run saw in the segment
// ConfigMaps while it ran. The operator snapshots every 100 records and then
// deletes the segments the snapshot covers, so a log read only at the end of
// a long run may have lost the records of its first faults; the checker and
// the suites' judges need all of them.
type followedLogs struct {
	mu   sync.Mutex
	recs map[string]map[int64]eventlog.Record // stream (ns/name@uid) → seq → record
}

func newFollowedLogs() *followedLogs {
	return &followedLogs{recs: map[string]map[int64]eventlog.Record{}}
}

// add keeps the records of one segment ConfigMap; a ConfigMap that is not a
// segment (the snapshot) or is torn mid-write is left for its next version.
func (f *followedLogs) add(cm *corev1.ConfigMap) {
	if cm.Labels[eventlog.LabelEventLog] == "" {
		return
	}
	recs, err := eventlog.SegmentRecords(*cm)
	if err != nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, rec := range recs {
		key := rec.Cluster + "@" + rec.UID
		if f.recs[key] == nil {
			f.recs[key] = map[int64]eventlog.Record{}
		}
		f.recs[key][rec.Seq] = rec
	}
}

// merged is the stream's records as the run followed them, with loaded (the
// store's view at the end) added, in seq order; a seq in both is the loaded one.
func (f *followedLogs) merged(s eventlog.Stream, loaded []eventlog.Record) []eventlog.Record {
	f.mu.Lock()
	bySeq := map[int64]eventlog.Record{}
	for seq, rec := range f.recs[s.String()] {
		bySeq[seq] = rec
	}
	f.mu.Unlock()
	for _, rec := range loaded {
		bySeq[rec.Seq] = rec
	}
	out := make([]eventlog.Record, 0, len(bySeq))
	for _, rec := range bySeq {
		out = append(out, rec)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out
}

// followLogs lists and watches the event-log ConfigMaps of the run's
// namespace until ctx ends; a gap in the watch (the API server restarting)
// is closed by the next list, which still holds every segment not compacted.
func (r *run) followLogs(ctx context.Context) {
	sel := metav1.ListOptions{LabelSelector: eventlog.LabelEventLog}
	for ctx.Err() == nil {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		l, err := r.kube.CoreV1().ConfigMaps(r.ns).List(lctx, sel)
		cancel()
		if err != nil {
			sleep(ctx, time.Second)
			continue
		}
		for i := range l.Items {
			r.followed.add(&l.Items[i])
		}
		w, err := r.kube.CoreV1().ConfigMaps(r.ns).Watch(ctx, metav1.ListOptions{LabelSelector: sel.LabelSelector, ResourceVersion: l.ResourceVersion})
		if err != nil {
			sleep(ctx, time.Second)
			continue
		}
		for ev := range w.ResultChan() {
			if cm, ok := ev.Object.(*corev1.ConfigMap); ok {
				r.followed.add(cm)
			}
		}
		w.Stop()
	}
}
