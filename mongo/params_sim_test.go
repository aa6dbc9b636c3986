package mongo

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
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

// The operator's own user may not set parameters or resize the oplog with
// its roles alone (13); once GrantConfigRole gave it ConfigRole (twice:
// repeatable), it may, on a secondary too, and nothing else came with it
// (shutdown stays refused).
func TestConfigRoleOnSim(t *testing.T) {
	c, hosts, primary := simPrimary(t)
	ctx := context.Background()
	if err := c.CreateUser(ctx, primary, OperatorUser, "operator-pw", OperatorRoles()); err != nil {
		t.Fatal(err)
	}
	op := NewClient(Options{Timeout: c.opts.Timeout, Credentials: AdminUser(OperatorUser, "operator-pw"), Log: c.opts.Log})
	t.Cleanup(func() { _ = op.Close(ctx) })
	var secondary string
	for _, h := range hosts {
		if h != primary {
			secondary = h
		}
	}
	eventually(t, "the user on "+secondary, func() error { return op.Ping(ctx, secondary) })
	if err := op.SetParameters(ctx, secondary, map[string]any{"logLevel": int64(1)}); !IsCode(err, CodeUnauthorized) {
		t.Fatalf("setParameter without the role: %v, want Unauthorized", err)
	}
	for range 2 {
		if err := op.GrantConfigRole(ctx, primary, OperatorUser); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "setParameter on "+secondary, func() error {
		return op.SetParameters(ctx, secondary, map[string]any{"logLevel": int64(1)})
	})
	size, err := op.OplogSizeMB(ctx, secondary)
	if err != nil {
		t.Fatal(err)
	}
	if err := op.ResizeOplog(ctx, secondary, size+10); err != nil {
		t.Fatal(err)
	}
	if err := op.run(ctx, secondary, "shutdown", true, bson.D{{Key: "shutdown", Value: 1}}, nil); !IsCode(err, CodeUnauthorized) {
		t.Fatalf("shutdown with the config role: %v, want Unauthorized", err)
	}
}
