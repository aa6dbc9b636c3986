package kubelet

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// The mongo image runs the locally built mongod-sim as user 999 through the image's
// entrypoint, and its mongosh talks to it over the pod's own localhost.
func TestMongoImage(t *testing.T) {
	e := cluster(t)
	if _, err := os.Stat(filepath.Join(e.cfg.BinDir, "mongod-sim")); err != nil {
		t.Skip("no mongod-sim in LOCALKUBE_BIN_DIR (make kubelet-test builds one)")
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "mongo-0", Namespace: testNS},
		Spec: corev1.PodSpec{
			NodeName: testNode, TerminationGracePeriodSeconds: ptr.To(int64(5)),
			SecurityContext: &corev1.PodSecurityContext{FSGroup: ptr.To(int64(999))},
			Volumes:         []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			Containers: []corev1.Container{{
				Name: "mongod", Image: "mongo:7.0",
				Args:           []string{"--bind_ip_all", "--port", "27017", "--dbpath", "/data/db"},
				VolumeMounts:   []corev1.VolumeMount{{Name: "data", MountPath: "/data/db"}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt(27017)}}, PeriodSeconds: 1},
			}},
		},
	}
	p := e.create(t, pod)
	p = e.waitPod(t, p.Name, 60*time.Second, "Ready", isRunningReady)
	if id := p.Status.ContainerStatuses[0].ImageID; !strings.HasPrefix(id, "localkube://mongo@") {
		t.Fatalf("imageID %q", id)
	}
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(p.Status.PodIP, "27017"), 5*time.Second)
	if err != nil {
		t.Fatalf("mongod at the pod IP: %v", err)
	}
	_ = conn.Close()
	out, err := e.exec(t, p.Name, "mongod", []string{"/bin/sh", "-c", "id -u; stat -c %u /data/db/mongod.lock"})
	if err != nil || out != "999\n999\n" {
		t.Fatalf("user and files: %q %v", out, err)
	}
	// mongo:7.0 holds the 7.0 line's release, as the image's MONGO_VERSION says.
	out, err = e.exec(t, p.Name, "mongod", []string{"/bin/sh", "-c", "echo $MONGO_MAJOR $MONGO_VERSION; mongod --version | head -1"})
	if err != nil || out != "7.0 7.0.14\ndb version v7.0.14\n" {
		t.Fatalf("image version: %q %v", out, err)
	}
	if e.cfg.MongoshDir == "" {
		t.Log("MONGOSH_DIR unset: mongosh not checked")
		return
	}
	out, err = e.exec(t, p.Name, "mongod", []string{"mongosh", "--quiet", "--eval", "db.runCommand({ping: 1}).ok"})
	if err != nil || strings.TrimSpace(out) != "1" {
		t.Fatalf("mongosh ping: %q %v", out, err)
	}
}
