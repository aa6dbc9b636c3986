package cluster

import (
	"fmt"
	"os"
)

// writeKubeconfig writes a kubeconfig for one client identity, referring to the
// certificate files in pki/ rather than embedding them, so that one CA rotation
// (a fresh DIR) never leaves stale copies behind.
func writeKubeconfig(path, server, caFile, certFile, keyFile string) error {
	content := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: localkube
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: localkube
  user:
    client-certificate: %s
    client-key: %s
contexts:
- name: localkube
  context:
    cluster: localkube
    user: localkube
current-context: localkube
`, server, caFile, certFile, keyFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
