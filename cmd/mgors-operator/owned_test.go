package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/mgors/operator/actors"
)

// TestOwnedAnswersTheRunningClusters: /owned lists the Manager's running
// cluster actors, sorted, and whether the Lease allows writing; 503 while no
// Manager runs.
func TestOwnedAnswersTheRunningClusters(t *testing.T) {
	var cur atomic.Pointer[running]
	deps := &actors.Deps{}
	h := ownedHandler("op-0", &cur, deps)
	get := func() (int, Owned) {
		rec := httptest.NewRecorder()
		h(rec, httptest.NewRequest(http.MethodGet, "/owned", nil))
		var o Owned
		if rec.Code == http.StatusOK {
			if err := json.Unmarshal(rec.Body.Bytes(), &o); err != nil {
				t.Fatal(err)
			}
		}
		return rec.Code, o
	}
	if code, _ := get(); code != http.StatusServiceUnavailable {
		t.Fatalf("no Manager: %d, want 503", code)
	}
	system := actor.NewActorSystem()
	mgr := system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(actors.Clusters); ok {
			ctx.Respond(map[string]string{"db/b": "uid-b", "db/a": "uid-a"})
		}
	}))
	defer func() { _ = system.Root.PoisonFuture(mgr).Wait() }()
	cur.Store(&running{system: system, mgr: mgr})
	code, o := get()
	if code != http.StatusOK || o.Identity != "op-0" || !o.MayWrite || !slices.Equal(o.Clusters, []string{"db/a", "db/b"}) {
		t.Fatalf("running: %d %+v", code, o)
	}
	deps.Lease = func() error { return errors.New("not renewed in time") }
	if code, o := get(); code != http.StatusOK || o.MayWrite || len(o.Clusters) != 2 {
		t.Fatalf("Lease stale: %d %+v, want the clusters and mayWrite false", code, o)
	}
}
