package kubelet

import (
	"bytes"
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
)

// exec runs cmd in a container through the API server, as `kubectl exec` does;
// env entries (NAME=VALUE) are set with env(1).
func (e *sharedEnv) exec(t *testing.T, pod, container string, cmd []string, env ...string) (string, error) {
	t.Helper()
	if len(env) > 0 {
		cmd = append(append([]string{"/usr/bin/env"}, env...), cmd...)
	}
	req := e.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(testNS).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: cmd, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(e.rest, "POST", req.URL())
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &errb})
	return out.String() + errb.String(), err
}
