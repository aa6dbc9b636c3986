package store

import (
	"fmt"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// The keys of a MgorsBackup's credentials Secret (spec.store.credentialsSecretRef),
// as the AWS tools name them.
const (
	AccessKeyIDKey     = "AWS_ACCESS_KEY_ID"
	SecretAccessKeyKey = "AWS_SECRET_ACCESS_KEY"
	// CAKey is the key of spec.store.caSecretRef's Secret.
	CAKey = "ca.crt"
)

// ConfigFor is the client configuration of a MgorsBackup's store: secret is
// the data of its credentials Secret, ca the ca.crt of its CA Secret (nil
// without one). A missing key is an error naming the Secret and the key,
// never a value.
func ConfigFor(store v1alpha1.BackupStore, secret map[string][]byte, ca []byte) (Config, error) {
	cfg := Config{Endpoint: store.Endpoint, Bucket: store.Bucket, Region: store.Region, TLS: store.TLS == nil || *store.TLS, CA: ca}
	for _, k := range []struct {
		key string
		dst *string
	}{{AccessKeyIDKey, &cfg.AccessKey}, {SecretAccessKeyKey, &cfg.SecretKey}} {
		v := secret[k.key]
		if len(v) == 0 {
			return Config{}, fmt.Errorf("store: Secret %s has no %s (spec.store.credentialsSecretRef)", store.CredentialsSecretRef.Name, k.key)
		}
		*k.dst = string(v)
	}
	if store.CASecretRef != nil && len(ca) == 0 {
		return Config{}, fmt.Errorf("store: Secret %s has no %s (spec.store.caSecretRef)", store.CASecretRef.Name, CAKey)
	}
	return cfg, nil
}
