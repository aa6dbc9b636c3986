package backup

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
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
