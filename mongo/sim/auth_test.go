package sim_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

func keyFile(t *testing.T, key string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "keyfile")
	if err := os.WriteFile(p, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestKeyFileAuthLocalhostExceptionAndRoles(t *testing.T) {
	kf := keyFile(t, "c2VjcmV0LWtleS1mb3ItdGhlLXNldA")
	ms, p := initiated(t, 3, fastSettings, "--keyFile", kf)
	pc := ms[p].client(t)
	// Localhost exception: the first user, created before any exists.
	mustRun(t, pc, bson.D{{Key: "createUser", Value: "admin"}, {Key: "pwd", Value: "s3cret"},
		{Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "root"}, {Key: "db", Value: "admin"}}}}})
	// Now the exception is gone.
	if _, err := run(pc, bson.D{{Key: "replSetGetStatus", Value: 1}}); !hasCode(err, 13) {
		t.Fatalf("unauthenticated status after first user: want 13, got %v", err)
	}
	if _, err := run(pc, bson.D{{Key: "createUser", Value: "second"}, {Key: "pwd", Value: "x"}, {Key: "roles", Value: bson.A{}}}); !hasCode(err, 13) {
		t.Fatalf("second user without auth: want 13, got %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, mech := range []string{"SCRAM-SHA-256", "SCRAM-SHA-1"} {
		ac := connect(t, rsURI(ms, "admin:s3cret@")+"&authMechanism="+mech)
		if _, err := ac.Database("test").Collection("c").InsertOne(ctx, bson.D{{Key: "x", Value: mech}}); err != nil {
			t.Fatalf("%s insert: %v", mech, err)
		}
	}
	// Default mechanism negotiation and speculative authentication.
	ac := connect(t, rsURI(ms, "admin:s3cret@"))
	r, err := ac.Database("admin").RunCommand(ctx, bson.D{{Key: "replSetGetStatus", Value: 1}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := r.Lookup("members").Array().Values(); len(v) != 3 {
		t.Fatalf("status: %v", r)
	}
	// A read-only user cannot write or reconfigure.
	if err := ac.Database("admin").RunCommand(ctx, bson.D{{Key: "createUser", Value: "reader"}, {Key: "pwd", Value: "r"},
		{Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "read"}, {Key: "db", Value: "test"}}}}}).Err(); err != nil {
		t.Fatal(err)
	}
	rc := connect(t, rsURI(ms, "reader:r@")+"&authSource=admin")
	if n, err := rc.Database("test").Collection("c").CountDocuments(ctx, bson.D{}); err != nil || n != 2 {
		t.Fatalf("reader count: %d %v", n, err)
	}
	if _, err := rc.Database("test").Collection("c").InsertOne(ctx, bson.D{{Key: "y", Value: 1}}); !hasCode(err, 13) {
		t.Fatalf("reader insert: want 13, got %v", err)
	}
	if err := rc.Database("admin").RunCommand(ctx, bson.D{{Key: "replSetStepDown", Value: 60}}).Err(); !hasCode(err, 13) {
		t.Fatalf("reader stepdown: want 13, got %v", err)
	}
	// Wrong password.
	bad, _ := mongo.Connect(options.Client().ApplyURI(rsURI(ms, "admin:wrong@")))
	defer func() { _ = bad.Disconnect(ctx) }()
	if err := bad.Ping(ctx, nil); err == nil {
		t.Fatal("wrong password accepted")
	}
	// usersInfo shows both users, replicated to every member.
	for _, m := range ms {
		mc := m.client(t, "admin:s3cret@")
		waitFor(t, 10*time.Second, "users replicated to "+m.host, func() bool {
			r, err := run(mc, bson.D{{Key: "usersInfo", Value: 1}})
			if err != nil {
				return false
			}
			v, _ := r.Lookup("users").Array().Values()
			return len(v) == 2
		})
	}
	// The internal user authenticates with the keyfile; a wrong keyfile does not.
	sys := ms[p].client(t, "__system:c2VjcmV0LWtleS1mb3ItdGhlLXNldA@", "authSource=local")
	mustRun(t, sys, bson.D{{Key: "replSetGetConfig", Value: 1}})
	wrong := newMember(t, "--keyFile", keyFile(t, "YW5vdGhlci1rZXktZW50aXJlbHk"))
	pcAuth := ms[p].client(t, "admin:s3cret@")
	cfg := mustRun(t, pcAuth, bson.D{{Key: "replSetGetConfig", Value: 1}}).Lookup("config").Document()
	v, _ := cfg.Lookup("version").AsInt64OK()
	vals, _ := cfg.Lookup("members").Array().Values()
	members := bson.A{}
	for _, x := range vals {
		members = append(members, x.Document())
	}
	members = append(members, bson.D{{Key: "_id", Value: 9}, {Key: "host", Value: wrong.host}, {Key: "votes", Value: 0}, {Key: "priority", Value: 0}})
	// Non-voting add passes the quorum check (voters answer) but the member never gets in.
	mustRun(t, pcAuth, bson.D{{Key: "replSetReconfig", Value: configWith(cfg, members, v+1)}})
	waitFor(t, 10*time.Second, "wrong-keyfile member reported unauthenticated", func() bool {
		r, err := run(pcAuth, bson.D{{Key: "replSetGetStatus", Value: 1}})
		if err != nil {
			return false
		}
		ms, _ := r.Lookup("members").Array().Values()
		for _, m := range ms {
			if h, _ := m.Document().Lookup("name").StringValueOK(); h == wrong.host {
				hv, _ := m.Document().Lookup("health").AsFloat64OK()
				a, ok := m.Document().Lookup("authenticated").BooleanOK()
				return hv == 0 && ok && !a
			}
		}
		return false
	})
	if st := helloOf(wrong); st == nil {
		t.Fatal("no hello from wrong-keyfile member")
	} else if _, err := st.LookupErr("setName"); err == nil {
		t.Fatalf("wrong-keyfile member joined the set: %v", st)
	}
}
