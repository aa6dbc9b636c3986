//go:build simmeasure

package sim_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// These are measurements, not assertions: run with
//   go test -tags simmeasure -run TestMeasure -v ./mongo/sim/

func fastPrimary(clients []*mongo.Client, skip int) int {
	for i, c := range clients {
		if i == skip || c == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		r, err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Raw()
		cancel()
		if err == nil {
			if b, _ := r.Lookup("isWritablePrimary").BooleanOK(); b {
				return i
			}
		}
	}
	return -1
}

func waitFast(t *testing.T, clients []*mongo.Client, skip int, d time.Duration) (int, time.Duration) {
	start := time.Now()
	for time.Since(start) < d {
		if p := fastPrimary(clients, skip); p >= 0 {
			return p, time.Since(start)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no primary within %v", d)
	return -1, 0
}

func measureSet(t *testing.T, settings bson.D, label string) {
	ms := []*member{newMember(t), newMember(t), newMember(t)}
	clients := make([]*mongo.Client, len(ms))
	for i, m := range ms {
		clients[i] = m.client(t)
	}
	mustRun(t, clients[0], bson.D{{Key: "replSetInitiate", Value: rsConfig(ms, settings)}})
	p, elect := waitFast(t, clients, -1, 60*time.Second)
	t.Logf("MEASURE %s: primary elected %v after replSetInitiate returned", label, elect.Round(time.Millisecond))
	for _, m := range ms {
		waitFor(t, 60*time.Second, "all up", func() bool { s := state(t, m); return s == 1 || s == 2 })
	}
	time.Sleep(2 * time.Second)
	ms[p].kill()
	clients[p] = nil
	_, fo := waitFast(t, clients, p, 60*time.Second)
	t.Logf("MEASURE %s: new primary %v after SIGKILL of the primary", label, fo.Round(time.Millisecond))
}

func TestMeasureDefaultTimers(t *testing.T) {
	measureSet(t, nil, "default (electionTimeoutMillis 10000, heartbeatIntervalMillis 2000)")
}

func TestMeasureShortTimers(t *testing.T) {
	measureSet(t, bson.D{{Key: "electionTimeoutMillis", Value: 1000}, {Key: "heartbeatIntervalMillis", Value: 200}}, "short (electionTimeoutMillis 1000, heartbeatIntervalMillis 200)")
}

func TestMeasureIdleRSS(t *testing.T) {
	ms, _ := initiated(t, 3, nil)
	time.Sleep(5 * time.Second)
	for _, m := range ms {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", m.cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "VmRSS:") {
				t.Logf("MEASURE idle member %s %s", m.host, strings.Join(strings.Fields(l), " "))
			}
		}
	}
}
