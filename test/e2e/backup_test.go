package e2e

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo/backup"
	"github.com/mgors/operator/mongo/backup/store"
	"github.com/mgors/operator/test/localkube/harness"
)

// A MgorsBackup of a 3-member set taking writes (docs/design/backup.md):
// the operator reads a secondary into an S3 server running as a pod
// (mgors/s3, gofakes3 behind SigV4), the status and `kubectl get mgob`
// show it Succeeded with its size and restorable point, the Events say so;
// a MgorsRestore restores it into a second set, which then holds exactly
// what the first held at the backup's end, with the source's application
// user, its custom role and its view: the user opens with its password
// and reads through its role, the view answers; the second set's own
// admin and operator users keep their credentials and it stays Healthy.
func TestBackupToS3AndRestore(t *testing.T) {
	t.Parallel()
	env := harness.Cluster(t)
	deployOperator(t, env)
	ctx := context.Background()
	endpoint := startS3(t, env)

	mc := mgorsClient(t, env)
	m := sample(t, env, "mgors-3.yaml", func(m *v1alpha1.Mgors) {
		m.Name = "bk"
		m.Spec.Storage.Reclaim = v1alpha1.VolumeDelete
	})
	target := sample(t, env, "mgors-3.yaml", func(m *v1alpha1.Mgors) {
		m.Name = "bk-restored"
		m.Spec.Members = 1
		m.Spec.Storage.Reclaim = v1alpha1.VolumeDelete
	})
	for _, x := range []*v1alpha1.Mgors{m, target} {
		if _, err := mc.Mgorses(env.Namespace).Create(ctx, x, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		name := x.Name
		t.Cleanup(func() { _ = mc.Mgorses(env.Namespace).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	healthy := func(x *v1alpha1.Mgors) bool { return x.Status.Phase == v1alpha1.PhaseHealthy && x.Status.Primary != "" }
	got := waitMgors(t, env, m.Name, "Healthy", 4*time.Minute, healthy)
	set := connect(t, env, got)
	items := set.Database("shop").Collection("orders")
	for i := range 200 {
		if _, err := items.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "sku", Value: fmt.Sprintf("sku-%03d", i%17)}, {Key: "qty", Value: i % 5}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := items.Indexes().CreateOne(ctx, driver.IndexModel{Keys: bson.D{{Key: "sku", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	appUser(t, set)
	// Writes go on while the backup runs.
	stop := make(chan struct{})
	writes := make(chan error, 1)
	go func() {
		defer close(writes)
		for i := 1000; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := items.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "sku", Value: "late"}}); err != nil {
				writes <- err
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()

	bc := mc.MgorsBackups(env.Namespace)
	b := &v1alpha1.MgorsBackup{ObjectMeta: metav1.ObjectMeta{Name: "bk-first"}, Spec: v1alpha1.MgorsBackupSpec{Cluster: m.Name,
		Store: v1alpha1.BackupStore{Endpoint: fmt.Sprintf("s3.%s.svc:9000", env.Namespace), Bucket: "backups", Prefix: "mgors",
			TLS: ptr.To(false), CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3-creds"}}}}
	if _, err := bc.Create(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var done *v1alpha1.MgorsBackup
	deadline := time.Now().Add(3 * time.Minute)
	for {
		cur, err := bc.Get(ctx, b.Name, metav1.GetOptions{})
		if err == nil && (cur.Status.Phase == v1alpha1.BackupSucceeded || cur.Status.Phase == v1alpha1.BackupFailed) {
			done = cur
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the backup did not end in 3 minutes: %+v %v", cur.Status, err)
		}
		time.Sleep(time.Second)
	}
	close(stop)
	if err := <-writes; err != nil {
		t.Fatalf("a write during the backup failed: %v", err)
	}
	st := done.Status
	if st.Phase != v1alpha1.BackupSucceeded {
		t.Fatalf("the backup failed: %s", st.Message)
	}
	if st.Member == "" || strings.HasPrefix(st.Member, got.Status.Primary) || st.SizeBytes == 0 || st.End == nil || st.PointInTimeRange == "" {
		t.Fatalf("status %+v: want a secondary read, a size, an end and a restorable point (primary %s)", st, got.Status.Primary)
	}
	t.Logf("backup %s from %s: %s, restores to %s", b.Name, st.Member, st.Size, st.PointInTimeRange)
	out := mustKubectl(t, env, "", "-n", env.Namespace, "get", "mgob", b.Name)
	for _, want := range []string{"Succeeded", st.Size, strings.Split(st.PointInTimeRange, "..")[0]} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get mgob shows no %q:\n%s", want, out)
		}
	}
	describeWith(t, env, m.Name, "BackupStarted", "BackupCompleted")
	s3, err := store.New(store.Config{Endpoint: endpoint, Bucket: "backups", AccessKey: s3Key, SecretKey: s3Secret})
	if err != nil {
		t.Fatal(err)
	}
	if man, err := backup.ReadManifest(ctx, s3, st.Prefix, 0); err != nil || man.Size != st.SizeBytes {
		t.Fatalf("the manifest under %s: %v (size %v, status %d)", st.Prefix, err, man, st.SizeBytes)
	}

	// What the set held at End, read at End.
	want := snapshotAt(t, set, st.End)
	gotR := waitMgors(t, env, target.Name, "Healthy", 4*time.Minute, healthy)
	rc := mc.MgorsRestores(env.Namespace)
	r := &v1alpha1.MgorsRestore{ObjectMeta: metav1.ObjectMeta{Name: "bk-back"}, Spec: v1alpha1.MgorsRestoreSpec{Cluster: target.Name, Backup: b.Name}}
	if _, err := rc.Create(ctx, r, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var rst v1alpha1.MgorsRestoreStatus
	deadline = time.Now().Add(3 * time.Minute)
	for {
		cur, err := rc.Get(ctx, r.Name, metav1.GetOptions{})
		if err == nil && (cur.Status.Phase == v1alpha1.RestoreSucceeded || cur.Status.Phase == v1alpha1.RestoreFailed) {
			rst = cur.Status
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the restore did not end in 3 minutes: %+v %v", cur.Status, err)
		}
		time.Sleep(time.Second)
	}
	if rst.Phase != v1alpha1.RestoreSucceeded {
		t.Fatalf("the restore failed: %s", rst.Message)
	}
	if rst.RestoredTo == nil || rst.RestoredTo.Seconds != st.End.Seconds || rst.RestoredTo.Increment != st.End.Increment || rst.Documents == 0 {
		t.Fatalf("restore status %+v: want the data as of the backup's end %+v", rst, *st.End)
	}
	t.Logf("restore %s into %s: %s", r.Name, rst.Member, rst.Message)
	if out := mustKubectl(t, env, "", "-n", env.Namespace, "get", "mgor", r.Name); !strings.Contains(out, "Succeeded") {
		t.Errorf("kubectl get mgor shows no Succeeded:\n%s", out)
	}
	describeWith(t, env, target.Name, "RestoreStarted", "RestoreCompleted")
	restored := snapshotAt(t, connect(t, env, gotR), nil)
	if len(want) != len(restored) {
		t.Fatalf("restored %d documents, the source held %d at the backup's end", len(restored), len(want))
	}
	for id, doc := range want {
		if restored[id] != doc {
			t.Fatalf("document %s: restored %s, source %s", id, restored[id], doc)
		}
	}
	if len(want) < 200 {
		t.Fatalf("only %d documents at the backup's end", len(want))
	}
	checkAppUser(t, env, set, gotR, len(want))
	// The target's operator users kept the target's credentials: its
	// Secrets open them, the source's do not, and the set stays Healthy.
	for _, c := range []struct{ user, src, dst string }{{"admin", m.AdminSecretName(), target.AdminSecretName()},
		{"mgors-operator", m.OperatorSecretName(), target.OperatorSecretName()}} {
		if err := ping(connectSecret(t, env, gotR, c.dst, c.user)); err != nil {
			t.Errorf("the restored set's %s Secret %s no longer opens its user: %v", c.user, c.dst, err)
		}
		if err := ping(connectSecret(t, env, gotR, c.src, c.user)); err == nil {
			t.Errorf("the source's %s Secret %s opens the restored set's user", c.user, c.src)
		}
	}
	waitMgors(t, env, target.Name, "Healthy after the restore", 2*time.Minute, healthy)
}

// The application user, its role and the view of the source
// (appUser), before the backup.
const (
	appName     = "app"
	appPassword = "app-password-e2e"
)

// appUser creates, on the source, the role orderReader (find on shop.orders
// and on the view shop.busy, nothing else), the user app holding it, and
// the view shop.busy: the orders of qty 3 and 4, without qty (the writes
// during the backup have no qty, so it stays the same).
func appUser(t *testing.T, set *driver.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, cmd := range []struct {
		db  string
		cmd bson.D
	}{
		{"shop", bson.D{{Key: "create", Value: "busy"}, {Key: "viewOn", Value: "orders"}, {Key: "pipeline", Value: bson.A{
			bson.D{{Key: "$match", Value: bson.D{{Key: "qty", Value: bson.D{{Key: "$gte", Value: 3}}}}}},
			bson.D{{Key: "$project", Value: bson.D{{Key: "qty", Value: 0}}}}}}}},
		{"admin", bson.D{{Key: "createRole", Value: "orderReader"}, {Key: "roles", Value: bson.A{}}, {Key: "privileges", Value: bson.A{
			bson.D{{Key: "resource", Value: bson.D{{Key: "db", Value: "shop"}, {Key: "collection", Value: "orders"}}}, {Key: "actions", Value: bson.A{"find"}}},
			bson.D{{Key: "resource", Value: bson.D{{Key: "db", Value: "shop"}, {Key: "collection", Value: "busy"}}}, {Key: "actions", Value: bson.A{"find"}}}}}}},
		{"admin", bson.D{{Key: "createUser", Value: appName}, {Key: "pwd", Value: appPassword},
			{Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "orderReader"}, {Key: "db", Value: "admin"}}}}}},
	} {
		if err := set.Database(cmd.db).RunCommand(ctx, cmd.cmd).Err(); err != nil {
			t.Fatalf("%s on the source: %v", cmd.cmd[0].Key, err)
		}
	}
}

// checkAppUser: on the restored set the app user opens with its password,
// reads shop.orders (all n documents) and the view through its role, and
// may not write; the view answers as the source's.
func checkAppUser(t *testing.T, env *harness.Env, source *driver.Client, restored *v1alpha1.Mgors, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	app := connectAs(t, env, restored, appName, appPassword)
	if got, err := app.Database("shop").Collection("orders").CountDocuments(ctx, bson.D{}); err != nil || got != int64(n) {
		t.Errorf("app reads %d orders on the restored set (%v), want %d", got, err, n)
	}
	if _, err := app.Database("shop").Collection("orders").InsertOne(ctx, bson.D{{Key: "_id", Value: "app"}}); err == nil {
		t.Error("app wrote shop.orders: its role grants find only")
	}
	view := func(c *driver.Client) []string {
		cur, err := c.Database("shop").Collection("busy").Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
		if err != nil {
			t.Fatalf("find on the view shop.busy: %v", err)
		}
		var out []string
		for cur.Next(ctx) {
			out = append(out, cur.Current.String())
		}
		if err := cur.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	got, want := view(app), view(source)
	if len(want) != 80 || !slices.Equal(got, want) {
		t.Errorf("the view shop.busy answers %d documents on the restored set, %d on the source (want 80, the same)", len(got), len(want))
	} else if strings.Contains(got[0], "qty") {
		t.Errorf("the view's pipeline was not applied: %s", got[0])
	}
}

// connectAs is a client of m as db admin's user with password.
func connectAs(t *testing.T, env *harness.Env, m *v1alpha1.Mgors, user, password string) *driver.Client {
	t.Helper()
	o := options.Client().ApplyURI(m.Status.ConnectionString).
		SetAuth(options.Credential{AuthSource: "admin", Username: user, Password: password}).
		SetDialer(&net.Dialer{Resolver: env.Resolver(), Timeout: 3 * time.Second}).
		SetServerSelectionTimeout(20 * time.Second).SetTimeout(20 * time.Second)
	c, err := driver.Connect(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c
}

// connectSecret is connectAs with the user and password of a user Secret
// (its user defaultUser when it names none).
func connectSecret(t *testing.T, env *harness.Env, m *v1alpha1.Mgors, secret, defaultUser string) *driver.Client {
	t.Helper()
	sec, err := env.Client.CoreV1().Secrets(env.Namespace).Get(context.Background(), secret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	user := string(sec.Data[v1alpha1.AdminUsernameSecretKey])
	if user == "" {
		user = defaultUser
	}
	return connectAs(t, env, m, user, string(sec.Data[v1alpha1.AdminPasswordSecretKey]))
}

func ping(c *driver.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.Ping(ctx, nil)
}

// The credential of deploy/samples/backup/s3.yaml.
const (
	s3Key    = "demo-access"
	s3Secret = "demo-secret-change-me"
)

// startS3 applies deploy/samples/backup/s3.yaml, the S3 server (image
// mgors/s3) as a pod behind the Service s3:9000 with the bucket "backups"
// and the Secret s3-creds, as the README has a person do; it returns the
// pod's address, which this process reaches directly.
func startS3(t *testing.T, env *harness.Env) string {
	t.Helper()
	ctx := context.Background()
	core := env.Client.CoreV1()
	mustKubectl(t, env, "", "-n", env.Namespace, "apply", "-f", filepath.Join(repo(t), "deploy", "samples", "backup", "s3.yaml"))
	deadline := time.Now().Add(2 * time.Minute)
	for {
		p, err := core.Pods(env.Namespace).Get(ctx, "s3", metav1.GetOptions{})
		if err == nil && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
			endpoint := p.Status.PodIP + ":9000"
			c, err := store.New(store.Config{Endpoint: endpoint, Bucket: "backups", AccessKey: s3Key, SecretKey: s3Secret})
			if err == nil {
				lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				_, err = c.List(lctx, "")
				cancel()
			}
			if err == nil {
				return endpoint
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the S3 pod did not serve in 2 minutes: %v", err)
		}
		time.Sleep(time.Second)
	}
}

// snapshotAt is every document of shop.orders by _id, as extended JSON,
// read at the backup's End (snapshot read concern) or now when end is nil.
func snapshotAt(t *testing.T, c *driver.Client, end *v1alpha1.OplogPosition) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := bson.D{{Key: "find", Value: "orders"}, {Key: "batchSize", Value: 100000}}
	if end != nil {
		cmd = append(cmd, bson.E{Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"},
			{Key: "atClusterTime", Value: bson.Timestamp{T: uint32(end.Seconds), I: uint32(end.Increment)}}}})
	}
	var reply struct {
		Cursor struct {
			FirstBatch []bson.Raw `bson:"firstBatch"`
		} `bson:"cursor"`
	}
	if err := c.Database("shop").RunCommand(ctx, cmd).Decode(&reply); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range reply.Cursor.FirstBatch {
		out[d.Lookup("_id").String()] = d.String()
	}
	return out
}
