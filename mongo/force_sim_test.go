package mongo

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// TestForceOntoMongodSim: two of three mongod-sim members are killed; the
// survivor's own status shows the loss, hello and replSetGetStatus carry the
// optimes the operator records (lastWrite, the commit point), ForceOnto
// refuses a dead member and its config, forced on the survivor, elects it.
func TestForceOntoMongodSim(t *testing.T) {
	keyfile := []byte("c2VjcmV0LWtleS1mb3ItdGhlLXNldA\n")
	hosts, procs := simProcs(t, 3, keyfile)
	ctx := context.Background()
	c := NewClient(Options{Timeout: 5 * time.Second, Credentials: KeyfileAuth(keyfile), Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})
	defer func() { _ = c.Close(ctx) }()
	for _, h := range hosts {
		eventually(t, "hello "+h, func() error { _, err := c.Hello(ctx, h); return err })
	}
	var desired []DesiredMember
	for i, h := range hosts {
		desired = append(desired, DesiredMember{Ordinal: int32(i), Name: fmt.Sprint("m", i), Host: h, Votes: 1, Priority: 1})
	}
	settings := v1alpha1.ReplicaSetSettings{ElectionTimeoutMillis: new(int32(1000)), HeartbeatIntervalMillis: new(int32(200)), HeartbeatTimeoutSecs: new(int32(2))}
	if err := c.Initiate(ctx, hosts[0], InitialConfig("rs0", desired, settings)); err != nil {
		t.Fatal(err)
	}
	var primary string
	eventually(t, "a primary with a commit point", func() error {
		st, err := c.Status(ctx, hosts[0])
		if err != nil {
			return err
		}
		if p := st.Primary(); p == nil || st.Optimes.LastCommittedOpTime.IsZero() {
			return errors.New("no primary or no commit point yet")
		}
		primary = st.Primary().Name
		return nil
	})
	eventually(t, "hello's lastWrite", func() error {
		r, err := c.Hello(ctx, primary)
		if err == nil && r.LastWrite.OpTime.IsZero() {
			return errors.New("no lastWrite")
		}
		return err
	})

	var survivor string
	for _, h := range hosts {
		if SameHost(h, primary) {
			continue
		}
		if survivor == "" {
			survivor = h
			continue
		}
		_ = procs[h].Kill()
	}
	// The primary is frozen, not killed: it comes back below, REMOVED.
	if err := procs[primary].Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = procs[primary].Signal(syscall.SIGCONT) }()
	cfg, err := c.Config(ctx, survivor)
	if err != nil {
		t.Fatal(err)
	}
	var own *Status
	eventually(t, "the survivor to see the majority lost", func() error {
		st, err := c.Status(ctx, survivor)
		if err != nil {
			return err
		}
		if lost, ev := MajorityLost(cfg, st); !lost {
			return fmt.Errorf("not lost yet: %d up", len(ev.Up))
		}
		own = st
		return nil
	})
	statuses := map[string]*Status{survivor: own}
	if _, err := ForceOnto(cfg, statuses, primary); !errors.Is(err, ErrForceRefused) {
		t.Fatalf("a dead member was accepted: %v", err)
	}
	f, err := ForceOnto(cfg, statuses, survivor)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Kept) != 1 || len(f.Dropped) != 2 {
		t.Fatalf("force %+v", f)
	}
	if err := c.Reconfig(ctx, survivor, f.Config, true); err != nil {
		t.Fatalf("forced reconfig: %v", err)
	}
	eventually(t, "the survivor elected on the forced config", func() error {
		r, err := c.Hello(ctx, survivor)
		if err != nil {
			return err
		}
		if !r.IsWritablePrimary || r.SetVersion < f.Config.Version {
			return fmt.Errorf("hello %+v", r)
		}
		return nil
	})

	// The old primary, continued, learns the forced config and is REMOVED:
	// it holds a config that does not name it, and hello and
	// replSetGetStatus no longer tell its optime; its local database does.
	if err := procs[primary].Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the old primary REMOVED", func() error {
		r, err := c.Hello(ctx, primary)
		if err != nil {
			return err
		}
		if r.SetName != "" || !r.LastWrite.OpTime.IsZero() {
			return fmt.Errorf("hello %+v", r)
		}
		return nil
	})
	local, err := c.Local(ctx, primary)
	if err != nil {
		t.Fatal(err)
	}
	if local.Config == nil || local.Config.Member(primary) != nil {
		t.Fatalf("the REMOVED member holds %+v, want a config that does not name it", local.Config)
	}
	if local.LastOplog.IsZero() {
		t.Fatal("the REMOVED member's newest oplog entry is not read")
	}
	mine, err := c.Local(ctx, survivor)
	if err != nil {
		t.Fatal(err)
	}
	if mine.Config == nil || mine.Config.Version < f.Config.Version || mine.LastOplog.Compare(local.LastOplog) <= 0 {
		t.Fatalf("the survivor's own state: config %+v, newest oplog %+v (the old primary's %+v)", mine.Config, mine.LastOplog, local.LastOplog)
	}
}
