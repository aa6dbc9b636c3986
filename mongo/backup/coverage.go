package backup

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Chunk is one object of a cluster's oplog archive: every oplog entry
// with a timestamp in (After, Last], concatenated BSON, in oplog order.
//
// The key names the previous chunk's last entry (After), not the chunk's
// own first entry: oplog timestamps are not dense, so only that makes a
// hole between two chunks visible from their keys alone. A chunk whose
// After is another's Last continues it.
type Chunk struct {
	Key   string
	After bson.Timestamp
	Last  bson.Timestamp
}

// chunkSuffix ends every chunk's key.
const chunkSuffix = ".bson"

// chunkKey is <archive prefix>/<after>-<last>.bson, each timestamp as
// TTTTTTTTTT.IIIIIIIIII (seconds and increment, zero-padded to ten digits)
// so that the keys sort in oplog order.
func chunkKey(prefix string, after, last bson.Timestamp) string {
	return path.Join(prefix, fmtTS(after)+"-"+fmtTS(last)+chunkSuffix)
}

func fmtTS(ts bson.Timestamp) string { return fmt.Sprintf("%010d.%010d", ts.T, ts.I) }

func parseTS(s string) (bson.Timestamp, bool) {
	if len(s) != 21 || s[10] != '.' {
		return bson.Timestamp{}, false
	}
	t, err1 := strconv.ParseUint(s[:10], 10, 32)
	i, err2 := strconv.ParseUint(s[11:], 10, 32)
	if err1 != nil || err2 != nil {
		return bson.Timestamp{}, false
	}
	return bson.Timestamp{T: uint32(t), I: uint32(i)}, true
}

// ParseChunk reads a chunk's key; ok is false for any other object.
func ParseChunk(key string) (Chunk, bool) {
	name, found := strings.CutSuffix(path.Base(key), chunkSuffix)
	if !found {
		return Chunk{}, false
	}
	a, b, found := strings.Cut(name, "-")
	if !found {
		return Chunk{}, false
	}
	after, ok1 := parseTS(a)
	last, ok2 := parseTS(b)
	if !ok1 || !ok2 || !tsAfter(last, after) {
		return Chunk{}, false
	}
	return Chunk{Key: key, After: after, Last: last}, true
}

// Range is the points in time a restore of one backup can reach: any
// oplog timestamp in [From, To]. From is the backup's End; To is the last
// entry of the archive's chunks that continue one another from there.
// Chunks are those chunks, in order (none when To is From).
type Range struct {
	From, To bson.Timestamp
	Chunks   []Chunk
}

// Contains reports whether ts is in [From, To].
func (r Range) Contains(ts bson.Timestamp) bool { return !tsAfter(r.From, ts) && !tsAfter(ts, r.To) }

// String is "ts(T,I)..ts(T,I)".
func (r Range) String() string {
	return fmt.Sprintf("ts(%d,%d)..ts(%d,%d)", r.From.T, r.From.I, r.To.T, r.To.I)
}

// ErrOutsideRange is returned for a point in time a restore cannot reach.
var ErrOutsideRange = errors.New("backup: the point in time is outside what the backup and the oplog archive cover")

// Coverage is the range a restore of the backup m can reach with the
// archive's objects keys (any order; keys that are not chunks are
// ignored). Starting at m.End, it takes, again and again, the chunk that
// holds the entry right after the point reached (After at or before it,
// Last after it) and reaches furthest; the first point no chunk continues
// is a hole, and the range ends there. Overlapping chunks (a range
// archived twice) are fine: entries are idempotent and the replay skips
// those it has passed.
func Coverage(m *Manifest, keys []string) Range {
	end := m.End.Timestamp()
	var chunks []Chunk
	for _, k := range keys {
		if c, ok := ParseChunk(k); ok {
			chunks = append(chunks, c)
		}
	}
	slices.SortFunc(chunks, func(a, b Chunk) int {
		if c := tsCompare(a.After, b.After); c != 0 {
			return c
		}
		return tsCompare(a.Last, b.Last)
	})
	r := Range{From: end, To: end}
	for i := 0; ; {
		best := -1
		for ; i < len(chunks) && !tsAfter(chunks[i].After, r.To); i++ {
			if tsAfter(chunks[i].Last, r.To) && (best < 0 || tsAfter(chunks[i].Last, chunks[best].Last)) {
				best = i
			}
		}
		if best < 0 {
			return r
		}
		r.Chunks = append(r.Chunks, chunks[best])
		r.To = chunks[best].Last
	}
}

func tsCompare(a, b bson.Timestamp) int {
	switch {
	case tsAfter(a, b):
		return 1
	case tsAfter(b, a):
		return -1
	}
	return 0
}

// ChunkStore is an ArchiveStore that also deletes: store.Client.
type ChunkStore interface {
	ArchiveStore
	Delete(ctx context.Context, key string) error
}

// PruneChunks deletes the archive's chunks under prefix whose Last is at or
// before through, and says how many it deleted. No restore needs them once
// through is the End of the oldest backup kept: Coverage starts at a
// backup's End and takes only chunks that reach past it. Other objects
// under prefix are left.
func PruneChunks(ctx context.Context, st ChunkStore, prefix string, through bson.Timestamp) (int, error) {
	objs, err := st.List(ctx, strings.TrimSuffix(prefix, "/")+"/")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, o := range objs {
		c, ok := ParseChunk(o.Key)
		if !ok || tsAfter(c.Last, through) {
			continue
		}
		if err := st.Delete(ctx, o.Key); err != nil {
			return n, fmt.Errorf("deleting chunk %s (%d deleted before it): %w", o.Key, n, err)
		}
		n++
	}
	return n, nil
}
