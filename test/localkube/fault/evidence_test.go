package fault

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/mgors/operator/test/localkube/cluster"
)

func TestParseStat(t *testing.T) {
	for _, tt := range []struct {
		line string
		want procStat
		ok   bool
	}{
		{"1234 (mongod) T 1 1234 1234 0 -1", procStat{pid: 1234, state: 'T', pgrp: 1234}, true},
		{"77 (a) b (c)) S 1 70 70 0", procStat{pid: 77, state: 'S', pgrp: 70}, true},
		{"5 (x", procStat{}, false},
		{"5 (x) S 1", procStat{}, false},
	} {
		pid := tt.want.pid
		if pid == 0 {
			pid = 5
		}
		got, ok := parseStat(pid, tt.line)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("parseStat(%q) = %+v, %v; want %+v, %v", tt.line, got, ok, tt.want, tt.ok)
		}
	}
}

// TestContainerPIDs names live pids by their containers/NAME/pid file and leaves
// out the pid files of containers that are not running.
func TestContainerPIDs(t *testing.T) {
	pod := t.TempDir()
	for name, content := range map[string]string{"mongod": "101 5555\n", "sidecar": "102 5556\n", "dead": "103 5557\n", "empty": ""} {
		d := filepath.Join(pod, "containers", name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "pid"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := containerPIDs(pod, []int{102, 101, 999})
	want := []containerProc{{Name: "mongod", PID: 101}, {Name: "sidecar", PID: 102}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("containerPIDs = %+v, want %+v", got, want)
	}
}

func TestDescribe(t *testing.T) {
	procs := []containerProc{{Name: "mongod", PID: 101}, {Name: "side", PID: 102}}
	got := describe(procs, map[int]string{101: "state T", 102: "states T T"})
	if want := "container mongod pid 101 (state T), container side pid 102 (states T T)"; got != want {
		t.Errorf("describe = %q, want %q", got, want)
	}
	if got := describe(procs[:1], nil); got != "container mongod pid 101" {
		t.Errorf("describe without states = %q", got)
	}
}

// TestGroupStatesOfThisProcess reads this test's own process group, which runs.
func TestGroupStatesOfThisProcess(t *testing.T) {
	me := os.Getpid()
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Skip("no /proc: ", err)
	}
	s, ok := parseStat(me, string(stat))
	if !ok {
		t.Fatalf("parseStat of /proc/self/stat failed: %s", stat)
	}
	states, all := groupStates([]containerProc{{Name: "self", PID: s.pgrp}}, func(b byte) bool { return b != 'T' })
	if !all || states[s.pgrp] == "" || states[s.pgrp] == "gone" {
		t.Errorf("groupStates of a running group = %v, %v", states, all)
	}
	if _, all := groupStates([]containerProc{{Name: "none", PID: 1 << 30}}, func(byte) bool { return true }); all {
		t.Error("a group without processes reads as satisfied")
	}
}

func TestPidChanges(t *testing.T) {
	before := []cluster.ComponentStatus{{Name: "etcd", PID: 10, Running: true}, {Name: "kube-apiserver", PID: 11, Running: true}}
	after := []cluster.ComponentStatus{{Name: "etcd", PID: 20, Running: true}, {Name: "kube-apiserver", PID: 21, Running: true},
		{Name: "kube-controller-manager", PID: 22, Running: true}, {Name: "kube-scheduler", PID: 23, Running: false}}
	want := "etcd pid 10 -> 20, kube-apiserver pid 11 -> 21, kube-controller-manager pid none -> 22, kube-scheduler pid none -> none"
	if got := pidChanges(before, after); got != want {
		t.Errorf("pidChanges = %q, want %q", got, want)
	}
}

func TestNewRefusesAStoppedCluster(t *testing.T) {
	dir := t.TempDir()
	if _, err := New(dir, testLogger(t)); err == nil {
		t.Error("New accepted a directory without cluster.json")
	}
	if err := os.WriteFile(filepath.Join(dir, "cluster.json"), []byte(`{"nodes":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := New(dir, testLogger(t))
	if err == nil || !containsAll(err.Error(), "not running", "etcd", "kube-apiserver", "localkube up --dir") {
		t.Errorf("New of a stopped cluster: %v", err)
	}
}
func testLogger(t *testing.T) zerolog.Logger { return zerolog.New(zerolog.NewTestWriter(t)) }

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
