package sim_test

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// A role change made on the primary reaches an open connection on a
// secondary once the change replicates.
func TestReplicatedRoleChangeReachesSecondary(t *testing.T) {
	kf := keyFile(t, "cmVwbGljYXRlZC1yb2xlLWNoYW5nZQ")
	ms, p := initiated(t, 2, fastSettings, "--keyFile", kf)
	mustRun(t, ms[p].client(t), bson.D{{Key: "createUser", Value: "admin"}, {Key: "pwd", Value: "pw"},
		{Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "root"}, {Key: "db", Value: "admin"}}}}})
	ac := ms[p].client(t, "admin:pw@", "authSource=admin")
	mustRunOn(t, ac, "admin", bson.D{{Key: "createUser", Value: "rep"}, {Key: "pwd", Value: "pw"},
		{Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "read"}, {Key: "db", Value: "app"}}}}, {Key: "writeConcern", Value: bson.D{{Key: "w", Value: 2}}}})
	sec := ms[1-p]
	sc := sec.client(t, "rep:pw@", "authSource=admin", "readPreference=secondaryPreferred")
	find := func() error {
		_, err := runOn(sc, "app", bson.D{{Key: "find", Value: "c"}})
		return err
	}
	if err := find(); err != nil {
		t.Fatalf("find on the secondary: %v", err)
	}
	mustRunOn(t, ac, "admin", bson.D{{Key: "revokeRolesFromUser", Value: "rep"}, {Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "read"}, {Key: "db", Value: "app"}}}}})
	waitFor(t, 20*time.Second, "revoke replicated to the secondary's open connection", func() bool { return hasCode(find(), 13) })
	mustRunOn(t, ac, "admin", bson.D{{Key: "grantRolesToUser", Value: "rep"}, {Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "read"}, {Key: "db", Value: "app"}}}}})
	waitFor(t, 20*time.Second, "grant replicated to the secondary's open connection", func() bool { return find() == nil })
}
