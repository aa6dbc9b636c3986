package chaos

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// RestoreCluster is the cluster the default run backs up, archives through
// the faults and restores to a point in time (Config.Restore): psa, which no
// forced reconfig rewrites (a force may drop majority-committed entries the
// archive holds, and the archive then stops for good, by design).
const RestoreCluster = "psa"

// The point-in-time restore's bounds and settings.
const (
	// archiveChunkSeconds is spec.backup.pointInTime.chunkSeconds: short, so
	// that the archive passes the chosen moment soon after the faults.
	archiveChunkSeconds = 5
	// backupBound bounds the MgorsBackup before the faults, restoreBound the
	// new set Healthy, the archive past the moment, and the MgorsRestore.
	backupBound  = 3 * time.Minute
	restoreBound = 5 * time.Minute
	// s3Creds is the Secret of deploy/samples/backup/s3.yaml.
	s3Creds = "s3-creds"
)

// store is where the run's backup and archive go: the S3 pod of
// deploy/samples/backup/s3.yaml in the run's namespace.
func (r *run) store() v1alpha1.BackupStore {
	return v1alpha1.BackupStore{Endpoint: "s3." + r.ns + ".svc:9000", Bucket: "backups", Prefix: "mgors",
		TLS: ptr.To(false), CredentialsSecretRef: corev1.LocalObjectReference{Name: s3Creds}}
}

// prepareArchive deploys the S3 store into the run's namespace and gives the
// Mgors named Config.Restore among wanted spec.backup with the store and
// point-in-time archiving.
func (r *run) prepareArchive(ctx context.Context, wanted []*v1alpha1.Mgors) error {
	i := slices.IndexFunc(wanted, func(m *v1alpha1.Mgors) bool { return m.Name == r.cfg.Restore })
	if i < 0 {
		return fmt.Errorf("Config.Restore %q: no such cluster in the run", r.cfg.Restore)
	}
	s3 := filepath.Join(r.cfg.Repo, "deploy", "samples", "backup", "s3.yaml")
	if out, err := r.kubectl(ctx, time.Minute, "-n", r.ns, "apply", "-f", s3); err != nil {
		return fmt.Errorf("kubectl apply -f %s: %w\n%s", s3, err, out)
	}
	wanted[i].Spec.Backup = &v1alpha1.BackupSpec{Store: r.store(),
		PointInTime: &v1alpha1.PointInTimeSpec{Enabled: true, ChunkSeconds: archiveChunkSeconds}}
	return nil
}

// takeBackup creates the MgorsBackup of Config.Restore's cluster, once an
// insert and a register write of it were acknowledged (so the dump holds
// documents of both collections, and the restore goes through the dump and
// the replay), and waits until it Succeeded, so that the archive runs from
// it through the faults.
func (r *run) takeBackup(ctx context.Context, rs *Restore) error {
	name, key := r.cfg.Restore+"-base", r.ns+"/"+r.cfg.Restore
	if !until(ctx, backupBound, func() bool { return r.rec.acked(key, Insert) && r.rec.acked(key, Write) }) {
		return fmt.Errorf("no insert and register write of %s acknowledged within %s: no data to back up", key, backupBound)
	}
	b := &v1alpha1.MgorsBackup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.ns},
		Spec: v1alpha1.MgorsBackupSpec{Cluster: r.cfg.Restore, Store: r.store()}}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_, err := r.mgors.MgorsBackups(r.ns).Create(cctx, b, metav1.CreateOptions{})
	cancel()
	if err != nil {
		return fmt.Errorf("create MgorsBackup %s: %w", name, err)
	}
	var last v1alpha1.MgorsBackupStatus
	done := until(ctx, backupBound, func() bool {
		gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		cur, err := r.mgors.MgorsBackups(r.ns).Get(gctx, name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		last = cur.Status
		return last.Phase == v1alpha1.BackupSucceeded || last.Phase == v1alpha1.BackupFailed
	})
	if !done || last.Phase != v1alpha1.BackupSucceeded || last.End == nil || last.End.Time == nil {
		return fmt.Errorf("the MgorsBackup %s/%s did not succeed within %s: phase %s, %s", r.ns, name, backupBound, last.Phase, last.Message)
	}
	rs.Backup, rs.BackupEnd = name, last.End.Time.Time
	r.log.Info().Str("backup", name).Str("end", rs.BackupEnd.UTC().Format(time.RFC3339)).Msg("backup Succeeded; archiving")
	return nil
}

// acked says whether an operation of kind on cluster was acknowledged.
func (r *recorder) acked(cluster string, kind OpKind) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range r.h.Ops {
		if o.Cluster == cluster && o.Kind == kind && o.Outcome == OK {
			return true
		}
	}
	return false
}

// restoreTarget is the name of the Mgors a run restores into.
func (r *run) restoreTarget() string { return r.cfg.Restore + "-pitr" }

// createRestoreTarget creates the new Mgors the restore goes into: the
// spec of the backed-up cluster (its auth and TLS), 3 data members, no
// arbiter, no backup.
func (r *run) createRestoreTarget(ctx context.Context) error {
	gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	src, err := r.mgors.Mgorses(r.ns).Get(gctx, r.cfg.Restore, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read Mgors %s: %w", r.cfg.Restore, err)
	}
	m := &v1alpha1.Mgors{ObjectMeta: metav1.ObjectMeta{Name: r.restoreTarget(), Namespace: r.ns}, Spec: *src.Spec.DeepCopy()}
	m.Spec.Members, m.Spec.Arbiters, m.Spec.Backup = 3, 0, nil
	m.Spec.Recovery = v1alpha1.RecoverySpec{}
	if _, err := r.mgors.Mgorses(r.ns).Create(gctx, m, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create Mgors %s: %w", m.Name, err)
	}
	return nil
}

// restoreAt restores the backup into the new Mgors as of at and reads what
// the restored set holds; a failure is recorded in rs.Error.
func (r *run) restoreAt(ctx context.Context, rs *Restore, at time.Time, targetErr error) {
	rs.At, rs.Cluster, rs.Target = at, r.ns+"/"+r.cfg.Restore, r.ns+"/"+r.restoreTarget()
	err := targetErr
	if err == nil && at.IsZero() {
		err = errors.New("no fault recorded: no moment inside the faults to restore to")
	}
	if err == nil {
		err = r.restore(ctx, rs)
	}
	if err != nil {
		rs.Error = err.Error()
		r.log.Error().Err(err).Str("cluster", rs.Target).Msg("point-in-time restore failed")
		return
	}
	r.log.Info().Str("cluster", rs.Target).Str("at", at.UTC().Format(time.RFC3339)).Str("restoredTo", rs.RestoredTo).
		Int("present", len(rs.Present)).Str("took", rs.Done.Sub(rs.Created).Round(time.Second).String()).Msg("point-in-time restore read")
}

func (r *run) restore(ctx context.Context, rs *Restore) error {
	m, err := r.waitMgors(ctx, r.restoreTarget(), restoreBound)
	if err != nil {
		return err
	}
	var archived *metav1.Time
	if !until(ctx, restoreBound, func() bool {
		gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		src, err := r.mgors.Mgorses(r.ns).Get(gctx, r.cfg.Restore, metav1.GetOptions{})
		if err == nil && src.Status.Backup != nil {
			archived = src.Status.Backup.ArchivedUntil
		}
		// archivedUntil is a whole second: past At, the archive holds an entry after it.
		return archived != nil && archived.After(rs.At)
	}) {
		return fmt.Errorf("status.backup.archivedUntil of %s did not pass %s within %s (%v)", r.cfg.Restore, rs.At.UTC().Format(time.RFC3339), restoreBound, archived)
	}
	name := r.restoreTarget()
	x := &v1alpha1.MgorsRestore{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: r.ns},
		Spec: v1alpha1.MgorsRestoreSpec{Cluster: name, Backup: rs.Backup, PointInTime: &metav1.Time{Time: rs.At}}}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	_, err = r.mgors.MgorsRestores(r.ns).Create(cctx, x, metav1.CreateOptions{})
	cancel()
	if err != nil {
		return fmt.Errorf("create MgorsRestore %s: %w", name, err)
	}
	rs.Created = time.Now()
	var last v1alpha1.MgorsRestoreStatus
	done := until(ctx, restoreBound, func() bool {
		gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		cur, err := r.mgors.MgorsRestores(r.ns).Get(gctx, name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		last = cur.Status
		return last.Phase == v1alpha1.RestoreSucceeded || last.Phase == v1alpha1.RestoreFailed
	})
	rs.Done = time.Now()
	if !done || last.Phase != v1alpha1.RestoreSucceeded {
		return fmt.Errorf("the MgorsRestore %s/%s did not succeed within %s: phase %s, %s", r.ns, name, restoreBound, last.Phase, last.Message)
	}
	rs.Documents, rs.Replayed = last.Documents, last.Replayed
	if p := last.RestoredTo; p != nil {
		rs.RestoredTo = strconv.FormatInt(p.Seconds, 10) + "." + strconv.FormatInt(p.Increment, 10)
		if p.Time != nil {
			rs.RestoredToWall = p.Time.Time
		}
	}
	t, err := r.newTarget(ctx, m)
	if err != nil {
		return err
	}
	fin := Final{Cluster: rs.Target, Present: map[int64]bool{}, Registers: map[string]int64{}}
	if err := r.finalRead(ctx, t, &fin); err != nil {
		return fmt.Errorf("read the restored set: %w", err)
	}
	for id := range fin.Present {
		rs.Present = append(rs.Present, id)
	}
	slices.Sort(rs.Present)
	rs.Registers = fin.Registers
	return nil
}

// restoreMoment chooses the moment to restore to: the middle of the fault
// window (the first fault's start to the last one's heal), on a whole second
// (spec.pointInTime's resolution), and not before the backup's end; zero when
// no fault was recorded.
func restoreMoment(faults []Fault, backupEnd time.Time) time.Time {
	var from, to time.Time
	for _, f := range faults {
		if from.IsZero() || f.Start.Before(from) {
			from = f.Start
		}
		if f.Healed.After(to) {
			to = f.Healed
		}
	}
	if from.IsZero() {
		return time.Time{}
	}
	at := from.Add(to.Sub(from) / 2).Truncate(time.Second)
	if at.Before(backupEnd) {
		at = backupEnd.Truncate(time.Second).Add(time.Second)
	}
	return at
}
