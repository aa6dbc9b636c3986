package kube

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// SecretFinalizer keeps the keyfile and credential Secrets that the operator
// generated for an initiated cluster until the Mgors is deleted: the members
// run with that key and those passwords, and a new key would split the set
// (docs/design/security.md, "Secrets that cannot be lost").
const SecretFinalizer = "mgors.io/secret-protection"

// KeyfileLost is returned instead of generating a keyfile for a cluster that
// was initiated: its members run with the key of the Secret that is gone, and
// a new one would lock out every member that restarts. A person restores it.
type KeyfileLost struct {
	// Name is the keyfile Secret.
	Name string
}

// Error says what happened and what a person does.
func (e *KeyfileLost) Error() string {
	return fmt.Sprintf("keyfile Secret %s is gone although the replica set was initiated with its key: "+
		"the operator never generates a new key for an initiated cluster; re-create the Secret with the key the members run with "+
		"(key %q; a running member holds it in %s)", e.Name, v1alpha1.KeyfileSecretKey, KeyfilePath)
}

// SecretNames are the Secrets a cluster's members and the operator need:
// the keyfile, the admin's and the operator's credentials.
func SecretNames(m *v1alpha1.Mgors) []string {
	return []string{m.KeyfileSecretName(), m.AdminSecretName(), m.OperatorSecretName()}
}

// Generated reports whether s is a Secret the operator generated for m (its
// labels say so); a user's Secret named in spec.auth is never modified.
func Generated(s *corev1.Secret, m *v1alpha1.Mgors) bool {
	return s.Labels[LabelManagedBy] == ManagedBy && s.Labels[LabelCluster] == m.Name
}

// Protected reports whether s carries SecretFinalizer.
func Protected(s *corev1.Secret) bool { return slices.Contains(s.Finalizers, SecretFinalizer) }

// ProtectSecret adds SecretFinalizer to the Secret name of m when the
// operator generated it and it is not being deleted (the API server refuses
// a new finalizer then). A Secret gone or a user's is left alone. It
// reports whether it wrote.
func (a *Applier) ProtectSecret(ctx context.Context, m *v1alpha1.Mgors, name string) (bool, error) {
	return a.patchFinalizer(ctx, m, name, true)
}

// ReleaseSecret removes SecretFinalizer from the Secret name of m: the Mgors
// was deleted. It reports whether it wrote.
func (a *Applier) ReleaseSecret(ctx context.Context, m *v1alpha1.Mgors, name string) (bool, error) {
	return a.patchFinalizer(ctx, m, name, false)
}

func (a *Applier) patchFinalizer(ctx context.Context, m *v1alpha1.Mgors, name string, add bool) (bool, error) {
	c := a.Client.CoreV1().Secrets(m.Namespace)
	cur, err := bounded(ctx, a, func(ctx context.Context) (*corev1.Secret, error) {
		return c.Get(ctx, name, metav1.GetOptions{})
	})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var next []string
	switch {
	case add && (Protected(cur) || !Generated(cur, m) || cur.DeletionTimestamp != nil):
		return false, nil
	case add:
		next = append(slices.Clone(cur.Finalizers), SecretFinalizer)
	case !Protected(cur):
		return false, nil
	default:
		next = slices.DeleteFunc(slices.Clone(cur.Finalizers), func(f string) bool { return f == SecretFinalizer })
	}
	// The resourceVersion makes the patch fail on a concurrent change to
	// the list instead of overwriting someone else's finalizer.
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"finalizers": next, "resourceVersion": cur.ResourceVersion}})
	if err != nil {
		return false, err
	}
	_, err = bounded(ctx, a, func(ctx context.Context) (*corev1.Secret, error) {
		return c.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// KeyfileSecret holds the members' shared key under "keyfile".
func KeyfileSecret(m *v1alpha1.Mgors, key string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: secretMeta(m, m.KeyfileSecretName()),
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{v1alpha1.KeyfileSecretKey: []byte(key)},
	}
}

// AdminSecret holds the admin user's credentials under "username" and "password".
func AdminSecret(m *v1alpha1.Mgors, username, password string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: secretMeta(m, m.AdminSecretName()),
		Type:       corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			v1alpha1.AdminUsernameSecretKey: []byte(username),
			v1alpha1.AdminPasswordSecretKey: []byte(password),
		},
	}
}

// OperatorSecret is the Secret of the operator's own user: same keys as the
// admin Secret, same lifetime as the data it opens.
func OperatorSecret(m *v1alpha1.Mgors, username, password string) *corev1.Secret {
	s := AdminSecret(m, username, password)
	s.ObjectMeta = secretMeta(m, m.OperatorSecretName())
	return s
}

// secretMeta is the metadata of a generated Secret. Credentials live as long as
// the data they open: with spec.storage.reclaim Retain (the default) the
// volumes outlive the Mgors, so the Secrets do too (no owner reference), and a
// Mgors re-created on those volumes finds the keyfile and admin password its
// data was made with. With Delete they go with the Mgors, like the volumes.
func secretMeta(m *v1alpha1.Mgors, name string) metav1.ObjectMeta {
	meta := objectMeta(m, name, "")
	if m.Spec.Storage.Reclaim != v1alpha1.VolumeDelete {
		meta.OwnerReferences = nil
	}
	return meta
}

// keyfileBytes of randomness encode to 756 base64 characters, within the 6 to
// 1024 characters of the base64 set that mongod accepts in a keyfile.
const keyfileBytes = 567

// GenerateKeyfile returns a new random keyfile: 756 base64 characters.
func GenerateKeyfile() (string, error) {
	b := make([]byte, keyfileBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating a keyfile: %w", err)
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// GeneratePassword returns a new random password: 32 URL-safe characters
// (192 bits), safe in a mongodb:// URI without escaping.
func GeneratePassword() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating a password: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}
