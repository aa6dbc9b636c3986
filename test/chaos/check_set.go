package chaos

import (
	"fmt"
	"sort"
	"strings"
)

// checkSet judges what the final read found (Jepsen's set workload, and the
// registers' last values) and the majority reads:
//   - lost: an Insert acknowledged (OK) that the final majority read did not
//     find; a register whose final value is 0 or older than an acknowledged
//     Write that began after its own ended; a cluster without a final read.
//   - phantom: an id found that no Insert maybe wrote (none tried it, or every
//     try Failed); a register or majority-read value no Write maybe wrote, or
//     that was read before its Write began.
//
// Unknown outcomes may be present or absent.
func checkSet(h *History, v *Verdict) {
	final := map[string]*Final{}
	for i := range h.Final {
		final[h.Final[i].Cluster] = &h.Final[i]
	}
	inserts, writes := indexWrites(h)
	for _, c := range clusters(h) {
		f := final[c]
		switch {
		case f == nil:
			v.add(PropertyLost, 0, nil, "%s: no final read was recorded, so no write can be shown present", c)
			continue
		case f.ReadError != "":
			v.add(PropertyLost, 0, nil, "%s: the final majority read failed: %s", c, f.ReadError)
			continue
		}
		checkInserts(h, v, c, f, inserts[c])
		checkFinalRegisters(h, v, c, f, writes[c])
	}
	checkMajorityReads(h, v, writes)
}

// indexWrites maps cluster → value → the indexes of the Inserts (and of the
// Writes, keyed by register too) that tried it.
func indexWrites(h *History) (inserts map[string]map[int64][]int, writes map[string]map[string]map[int64][]int) {
	inserts = map[string]map[int64][]int{}
	writes = map[string]map[string]map[int64][]int{}
	for i, op := range h.Ops {
		switch op.Kind {
		case Insert:
			if inserts[op.Cluster] == nil {
				inserts[op.Cluster] = map[int64][]int{}
			}
			inserts[op.Cluster][op.Value] = append(inserts[op.Cluster][op.Value], i)
		case Write:
			if writes[op.Cluster] == nil {
				writes[op.Cluster] = map[string]map[int64][]int{}
			}
			if writes[op.Cluster][op.Key] == nil {
				writes[op.Cluster][op.Key] = map[int64][]int{}
			}
			writes[op.Cluster][op.Key][op.Value] = append(writes[op.Cluster][op.Key][op.Value], i)
		}
	}
	return inserts, writes
}

// maybe is the first of the ops that may have taken effect (OK or Unknown), -1 if none.
func maybe(h *History, idx []int) int {
	for _, i := range idx {
		if h.Ops[i].Outcome != Failed {
			return i
		}
	}
	return -1
}

func checkInserts(h *History, v *Verdict, c string, f *Final, tried map[int64][]int) {
	var lost []int // the acknowledged inserts of the missing ids
	ids := 0
	for id, idx := range tried {
		if f.Present[id] {
			continue
		}
		n := len(lost)
		for _, i := range idx {
			if h.Ops[i].Outcome == OK {
				lost = append(lost, i)
			}
		}
		if len(lost) > n {
			ids++
		}
	}
	var phantom []int64
	var failed []int
	for id := range f.Present {
		if !f.Present[id] {
			continue
		}
		if maybe(h, tried[id]) < 0 {
			phantom = append(phantom, id)
			failed = append(failed, tried[id]...)
		}
	}
	sort.Ints(lost)
	sort.Ints(failed)
	sort.Slice(phantom, func(i, j int) bool { return phantom[i] < phantom[j] })
	if len(lost) > 0 {
		v.Lost += ids
		v.add(PropertyLost, 0, lost, "%s: %d acknowledged ids missing from the final majority read: %s", c, ids, opList(h, lost))
	}
	if len(phantom) > 0 {
		v.Phantom += len(phantom)
		v.add(PropertyPhantom, 0, failed, "%s: %d ids present that no insert maybe wrote (never tried, or every try failed): %s", c, len(phantom), idList(phantom))
	}
}

func checkFinalRegisters(h *History, v *Verdict, c string, f *Final, writes map[string]map[int64][]int) {
	keys := map[string]bool{}
	for k := range writes {
		keys[k] = true
	}
	for k := range f.Registers {
		keys[k] = true
	}
	for _, k := range sortedKeys(keys) {
		val := f.Registers[k]
		// The acknowledged writes the final value must not be older than.
		var acked []int
		for _, idx := range writes[k] {
			for _, i := range idx {
				if h.Ops[i].Outcome == OK {
					acked = append(acked, i)
				}
			}
		}
		sort.Ints(acked)
		if val == 0 {
			if len(acked) > 0 {
				v.Lost++
				v.add(PropertyLost, 0, acked, "%s: register %s is absent at the end although %d writes to it were acknowledged: %s", c, k, len(acked), opList(h, acked))
			}
			continue
		}
		w := maybe(h, writes[k][val])
		if w < 0 {
			v.Phantom++
			v.add(PropertyPhantom, 0, writes[k][val], "%s: register %s ends as %d, a value no write maybe wrote", c, k, val)
			continue
		}
		if h.Ops[w].Outcome != OK {
			continue // an unknown write may take effect at any time after it began
		}
		var later []int
		for _, i := range acked {
			if h.Ops[i].Start.After(h.Ops[w].End) {
				later = append(later, i)
			}
		}
		if len(later) > 0 {
			v.Lost++
			v.add(PropertyLost, 0, append([]int{w}, later...), "%s: register %s ends as %d (%s) although later writes were acknowledged: %s", c, k, val, describeOp(h, w), opList(h, later))
		}
	}
}

// checkMajorityReads: a read with read concern majority may be stale, but what
// it returns must have been written: by a Write that maybe took effect and
// began before the read ended, or 0 (the register not yet written).
func checkMajorityReads(h *History, v *Verdict, writes map[string]map[string]map[int64][]int) {
	for i, op := range h.Ops {
		if op.Kind != Read || op.Concern == "linearizable" || op.Outcome != OK || op.Value == 0 {
			continue
		}
		idx := writes[op.Cluster][op.Key][op.Value]
		w := maybe(h, idx)
		switch {
		case w < 0:
			v.Phantom++
			v.add(PropertyPhantom, 0, append([]int{i}, idx...), "%s: %s read a value no write maybe wrote", op.Cluster, describeOp(h, i))
		case h.Ops[w].Start.After(op.End):
			v.Phantom++
			v.add(PropertyPhantom, 0, []int{i, w}, "%s: %s read a value before its write began (%s)", op.Cluster, describeOp(h, i), describeOp(h, w))
		}
	}
}

func idList(ids []int64) string {
	const show = 10
	var b strings.Builder
	for i, id := range ids {
		if i == show {
			fmt.Fprintf(&b, ", … %d more", len(ids)-show)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, id)
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
