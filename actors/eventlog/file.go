package eventlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// File keeps each stream as JSON lines under Dir/<namespace>/<name>/<uid>/log.jsonl,
// fsync'd on every append, with its latest snapshot beside it in snapshot.json.
// Saving a snapshot compacts the log to the records after it. It is the default
// store of an operator that runs outside a cluster.
type File struct {
	dir string

	mu      sync.Mutex
	streams map[Stream]*fileStream
}

type fileStream struct {
	mu     sync.Mutex
	loaded bool
	last   int64
	size   int64 // log.jsonl's size after our last write: another size means another writer
}

// NewFile returns a store rooted at dir, creating it.
func NewFile(dir string) (*File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("eventlog: %w", err)
	}
	return &File{dir: dir, streams: map[Stream]*fileStream{}}, nil
}

// Name is "file".
func (f *File) Name() string { return "file" }

// Dir is the store's root directory.
func (f *File) Dir() string { return f.dir }

func (f *File) streamDir(s Stream) (string, error) {
	if err := s.valid(); err != nil {
		return "", err
	}
	for _, part := range []string{s.Namespace, s.Name, s.UID} {
		if strings.ContainsAny(part, `/\`) || part == "." || part == ".." {
			return "", fmt.Errorf("eventlog: stream %s has a name that is not a path element", s)
		}
	}
	return filepath.Join(f.dir, s.Namespace, s.Name, s.UID), nil
}

func (f *File) state(s Stream) *fileStream {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.streams[s]
	if !ok {
		st = &fileStream{}
		f.streams[s] = st
	}
	return st
}

// Append writes the records as lines and fsyncs before returning.
func (f *File) Append(ctx context.Context, s Stream, recs ...Record) error {
	dir, err := f.streamDir(s)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	st := f.state(s)
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.loaded {
		if _, _, err := f.loadLocked(s, st, true); err != nil {
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
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("eventlog: %w", err)
	}
	path := filepath.Join(dir, "log.jsonl")
	_, statErr := os.Stat(path)
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("eventlog: %w", err)
	}
	defer func() { _ = fh.Close() }()
	// One writer at a time across processes; a size we did not leave means a
	// second writer appended, so our view is stale.
	if err := syscall.Flock(int(fh.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("eventlog: locking %s: %w", path, err)
	}
	defer func() { _ = syscall.Flock(int(fh.Fd()), syscall.LOCK_UN) }()
	info, err := fh.Stat()
	if err != nil {
		return fmt.Errorf("eventlog: %w", err)
	}
	if info.Size() != st.size {
		st.loaded = false
		return fmt.Errorf("%w: %s: the log changed under this writer", ErrSequence, s)
	}
	_, werr := fh.Write(lines)
	serr := fh.Sync()
	if err := errors.Join(werr, serr); err != nil {
		// The stream's tail is now unknown: reload (and cut a torn tail) next time.
		st.loaded = false
		return fmt.Errorf("eventlog: appending to %s: %w", s, err)
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		if err := syncDir(dir); err != nil {
			return err
		}
	}
	st.last = recs[len(recs)-1].Seq
	st.size = info.Size() + int64(len(lines))
	return nil
}

// Load reads the snapshot and the records after it. A torn last line, left by a
// crash in the middle of an append that was never acknowledged, is cut off.
func (f *File) Load(ctx context.Context, s Stream) (*Snapshot, []Record, error) {
	if _, err := f.streamDir(s); err != nil {
		return nil, nil, err
	}
	st := f.state(s)
	st.mu.Lock()
	defer st.mu.Unlock()
	return f.loadLocked(s, st, true)
}

func (f *File) loadLocked(s Stream, st *fileStream, repair bool) (*Snapshot, []Record, error) {
	dir, _ := f.streamDir(s)
	var snap *Snapshot
	if b, err := os.ReadFile(filepath.Join(dir, "snapshot.json")); err == nil {
		snap = &Snapshot{}
		if err := json.Unmarshal(b, snap); err != nil {
			return nil, nil, fmt.Errorf("eventlog: %s: snapshot: %w", s, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("eventlog: %w", err)
	}
	path := filepath.Join(dir, "log.jsonl")
	fh, err := os.Open(path)
	var d Decoded
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, nil, fmt.Errorf("eventlog: %w", err)
	default:
		d, err = Decode(fh)
		_ = fh.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("eventlog: %s: %w", path, err)
		}
		if d.TornTail && repair {
			if err := os.Truncate(path, d.ValidBytes); err != nil {
				return nil, nil, fmt.Errorf("eventlog: cutting the torn tail of %s: %w", path, err)
			}
		}
	}
	base := int64(0)
	if snap != nil {
		base = snap.Seq
	}
	recs := after(d.Records, base)
	if err := CheckSequence(base, recs); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	st.loaded = true
	st.size = d.ValidBytes
	st.last = base
	if n := len(recs); n > 0 {
		st.last = recs[n-1].Seq
	}
	return snap, recs, nil
}

// SaveSnapshot writes the snapshot atomically, then compacts the log to the
// records after it. A crash between the two leaves a longer log, never a gap.
// It is fenced like an append (checkView): a stale writer's snapshot is refused.
func (f *File) SaveSnapshot(ctx context.Context, s Stream, snap Snapshot) error {
	dir, err := f.streamDir(s)
	if err != nil {
		return err
	}
	st := f.state(s)
	st.mu.Lock()
	defer st.mu.Unlock()
	viewed, last := st.loaded, st.last
	cur, recs, err := f.loadLocked(s, st, true)
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
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("eventlog: %w", err)
	}
	if err := writeAtomic(dir, "snapshot.json", b); err != nil {
		return err
	}
	lines, err := encodeLines(after(recs, snap.Seq))
	if err != nil {
		return err
	}
	if err := writeAtomic(dir, "log.jsonl", lines); err != nil {
		st.loaded = false
		return err
	}
	st.size = int64(len(lines))
	return nil
}

// Delete removes the stream's directory.
func (f *File) Delete(ctx context.Context, s Stream) error {
	dir, err := f.streamDir(s)
	if err != nil {
		return err
	}
	st := f.state(s)
	st.mu.Lock()
	defer st.mu.Unlock()
	st.loaded, st.last = false, 0
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("eventlog: %w", err)
	}
	return nil
}

// Streams lists the streams the store holds, for tools.
func (f *File) Streams() ([]Stream, error) {
	var out []Stream
	matches, err := filepath.Glob(filepath.Join(f.dir, "*", "*", "*", "log.jsonl"))
	if err != nil {
		return nil, err
	}
	for _, m := range matches {
		rel, _ := filepath.Rel(f.dir, filepath.Dir(m))
		parts := strings.Split(rel, string(filepath.Separator))
		if len(parts) == 3 {
			out = append(out, Stream{Namespace: parts[0], Name: parts[1], UID: parts[2]})
		}
	}
	return out, nil
}

// writeAtomic replaces dir/name with data: temp file, fsync, rename, fsync dir.
func writeAtomic(dir, name string, data []byte) error {
	tmp, err := os.CreateTemp(dir, name+".tmp-*")
	if err != nil {
		return fmt.Errorf("eventlog: %w", err)
	}
	_, werr := tmp.Write(data)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("eventlog: writing %s: %w", name, err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("eventlog: %w", err)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("eventlog: %w", err)
	}
	defer func() { _ = d.Close() }()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("eventlog: syncing %s: %w", dir, err)
	}
	return nil
}

func snapshotAheadError(s Stream, snap, last int64) error {
	return fmt.Errorf("eventlog: %s: snapshot at seq %d is ahead of the log's last record %d", s, snap, last)
}
