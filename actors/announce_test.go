package actors

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"

	"github.com/rs/zerolog"

	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube/api/v1alpha1"
)

// Every line an actor logs on the way to Healthy, the event records'
// included, names each key once.
func TestLogLinesNameEachKeyOnce(t *testing.T) {
	var logs syncBuffer
	world := newFakeWorld()
	deps := testDeps(eventlog.NewMemory(), world)
	deps.Log = zerolog.New(&logs).With().Timestamp().Logger()
	stop := runOperator(t, deps)
	waitFor(t, "Healthy", func() bool { return world.phase("db/demo") == v1alpha1.PhaseHealthy })
	stop()
	lines, records := 0, 0
	sc := bufio.NewScanner(bytes.NewReader([]byte(logs.String())))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines++
		d := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		if _, err := d.Token(); err != nil { // {
			t.Fatalf("line %d: %v", lines, err)
		}
		seen := map[string]bool{}
		for d.More() {
			k, err := d.Token()
			if err != nil {
				t.Fatalf("line %d: %v", lines, err)
			}
			key := k.(string)
			if seen[key] {
				t.Errorf("line %d names %q twice: %s", lines, key, sc.Text())
			}
			seen[key] = true
			if key == eventlog.LogMarker {
				records++
			}
			var v json.RawMessage
			if err := d.Decode(&v); err != nil {
				t.Fatalf("line %d: %v", lines, err)
			}
		}
	}
	if records == 0 {
		t.Fatalf("no event record among %d lines", lines)
	}
}
