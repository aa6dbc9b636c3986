package actors

import (
	"context"
	"errors"
	"fmt"

	driver "go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
	"github.com/mgors/operator/mongo/backup"
	"github.com/mgors/operator/mongo/backup/store"
)

var _ BackupWorld = (*KubeWorld)(nil)

// observeBackups lists the cluster's MgorsBackups from the cache, oldest first.
func (w *KubeWorld) observeBackups(m *v1alpha1.Mgors, o *Observation) {
	bs, err := w.Cache.Backups(m.Namespace, m.Name)
	if err != nil {
		return // BackupsRead stays false: nothing is taken for deleted
	}
	o.Backups, o.BackupsRead = make([]*v1alpha1.MgorsBackup, 0, len(bs)), true
	for _, b := range bs {
		o.Backups = append(o.Backups, b.DeepCopy())
	}
}

// Backup implements BackupWorld: the dump of run.Member into b's store.
func (w *KubeWorld) Backup(ctx context.Context, m *v1alpha1.Mgors, b *v1alpha1.MgorsBackup, run BackupStarted, auth Auth) Event {
	failed := func(err error) Event { return BackupFailed{Backup: run.Backup, UID: run.UID, Reason: err.Error()} }
	st, err := w.backupStore(ctx, b)
	if err != nil {
		return failed(err)
	}
	dc, closeDC, err := w.openMember(ctx, m, auth, run.Member)
	if err != nil {
		return failed(err)
	}
	defer closeDC()
	man, err := backup.Dump(ctx, dc, run.Member, st, backup.Options{Cluster: m.Namespace + "/" + m.Name, Prefix: run.Prefix, Log: w.Mongo.Log})
	if err != nil {
		return failed(err)
	}
	return completed(run, man)
}

// SettleBackup implements BackupWorld: the manifest under run's prefix.
func (w *KubeWorld) SettleBackup(ctx context.Context, _ *v1alpha1.Mgors, b *v1alpha1.MgorsBackup, run BackupStarted) (Event, error) {
	st, err := w.backupStore(ctx, b)
	if err != nil {
		return nil, err
	}
	man, err := backup.ReadManifest(ctx, st, run.Prefix, 0)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return BackupFailed{Backup: run.Backup, UID: run.UID,
			Reason: "the operator stopped while the dump ran, and it wrote no manifest; the objects written stay; create another MgorsBackup"}, nil
	case err != nil:
		return nil, err
	}
	return completed(run, man), nil
}

// WriteBackupStatus implements BackupWorld.
func (w *KubeWorld) WriteBackupStatus(ctx context.Context, b *v1alpha1.MgorsBackup, st v1alpha1.MgorsBackupStatus) error {
	return w.Status.Backup(ctx, b, st)
}

// BackupEvent implements BackupWorld.
func (w *KubeWorld) BackupEvent(b *v1alpha1.MgorsBackup, warning bool, reason, message string) {
	w.Recorder.BackupEvent(b, warning, reason, message)
}

// grantBackupRole grants the operator's own user mongo.BackupRole on the
// primary (ActGrantBackupRole), through a connection of its own.
func (w *KubeWorld) grantBackupRole(ctx context.Context, m *v1alpha1.Mgors, a Action) error {
	dc, closeDC, err := w.openMember(ctx, m, a.Auth, a.Host)
	if err != nil {
		return err
	}
	defer closeDC()
	return mongo.GrantRoles(ctx, dc, mongo.OperatorUser, []mongo.Role{mongo.BackupRole})
}

// backupStore is the client of b's store, with the credential of its
// Secret (read from the cache's Secret reader, never kept or logged).
func (w *KubeWorld) backupStore(ctx context.Context, b *v1alpha1.MgorsBackup) (*store.Client, error) {
	ref := b.Spec.Store.CredentialsSecretRef.Name
	sec, err := w.Cache.SecretData(ctx, b.Namespace, ref)
	if err != nil {
		return nil, fmt.Errorf("spec.store.credentialsSecretRef: reading the Secret %s: %w", ref, err)
	}
	var ca []byte
	if r := b.Spec.Store.CASecretRef; r != nil {
		cs, err := w.Cache.SecretData(ctx, b.Namespace, r.Name)
		if err != nil {
			return nil, fmt.Errorf("spec.store.caSecretRef: reading the Secret %s: %w", r.Name, err)
		}
		ca = cs.Data[store.CAKey]
	}
	cfg, err := store.ConfigFor(b.Spec.Store, sec.Data, ca)
	if err != nil {
		return nil, err
	}
	return store.New(cfg)
}

// openMember is a connection of its own to host, authenticated as auth
// (mongo.Open with the cluster's credentials and TLS), for a long read or a
// one-off command, and the function that closes it.
func (w *KubeWorld) openMember(ctx context.Context, m *v1alpha1.Mgors, auth Auth, host string) (*driver.Client, func(), error) {
	opts, _, err := w.memberOptions(ctx, m, auth)
	if err != nil {
		return nil, nil, err
	}
	dc, err := mongo.Open(opts, host)
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to %s: %w", host, err)
	}
	return dc, func() {
		dctx, cancel := context.WithTimeout(context.Background(), mongo.DefaultTimeout)
		defer cancel()
		_ = dc.Disconnect(dctx)
	}, nil
}
