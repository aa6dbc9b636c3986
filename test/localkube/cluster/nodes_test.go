package cluster

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestNodeIndex(t *testing.T) {
	for name, want := range map[string]int{"localkube-1": 1, "localkube-3": 3} {
		if got, err := nodeIndex(name, 3); err != nil || got != want {
			t.Errorf("nodeIndex(%q, 3) = %d, %v; want %d", name, got, err, want)
		}
	}
	for _, name := range []string{"localkube-4", "localkube-0", "localkube-01", "node-1", "", "localkube-"} {
		_, err := nodeIndex(name, 3)
		if err == nil || !strings.Contains(err.Error(), "localkube-1, localkube-2, localkube-3") {
			t.Errorf("nodeIndex(%q, 3) = %v, want an error listing the Nodes", name, err)
		}
	}
}

func TestNodesToRunSkipsDownNodes(t *testing.T) {
	if got := nodesToRun(3, map[string]bool{"localkube-2": true}); !reflect.DeepEqual(got, []int{1, 3}) {
		t.Errorf("nodesToRun = %v", got)
	}
	if got := nodesToRun(2, map[string]bool{"localkube-1": true, "localkube-2": true}); got != nil {
		t.Errorf("every Node down: nodesToRun = %v", got)
	}
	if got := nodesToRun(2, nil); !reflect.DeepEqual(got, []int{1, 2}) {
		t.Errorf("none down: nodesToRun = %v", got)
	}
}

// TestDownMarkers is the bookkeeping of NodeDown and NodeUp: a marker file per Node,
// read back in Node order.
func TestDownMarkers(t *testing.T) {
	l := layout{dir: t.TempDir()}
	for _, n := range []string{"localkube-10", "localkube-2", "localkube-1"} {
		if err := os.MkdirAll(l.nodeDir(n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"localkube-10", "localkube-2"} {
		if err := os.WriteFile(l.downMarker(n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := NodesDown(l.dir); !reflect.DeepEqual(got, []string{"localkube-2", "localkube-10"}) {
		t.Errorf("NodesDown = %v", got)
	}
	if err := os.Remove(l.downMarker("localkube-2")); err != nil {
		t.Fatal(err)
	}
	if got := nodesDown(l); !reflect.DeepEqual(got, map[string]bool{"localkube-10": true}) {
		t.Errorf("nodesDown after one came up = %v", got)
	}
}

func TestNodeDownNeedsAClusterDirectory(t *testing.T) {
	_, err := NodeDown(filepath.Join(t.TempDir(), "none"), "localkube-1")
	if err == nil || !strings.Contains(err.Error(), "not a localkube cluster directory") {
		t.Errorf("NodeDown of a missing directory: %v", err)
	}
	dir := t.TempDir()
	if err := writeJSON(layout{dir: dir}.state(), state{Nodes: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := NodeDown(dir, "localkube-3"); err == nil || !strings.Contains(err.Error(), `no Node "localkube-3"`) {
		t.Errorf("NodeDown of an unknown Node: %v", err)
	}
	if fileExists(layout{dir: dir}.downMarker("localkube-3")) {
		t.Error("an unknown Node was marked down")
	}
}
