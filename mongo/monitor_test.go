package mongo

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo/address"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

func TestMovedIsWhatTheOperatorActsOn(t *testing.T) {
	secondary := event.ServerDescription{Addr: "m1:27017", Kind: "RSSecondary", SetName: "rs0", SetVersion: 2,
		Primary: "m0:27017", LastWriteTime: time.Unix(100, 0)}
	for _, c := range []struct {
		name string
		edit func(*event.ServerDescription)
		want bool
	}{
		{"nothing", func(*event.ServerDescription) {}, false},
		{"a newer write", func(d *event.ServerDescription) { d.LastWriteTime = time.Unix(200, 0) }, false},
		{"gone", func(d *event.ServerDescription) { *d = event.ServerDescription{Addr: d.Addr, Kind: "Unknown"} }, true},
		{"elected", func(d *event.ServerDescription) { d.Kind, d.Primary = "RSPrimary", d.Addr }, true},
		{"another primary", func(d *event.ServerDescription) { d.Primary = address.Address("m2:27017") }, true},
		{"reconfigured", func(d *event.ServerDescription) { d.SetVersion = 3 }, true},
		{"new term", func(d *event.ServerDescription) { d.ElectionID = bson.NewObjectID() }, true},
	} {
		next := secondary
		next.Hosts = slices.Clone(secondary.Hosts)
		c.edit(&next)
		if got := moved(secondary, next); got != c.want {
			t.Errorf("%s: moved %v, want %v", c.name, got, c.want)
		}
	}
}

// The description a new connection learns before its first command returns
// is what that command reports; later moves are news, other changes not.
func TestMonitorReportsMovesAfterOpening(t *testing.T) {
	var got []string
	m := newMonitor("m1:27017", func(h string) { got = append(got, h) })
	on := m.serverMonitor().ServerDescriptionChanged
	unknown := event.ServerDescription{Addr: "m1:27017", Kind: "Unknown"}
	secondary := event.ServerDescription{Addr: "m1:27017", Kind: "RSSecondary", SetName: "rs0", SetVersion: 1}
	on(&event.ServerDescriptionChangedEvent{PreviousDescription: unknown, NewDescription: secondary})
	if len(got) != 0 {
		t.Fatalf("the first description while opening was reported: %v", got)
	}
	m.opened()
	later := secondary
	later.LastWriteTime = time.Unix(5, 0)
	on(&event.ServerDescriptionChangedEvent{PreviousDescription: secondary, NewDescription: later})
	on(&event.ServerDescriptionChangedEvent{PreviousDescription: later, NewDescription: unknown})
	if !slices.Equal(got, []string{"m1:27017"}) {
		t.Fatalf("reported %v, want the member going away only", got)
	}
}

// The driver's monitoring of real (simulated) members reports a stepdown:
// the member that was primary, and the one elected, move without anybody
// asking them.
func TestClientReportsAStepDownFromTheDriversMonitoring(t *testing.T) {
	keyfile := []byte("c2VjcmV0LWtleS1mb3ItdGhlLXNldA\n")
	hosts := simSet(t, 3, keyfile)
	ctx := context.Background()
	var mu sync.Mutex
	moves := map[string]int{}
	c := NewClient(Options{Timeout: 5 * time.Second, Credentials: KeyfileAuth(keyfile),
		Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel),
		Changed: func(h string) {
			mu.Lock()
			moves[h]++
			mu.Unlock()
		}})
	defer func() { _ = c.Close(ctx) }()
	for _, h := range hosts {
		eventually(t, "hello "+h, func() error { _, err := c.Hello(ctx, h); return err })
	}
	var desired []DesiredMember
	for i, h := range hosts {
		desired = append(desired, DesiredMember{Ordinal: int32(i), Name: h, Host: h, Votes: 1, Priority: 1})
	}
	if err := c.Initiate(ctx, hosts[0], InitialConfig("rs0", desired, v1alpha1.ReplicaSetSettings{ElectionTimeoutMillis: new(int32(1000)), HeartbeatIntervalMillis: new(int32(200))})); err != nil {
		t.Fatal(err)
	}
	var primary string
	eventually(t, "a primary", func() error {
		for _, h := range hosts {
			if r, err := c.Hello(ctx, h); err == nil && r.IsWritablePrimary {
				primary = h
				return nil
			}
		}
		return errors.New("no primary yet")
	})
	eventually(t, "the initiate and the election reported", func() error {
		mu.Lock()
		defer mu.Unlock()
		if moves[primary] == 0 {
			return errors.New("no move of the primary reported")
		}
		return nil
	})
	mu.Lock()
	before := moves[primary]
	mu.Unlock()
	if err := c.StepDown(ctx, primary, 30); err != nil && !IsUnreachable(err) {
		t.Fatal(err)
	}
	eventually(t, "the stepdown reported", func() error {
		mu.Lock()
		defer mu.Unlock()
		if moves[primary] == before {
			return errors.New("the stepped-down primary's move not reported")
		}
		return nil
	})
}
