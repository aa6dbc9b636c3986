package eventlog

import (
	"context"
	"encoding/json"
	"sync"
)

// Memory keeps logs in memory, for tests. It applies the same sequence rules as
// the durable stores, so a test against it means the same thing.
type Memory struct {
	mu      sync.Mutex
	streams map[Stream]*memStream
}

type memStream struct {
	snap *Snapshot
	recs []Record
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory { return &Memory{streams: map[Stream]*memStream{}} }

// Name is "memory".
func (m *Memory) Name() string { return "memory" }

func (m *Memory) stream(s Stream) *memStream {
	st, ok := m.streams[s]
	if !ok {
		st = &memStream{}
		m.streams[s] = st
	}
	return st
}

func (st *memStream) last() int64 {
	if n := len(st.recs); n > 0 {
		return st.recs[n-1].Seq
	}
	if st.snap != nil {
		return st.snap.Seq
	}
	return 0
}

// Append stores copies of the records.
func (m *Memory) Append(ctx context.Context, s Stream, recs ...Record) error {
	if err := s.valid(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.stream(s)
	if err := checkContinues(s, st.last(), recs); err != nil {
		return err
	}
	for _, r := range recs {
		st.recs = append(st.recs, copyRecord(r))
	}
	return nil
}

// Load returns copies of the snapshot and the records after it.
func (m *Memory) Load(ctx context.Context, s Stream) (*Snapshot, []Record, error) {
	if err := s.valid(); err != nil {
		return nil, nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.streams[s]
	if !ok {
		return nil, nil, nil
	}
	var snap *Snapshot
	if st.snap != nil {
		c := *st.snap
		c.State = append(json.RawMessage(nil), st.snap.State...)
		snap = &c
	}
	out := make([]Record, 0, len(st.recs))
	for _, r := range st.recs {
		out = append(out, copyRecord(r))
	}
	return snap, out, nil
}

// SaveSnapshot keeps the snapshot and compacts the records it covers.
func (m *Memory) SaveSnapshot(ctx context.Context, s Stream, snap Snapshot) error {
	if err := s.valid(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.stream(s)
	if snap.Seq > st.last() {
		return snapshotAheadError(s, snap.Seq, st.last())
	}
	if st.snap != nil && snap.Seq <= st.snap.Seq {
		return nil // a late writer's older snapshot: the newer one covers it
	}
	if snap.Schema == 0 {
		snap.Schema = SchemaVersion
	}
	snap.State = append(json.RawMessage(nil), snap.State...)
	st.snap = &snap
	st.recs = after(st.recs, snap.Seq)
	return nil
}

// Delete forgets the stream.
func (m *Memory) Delete(ctx context.Context, s Stream) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.streams, s)
	return nil
}

func copyRecord(r Record) Record {
	r.Data = append(json.RawMessage(nil), r.Data...)
	if r.Schema == 0 {
		r.Schema = SchemaVersion
	}
	return r
}

// after returns the records with Seq > seq.
func after(recs []Record, seq int64) []Record {
	out := recs[:0:0]
	for _, r := range recs {
		if r.Seq > seq {
			out = append(out, r)
		}
	}
	return out
}
