package chaos

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// presentIDs lists per cluster the ids its final read found, in order.
func presentIDs(h *History) map[string][]int64 {
	out := map[string][]int64{}
	for _, f := range h.Final {
		ids := make([]int64, 0, len(f.Present))
		for id, ok := range f.Present {
			if ok {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		out[f.Cluster] = ids
	}
	return out
}

// ReadReport rebuilds the History a report directory holds, so that a run can
// be judged again (after a change to the checker, or as a test's fixture: a
// reproducer per bug). Logs and Secrets are never written, so the panic and
// secret properties cannot be judged again.
func ReadReport(dir string) (*History, error) {
	var h History
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("report.json: %w", err)
	}
	if err := readLines(filepath.Join(dir, "history.ndjson"), &h.Ops); err != nil {
		return nil, err
	}
	if err := readLines(filepath.Join(dir, "members.ndjson"), &h.Members); err != nil {
		return nil, err
	}
	if err := readLines(filepath.Join(dir, "phases.ndjson"), &h.Phases); err != nil {
		return nil, err
	}
	var present map[string][]int64
	if b, err = os.ReadFile(filepath.Join(dir, "present.json")); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &present); err != nil {
		return nil, fmt.Errorf("present.json: %w", err)
	}
	for i := range h.Final {
		h.Final[i].Present = map[int64]bool{}
		for _, id := range present[h.Final[i].Cluster] {
			h.Final[i].Present[id] = true
		}
	}
	return &h, nil
}

func readLines[T any](path string, into *[]T) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for n := 1; sc.Scan(); n++ {
		var item T
		if err := json.Unmarshal(sc.Bytes(), &item); err != nil {
			return fmt.Errorf("%s line %d: %w", path, n, err)
		}
		*into = append(*into, item)
	}
	return sc.Err()
}
