package chaos

import (
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// registerInput is a Write (write true, value) or a Read of one register.
type registerInput struct {
	Key   string
	Write bool
	Value int64
}

// finalRead marks the final majority read in porcupine's history: taken after
// every client stopped and the faults were healed, it must see the register's
// last value in the linearization.
const finalRead = -1

// registerModel is a single-value register per key, 0 before the first write,
// partitioned by key (porcupine checks each key on its own).
var registerModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		for _, op := range history {
			k := op.Input.(registerInput).Key
			byKey[k] = append(byKey[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(byKey))
		for _, k := range sortedKeys(byKey) {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() any { return int64(0) },
	Step: func(state, input, output any) (bool, any) {
		in := input.(registerInput)
		if in.Write {
			return true, in.Value
		}
		return output.(int64) == state.(int64), state
	},
	DescribeOperation: func(input, output any) string {
		in := input.(registerInput)
		if in.Write {
			return fmt.Sprintf("write %s=%d", in.Key, in.Value)
		}
		return fmt.Sprintf("read %s → %d", in.Key, output.(int64))
	},
	DescribeState: func(state any) string { return fmt.Sprint(state.(int64)) },
	DescribeOperationMetadata: func(info any) string {
		if info.(int) == finalRead {
			return "the final majority read"
		}
		return fmt.Sprintf("op %d", info.(int))
	},
}

// linResult is porcupine's answer for one cluster.
type linResult struct {
	result porcupine.CheckResult
	info   porcupine.LinearizationInfo
}

// registerHistory turns a cluster's Writes and linearizable Reads into
// porcupine operations (Metadata is the index into History.Ops):
//   - Failed operations are dropped: they did not take effect;
//   - Unknown and Failed reads are dropped: they observed nothing;
//   - an Unknown write ends at infinity (after everything else), porcupine's
//     convention for an operation that may take effect at any later time; one
//     whose value nobody read is dropped, which changes no verdict (Knossos does
//     the same) and keeps the search small;
//   - the final value of each register is a read after everything else.
func registerHistory(h *History, c string, f *Final) []porcupine.Operation {
	var first, last time.Time
	read := map[string]map[int64]bool{}
	saw := func(k string, v int64) {
		if read[k] == nil {
			read[k] = map[int64]bool{}
		}
		read[k][v] = true
	}
	for _, op := range h.Ops {
		if op.Cluster != c || op.Kind == Insert {
			continue
		}
		if first.IsZero() || op.Start.Before(first) {
			first = op.Start
		}
		last = later(last, later(op.Start, op.End))
		if op.Kind == Read && op.Concern == "linearizable" && op.Outcome == OK {
			saw(op.Key, op.Value)
		}
	}
	if f != nil {
		for k, val := range f.Registers {
			saw(k, val)
		}
	}
	ns := func(t time.Time) int64 { return t.Sub(first).Nanoseconds() }
	end := ns(last) + 1 // every final read starts after this
	var ops []porcupine.Operation
	for i, op := range h.Ops {
		if op.Cluster != c || op.Kind == Insert || op.Outcome == Failed {
			continue
		}
		switch {
		case op.Kind == Write && op.Outcome == Unknown:
			if !read[op.Key][op.Value] {
				continue
			}
			ops = append(ops, porcupine.Operation{ClientId: op.Client, Input: registerInput{op.Key, true, op.Value},
				Call: ns(op.Start), Output: int64(0), Return: end + 2, Metadata: i})
		case op.Kind == Write:
			ops = append(ops, porcupine.Operation{ClientId: op.Client, Input: registerInput{op.Key, true, op.Value},
				Call: ns(op.Start), Output: int64(0), Return: ns(op.End), Metadata: i})
		case op.Kind == Read && op.Concern == "linearizable" && op.Outcome == OK:
			ops = append(ops, porcupine.Operation{ClientId: op.Client, Input: registerInput{op.Key, false, 0},
				Call: ns(op.Start), Output: op.Value, Return: ns(op.End), Metadata: i})
		}
	}
	if len(ops) == 0 {
		return nil
	}
	if f != nil && f.ReadError == "" {
		keys := map[string]bool{}
		for _, op := range ops {
			keys[op.Input.(registerInput).Key] = true
		}
		// The final reader gets a client number of its own, after the workload's.
		client := 0
		for _, op := range ops {
			client = max(client, op.ClientId+1)
		}
		for _, k := range sortedKeys(keys) {
			ops = append(ops, porcupine.Operation{ClientId: client, Input: registerInput{k, false, 0},
				Call: end, Output: f.Registers[k], Return: end + 1, Metadata: finalRead})
		}
	}
	return ops
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// checkRegisters runs porcupine on each cluster's register history.
func checkRegisters(h *History, b Bounds, v *Verdict) {
	final := map[string]*Final{}
	for i := range h.Final {
		final[h.Final[i].Cluster] = &h.Final[i]
	}
	for _, c := range clusters(h) {
		ops := registerHistory(h, c, final[c])
		if len(ops) == 0 {
			v.Linearizable[c] = true
			continue
		}
		res, info := porcupine.CheckOperationsVerbose(registerModel, ops, b.Linearizable)
		v.Linearizable[c] = res == porcupine.Ok
		switch res {
		case porcupine.Ok:
			continue
		case porcupine.Unknown:
			v.add(PropertyLinearizable, 0, nil, "%s: porcupine could not decide within %s whether the %d register operations are linearizable", c, b.Linearizable, len(ops))
		default:
			stuck, context := culprits(info, registerModel.Partition(ops))
			idx := append(opIndexes(stuck), opIndexes(context)...)
			v.add(PropertyLinearizable, 0, idx, "%s: the register history is not linearizable: no order explains %s after %s",
				c, describePorcupine(h, stuck), describePorcupine(h, context))
		}
		v.lin[c] = linResult{result: res, info: info}
	}
}

// culprits reads porcupine's partial linearizations of the partitions it
// rejected: stuck are the operations of a rejected key that no partial
// linearization reached, the earliest first (the read that saw what it could
// not see); context is the tail of the longest partial linearization (the
// writes before which it got stuck).
//
// parts is registerModel's partition of the history, in porcupine's order.
func culprits(info porcupine.LinearizationInfo, parts [][]porcupine.Operation) (stuck, context []porcupine.Operation) {
	for p, partials := range info.PartialLinearizationsOperations() {
		var longest []porcupine.Operation
		placed := map[int]bool{}
		for _, lin := range partials {
			if len(lin) > len(longest) {
				longest = lin
			}
			for _, op := range lin {
				placed[op.Metadata.(int)] = true
			}
		}
		all := parts[p]
		if len(longest) == len(all) {
			continue // this key was linearizable
		}
		var left []porcupine.Operation
		for _, op := range all {
			if !placed[op.Metadata.(int)] {
				left = append(left, op)
			}
		}
		if len(left) == 0 { // each was placed somewhere, just not all together
			inLongest := map[int]bool{}
			for _, op := range longest {
				inLongest[op.Metadata.(int)] = true
			}
			for _, op := range all {
				if !inLongest[op.Metadata.(int)] {
					left = append(left, op)
				}
			}
		}
		sort.SliceStable(left, func(i, j int) bool { return left[i].Call < left[j].Call })
		stuck = append(stuck, left[:min(len(left), 1)]...)
		context = append(context, longest[max(0, len(longest)-2):]...)
	}
	return stuck, context
}

func opIndexes(ops []porcupine.Operation) []int {
	var out []int
	for _, op := range ops {
		if i := op.Metadata.(int); i != finalRead {
			out = append(out, i)
		}
	}
	return out
}

func describePorcupine(h *History, ops []porcupine.Operation) string {
	if len(ops) == 0 {
		return "the start"
	}
	s := ""
	for i, op := range ops {
		if i > 0 {
			s += ", "
		}
		if k := op.Metadata.(int); k == finalRead {
			s += fmt.Sprintf("the final read of %s → %d", op.Input.(registerInput).Key, op.Output.(int64))
		} else {
			s += describeOp(h, k)
		}
	}
	return s
}

// visualize writes porcupine's own page for a rejected register history.
func visualize(w io.Writer, lin linResult) error {
	return porcupine.Visualize(registerModel, lin.info, w)
}
