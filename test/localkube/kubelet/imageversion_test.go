package kubelet

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// A tag names the release the mongo image holds, and a release outside the table
// fails to pull.
func TestImageVersion(t *testing.T) {
	table, err := loadImageTable("")
	if err != nil {
		t.Fatal(err)
	}
	versions := table.Lookup("mongo").Versions
	for ref, want := range map[string]string{
		"mongo:8.0": "8.0.4", "mongo:7.0.14": "7.0.14", "mongo:6.0": "6.0.19", "mongo": "8.0.4", "mongo:latest": "8.0.4",
		"mongo:7": "7.0.14", "mongo:7.0-jammy": "7.0.14", "mongodb/mongodb-community-server:6.0.5-ubi8": "6.0.5",
		"mongo@sha256:0123": "8.0.4",
	} {
		got, err := imageVersion(ref, versions)
		if err != nil || got != want {
			t.Errorf("imageVersion(%q) = %q, %v; want %q", ref, got, err, want)
		}
	}
	for _, ref := range []string{"mongo:5.0", "mongo:9.0.1", "mongo:jammy", "mongo:4"} {
		_, err := imageVersion(ref, versions)
		if pe := (*pullError)(nil); !errors.As(err, &pe) || !strings.Contains(err.Error(), "not found") {
			t.Errorf("imageVersion(%q): %v, want a pull error", ref, err)
		}
	}
	env := versionEnv("7.0.14")
	if len(env) != 2 || env[0] != (envVar{"MONGO_MAJOR", "7.0"}) || env[1] != (envVar{"MONGO_VERSION", "7.0.14"}) {
		t.Errorf("versionEnv %v", env)
	}
}

// A mongo image of a release the table does not list cannot be pulled.
func TestImagePullOfUnknownRelease(t *testing.T) {
	e := cluster(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "mongo-old", Namespace: testNS},
		Spec: corev1.PodSpec{NodeName: testNode, TerminationGracePeriodSeconds: ptr.To(int64(2)),
			Containers: []corev1.Container{{Name: "mongod", Image: "mongo:5.0"}}},
	}
	p := e.create(t, pod)
	e.waitPod(t, p.Name, 30*time.Second, "ErrImagePull or ImagePullBackOff", func(p *corev1.Pod) bool {
		if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].State.Waiting == nil {
			return false
		}
		r := p.Status.ContainerStatuses[0].State.Waiting.Reason
		return r == "ErrImagePull" || r == "ImagePullBackOff"
	})
}
