package store

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// ConfigFor takes the credential from the Secret's AWS keys, TLS from the
// spec (true when unset); a missing key is named, and no error or String
// ever holds the secret key.
func TestConfigFor(t *testing.T) {
	const secretKey = "c2VjcmV0LWtleS1vZi10aGUtc3RvcmU"
	store := v1alpha1.BackupStore{Endpoint: "s3.backup.svc:9000", Bucket: "backups", CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3-creds"}}
	secret := map[string][]byte{AccessKeyIDKey: []byte("mgors"), SecretAccessKeyKey: []byte(secretKey)}
	cfg, err := ConfigFor(store, secret, nil)
	if err != nil || cfg.AccessKey != "mgors" || cfg.SecretKey != secretKey || !cfg.TLS || cfg.URL() != "https://s3.backup.svc:9000" {
		t.Fatalf("ConfigFor = %+v, %v", cfg, err)
	}
	if s := cfg.String() + cfg.GoString(); strings.Contains(s, secretKey) {
		t.Errorf("the config's string holds the secret key: %s", s)
	}
	plain := false
	store.TLS = &plain
	if cfg, _ := ConfigFor(store, secret, nil); cfg.TLS || cfg.URL() != "http://s3.backup.svc:9000" {
		t.Errorf("tls: false gives %+v", cfg)
	}
	for _, tc := range []struct {
		secret map[string][]byte
		ca     *corev1.LocalObjectReference
		want   string
	}{
		{map[string][]byte{SecretAccessKeyKey: []byte(secretKey)}, nil, "Secret s3-creds has no AWS_ACCESS_KEY_ID"},
		{map[string][]byte{AccessKeyIDKey: []byte("mgors")}, nil, "Secret s3-creds has no AWS_SECRET_ACCESS_KEY"},
		{secret, &corev1.LocalObjectReference{Name: "s3-ca"}, "Secret s3-ca has no ca.crt"},
	} {
		store.CASecretRef = tc.ca
		_, err := ConfigFor(store, tc.secret, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), secretKey) {
			t.Errorf("ConfigFor: %v, want %q", err, tc.want)
		}
	}
}
