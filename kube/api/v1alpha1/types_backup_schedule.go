package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// BackupSpec is a cluster's backups: MgorsBackups taken on schedules, and
// the oplog archived continuously, both into one S3-compatible store.
type BackupSpec struct {
	// Store is the S3-compatible store the schedules' backups and the oplog
	// archive go to (as a MgorsBackup's spec.store).
	Store BackupStore `json:"store"`
	// Schedules each take a MgorsBackup at the times their cron expression
	// names, and keep the newest ones.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Schedules []BackupSchedule `json:"schedules,omitempty"`
	// PointInTime archives the oplog continuously into the store, so that a
	// restore reaches any point in time from a backup's end to the newest
	// archived write.
	// +optional
	PointInTime *PointInTimeSpec `json:"pointInTime,omitempty"`
}

// BackupSchedule takes a MgorsBackup on a cron schedule.
type BackupSchedule struct {
	// Name names the schedule; its backups are named
	// <cluster>-<name>-<YYYYMMDDHHMM> (UTC) and labelled mgors.io/schedule.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=20
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="spec.backup.schedules[].name must be a DNS label: lower-case letters, digits and '-'"
	Name string `json:"name"`
	// Schedule is a cron expression of five fields, in UTC: minute, hour,
	// day of month, month, day of week ("0 3 * * *": every day at 03:00).
	// +kubebuilder:validation:MaxLength=100
	// +kubebuilder:validation:XValidation:rule="self.matches('^\\\\S+( \\\\S+){4}$')",message="spec.backup.schedules[].schedule must be a cron expression of five fields (minute hour day-of-month month day-of-week), e.g. \"0 3 * * *\""
	Schedule string `json:"schedule"`
	// Keep is how many Succeeded backups of the schedule are kept; older
	// ones are deleted, their objects in the store first.
	// +kubebuilder:default=7
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	Keep int32 `json:"keep,omitempty"`
}

// PointInTimeSpec is the continuous archiving of the oplog.
type PointInTimeSpec struct {
	// Enabled archives the oplog from a secondary into the store.
	Enabled bool `json:"enabled"`
	// ChunkSeconds is how often an archive object is closed: at most the
	// newest writes a restore cannot reach yet.
	// +kubebuilder:default=60
	// +kubebuilder:validation:Minimum=5
	// +kubebuilder:validation:Maximum=3600
	// +optional
	ChunkSeconds int32 `json:"chunkSeconds,omitempty"`
}

// BackupStatus is a cluster's backups as the operator last recorded them.
type BackupStatus struct {
	// LastBackup is the newest Succeeded MgorsBackup of the cluster, and
	// LastBackupTime the point in time it restores to.
	// +optional
	LastBackup string `json:"lastBackup,omitempty"`
	// +optional
	LastBackupTime *metav1.Time `json:"lastBackupTime,omitempty"`
	// NextBackupTime is when the next scheduled backup is taken.
	// +optional
	NextBackupTime *metav1.Time `json:"nextBackupTime,omitempty"`
	// ArchivedUntil is the wall time of the newest oplog entry in the archive
	// (spec.backup.pointInTime).
	// +optional
	ArchivedUntil *metav1.Time `json:"archivedUntil,omitempty"`
	// PointInTimeRange is the points in time a restore reaches, "FROM..TO" in
	// RFC 3339: from the oldest Succeeded backup's end to ArchivedUntil.
	// +optional
	PointInTimeRange string `json:"pointInTimeRange,omitempty"`
	// Message says what stops the schedules or the archive, "" when nothing.
	// +optional
	Message string `json:"message,omitempty"`
}
