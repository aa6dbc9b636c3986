package v1alpha1

// AuthSpec names the Secrets of the replica set's authentication. Authentication
// is always on: members authenticate each other with the keyfile and clients as
// users.
type AuthSpec struct {
	// KeyfileSecretRef names the Secret whose key "keyfile" holds the members'
	// shared key. Empty means "<name>-keyfile", generated when absent.
	// +optional
	KeyfileSecretRef *SecretReference `json:"keyfileSecretRef,omitempty"`

	// AdminCredentialsSecretRef names the Secret whose keys "username" and
	// "password" are the admin user's credentials. Empty means "<name>-admin",
	// generated when absent.
	// +optional
	AdminCredentialsSecretRef *SecretReference `json:"adminCredentialsSecretRef,omitempty"`
}
