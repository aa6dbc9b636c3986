package backup_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/mgors/operator/mongo"
	"github.com/mgors/operator/mongo/backup"
	"github.com/mgors/operator/mongo/sim"
)

const setKey = "c2VjcmV0LWtleS1vZi10aGUtYmFja3VwLXRlc3Q"

// authSet is a 1-member mongod-sim set with a keyfile (authorization on)
// and a client connected to it as the set's internal user, as the
// operator restores.
func authSet(t *testing.T, name string) (string, *driver.Client) {
	t.Helper()
	kf := filepath.Join(t.TempDir(), "keyfile")
	if err := os.WriteFile(kf, []byte(setKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, primary := simSetWith(t, name, 1, func(c *sim.Config) { c.KeyFile, c.Auth = kf, true })
	return primary, login(t, primary, "local", "__system", setKey)
}

// login is a client of host authenticated as db.user; the handshake
// authenticates, so a ping fails with a wrong password.
func login(t *testing.T, host, db, user, password string) *driver.Client {
	t.Helper()
	c, err := driver.Connect(options.Client().SetHosts([]string{host}).SetDirect(true).SetTimeout(10 * time.Second).
		SetAuth(options.Credential{AuthSource: db, Username: user, Password: password}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c
}

func opens(host, db, user, password string) error {
	c, err := driver.Connect(options.Client().SetHosts([]string{host}).SetDirect(true).SetTimeout(10 * time.Second).
		SetAuth(options.Credential{AuthSource: db, Username: user, Password: password}))
	if err != nil {
		return err
	}
	defer func() { _ = c.Disconnect(context.Background()) }()
	return c.Ping(context.Background(), nil)
}

func must(t *testing.T, c *driver.Client, db string, cmd bson.D) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Database(db).RunCommand(ctx, cmd).Err(); err != nil {
		t.Fatalf("%s: %v", cmd[0].Key, err)
	}
}

func createUser(t *testing.T, c *driver.Client, db, user, pwd string, roles ...bson.D) {
	t.Helper()
	rs := bson.A{}
	for _, r := range roles {
		rs = append(rs, r)
	}
	must(t, c, db, bson.D{{Key: "createUser", Value: user}, {Key: "pwd", Value: pwd}, {Key: "roles", Value: rs}})
}

func role(name, db string) bson.D { return bson.D{{Key: "role", Value: name}, {Key: "db", Value: db}} }

// TestUsersRolesAndViews: a set with authorization holds the operator's
// users (its own and the admin user), an application user with a custom
// role reading one database, a user of another database, and a view; more
// users and a view come while the dump runs (the window) and after it (the
// oplog archive), and the operator's user gets a new password there. The
// backup holds the users and roles as stored (SCRAM credentials, never a
// password) and the view's definition. Restored into another set with its
// own operator users and a user of its own: the application users open
// with their passwords and read through their role, and only there; the
// views answer as the source's; the target's operator users keep the
// target's passwords (the source's do not open them), and its own user
// stays. Restored to a point after the archive's users, those open too.
func TestUsersRolesAndViews(t *testing.T) {
	ctx := context.Background()
	srcHost, src := authSet(t, "asrc")
	createUser(t, src, "admin", mongo.OperatorUser, "src-operator", role("clusterMonitor", "admin"))
	createUser(t, src, "admin", "admin", "src-admin", role("root", "admin"))
	must(t, src, "admin", bson.D{{Key: "createRole", Value: "shopReader"}, {Key: "roles", Value: bson.A{}},
		{Key: "privileges", Value: bson.A{bson.D{{Key: "resource", Value: bson.D{{Key: "db", Value: "shop"}, {Key: "collection", Value: ""}}},
			{Key: "actions", Value: bson.A{"find"}}}}}})
	createUser(t, src, "admin", "app", "app-password", role("shopReader", "admin"))
	createUser(t, src, "shop", "clerk", "clerk-password", role("readWrite", "shop"))
	orders := src.Database("shop").Collection("orders")
	for i := range 10 {
		if _, err := orders.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "total", Value: i * 10}, {Key: "card", Value: "4111"}}); err != nil {
			t.Fatal(err)
		}
	}
	must(t, src, "shop", bson.D{{Key: "create", Value: "big"}, {Key: "viewOn", Value: "orders"}, {Key: "pipeline", Value: bson.A{
		bson.D{{Key: "$match", Value: bson.D{{Key: "total", Value: bson.D{{Key: "$gte", Value: 50}}}}}},
		bson.D{{Key: "$project", Value: bson.D{{Key: "card", Value: 0}}}}}}})

	s := newStore(t)
	hs := &hookStore{Store: s, at: "/data/shop/", hook: func() {
		// admin was dumped already: only the replay brings these
		createUser(t, src, "admin", "late", "late-password", role("shopReader", "admin"))
		must(t, src, "admin", bson.D{{Key: "updateUser", Value: mongo.OperatorUser}, {Key: "pwd", Value: "src-operator-2"}})
		must(t, src, "shop", bson.D{{Key: "create", Value: "small"}, {Key: "viewOn", Value: "orders"},
			{Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "total", Value: bson.D{{Key: "$lt", Value: 50}}}}}}}}})
	}}
	m, err := backup.Dump(ctx, src, srcHost, hs, backup.Options{Cluster: "default/asrc", Prefix: "default/asrc/b1", Timeout: 10 * time.Second,
		Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)})
	if err != nil {
		t.Fatal(err)
	}
	if m.Format != 2 || m.Users.Documents != 4 || m.Roles.Documents != 1 || len(m.Views) != 1 || m.Views[0].NS() != "shop.big" {
		t.Fatalf("manifest: format %d, %d users, %d roles, views %v; want 2, 4, 1, [shop.big]", m.Format, m.Users.Documents, m.Roles.Documents, m.Views)
	}
	for _, sk := range m.Skipped {
		if strings.Contains(sk.NS, "system.users") || strings.Contains(sk.NS, "system.roles") || strings.Contains(sk.NS, "system.views") {
			t.Errorf("skipped %v", sk)
		}
	}
	for _, k := range m.Users.Parts {
		body, err := s.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		for _, pw := range []string{"app-password", "src-operator", "src-admin", "clerk-password"} {
			if strings.Contains(string(body), pw) {
				t.Errorf("%s holds the password %s", k, pw)
			}
		}
		if !strings.Contains(string(body), "SCRAM-SHA-256") {
			t.Errorf("%s holds no SCRAM credentials", k)
		}
	}

	dstHost, dst := authSet(t, "adst")
	createUser(t, dst, "admin", mongo.OperatorUser, "dst-operator", role("clusterMonitor", "admin"))
	createUser(t, dst, "admin", "admin", "dst-admin", role("root", "admin"))
	createUser(t, dst, "admin", "mine", "mine-password", role("read", "shop"))
	keep := []string{backup.UserID("admin", mongo.OperatorUser), backup.UserID("admin", "admin")}
	res, err := backup.Restore(ctx, dst, s, "default/asrc/b1", backup.RestoreOptions{Keep: keep, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Users != 2 || res.Roles != 1 || res.Views != 1 {
		t.Errorf("restore wrote %d users, %d roles, %d views; want 2 (app, clerk), 1, 1", res.Users, res.Roles, res.Views)
	}
	checkRestoredAuth(t, dstHost, srcHost, []string{"app", "late"})

	// After the backup, on the source: a user, a role's privilege, the
	// operator's password again; the archive holds them.
	a := backup.NewArchiver(src, srcHost, s, m.Start, backup.ArchiveOptions{Prefix: "default/asrc/oplog_archive", Timeout: 10 * time.Second})
	createUser(t, src, "admin", "after", "after-password", role("shopReader", "admin"))
	must(t, src, "admin", bson.D{{Key: "grantPrivilegesToRole", Value: "shopReader"}, {Key: "privileges", Value: bson.A{
		bson.D{{Key: "resource", Value: bson.D{{Key: "db", Value: "stock"}, {Key: "collection", Value: ""}}}, {Key: "actions", Value: bson.A{"find"}}}}}})
	must(t, src, "admin", bson.D{{Key: "updateUser", Value: mongo.OperatorUser}, {Key: "pwd", Value: "src-operator-3"}})
	must(t, src, "admin", bson.D{{Key: "dropUser", Value: "admin"}})
	if _, err := a.ArchiveOnce(ctx); err != nil {
		t.Fatal(err)
	}
	// The operator's own user is kept without being named.
	if _, err := backup.RestoreTo(ctx, dst, s, "default/asrc/b1", "default/asrc/oplog_archive", a.Last().Timestamp(),
		backup.RestoreOptions{Keep: []string{backup.UserID("admin", "admin")}, Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	checkRestoredAuth(t, dstHost, srcHost, []string{"app", "late", "after"})
	app := login(t, dstHost, "admin", "app", "app-password")
	if err := app.Database("stock").RunCommand(ctx, bson.D{{Key: "find", Value: "items"}}).Err(); err != nil {
		t.Errorf("app reads stock after the role's privilege the archive holds: %v", err)
	}
}

// checkRestoredAuth: on dst, the application users open and read shop
// through their role (and cannot write it), clerk reads and writes shop,
// the views answer as the source's, the target's operator users open with
// the target's passwords only, and the target's own user stays.
func checkRestoredAuth(t *testing.T, dst, src string, readers []string) {
	t.Helper()
	ctx := context.Background()
	for _, u := range readers {
		c := login(t, dst, "admin", u, u+"-password")
		if n, err := c.Database("shop").Collection("orders").CountDocuments(ctx, bson.D{}); err != nil || n != 10 {
			t.Errorf("%s reads shop.orders: %d documents, %v", u, n, err)
		}
		if _, err := c.Database("shop").Collection("orders").InsertOne(ctx, bson.D{{Key: "x", Value: 1}}); err == nil {
			t.Errorf("%s wrote shop.orders: its role grants find only", u)
		}
	}
	clerk := login(t, dst, "shop", "clerk", "clerk-password")
	if _, err := clerk.Database("shop").Collection("notes").InsertOne(ctx, bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Errorf("clerk writes shop: %v", err)
	}
	srcC := login(t, src, "local", "__system", setKey)
	dstC := login(t, dst, "local", "__system", setKey)
	for _, v := range []string{"big", "small"} {
		got, want := viewDocs(t, dstC, v), viewDocs(t, srcC, v)
		if len(want) == 0 || !slices.Equal(got, want) {
			t.Errorf("view shop.%s answers %v, the source's %v", v, got, want)
		}
	}
	for _, c := range []struct{ user, good, bad string }{{mongo.OperatorUser, "dst-operator", "src-operator"}, {"admin", "dst-admin", "src-admin"}} {
		if err := opens(dst, "admin", c.user, c.good); err != nil {
			t.Errorf("the target's %s with the target's password: %v", c.user, err)
		}
		for _, bad := range []string{c.bad, c.bad + "-2", c.bad + "-3"} {
			if err := opens(dst, "admin", c.user, bad); err == nil {
				t.Errorf("the target's %s opens with the source's password %s", c.user, bad)
			}
		}
	}
	if err := opens(dst, "admin", "mine", "mine-password"); err != nil {
		t.Errorf("the target's own user: %v", err)
	}
}

func viewDocs(t *testing.T, c *driver.Client, view string) []string {
	t.Helper()
	cur, err := c.Database("shop").Collection(view).Find(context.Background(), bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatalf("find shop.%s: %v", view, err)
	}
	var out []string
	for cur.Next(context.Background()) {
		out = append(out, fmt.Sprint(cur.Current))
	}
	return out
}
