package chaos

import (
	"reflect"
	"testing"
	"time"
)

func TestScheduleIsReproducible(t *testing.T) {
	a := Schedule(42, 10*time.Minute, FaultKinds, 2)
	b := Schedule(42, 10*time.Minute, FaultKinds, 2)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("the same seed gave two schedules:\n%v\n%v", a, b)
	}
	if c := Schedule(43, 10*time.Minute, FaultKinds, 2); reflect.DeepEqual(a, c) {
		t.Fatal("seeds 42 and 43 gave the same schedule")
	}
}

func TestScheduleShortRunCoversEveryKind(t *testing.T) {
	for seed := range int64(50) {
		steps := Schedule(seed, 3*time.Minute, FaultKinds, 2)
		seen := map[FaultKind]bool{}
		for _, s := range steps {
			seen[s.Kind] = true
		}
		if len(seen) != len(FaultKinds) || len(steps) != len(FaultKinds) {
			t.Fatalf("seed %d: %d steps cover %d of %d kinds: %v", seed, len(steps), len(seen), len(FaultKinds), steps)
		}
	}
}

func TestScheduleLongRunHasMoreFaults(t *testing.T) {
	steps := Schedule(7, 10*time.Minute, []FaultKind{KillMongod, PausePrimary}, 2)
	if len(steps) != int(10*time.Minute/cycle) {
		t.Fatalf("%d steps for 10 minutes, want %d", len(steps), int(10*time.Minute/cycle))
	}
	for _, s := range steps {
		if s.Kind != KillMongod && s.Kind != PausePrimary {
			t.Fatalf("kind %s was not asked for", s.Kind)
		}
	}
}

func TestScheduleTargetsAndHolds(t *testing.T) {
	for _, s := range Schedule(1, time.Hour, FaultKinds, 2) {
		switch s.Kind {
		case PausePrimary, PartitionPrimary:
			if s.Target != RolePrimary || s.Hold <= electionTimeout {
				t.Errorf("%s: target %s hold %s, want the primary past the election timeout", s.Kind, s.Target, s.Hold)
			}
		case PartitionMinority:
			if s.Target != RoleSecondary {
				t.Errorf("%s: target %s, want a secondary", s.Kind, s.Target)
			}
		case KillOperatorLeader, RestartControlPlane:
			if s.Cluster != -1 {
				t.Errorf("%s aims at cluster %d, want the whole Kubernetes cluster (-1)", s.Kind, s.Cluster)
			}
		case MajorityLoss:
			if s.Cluster != 0 || s.Hold <= majorityGrace {
				t.Errorf("%s: cluster %d hold %s, want the first cluster past the grace period", s.Kind, s.Cluster, s.Hold)
			}
			continue
		default:
			if s.Cluster < 0 || s.Cluster > 1 {
				t.Errorf("%s: cluster %d of 2", s.Kind, s.Cluster)
			}
		}
		if s.Hold > 15*time.Second || s.Pause < 2*time.Second || s.Pause > 5*time.Second {
			t.Errorf("%s: hold %s pause %s out of bounds", s.Kind, s.Hold, s.Pause)
		}
	}
}

// A majority loss takes minutes: once per run, however long.
func TestScheduleMajorityLossOnce(t *testing.T) {
	n := 0
	for _, s := range Schedule(3, time.Hour, FaultKinds, 2) {
		if s.Kind == MajorityLoss {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d majority losses in an hour, want 1", n)
	}
	if s := Schedule(3, time.Hour, []FaultKind{MajorityLoss}, 2); len(s) != 1 {
		t.Errorf("%d steps when only the majority loss is asked for, want 1", len(s))
	}
}

func TestScheduleEmpty(t *testing.T) {
	if s := Schedule(1, time.Minute, nil, 2); s != nil {
		t.Fatalf("no kinds gave %v", s)
	}
}
