package mongo

import (
	"context"
	"testing"
)

// The spec.config calls against mongod-sim: getParameter as text,
// setParameter one by one, the oplog's maximum from collStats and
// replSetResizeOplog (refused below 990 MB).
func TestParameterCallsOnSim(t *testing.T) {
	c, hosts, _ := simPrimary(t)
	ctx := context.Background()
	h := hosts[1]
	got, err := c.Parameters(ctx, h, []string{"logLevel", "notablescan", "cursorTimeoutMillis", "noSuchParameter"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"logLevel": "0", "notablescan": "false", "cursorTimeoutMillis": "600000"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	if _, ok := got["noSuchParameter"]; ok {
		t.Errorf("an unknown parameter answered: %v", got)
	}
	if err := c.SetParameters(ctx, h, map[string]any{"logLevel": int64(2), "notablescan": true}); err != nil {
		t.Fatal(err)
	}
	if got, err = c.Parameters(ctx, h, []string{"logLevel", "notablescan"}); err != nil || got["logLevel"] != "2" || got["notablescan"] != "true" {
		t.Fatalf("after setParameter: %v %v", got, err)
	}
	if err := c.SetParameters(ctx, h, map[string]any{"ttlMonitorSleepSecs": int64(5)}); !IsCode(err, 72) {
		t.Errorf("a startup-only parameter at run time: %v, want InvalidOptions (72)", err)
	}
	before, err := c.OplogSizeMB(ctx, h)
	if err != nil || before < 990 {
		t.Fatalf("oplog size %d MB, %v", before, err)
	}
	if err := c.ResizeOplog(ctx, h, before+100); err != nil {
		t.Fatal(err)
	}
	if after, err := c.OplogSizeMB(ctx, h); err != nil || after != before+100 {
		t.Fatalf("oplog size after resize %d MB, %v; want %d", after, err, before+100)
	}
	if err := c.ResizeOplog(ctx, h, 100); err == nil {
		t.Error("an oplog of 100 MB was accepted")
	}
}
