package e2e

import (
	"bufio"
	"context"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// kubectlBinary finds kubectl: $KUBECTL, the control-plane build's, or PATH.
func kubectlBinary() string {
	if k := os.Getenv("KUBECTL"); k != "" {
		return k
	}
	if wd, err := os.Getwd(); err == nil {
		p := filepath.Join(wd, "..", "..", "..", "..", ".cache", "localkube", "bin", "kubectl")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := osexec.LookPath("kubectl"); err == nil {
		return p
	}
	return ""
}

// writeKubeconfig turns the harness's client config into a file for kubectl.
func writeKubeconfig(t *testing.T, c *rest.Config) string {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthority: c.CAFile, CertificateAuthorityData: c.CAData, InsecureSkipTLSVerify: c.Insecure}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{ClientCertificate: c.CertFile, ClientCertificateData: c.CertData,
		ClientKey: c.KeyFile, ClientKeyData: c.KeyData, Token: c.BearerToken}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "c"
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// kubectlChecks runs the kubectl commands people use against a pod of the
// StatefulSet: logs, exec (with stdin), port-forward.
func kubectlChecks(t *testing.T, kubeconfig, ns string) {
	kubectl := kubectlBinary()
	if kubectl == "" {
		t.Log("no kubectl: kubectl checks skipped")
		return
	}
	run := func(stdin string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := osexec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", kubeconfig, "-n", ns}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if out := run("", "logs", "web-0", "--tail=1"); out != "serving on :8080\n" {
		t.Fatalf("kubectl logs: %q", out)
	}
	if out := run("", "exec", "web-0", "--", "/bin/sh", "-c", "echo $HOSTNAME"); out != "web-0\n" {
		t.Fatalf("kubectl exec: %q", out)
	}
	if out := run("from stdin\n", "exec", "-i", "web-0", "--", "cat"); out != "from stdin\n" {
		t.Fatalf("kubectl exec -i: %q", out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pf := osexec.CommandContext(ctx, kubectl, "--kubeconfig", kubeconfig, "-n", ns, "port-forward", "pod/web-2", ":8080")
	stdout, err := pf.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	pf.Stderr = io.Discard
	if err := pf.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pf.Process.Kill(); _ = pf.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	m := regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> 8080`).FindStringSubmatch(line)
	if err != nil || m == nil {
		t.Fatalf("kubectl port-forward said %q (%v)", line, err)
	}
	var got string
	for i := 0; i < 20; i++ {
		if got, err = get("http://127.0.0.1:" + m[1] + "/"); err == nil {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if got != "hello from web-2" {
		t.Fatalf("through kubectl port-forward: %q %v", got, err)
	}
}
