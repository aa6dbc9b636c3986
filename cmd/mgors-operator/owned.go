package main

import (
	"encoding/json"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/mgors/operator/actors"
)

// ownedTimeout bounds the Manager's answer to /owned.
const ownedTimeout = 2 * time.Second

// Owned is the answer of /owned on the health address: what this process
// runs. With sharding, a cluster is owned by a replica while its actor runs
// there and the replica may write (MayWrite: its Lease renewed in time,
// docs/design/sharding.md); the sharding end-to-end test polls it to see
// that no Mgors is ever owned by two replicas.
type Owned struct {
	Identity string `json:"identity"`
	MayWrite bool   `json:"mayWrite"`
	// Clusters are namespace/name of every running Cluster actor, sorted.
	Clusters []string `json:"clusters"`
}

// running is the actor system and Manager of this process while it leads.
type running struct {
	system *actor.ActorSystem
	mgr    *actor.PID
}

// ownedHandler answers /owned from the running Manager (503 while there is
// none, or when it does not answer in time). deps.Lease (nil: always may
// write) is read only once a Manager runs: it is set before.
func ownedHandler(identity string, cur *atomic.Pointer[running], deps *actors.Deps) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		r := cur.Load()
		if r == nil {
			http.Error(w, "no actors running", http.StatusServiceUnavailable)
			return
		}
		res, err := r.system.Root.RequestFuture(r.mgr, actors.Clusters{}, ownedTimeout).Result()
		byKey, ok := res.(map[string]string)
		if err != nil || !ok {
			http.Error(w, "the Manager did not answer", http.StatusServiceUnavailable)
			return
		}
		out := Owned{Identity: identity, MayWrite: deps.Lease == nil || deps.Lease() == nil, Clusters: make([]string, 0, len(byKey))}
		for key := range byKey {
			out.Clusters = append(out.Clusters, key)
		}
		slices.Sort(out.Clusters)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}
}
