package main

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestLeaseIsReleasedOnlyAfterTheActorsStopped: on shutdown the leader stops
// its actors first; the Lease is still held while they finish, and released
// after, so a standby never acts beside them.
func TestLeaseIsReleasedOnlyAfterTheActorsStopped(t *testing.T) {
	kc := fake.NewClientset()
	o := options{leaseNamespace: "mgors-system", leaseName: "mgors-operator", identity: "op-a"}
	holder := func() string {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		l, err := kc.CoordinationV1().Leases(o.leaseNamespace).Get(ctx, o.leaseName, metav1.GetOptions{})
		if err != nil || l.Spec.HolderIdentity == nil {
			return ""
		}
		return *l.Spec.HolderIdentity
	}
	ctx, shutdown := context.WithCancel(context.Background())
	leadingNow := make(chan struct{})
	var holderWhenStopped atomic.Value
	lead := func(ctx context.Context) error {
		close(leadingNow)
		<-ctx.Done()
		holderWhenStopped.Store(holder())
		return nil
	}
	var leading atomic.Bool
	done := make(chan error, 1)
	go func() { done <- leaderElect(ctx, o, kc, zerolog.Nop(), &leading, lead) }()
	select {
	case <-leadingNow:
	case <-time.After(30 * time.Second):
		t.Fatal("never became leader")
	}
	shutdown()
	if err := <-done; err != nil {
		t.Fatalf("leaderElect on shutdown: %v", err)
	}
	if h := holderWhenStopped.Load(); h != "op-a" {
		t.Fatalf("while the actors stopped the Lease holder was %q, want op-a", h)
	}
	if h := holder(); h != "" {
		t.Fatalf("after shutdown the Lease holder is %q, want it released", h)
	}
}

// TestShutdownBeforeLeadingReturns: a standby that never led stops at once.
func TestShutdownBeforeLeadingReturns(t *testing.T) {
	kc := fake.NewClientset()
	o := options{leaseNamespace: "mgors-system", leaseName: "mgors-operator", identity: "op-b"}
	ctx, shutdown := context.WithCancel(context.Background())
	shutdown()
	var leading atomic.Bool
	err := leaderElect(ctx, o, kc, zerolog.Nop(), &leading, func(context.Context) error {
		t.Error("lead ran after shutdown")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
