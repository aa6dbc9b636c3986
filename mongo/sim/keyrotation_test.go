package sim_test

import (
	"net/url"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestKeyRotationMixedSetStaysConnected runs a set in the middle of a
// keyfile rotation: one member holds [old, new], one [old], one [new, old].
// Every member reaches every other (each accepts any key of its keyfile;
// outgoing, the first key, then the second when the first is refused), and
// __system opens a member with any of its keys but not with another.
func TestKeyRotationMixedSetStaysConnected(t *testing.T) {
	const old, next = "b2xkLWtleS1vZi10aGUtc2V0", "bmV3LWtleS1vZi10aGUtc2V0"
	ms := []*member{
		newMember(t, "--keyFile", keyFile(t, "- "+old+"\n- "+next)),
		newMember(t, "--keyFile", keyFile(t, old)),
		newMember(t, "--keyFile", keyFile(t, "['"+next+"', '"+old+"']")),
	}
	mustRun(t, ms[0].client(t), bson.D{{Key: "replSetInitiate", Value: rsConfig(ms, fastSettings)}})
	waitPrimary(t, ms, 30*time.Second)
	for _, m := range ms {
		waitFor(t, 20*time.Second, "member "+m.host+" up", func() bool { s := state(t, m); return s == 1 || s == 2 })
	}
	system := func(key string) string { return "__system:" + url.QueryEscape(key) + "@" }
	// Each member sees every other healthy: heartbeats pass both ways.
	for i, m := range ms {
		key := old
		if i == 2 {
			key = next
		}
		c := m.client(t, system(key), "authSource=local")
		waitFor(t, 20*time.Second, "every member healthy as seen from "+m.host, func() bool {
			r, err := run(c, bson.D{{Key: "replSetGetStatus", Value: 1}})
			if err != nil {
				return false
			}
			vals, _ := r.Lookup("members").Array().Values()
			for _, v := range vals {
				h, _ := v.Document().Lookup("health").AsFloat64OK()
				s, _ := v.Document().Lookup("state").AsInt64OK()
				if h != 1 || (s != 1 && s != 2) {
					return false
				}
			}
			return len(vals) == 3
		})
	}
	// Either key opens the [old, new] member; only old opens the [old] one.
	mustRun(t, ms[0].client(t, system(next), "authSource=local"), bson.D{{Key: "replSetGetConfig", Value: 1}})
	if _, err := run(ms[1].shortClient(system(next), "authSource=local"), bson.D{{Key: "replSetGetConfig", Value: 1}}); err == nil {
		t.Fatal("the new key opened a member whose keyfile holds only the old one")
	}
}
