package watch

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/mgors/operator/actors"
	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/kube/client/fake"
)

type inbox struct {
	mu   sync.Mutex
	msgs []any
}

func (b *inbox) send(m any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.msgs = append(b.msgs, m)
}

func (b *inbox) wait(t *testing.T, what string, match func(any) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		b.mu.Lock()
		for i, m := range b.msgs {
			if match(m) {
				b.msgs = append(b.msgs[:i], b.msgs[i+1:]...)
				b.mu.Unlock()
				return
			}
		}
		b.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %s message", what)
}

func (b *inbox) none(t *testing.T, what string, match func(any) bool) {
	t.Helper()
	time.Sleep(300 * time.Millisecond)
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range b.msgs {
		if match(m) {
			t.Fatalf("unexpected %s message: %#v", what, m)
		}
	}
}

func TestDispatcher(t *testing.T) {
	m := &v1alpha1.Mgors{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "db", UID: "u-1", Generation: 1}}
	mc, kc := fake.NewClientset(), k8sfake.NewClientset()
	box := &inbox{}
	d := &Dispatcher{Informers: kube.NewInformers(kc, mc, kube.InformerOptions{ClusterScoped: true}), Send: box.send, Log: zerolog.Nop()}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := make(chan error, 1)
	go func() { errs <- d.Run(ctx, 10*time.Second) }()

	changed := func(gen int64) func(any) bool {
		return func(x any) bool {
			c, ok := x.(actors.ClusterChanged)
			return ok && c.Mgors.Name == "demo" && c.Mgors.Generation == gen
		}
	}
	time.Sleep(200 * time.Millisecond) // let the informers start watching
	created, err := mc.Mgorses("db").Create(ctx, m, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		t.Fatalf("dispatcher stopped: %v", err)
	default:
	}
	box.wait(t, "ClusterChanged on add", changed(1))

	// Our own status write: same generation, not news.
	created.Status.Phase = v1alpha1.PhaseProvisioning
	created.ResourceVersion = "2"
	if _, err := mc.Mgorses("db").UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	box.none(t, "ClusterChanged after a status-only update", changed(1))

	created.Generation = 2
	created.Spec.Members = 5
	if _, err := mc.Mgorses("db").Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	box.wait(t, "ClusterChanged on a spec change", changed(2))

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "demo-0", Namespace: "db",
		Labels: map[string]string{kube.LabelManagedBy: kube.ManagedBy, kube.LabelInstance: "demo"}}}
	if _, err := kc.CoreV1().Pods("db").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	box.wait(t, "OwnedChanged for the pod", func(x any) bool {
		o, ok := x.(actors.OwnedChanged)
		return ok && o.Cluster == "demo" && o.Namespace == "db"
	})
	stranger := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "db"}}
	if _, err := kc.CoreV1().Pods("db").Create(ctx, stranger, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	box.none(t, "OwnedChanged for a pod we do not own", func(x any) bool {
		o, ok := x.(actors.OwnedChanged)
		return ok && o.What == "pod other"
	})

	if err := mc.Mgorses("db").Delete(ctx, "demo", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	box.wait(t, "ClusterDeleted", func(x any) bool {
		c, ok := x.(actors.ClusterDeleted)
		return ok && c.Name == "demo" && c.UID == "u-1"
	})
	cancel()
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

func TestTombstonesAreUnwrapped(t *testing.T) {
	box := &inbox{}
	d := &Dispatcher{Send: box.send}
	m := &v1alpha1.Mgors{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "db", UID: "u-1"}}
	d.mgorsHandler().OnDelete(cache.DeletedFinalStateUnknown{Key: "db/demo", Obj: m})
	box.wait(t, "ClusterDeleted from a tombstone", func(x any) bool {
		c, ok := x.(actors.ClusterDeleted)
		return ok && c.UID == "u-1"
	})
}

func TestSpecOrMetaChanged(t *testing.T) {
	base := &v1alpha1.Mgors{ObjectMeta: metav1.ObjectMeta{Name: "d", Generation: 1, ResourceVersion: "1"}}
	status := base.DeepCopy()
	status.ResourceVersion, status.Status.Phase = "2", v1alpha1.PhaseHealthy
	ann := base.DeepCopy()
	ann.Annotations = map[string]string{"mgors.io/force-reconfigure-onto": "demo-1"}
	gen := base.DeepCopy()
	gen.Generation = 2
	for name, tc := range map[string]struct {
		n    *v1alpha1.Mgors
		want bool
	}{"status only": {status, false}, "annotation": {ann, true}, "generation": {gen, true}} {
		if got := SpecOrMetaChanged(base, tc.n); got != tc.want {
			t.Errorf("%s: got %t, want %t", name, got, tc.want)
		}
	}
}

// TestShardedDispatcher: with an Owner, the Mgors watch selects this
// replica's own, and a Mgors asked to drain is a ClusterDrain, not news.
func TestShardedDispatcher(t *testing.T) {
	var box inbox
	d := &Dispatcher{Owner: "op-a", Send: box.send, Log: zerolog.Nop()}
	if sel := OwnerSelector(d.Owner); sel != "mgors.io/shard=op-a" {
		t.Fatalf("selector %q", sel)
	}
	h := d.mgorsHandler()
	m := &v1alpha1.Mgors{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "demo", UID: "u-1", Labels: map[string]string{"mgors.io/shard": "op-a"}}}
	h.OnAdd(m, false)
	box.wait(t, "ClusterChanged", func(msg any) bool { _, ok := msg.(actors.ClusterChanged); return ok })
	drained := m.DeepCopy()
	drained.Labels["mgors.io/drain"] = "true"
	h.OnUpdate(m, drained)
	box.wait(t, "ClusterDrain", func(msg any) bool {
		c, ok := msg.(actors.ClusterDrain)
		return ok && c == actors.ClusterDrain{Namespace: "db", Name: "demo", UID: "u-1"}
	})
	box.none(t, "ClusterChanged", func(msg any) bool { _, ok := msg.(actors.ClusterChanged); return ok })

	single := &Dispatcher{Send: box.send, Log: zerolog.Nop()}
	if sel := OwnerSelector(single.Owner); sel != "" {
		t.Fatalf("the single-replica watch selects %q", sel)
	}
	single.mgorsHandler().OnAdd(drained, false)
	box.wait(t, "ClusterChanged without sharding", func(msg any) bool { _, ok := msg.(actors.ClusterChanged); return ok })
}

// A MgorsBackup added, changed or deleted wakes the actor of the cluster it
// names, as an owned object does.
func TestDispatcherBackups(t *testing.T) {
	mc, kc := fake.NewClientset(), k8sfake.NewClientset()
	box := &inbox{}
	d := &Dispatcher{Informers: kube.NewInformers(kc, mc, kube.InformerOptions{}), Send: box.send, Log: zerolog.Nop()}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := make(chan error, 1)
	go func() { errs <- d.Run(ctx, 10*time.Second) }()
	for deadline := time.Now().Add(10 * time.Second); !d.Synced(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the dispatcher never synced")
		}
	}
	backup := func(x any) bool {
		o, ok := x.(actors.OwnedChanged)
		return ok && o == actors.OwnedChanged{Namespace: "db", Cluster: "demo", What: "backup nightly"}
	}
	b := &v1alpha1.MgorsBackup{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "db", ResourceVersion: "1"},
		Spec: v1alpha1.MgorsBackupSpec{Cluster: "demo"}}
	created, err := mc.MgorsBackups("db").Create(ctx, b, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	box.wait(t, "OwnedChanged on a backup's add", backup)

	created.Status.Phase = v1alpha1.BackupRunning
	created.ResourceVersion = "2"
	if _, err := mc.MgorsBackups("db").UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	box.wait(t, "OwnedChanged on a backup's update", backup)

	if err := mc.MgorsBackups("db").Delete(ctx, "nightly", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	box.wait(t, "OwnedChanged on a backup's delete", backup)
	box.none(t, "a second OwnedChanged for the backup", backup)
	cancel()
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

// The backup handler unwraps tombstones and ignores resyncs.
func TestBackupHandler(t *testing.T) {
	box := &inbox{}
	h := (&Dispatcher{Send: box.send}).backupHandler()
	b := &v1alpha1.MgorsBackup{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "db", ResourceVersion: "3"},
		Spec: v1alpha1.MgorsBackupSpec{Cluster: "demo"}}
	want := actors.OwnedChanged{Namespace: "db", Cluster: "demo", What: "backup nightly"}
	is := func(x any) bool { o, ok := x.(actors.OwnedChanged); return ok && o == want }
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "db/nightly", Obj: b})
	box.wait(t, "OwnedChanged from a tombstone", is)
	h.OnUpdate(b, b.DeepCopy())
	box.none(t, "OwnedChanged on a resync", is)
}

// runDispatcher runs a Dispatcher over fresh informers of mc until the test
// ends, once synced.
func runDispatcher(t *testing.T, mc *fake.Clientset) (*inbox, context.Context) {
	t.Helper()
	box := &inbox{}
	d := &Dispatcher{Informers: kube.NewInformers(k8sfake.NewClientset(), mc, kube.InformerOptions{}), Send: box.send, Log: zerolog.Nop()}
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() { errs <- d.Run(ctx, 10*time.Second) }()
	t.Cleanup(func() {
		cancel()
		if err := <-errs; err != nil {
			t.Error(err)
		}
	})
	for deadline := time.Now().Add(10 * time.Second); !d.Synced(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the dispatcher never synced")
		}
	}
	return box, ctx
}

func ownedIs(want actors.OwnedChanged) func(any) bool {
	return func(x any) bool { o, ok := x.(actors.OwnedChanged); return ok && o == want }
}

// A MgorsRestore added, changed or deleted wakes the actor of the cluster it
// names, as a backup does.
func TestDispatcherRestores(t *testing.T) {
	mc := fake.NewClientset()
	box, ctx := runDispatcher(t, mc)
	restore := ownedIs(actors.OwnedChanged{Namespace: "db", Cluster: "demo", What: "restore back"})
	r := &v1alpha1.MgorsRestore{ObjectMeta: metav1.ObjectMeta{Name: "back", Namespace: "db", ResourceVersion: "1"},
		Spec: v1alpha1.MgorsRestoreSpec{Cluster: "demo", Backup: "nightly"}}
	created, err := mc.MgorsRestores("db").Create(ctx, r, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	box.wait(t, "OwnedChanged on a restore's add", restore)

	created.Status.Phase = v1alpha1.RestoreRunning
	created.ResourceVersion = "2"
	if _, err := mc.MgorsRestores("db").UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	box.wait(t, "OwnedChanged on a restore's update", restore)

	if err := mc.MgorsRestores("db").Delete(ctx, "back", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	box.wait(t, "OwnedChanged on a restore's delete", restore)
	box.none(t, "a second OwnedChanged for the restore", restore)
}

// A MgorsBackup that changes wakes, besides its own cluster's actor, the
// actors of the clusters whose MgorsRestores of its namespace name it.
func TestBackupWakesItsRestores(t *testing.T) {
	restoreOf := func(ns, name, cluster, backup string) *v1alpha1.MgorsRestore {
		return &v1alpha1.MgorsRestore{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, ResourceVersion: "1"},
			Spec: v1alpha1.MgorsRestoreSpec{Cluster: cluster, Backup: backup}}
	}
	b := &v1alpha1.MgorsBackup{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "db", ResourceVersion: "1"},
		Spec: v1alpha1.MgorsBackupSpec{Cluster: "demo"}}
	mc := fake.NewClientset(b,
		restoreOf("db", "into-copy", "copy", "nightly"),
		restoreOf("db", "into-demo", "demo", "nightly"),
		restoreOf("db", "other-backup", "third", "weekly"),
		restoreOf("elsewhere", "same-backup-name", "copy", "nightly"))
	box, ctx := runDispatcher(t, mc)
	intoCopy := ownedIs(actors.OwnedChanged{Namespace: "db", Cluster: "copy", What: "restore into-copy"})
	intoDemo := ownedIs(actors.OwnedChanged{Namespace: "db", Cluster: "demo", What: "restore into-demo"})
	backup := ownedIs(actors.OwnedChanged{Namespace: "db", Cluster: "demo", What: "backup nightly"})
	unrelated := func(x any) bool {
		o, ok := x.(actors.OwnedChanged)
		return ok && (o.What == "restore other-backup" || o.Namespace == "elsewhere")
	}
	// The adds of the initial list (the backup's add may wake its restores
	// once more, as the restore cache fills): waited for, then forgotten.
	for what, is := range map[string]func(any) bool{"into-copy": intoCopy, "into-demo": intoDemo, "backup": backup, "the others": unrelated} {
		box.wait(t, "the add of "+what, is)
	}
	time.Sleep(300 * time.Millisecond)
	box.mu.Lock()
	box.msgs = nil
	box.mu.Unlock()

	got, err := mc.MgorsBackups("db").Get(ctx, "nightly", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got.Status.Phase = v1alpha1.BackupSucceeded
	got.ResourceVersion = "2"
	if _, err := mc.MgorsBackups("db").UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	box.wait(t, "the backup's own cluster", backup)
	box.wait(t, "the cluster restored into from the backup", intoCopy)
	box.wait(t, "the backup's cluster restored into from it", intoDemo)
	box.none(t, "a restore of another backup or namespace", unrelated)
}

// The restore handler unwraps tombstones and ignores resyncs; the backup
// handler without Informers wakes only the backup's cluster.
func TestRestoreHandler(t *testing.T) {
	box := &inbox{}
	h := (&Dispatcher{Send: box.send}).restoreHandler()
	r := &v1alpha1.MgorsRestore{ObjectMeta: metav1.ObjectMeta{Name: "back", Namespace: "db", ResourceVersion: "3"},
		Spec: v1alpha1.MgorsRestoreSpec{Cluster: "demo", Backup: "nightly"}}
	is := ownedIs(actors.OwnedChanged{Namespace: "db", Cluster: "demo", What: "restore back"})
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "db/back", Obj: r})
	box.wait(t, "OwnedChanged from a tombstone", is)
	h.OnUpdate(r, r.DeepCopy())
	box.none(t, "OwnedChanged on a resync", is)
}
