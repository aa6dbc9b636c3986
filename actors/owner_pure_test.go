package actors

import (
	"testing"

	"github.com/mgors/operator/actors/eventlog"
)

func TestOtherWriter(t *testing.T) {
	recs := func(writers ...string) []eventlog.Record {
		out := make([]eventlog.Record, len(writers))
		for i, w := range writers {
			out[i] = eventlog.Record{Seq: int64(i + 1), Writer: w}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		seq  int64
		snap *eventlog.Snapshot
		recs []eventlog.Record
		want string
	}{
		{"nothing past the view", 3, nil, recs("a", "b", "a"), ""},
		{"an own append committed despite its error", 2, nil, recs("b", "a", "a", "a"), ""},
		{"another writer past the view", 2, nil, recs("a", "a", "a", "b"), "b"},
		{"another writer before the view is history", 3, nil, recs("b", "b", "a"), ""},
		{"a snapshot past the view", 2, &eventlog.Snapshot{Seq: 5}, recs("a", "a", "a", "a", "a", "a"), "the writer of the snapshot at seq 5"},
		{"an own snapshot", 5, &eventlog.Snapshot{Seq: 5}, nil, ""},
	} {
		if got := OtherWriter("a", tc.seq, tc.snap, tc.recs); got != tc.want {
			t.Errorf("%s: OtherWriter = %q, want %q", tc.name, got, tc.want)
		}
	}
}
