package e2e

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo/backup"
	"github.com/mgors/operator/mongo/backup/store"
	"github.com/mgors/operator/test/localkube/harness"
)

// The operator archives the oplog of a 3-member set continuously
// (spec.backup.pointInTime, docs/design/backup.md): once a MgorsBackup
// Succeeded into spec.backup.store, writes in three rounds are archived,
// status.backup.archivedUntil passes the third, and a point-in-time restore
// (backup.RestoreTo) to the time after the second round, into a second
// set, holds exactly what was acknowledged up to the second round.
func TestPointInTimeRestore(t *testing.T) {
	t.Parallel()
	env := harness.Cluster(t)
	deployOperator(t, env)
	ctx := context.Background()
	endpoint := startS3(t, env)

	st := v1alpha1.BackupStore{Endpoint: fmt.Sprintf("s3.%s.svc:9000", env.Namespace), Bucket: "backups", Prefix: "mgors",
		TLS: ptr.To(false), CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3-creds"}}
	mc := mgorsClient(t, env)
	m := sample(t, env, "mgors-3.yaml", func(m *v1alpha1.Mgors) {
		m.Name = "pitr"
		m.Spec.Storage.Reclaim = v1alpha1.VolumeDelete
		m.Spec.Backup = &v1alpha1.BackupSpec{Store: st, PointInTime: &v1alpha1.PointInTimeSpec{Enabled: true, ChunkSeconds: 5}}
	})
	target := sample(t, env, "mgors-3.yaml", func(m *v1alpha1.Mgors) {
		m.Name = "pitr-restored"
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
	waitMgors(t, env, m.Name, "the archive waiting for a backup", 2*time.Minute, func(x *v1alpha1.Mgors) bool {
		return x.Status.Backup != nil && strings.Contains(x.Status.Backup.Message, "waits for a first Succeeded backup")
	})
	set := connect(t, env, got)
	orders := set.Database("shop").Collection("orders")
	for i := range 100 {
		if _, err := orders.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "qty", Value: 0}}); err != nil {
			t.Fatal(err)
		}
	}

	bc := mc.MgorsBackups(env.Namespace)
	b := &v1alpha1.MgorsBackup{ObjectMeta: metav1.ObjectMeta{Name: "pitr-base"}, Spec: v1alpha1.MgorsBackupSpec{Cluster: m.Name, Store: st}}
	if _, err := bc.Create(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var done *v1alpha1.MgorsBackup
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(time.Second) {
		cur, err := bc.Get(ctx, b.Name, metav1.GetOptions{})
		if err == nil && (cur.Status.Phase == v1alpha1.BackupSucceeded || cur.Status.Phase == v1alpha1.BackupFailed) {
			done = cur
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the backup did not end in 3 minutes: %+v %v", cur.Status, err)
		}
	}
	if done.Status.Phase != v1alpha1.BackupSucceeded {
		t.Fatalf("the backup failed: %s", done.Status.Message)
	}

	// Three rounds of w:majority writes: inserts, updates, deletes; the
	// point after each is 1 s after its last acknowledged write.
	var marks []time.Time
	var acked []map[string]string
	for r := 1; r <= 3; r++ {
		for i := range 20 {
			if _, err := orders.InsertOne(ctx, bson.D{{Key: "_id", Value: 1000*r + i}, {Key: "qty", Value: r}}); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 10 {
			if _, err := orders.UpdateOne(ctx, bson.D{{Key: "_id", Value: 10*r + i}}, bson.D{{Key: "$set", Value: bson.D{{Key: "qty", Value: r}, {Key: "round", Value: r}}}}); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 5 {
			if _, err := orders.DeleteOne(ctx, bson.D{{Key: "_id", Value: 50 + 5*r + i}}); err != nil {
				t.Fatal(err)
			}
		}
		marks = append(marks, time.Now().Add(time.Second))
		acked = append(acked, snapshotAt(t, set, nil))
		time.Sleep(2 * time.Second)
	}
	// A write past the third round's point, elsewhere, so that the archive
	// reaches past it.
	if _, err := set.Database("shop").Collection("fence").InsertOne(ctx, bson.D{{Key: "at", Value: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	arch := waitMgors(t, env, m.Name, "archivedUntil past round 3", 3*time.Minute, func(x *v1alpha1.Mgors) bool {
		return x.Status.Backup != nil && x.Status.Backup.ArchivedUntil != nil && !x.Status.Backup.ArchivedUntil.Time.Before(marks[2].Truncate(time.Second))
	})
	t.Logf("status.backup: archivedUntil %s, pointInTimeRange %s, message %q", arch.Status.Backup.ArchivedUntil.UTC().Format(time.RFC3339),
		arch.Status.Backup.PointInTimeRange, arch.Status.Backup.Message)
	if from, _, ok := strings.Cut(arch.Status.Backup.PointInTimeRange, ".."); !ok || from != done.Status.End.Time.UTC().Format(time.RFC3339) {
		t.Errorf("status.backup.pointInTimeRange %q: want the backup's end (%s) to archivedUntil", arch.Status.Backup.PointInTimeRange, done.Status.End.Time.UTC().Format(time.RFC3339))
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Second) {
		cur, err := bc.Get(ctx, b.Name, metav1.GetOptions{})
		if err == nil {
			_, to, _ := strings.Cut(cur.Status.PointInTimeRange, "..")
			if tt, err := time.Parse(time.RFC3339, to); err == nil && !tt.Before(marks[2].Truncate(time.Second)) {
				t.Logf("the MgorsBackup restores to %s", cur.Status.PointInTimeRange)
				break
			}
		}
		if time.Now().After(deadline) {
			t.Errorf("the MgorsBackup's pointInTimeRange was not extended past round 3: %+v %v", cur.Status, err)
			break
		}
	}
	// The chunks behind the backup's End serve no restore: pruned, once.
	describeWith(t, env, m.Name, "ArchiveStarted", "ArchivePruned")

	// Restore to the point after round 2.
	gotR := waitMgors(t, env, target.Name, "Healthy", 4*time.Minute, healthy)
	s3, err := store.New(store.Config{Endpoint: endpoint, Bucket: "backups", AccessKey: s3Key, SecretKey: s3Secret})
	if err != nil {
		t.Fatal(err)
	}
	archive := backup.ArchivePrefix(st.Prefix, env.Namespace, m.Name)
	objs, err := s3.List(ctx, archive+"/")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if c, ok := backup.ParseChunk(o.Key); ok && !c.Last.After(bson.Timestamp{T: uint32(done.Status.End.Seconds), I: uint32(done.Status.End.Increment)}) {
			t.Errorf("chunk %s ends at or before the backup's end and was not pruned", o.Key)
		}
	}
	at, err := backup.TimestampAt(ctx, s3, done.Status.Prefix, archive, marks[1], 0)
	if err != nil {
		t.Fatal(err)
	}
	tc := connect(t, env, gotR)
	// As the operator's restores do, the target's own admin user keeps its
	// credentials (this client is it); the operator's user is always kept.
	res, err := backup.RestoreTo(ctx, tc, s3, done.Status.Prefix, archive, at, backup.RestoreOptions{Keep: []string{backup.UserID("admin", "admin")}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("restored to ts(%d,%d): %+v", at.T, at.I, *res)
	restored := snapshotAt(t, tc, nil)
	if maps.Equal(acked[1], acked[2]) || maps.Equal(acked[0], acked[1]) {
		t.Fatal("the rounds changed nothing")
	}
	if !maps.Equal(restored, acked[1]) {
		for id, doc := range acked[1] {
			if restored[id] != doc {
				t.Errorf("document %s: restored %q, acknowledged up to round 2 %q", id, restored[id], doc)
			}
		}
		for id, doc := range restored {
			if _, ok := acked[1][id]; !ok {
				t.Errorf("document %s restored (%s), not there after round 2", id, doc)
			}
		}
		t.Fatalf("restored %d documents, %d after round 2", len(restored), len(acked[1]))
	}
}
