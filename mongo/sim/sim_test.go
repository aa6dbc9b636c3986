package sim_test

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

func TestInitiateThreeMembersAndDiscoverPrimary(t *testing.T) {
	ms := sharedPortMembers(t, 3)
	for _, m := range ms {
		h := helloOf(m)
		if h == nil {
			t.Fatalf("no hello from %s", m.host)
		}
		if b, _ := h.Lookup("isreplicaset").BooleanOK(); !b {
			t.Fatalf("uninitialized hello lacks isreplicaset: %v", h)
		}
	}
	c0 := ms[0].client(t)
	if _, err := run(c0, bson.D{{Key: "replSetGetStatus", Value: 1}}); err == nil || !hasCode(err, 94) {
		t.Fatalf("replSetGetStatus before initiate: want 94, got %v", err)
	}
	mustRun(t, c0, bson.D{{Key: "replSetInitiate", Value: rsConfig(ms, fastSettings)}})
	if _, err := run(c0, bson.D{{Key: "replSetInitiate", Value: rsConfig(ms, fastSettings)}}); !hasCode(err, 23) {
		t.Fatalf("second initiate: want 23, got %v", err)
	}
	p := waitPrimary(t, ms, 30*time.Second)
	client := connect(t, rsURI(ms, ""))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	coll := client.Database("test").Collection("c", options.Collection().SetWriteConcern(writeconcern.Majority()))
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "x", Value: "a"}}); err != nil {
		t.Fatal(err)
	}
	var got bson.M
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Decode(&got); err != nil || got["x"] != "a" {
		t.Fatalf("find: %v %v", got, err)
	}
	// The write is on every secondary eventually.
	for i, m := range ms {
		if i == p {
			continue
		}
		sc := m.client(t)
		waitFor(t, 10*time.Second, "replicated document on "+m.host, func() bool {
			n, err := sc.Database("test").Collection("c", options.Collection().SetReadPreference(readpref.SecondaryPreferred())).CountDocuments(ctx, bson.D{})
			return err == nil && n == 1
		})
	}
	st := mustRun(t, ms[p].client(t), bson.D{{Key: "replSetGetStatus", Value: 1}})
	members, _ := st.Lookup("members").Array().Values()
	if len(members) != 3 {
		t.Fatalf("status members: %v", st)
	}
}

func hasCode(err error, code int32) bool {
	if err == nil {
		return false
	}
	type coder interface{ HasErrorCode(int) bool }
	if c, ok := err.(coder); ok {
		return c.HasErrorCode(int(code))
	}
	return false
}
