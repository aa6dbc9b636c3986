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

// MissingSecretKey is returned when an existing Secret lacks a key the members
// need (a user-made Secret named in spec.auth). The operator does not add it.
type MissingSecretKey struct {
	// Name is the Secret, Key the missing key.
	Name, Key string
}

// Error names the Secret and the key.
func (e *MissingSecretKey) Error() string {
	return fmt.Sprintf("secret %s has no key %q", e.Name, e.Key)
}

// EnsureSecret creates the Secret when it does not exist. An existing Secret
// is never modified nor regenerated, ours or a user's: members and clients
// already use what it holds. It must hold every key desired has, or the
// result is a MissingSecretKey.
func (a *Applier) EnsureSecret(ctx context.Context, desired *corev1.Secret) (bool, error) {
	return a.ensureSecret(ctx, desired.Namespace, desired.Name, func() (*corev1.Secret, error) { return desired, nil }, keys(desired))
}

func keys(s *corev1.Secret) []string {
	var out []string
	for k := range s.Data {
		out = append(out, k)
	}
	for k := range s.StringData {
		out = append(out, k)
	}
	return out
}

// ensureSecret reads the Secret first and builds the desired one (which may
// generate key material) only when it is missing.
func (a *Applier) ensureSecret(ctx context.Context, namespace, name string, build func() (*corev1.Secret, error), want []string) (bool, error) {
	c := a.Client.CoreV1().Secrets(namespace)
	check := func(s *corev1.Secret) error {
		for _, k := range want {
			if _, ok := s.Data[k]; !ok {
				return &MissingSecretKey{Name: name, Key: k}
			}
		}
		return nil
	}
	cctx, cancel := a.call(ctx)
	defer cancel()
	cur, err := c.Get(cctx, name, metav1.GetOptions{})
	if err == nil {
		return false, check(cur)
	}
	if !apierrors.IsNotFound(err) {
		return false, err
	}
	desired, err := build()
	if err != nil {
		return false, err
	}
	cctx2, cancel2 := a.call(ctx)
	defer cancel2()
	if _, err := c.Create(cctx2, desired, metav1.CreateOptions{}); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return false, err
		}
		// Someone made it between our read and our create: theirs stands.
		cctx3, cancel3 := a.call(ctx)
		defer cancel3()
		cur, err := c.Get(cctx3, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return false, check(cur)
	}
	return true, nil
}

// EnsureKeyfile creates the keyfile Secret of m with a fresh key when it does
// not exist; the key is generated only then, so it never lingers in memory
// for nothing.
func (a *Applier) EnsureKeyfile(ctx context.Context, m *v1alpha1.Mgors) (bool, error) {
	return a.ensureSecret(ctx, m.Namespace, m.KeyfileSecretName(), func() (*corev1.Secret, error) {
		key, err := GenerateKeyfile()
		if err != nil {
			return nil, err
		}
		return KeyfileSecret(m, key), nil
	}, []string{v1alpha1.KeyfileSecretKey})
}

// EnsureAdminCredentials creates the admin Secret of m with the given user
// name and a fresh password when it does not exist.
func (a *Applier) EnsureAdminCredentials(ctx context.Context, m *v1alpha1.Mgors, username string) (bool, error) {
	return a.ensureSecret(ctx, m.Namespace, m.AdminSecretName(), func() (*corev1.Secret, error) {
		pw, err := GeneratePassword()
		if err != nil {
			return nil, err
		}
		return AdminSecret(m, username, pw), nil
	}, []string{v1alpha1.AdminUsernameSecretKey, v1alpha1.AdminPasswordSecretKey})
}

// EnsureOperatorCredentials creates the Secret of the operator's own user
// with the given user name and a fresh password when it does not exist.
func (a *Applier) EnsureOperatorCredentials(ctx context.Context, m *v1alpha1.Mgors, username string) (bool, error) {
	return a.ensureSecret(ctx, m.Namespace, m.OperatorSecretName(), func() (*corev1.Secret, error) {
		pw, err := GeneratePassword()
		if err != nil {
			return nil, err
		}
		return OperatorSecret(m, username, pw), nil
	}, []string{v1alpha1.AdminUsernameSecretKey, v1alpha1.AdminPasswordSecretKey})
}

// Secret reads a Secret, for the actor that needs the admin credentials or the
// keyfile to talk to the members. Never log what it returns.
func (a *Applier) Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	cctx, cancel := a.call(ctx)
	defer cancel()
	return a.Client.CoreV1().Secrets(namespace).Get(cctx, name, metav1.GetOptions{})
}
