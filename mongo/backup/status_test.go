package backup

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

func TestHumanSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 313421: "306.1 KiB", 5 << 30: "5.0 GiB", 3 << 50: "3.0 PiB"} {
		if got := HumanSize(n); got != want {
			t.Errorf("HumanSize(%d) = %s, want %s", n, got, want)
		}
	}
}

// A succeeded backup's status names the member, the prefix, the size, the
// times and optimes, and the point in time it restores to (End).
func TestSucceeded(t *testing.T) {
	end := time.Date(2026, 12, 3, 22, 0, 9, 500, time.UTC)
	m := &Manifest{Member: "demo-2.demo-svc:27017", Size: 2048, Started: end.Add(-time.Minute), Finished: end.Add(time.Second),
		Start: Position{T: 100, I: 2, Term: 3, Wall: end.Add(-time.Minute)}, End: Position{T: 160, I: 7, Term: 3, Wall: end},
		Collections: make([]Collection, 4), Oplog: Oplog{Entries: 12}}
	st := Succeeded(m, "mgors/default/demo/b1", 1)
	if st.Phase != v1alpha1.BackupSucceeded || st.Member != m.Member || st.Prefix != "mgors/default/demo/b1" || st.SizeBytes != 2048 || st.Size != "2.0 KiB" ||
		st.PointInTimeRange != "2026-12-03T22:00:09Z..2026-12-03T22:00:09Z" || st.ObservedGeneration != 1 {
		t.Errorf("status %+v", st)
	}
	if st.End.Seconds != 160 || st.End.Increment != 7 || st.End.Term != 3 || !st.End.Time.Equal(&metav1.Time{Time: end}) || st.Start.Seconds != 100 {
		t.Errorf("optimes %+v .. %+v", st.Start, st.End)
	}
	if !st.StartTime.Time.Equal(m.Started) || !st.CompletionTime.Time.Equal(m.Finished) {
		t.Errorf("times %v .. %v", st.StartTime, st.CompletionTime)
	}
	b := &v1alpha1.MgorsBackup{ObjectMeta: metav1.ObjectMeta{Name: "b1", Namespace: "default"},
		Spec: v1alpha1.MgorsBackupSpec{Cluster: "demo", Store: v1alpha1.BackupStore{Prefix: "mgors"}}}
	if p := Prefix(b); p != "mgors/default/demo/b1" {
		t.Errorf("Prefix = %s", p)
	}
	b.Spec.Store.Prefix = ""
	if p := Prefix(b); p != "default/demo/b1" {
		t.Errorf("Prefix without a store prefix = %s", p)
	}
}
