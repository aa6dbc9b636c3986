package backup

import (
	"fmt"
	"path"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// Prefix is where a MgorsBackup's objects go in its bucket:
// <spec.store.prefix>/<namespace>/<cluster>/<backup name>. The backup's name
// is unique in its namespace, so two backups never share objects.
func Prefix(b *v1alpha1.MgorsBackup) string {
	return path.Join(b.Spec.Store.Prefix, b.Namespace, b.Spec.Cluster, b.Name)
}

// Succeeded is the status of a backup whose manifest m was written under prefix.
func Succeeded(m *Manifest, prefix string, generation int64) v1alpha1.MgorsBackupStatus {
	start, end := position(m.Start), position(m.End)
	return v1alpha1.MgorsBackupStatus{
		Phase:              v1alpha1.BackupSucceeded,
		Message:            fmt.Sprintf("%d collections, %d oplog entries replayed on restore", len(m.Collections), m.Oplog.Entries),
		Member:             m.Member,
		Prefix:             prefix,
		SizeBytes:          m.Size,
		Size:               HumanSize(m.Size),
		StartTime:          timePtr(m.Started),
		CompletionTime:     timePtr(m.Finished),
		Start:              start,
		End:                end,
		PointInTimeRange:   pointInTimeRange(m.End.Wall, m.End.Wall),
		ObservedGeneration: generation,
	}
}

func position(p Position) *v1alpha1.OplogPosition {
	return &v1alpha1.OplogPosition{Seconds: int64(p.T), Increment: int64(p.I), Term: p.Term, Time: timePtr(p.Wall)}
}

func timePtr(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	mt := metav1.NewTime(t.UTC())
	return &mt
}

// pointInTimeRange is "FROM..TO" in RFC 3339, seconds (UTC); "" when unknown.
func pointInTimeRange(from, to time.Time) string {
	if from.IsZero() || to.IsZero() {
		return ""
	}
	return from.UTC().Format(time.RFC3339) + ".." + to.UTC().Format(time.RFC3339)
}

// HumanSize is bytes in binary units, one decimal: "512 B", "306.1 KiB", "2.0 GiB".
func HumanSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
