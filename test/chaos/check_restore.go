package chaos

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// PropertyRestore is broken when a point-in-time restore of the run's data
// (History.Restore) holds what the operations forbid at its moment, or the
// restore did not succeed.
const PropertyRestore = "restore"

// wallResolution is the resolution of an oplog entry's wall time (a BSON
// datetime: milliseconds), which is what a restore's point in time is
// compared with.
const wallResolution = time.Millisecond

// RestoreCounts are the figures of the restore check.
type RestoreCounts struct {
	// AckedBefore inserts were acknowledged before At and must be present;
	// AckedMissing of them were not.
	AckedBefore  int `json:"ackedBefore"`
	AckedMissing int `json:"ackedMissing"`
	// InvokedAfter inserts began after At and must be absent; InvokedPresent
	// of them were found.
	InvokedAfter   int `json:"invokedAfter"`
	InvokedPresent int `json:"invokedPresent"`
	// Ambiguous inserts straddle At or have no acknowledgement (failed ones
	// excepted); AmbiguousPresent of them were found.
	Ambiguous        int `json:"ambiguous"`
	AmbiguousPresent int `json:"ambiguousPresent"`
	// Registers is the number of registers judged.
	Registers int `json:"registers"`
}

// checkRestore judges a point-in-time restore (History.Restore) against the
// operations on its cluster. The restore to At holds exactly the oplog's
// entries whose wall time is at or before At (backup.TimestampAt: the last
// entry at or before it; At is a whole second, the wall a millisecond). The
// members and the clients share one clock (localkube runs every pod on this
// machine), and the primary stamps an entry while it applies the write,
// after the client sent it and before the client hears back, so:
//
//   - an insert acknowledged (w:majority) whose End is at or before At was
//     stamped before At and must be present;
//   - an insert whose Start is at or after At plus the wall's resolution was
//     stamped after At and must be absent (one that began within the
//     millisecond of At may carry At's wall: it straddles);
//   - every other insert that did not fail (unknown, or straddling At) may be
//     either; an id no insert that did not fail wrote must not be there.
//
// A register holds the value of the last write, in oplog order, stamped at
// or before At. A write W's value v is possible at At when W did not fail,
// W began before At (as above), and no write W2 is certain to lie between W
// and At: one acknowledged at or before At that began after W ended (an
// unknown W may take effect after its End, so nothing is certain to follow
// it). This is what linearizability allows and no more: W2 must follow W
// and precede At in every linearization, any other write may be ordered
// before W. An absent register is possible only when no write to it was
// acknowledged at or before At.
func checkRestore(h *History, v *Verdict) {
	rs := h.Restore
	if rs == nil {
		return
	}
	if rs.Error != "" {
		v.add(PropertyRestore, 0, nil, "the restore of %s to %s into %s: %s", rs.Cluster, rs.At.UTC().Format(time.RFC3339), rs.Target, rs.Error)
		return
	}
	c := &RestoreCounts{}
	v.Restore = c
	at, after := rs.At, rs.At.Add(wallResolution)
	before := func(op Op) bool { return op.Outcome == OK && !op.End.After(at) }
	invokedAfter := func(op Op) bool { return !op.Start.Before(after) }
	if !rs.RestoredToWall.IsZero() && rs.RestoredToWall.After(at) {
		v.add(PropertyRestore, 0, nil, "%s: the restore reports data as of %s (%s), after the point asked for %s",
			rs.Target, rs.RestoredTo, rs.RestoredToWall.UTC().Format(time.RFC3339), at.UTC().Format(time.RFC3339))
	}

	present := map[int64]bool{}
	for _, id := range rs.Present {
		present[id] = true
	}
	inserts := map[int64]Op{}
	var missing, early []int
	for _, op := range h.Ops {
		if op.Cluster != rs.Cluster || op.Kind != Insert {
			continue
		}
		inserts[op.Value] = op
		switch {
		case op.Outcome == Failed:
		case before(op):
			c.AckedBefore++
			if !present[op.Value] {
				c.AckedMissing++
				missing = append(missing, op.Index)
			}
		case invokedAfter(op):
			c.InvokedAfter++
			if present[op.Value] {
				c.InvokedPresent++
				early = append(early, op.Index)
			}
		default:
			c.Ambiguous++
			if present[op.Value] {
				c.AmbiguousPresent++
			}
		}
	}
	if len(missing) > 0 {
		v.add(PropertyRestore, 0, missing, "%s restored to %s: %d inserts acknowledged before it are missing: %s",
			rs.Target, at.UTC().Format(time.RFC3339), len(missing), opList(h, missing))
	}
	if len(early) > 0 {
		v.add(PropertyRestore, 0, early, "%s restored to %s: %d inserts invoked after it are present: %s",
			rs.Target, at.UTC().Format(time.RFC3339), len(early), opList(h, early))
	}
	var phantom []int64
	var failed []int
	for _, id := range rs.Present {
		op, ok := inserts[id]
		switch {
		case !ok:
			phantom = append(phantom, id)
		case op.Outcome == Failed:
			failed = append(failed, op.Index)
		}
	}
	if len(phantom) > 0 {
		v.add(PropertyRestore, 0, nil, "%s: ids no insert wrote: %v", rs.Target, phantom)
	}
	if len(failed) > 0 {
		v.add(PropertyRestore, 0, failed, "%s: ids of failed inserts present: %s", rs.Target, opList(h, failed))
	}
	checkRestoredRegisters(h, v, c)
}

// checkRestoredRegisters judges each register's restored value (see
// checkRestore).
func checkRestoredRegisters(h *History, v *Verdict, c *RestoreCounts) {
	rs := h.Restore
	at, after := rs.At, rs.At.Add(wallResolution)
	writes := map[string][]Op{}
	for _, op := range h.Ops {
		if op.Cluster == rs.Cluster && op.Kind == Write {
			writes[op.Key] = append(writes[op.Key], op)
		}
	}
	seen := map[string]bool{}
	for k := range writes {
		seen[k] = true
	}
	for k := range rs.Registers {
		seen[k] = true
	}
	keys := slices.Sorted(maps.Keys(seen))
	for _, key := range keys {
		c.Registers++
		got, ok := rs.Registers[key]
		if !ok {
			var acked []int
			for _, w := range writes[key] {
				if w.Outcome == OK && !w.End.After(at) {
					acked = append(acked, w.Index)
				}
			}
			if len(acked) > 0 {
				v.add(PropertyRestore, 0, acked, "%s: register %s absent, though written and acknowledged before %s: %s",
					rs.Target, key, at.UTC().Format(time.RFC3339), opList(h, acked))
			}
			continue
		}
		var w *Op
		for i := range writes[key] {
			if writes[key][i].Value == got {
				w = &writes[key][i]
			}
		}
		switch {
		case w == nil || w.Outcome == Failed:
			v.add(PropertyRestore, 0, nil, "%s: register %s=%d, a value no write that did not fail wrote", rs.Target, key, got)
			continue
		case !w.Start.Before(after):
			v.add(PropertyRestore, 0, []int{w.Index}, "%s: register %s=%d, written by a write invoked after %s: %s",
				rs.Target, key, got, at.UTC().Format(time.RFC3339), describeOp(h, w.Index))
			continue
		case w.Outcome != OK:
			continue // it may take effect at any time after its Start: nothing is certain to follow it
		}
		var later []int
		for _, w2 := range writes[key] {
			if w2.Outcome == OK && !w2.End.After(at) && w2.Start.After(w.End) {
				later = append(later, w2.Index)
			}
		}
		if len(later) > 0 {
			v.add(PropertyRestore, 0, append([]int{w.Index}, later...), "%s: register %s=%d (%s), superseded before %s by %s",
				rs.Target, key, got, describeOp(h, w.Index), at.UTC().Format(time.RFC3339), opList(h, later))
		}
	}
}

// restoreLine is the summary's line for the restore.
func restoreLine(h *History, v Verdict) string {
	rs := h.Restore
	if rs == nil {
		return ""
	}
	head := fmt.Sprintf("restore of %s (backup %s) to %s (%s) into %s", rs.Cluster, rs.Backup,
		rs.At.UTC().Format(time.RFC3339), at(h, rs.At), rs.Target)
	if rs.Error != "" {
		return head + ": " + rs.Error + "\n"
	}
	c := v.Restore
	if c == nil {
		return head + "\n"
	}
	return fmt.Sprintf("%s: restored to %s (%s), %d documents + %d entries replayed in %s; "+
		"acknowledged before present %d/%d, invoked after absent %d/%d, ambiguous %d (%d present), registers %d\n",
		head, rs.RestoredTo, rs.RestoredToWall.UTC().Format(time.RFC3339), rs.Documents, rs.Replayed,
		rs.Done.Sub(rs.Created).Round(time.Second), c.AckedBefore-c.AckedMissing, c.AckedBefore,
		c.InvokedAfter-c.InvokedPresent, c.InvokedAfter, c.Ambiguous, c.AmbiguousPresent, c.Registers)
}
