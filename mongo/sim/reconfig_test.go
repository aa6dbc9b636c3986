package sim_test

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// reconfigured edits the primary's current config with edit, bumps its
// version and runs replSetReconfig; it returns the new version.
func reconfigured(t *testing.T, m *member, edit func(cfg bson.D) bson.D) int64 {
	t.Helper()
	c := m.client(t)
	cur := mustRun(t, c, bson.D{{Key: "replSetGetConfig", Value: 1}}).Lookup("config").Document()
	var cfg bson.D
	if err := bson.Unmarshal(cur, &cfg); err != nil {
		t.Fatal(err)
	}
	v, _ := cur.Lookup("version").AsInt64OK()
	for i := range cfg {
		if cfg[i].Key == "version" {
			cfg[i].Value = v + 1
		}
	}
	mustRun(t, c, bson.D{{Key: "replSetReconfig", Value: edit(cfg)}})
	return v + 1
}

func configVersionOf(t *testing.T, m *member) int64 {
	c := m.shortClient()
	defer func() { _ = c.Disconnect(nil) }() //nolint:staticcheck // no context needed to drop an idle client
	r, err := run(c, bson.D{{Key: "replSetGetConfig", Value: 1}})
	if err != nil {
		return -1
	}
	v, _ := r.Lookup("config", "version").AsInt64OK()
	return v
}

// A new config reaches every member at once, as mongod restarts heartbeats
// on every config change, not at the next heartbeat interval (30 s here):
// back-to-back reconfigs succeed and every member holds each new version
// well within one interval.
func TestReconfigReachesEveryMemberAtOnce(t *testing.T) {
	ms, p := initiated(t, 3, fastSettings)
	slow := func(cfg bson.D) bson.D {
		for i := range cfg {
			if cfg[i].Key == "settings" {
				s, _ := cfg[i].Value.(bson.D)
				for j := range s {
					switch s[j].Key {
					case "heartbeatIntervalMillis":
						s[j].Value = 30000
					case "electionTimeoutMillis":
						s[j].Value = 60000
					}
				}
				cfg[i].Value = s
			}
		}
		return cfg
	}
	want := reconfigured(t, ms[p], slow)
	for round := 0; round < 3; round++ {
		start := time.Now()
		waitFor(t, 8*time.Second, "every member on the new config", func() bool {
			for _, m := range ms {
				if configVersionOf(t, m) != want {
					return false
				}
			}
			return true
		})
		t.Logf("version %d on every member after %v", want, time.Since(start))
		want = reconfigured(t, ms[p], func(cfg bson.D) bson.D { return cfg })
	}
}
