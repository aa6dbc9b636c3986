package backup

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/mgors/operator/mongo/backup/store"
)

func ts(t, i uint32) bson.Timestamp { return bson.Timestamp{T: t, I: i} }

func TestChunkKey(t *testing.T) {
	k := chunkKey("p/ns/c/oplog_archive", ts(1700000000, 3), ts(1700000010, 12))
	if k != "p/ns/c/oplog_archive/1700000000.0000000003-1700000010.0000000012.bson" {
		t.Fatalf("key %s", k)
	}
	c, ok := ParseChunk(k)
	if !ok || c.After != ts(1700000000, 3) || c.Last != ts(1700000010, 12) || c.Key != k {
		t.Fatalf("parsed %+v %t", c, ok)
	}
	// Keys sort as their timestamps do.
	if a, b := chunkKey("p", ts(9, 1), ts(10, 0)), chunkKey("p", ts(10, 0), ts(100, 0)); a >= b {
		t.Errorf("%s sorts after %s", a, b)
	}
	for _, bad := range []string{
		"p/manifest.json",
		"p/1700000000.0000000003.bson",
		"p/1700000010.0000000012-1700000000.0000000003.bson", // ends before it starts
		"p/1700000000.0000000003-1700000000.0000000003.bson", // empty
		"p/170000000.00000000003-1700000010.0000000012.bson",
		"p/9999999999.0000000003-9999999999.0000000012.bson", // past uint32
		"p/1700000000.000000000x-1700000010.0000000012.bson",
		"p/1700000000.0000000003-1700000010.0000000012.json",
	} {
		if c, ok := ParseChunk(bad); ok {
			t.Errorf("%s parsed as %+v", bad, c)
		}
	}
}

func TestCoverage(t *testing.T) {
	m := &Manifest{Start: Position{T: 100, I: 1}, End: Position{T: 110, I: 2}}
	k := func(a, b bson.Timestamp) string { return chunkKey("arch", a, b) }
	tests := []struct {
		name   string
		keys   []string
		to     bson.Timestamp
		chunks int
	}{
		{"no archive", nil, ts(110, 2), 0},
		{"archive from the backup's start", []string{k(ts(100, 1), ts(105, 0)), k(ts(105, 0), ts(112, 0)), k(ts(112, 0), ts(120, 5))}, ts(120, 5), 2},
		{"a chunk ends at End exactly", []string{k(ts(100, 1), ts(110, 2)), k(ts(110, 2), ts(130, 0))}, ts(130, 0), 1},
		{"keys in any order, others ignored", []string{k(ts(112, 0), ts(120, 5)), "arch/README", k(ts(100, 1), ts(112, 0))}, ts(120, 5), 2},
		{"a hole ends the range", []string{k(ts(100, 1), ts(112, 0)), k(ts(113, 0), ts(120, 0))}, ts(112, 0), 1},
		{"the archive starts after End", []string{k(ts(111, 0), ts(120, 0))}, ts(110, 2), 0},
		{"the archive ends before End", []string{k(ts(90, 0), ts(100, 1)), k(ts(100, 1), ts(105, 0))}, ts(110, 2), 0},
		{"overlaps: the furthest chunk wins", []string{k(ts(100, 1), ts(111, 0)), k(ts(105, 0), ts(115, 0)), k(ts(111, 0), ts(113, 0)), k(ts(115, 0), ts(116, 0))}, ts(116, 0), 2},
		{"a new chain after a lost window", []string{k(ts(50, 0), ts(60, 0)), k(ts(100, 1), ts(110, 5))}, ts(110, 5), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Coverage(m, tt.keys)
			if r.From != m.End.Timestamp() || r.To != tt.to || len(r.Chunks) != tt.chunks {
				t.Fatalf("coverage %s with %d chunks, want ..ts(%d,%d) with %d", r, len(r.Chunks), tt.to.T, tt.to.I, tt.chunks)
			}
			for i, c := range r.Chunks {
				if i > 0 && tsAfter(c.After, r.Chunks[i-1].Last) {
					t.Errorf("chunk %s does not continue %s", c.Key, r.Chunks[i-1].Key)
				}
			}
			if !r.Contains(r.From) || !r.Contains(r.To) || r.Contains(ts(r.To.T, r.To.I+1)) || r.Contains(ts(110, 1)) {
				t.Errorf("Contains is wrong at the edges of %s", r)
			}
		})
	}
}

// keyStore is a ChunkStore in memory: its keys, and an error for Delete.
type keyStore struct {
	keys      map[string]bool
	deleteErr error
}

func (k *keyStore) Put(context.Context, string, []byte, string) error { return nil }
func (k *keyStore) Get(context.Context, string) ([]byte, error)       { return nil, nil }
func (k *keyStore) List(_ context.Context, prefix string) ([]store.Object, error) {
	var out []store.Object
	for _, key := range slices.Sorted(maps.Keys(k.keys)) {
		if strings.HasPrefix(key, prefix) {
			out = append(out, store.Object{Key: key})
		}
	}
	return out, nil
}
func (k *keyStore) Delete(_ context.Context, key string) error {
	if k.deleteErr != nil {
		return k.deleteErr
	}
	delete(k.keys, key)
	return nil
}

func TestPruneChunks(t *testing.T) {
	k := func(a, b bson.Timestamp) string { return chunkKey("arch", a, b) }
	st := &keyStore{keys: map[string]bool{
		k(ts(90, 0), ts(100, 1)):  true, // before the backup's End: gone
		k(ts(100, 1), ts(110, 2)): true, // ends at End exactly: gone
		k(ts(110, 2), ts(130, 0)): true, // reaches past End: kept
		k(ts(130, 0), ts(140, 0)): true,
		"arch/README":             true, // not a chunk: kept
		"archive2/" + fmtTS(ts(1, 0)) + "-" + fmtTS(ts(2, 0)) + chunkSuffix: true, // another prefix: kept
	}}
	n, err := PruneChunks(context.Background(), st, "arch", ts(110, 2))
	if err != nil || n != 2 {
		t.Fatalf("pruned %d, %v; want 2", n, err)
	}
	want := []string{k(ts(110, 2), ts(130, 0)), k(ts(130, 0), ts(140, 0)), "arch/README", "archive2/" + fmtTS(ts(1, 0)) + "-" + fmtTS(ts(2, 0)) + chunkSuffix}
	if got := slices.Sorted(maps.Keys(st.keys)); !slices.Equal(got, want) {
		t.Errorf("left %v, want %v", got, want)
	}
	// What a restore of a backup ending at ts(110,2) reaches is unchanged.
	if r := Coverage(&Manifest{End: Position{T: 110, I: 2}}, slices.Collect(maps.Keys(st.keys))); r.To != ts(140, 0) {
		t.Errorf("coverage after the prune: %s", r)
	}
	st.deleteErr = errors.New("denied")
	if _, err := PruneChunks(context.Background(), st, "arch/", ts(200, 0)); err == nil || !strings.Contains(err.Error(), "denied") {
		t.Errorf("a refused delete: %v", err)
	}
}
