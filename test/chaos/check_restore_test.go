package chaos

import (
	"strings"
	"testing"
	"time"
)

// restored is a history of one cluster around the moment sec(10) and its
// restore to it, which breaks nothing.
func restored() *History {
	h := &History{Clusters: []string{cA}, Started: t0, Ended: sec(60)}
	op := func(k OpKind, key string, v int64, start, end float64, o Outcome) {
		h.Ops = append(h.Ops, Op{Index: len(h.Ops), Cluster: cA, Kind: k, Key: key, Value: v, Start: sec(start), End: sec(end), Outcome: o})
	}
	op(Insert, "", 1, 1, 2, OK)          // 0: acknowledged before: present
	op(Insert, "", 2, 9.5, 10, OK)       // 1: acknowledged at the moment itself: present
	op(Insert, "", 3, 5, 15, Unknown)    // 2: either
	op(Insert, "", 4, 9.9, 10.5, OK)     // 3: straddles: either
	op(Insert, "", 5, 10.0005, 10.1, OK) // 4: began within the wall's millisecond: either
	op(Insert, "", 6, 10.001, 10.2, OK)  // 5: began after: absent
	op(Insert, "", 7, 3, 3.1, Failed)    // 6: never happened: absent
	op(Insert, "", 8, 12, 13, OK)        // 7: after: absent
	op(Write, "r", 10, 1, 1.1, OK)       // 8: superseded by 9
	op(Write, "r", 11, 2, 2.1, OK)       // 9
	op(Write, "r", 12, 3, 20, Unknown)   // 10: may follow 9 at any time
	op(Write, "r", 13, 9.8, 10.3, OK)    // 11: straddles
	op(Write, "r", 14, 11, 11.1, OK)     // 12: after
	op(Write, "q", 20, 4, 4.1, OK)       // 13: superseded by 14
	op(Write, "q", 21, 5, 9, OK)         // 14: concurrent with 15
	op(Write, "q", 22, 6, 7, OK)         // 15
	op(Write, "p", 30, 10.5, 11, OK)     // 16: p was not written before the moment
	op(Read, "r", 11, 3, 3.1, OK)        // 17: reads are not judged here
	op(Insert, "", 9, 1, 2, OK)          // 18
	h.Ops = append(h.Ops, Op{Index: 19, Cluster: "chaos/b", Kind: Insert, Value: 100, Start: sec(1), End: sec(2), Outcome: OK})
	h.Restore = &Restore{Cluster: cA, Target: "chaos/a-pitr", Backup: "a-base", BackupEnd: sec(0.5), At: sec(10),
		RestoredTo: "1796097609.3", RestoredToWall: sec(9), Documents: 1, Replayed: 9, Created: sec(40), Done: sec(50),
		Present: []int64{1, 2, 3, 4, 5, 9}, Registers: map[string]int64{"r": 11, "q": 21}}
	return h
}

func TestCheckRestore(t *testing.T) {
	h := restored()
	v := Check(h, Bounds{})
	for _, x := range v.Violations {
		if x.Property == PropertyRestore {
			t.Errorf("unexpected %+v", x)
		}
	}
	want := RestoreCounts{AckedBefore: 3, InvokedAfter: 2, Ambiguous: 3, AmbiguousPresent: 3, Registers: 3}
	if v.Restore == nil || *v.Restore != want {
		t.Fatalf("counts %+v, want %+v", v.Restore, want)
	}
	var sum strings.Builder
	Summary(&sum, h, v)
	for _, s := range []string{"restore of chaos/a (backup a-base) to 2026-12-01T04:00:10Z (+10s) into chaos/a-pitr",
		"acknowledged before present 3/3, invoked after absent 2/2, ambiguous 3 (3 present), registers 3"} {
		if !strings.Contains(sum.String(), s) {
			t.Errorf("summary lacks %q:\n%s", s, sum.String())
		}
	}

	dir := t.TempDir()
	if err := WriteReport(dir, h, v); err != nil {
		t.Fatal(err)
	}
	back, err := ReadReport(dir)
	if err != nil {
		t.Fatal(err)
	}
	if again := Check(back, Bounds{}); again.Restore == nil || *again.Restore != want {
		t.Errorf("judged again from the report: %+v, want %+v", again.Restore, want)
	}

	for _, c := range []struct {
		name   string
		change func(*Restore)
		want   []string // in the one violation's detail; none when nil
	}{
		{"the other values possible", func(r *Restore) { r.Registers = map[string]int64{"r": 12, "q": 22} }, nil},
		{"straddling values", func(r *Restore) {
			r.Registers["r"] = 13
			r.Present = append(r.Present[:2], 9)
		}, nil},
		{"an acknowledged insert missing", func(r *Restore) { r.Present = []int64{2, 9} },
			[]string{"1 inserts acknowledged before it are missing: op 0"}},
		{"an insert invoked after present", func(r *Restore) { r.Present = append(r.Present, 6, 8) },
			[]string{"2 inserts invoked after it are present: op 5"}},
		{"a failed insert present", func(r *Restore) { r.Present = append(r.Present, 7) }, []string{"ids of failed inserts present: op 6"}},
		{"an id never inserted", func(r *Restore) { r.Present = append(r.Present, 100, 77) }, []string{"ids no insert wrote: [100 77]"}},
		{"a superseded value", func(r *Restore) { r.Registers["r"] = 10 }, []string{"register r=10 (op 8", "superseded before 2026-12-01T04:00:10Z by op 9"}},
		{"a value superseded by one of two", func(r *Restore) { r.Registers["q"] = 20 }, []string{"register q=20 (op 13", "by op 14"}},
		{"a value written after", func(r *Restore) { r.Registers["r"] = 14 }, []string{"register r=14, written by a write invoked after"}},
		{"a value never written", func(r *Restore) { r.Registers["r"] = 99 }, []string{"register r=99, a value no write that did not fail wrote"}},
		{"a register absent though acknowledged", func(r *Restore) { delete(r.Registers, "q") }, []string{"register q absent", "op 13"}},
		{"a register no one wrote", func(r *Restore) { r.Registers["z"] = 1 }, []string{"register z=1"}},
		{"restored past the moment", func(r *Restore) { r.RestoredToWall = sec(11) }, []string{"after the point asked for"}},
		{"the restore failed", func(r *Restore) { r.Error = "the MgorsRestore did not succeed" }, []string{"the MgorsRestore did not succeed"}},
	} {
		h := restored()
		c.change(h.Restore)
		var got []string
		for _, x := range Check(h, Bounds{}).Violations {
			if x.Property == PropertyRestore {
				got = append(got, x.Detail)
			}
		}
		if len(got) != min(len(c.want), 1) {
			t.Errorf("%s: violations %q, want %d", c.name, got, min(len(c.want), 1))
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(got[0], w) {
				t.Errorf("%s: violations %q, want one with %q", c.name, got, w)
			}
		}
	}
}

// An insert acknowledged before the moment and at risk of a forced
// reconfig is judged unknown, as everywhere.
func TestCheckRestoreAtRisk(t *testing.T) {
	h := restored()
	h.Restore.Present = []int64{2, 9}
	h.AtRisk = []AtRisk{{Cluster: cA, Forced: sec(30), From: sec(0.5), To: sec(1.5)}}
	for _, x := range Check(h, Bounds{}).Violations {
		if x.Property == PropertyRestore {
			t.Errorf("unexpected %+v", x)
		}
	}
}

func TestRestoreMoment(t *testing.T) {
	faults := []Fault{{Start: sec(20), Healed: sec(25)}, {Start: sec(10.4), Healed: sec(10.4)}, {Start: sec(40), Healed: sec(51)}}
	if got := restoreMoment(faults, sec(5)); !got.Equal(sec(30)) {
		t.Errorf("the middle of the faults: %s, want %s", got, sec(30))
	}
	if got := restoreMoment(faults, sec(30.5)); !got.Equal(sec(31)) {
		t.Errorf("after a late backup's end: %s, want %s", got, sec(31))
	}
	if got := restoreMoment(nil, sec(5)); !got.IsZero() {
		t.Errorf("no fault: %s", got)
	}
	if got := restoreMoment([]Fault{{Start: sec(10.3), Healed: sec(11)}}, sec(1)); got != got.Truncate(time.Second) {
		t.Errorf("%s is not a whole second", got)
	}
}
