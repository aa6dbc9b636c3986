package mongo

import (
	"context"
	"fmt"
	"testing"
)

// The version calls against mongod-sim: buildInfo without credentials,
// getParameter and setFeatureCompatibilityVersion (confirm sent for 7.0).
func TestVersionCallsOnSim(t *testing.T) {
	c, hosts, primary := simPrimary(t)
	ctx := context.Background()
	plain := NewClient(Options{Timeout: c.opts.Timeout, Log: c.opts.Log})
	t.Cleanup(func() { _ = plain.Close(ctx) })
	for _, h := range hosts {
		if v, err := plain.ServerVersion(ctx, h); err != nil || Line(v) != "7.0" {
			t.Errorf("buildInfo on %s: %q %v", h, v, err)
		}
	}
	if f, err := c.FeatureCompatibilityVersion(ctx, primary); err != nil || f.Version != "7.0" {
		t.Fatalf("FCV %+v %v", f, err)
	}
	if err := c.SetFeatureCompatibilityVersion(ctx, primary, "6.0"); err != nil {
		t.Fatal(err)
	}
	if err := c.SetFeatureCompatibilityVersion(ctx, primary, "7.0"); err != nil {
		t.Fatal(err)
	}
	for _, h := range hosts { // w:majority: at least two hold it; every one soon
		eventually(t, "FCV 7.0 on "+h, func() error {
			f, err := c.FeatureCompatibilityVersion(ctx, h)
			if err == nil && f.Version != "7.0" {
				return fmt.Errorf("FCV %+v", f)
			}
			return err
		})
	}
}

// mongod 6.0 knows no confirm field (40415): the call sends it, and again
// without it.
func TestSetFCVOn60(t *testing.T) {
	t.Setenv("MONGO_VERSION", "6.0.19")
	c, _, primary := simPrimary(t)
	ctx := context.Background()
	if v, err := c.ServerVersion(ctx, primary); err != nil || v != "6.0.19" {
		t.Fatalf("buildInfo %q %v", v, err)
	}
	if err := c.SetFeatureCompatibilityVersion(ctx, primary, "6.0"); err != nil {
		t.Fatal(err)
	}
	if f, err := c.FeatureCompatibilityVersion(ctx, primary); err != nil || f.Version != "6.0" {
		t.Fatalf("FCV %+v %v", f, err)
	}
}
