package kubelet

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Env from Secrets, ConfigMaps and the downward API with $(VAR) expansion; Secret,
// ConfigMap, downwardAPI and projected (token, kube-root-ca.crt) volumes with their
// modes; /etc/hosts with the pod's FQDN.
func TestPodConfiguration(t *testing.T) {
	e := cluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := e.cs.CoreV1().Secrets(testNS).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "creds"}, Data: map[string][]byte{"password": []byte("s3cret")},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cs.CoreV1().ConfigMaps(testNS).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings"}, Data: map[string]string{"mode": "fast", "conf": "a=1\n"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	script := `echo "$GREETING|$PASSWORD|$MODE|$POD_NAME|$POD_IP|$NODE|$ESCAPED|$MISSING|$DB_SVC_SERVICE_PORT_MONGO"
stat -c %a /etc/creds/password; cat /etc/creds/password; echo
cat /etc/settings/renamed
cat /etc/podinfo/labels; echo
test -s /var/run/secrets/kubernetes.io/serviceaccount/token && echo token
grep -c CERTIFICATE /var/run/secrets/kubernetes.io/serviceaccount/ca.crt
cat /var/run/secrets/kubernetes.io/serviceaccount/namespace; echo
tail -n 1 /etc/hosts
hostname
sleep 3600`
	pod := shellPod("config", script)
	pod.Labels = map[string]string{"app": "db"}
	pod.Spec.Hostname, pod.Spec.Subdomain = "db-0", "db"
	pod.Spec.AutomountServiceAccountToken = ptr.To(true)
	c := &pod.Spec.Containers[0]
	c.Env = []corev1.EnvVar{
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
		{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "password"}}},
		{Name: "MODE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "mode"}}},
		{Name: "GREETING", Value: "hi $(POD_NAME)"},
		{Name: "ESCAPED", Value: "$$(POD_NAME)"},
		{Name: "MISSING", Value: "$(NOPE)"},
	}
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds", DefaultMode: ptr.To(int32(0o400))}}},
		{Name: "settings", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "settings"},
			Items:                []corev1.KeyToPath{{Key: "conf", Path: "renamed"}}}}},
		{Name: "podinfo", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
			Items: []corev1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
	}
	c.VolumeMounts = []corev1.VolumeMount{
		{Name: "creds", MountPath: "/etc/creds", ReadOnly: true},
		{Name: "settings", MountPath: "/etc/settings"},
		{Name: "podinfo", MountPath: "/etc/podinfo"},
	}
	p := e.create(t, pod)
	p = e.waitPod(t, p.Name, 60*time.Second, "Running", isRunningReady)
	// The ServiceAccount admission plugin added the projected token volume.
	var got string
	for i := 0; i < 50; i++ {
		if got = e.logs(t, p.Name, "main", false); strings.Count(got, "\n") >= 11 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	want := strings.Join([]string{
		"hi config|s3cret|fast|config|" + p.Status.PodIP + "|" + testNode + "|$(POD_NAME)|$(NOPE)|27017",
		"400", "s3cret", "a=1", `app="db"`, "token", "2", testNS,
		p.Status.PodIP + "\tdb-0.db.kt.svc.cluster.local\tdb-0", "db-0", "",
	}, "\n")
	if got != want {
		t.Fatalf("container saw\n%s\nwant\n%s", got, want)
	}
}

// A restarted kubelet re-adopts the pods it left running: same processes, same
// status, and the pod still answers.
func TestKubeletRestartReadoptsPods(t *testing.T) {
	e := cluster(t)
	p := e.create(t, servePod(t, "survivor", "0.0.0.0:8080"))
	p = e.waitPod(t, p.Name, 60*time.Second, "Running", isRunningReady)
	before, err := PodProcesses(e.cfg.Dir, testNS, p.Name)
	if err != nil || len(before) != 1 {
		t.Fatalf("PodProcesses: %v %v", before, err)
	}
	if err := e.stopKubelet(); err != nil {
		t.Fatal(err)
	}
	if err := e.startKubelet(); err != nil {
		t.Fatal(err)
	}
	// The process is checked below to be the one from before the restart.
	if got, err := httpGetOnceListening("http://" + p.Status.PodIP + ":8080/"); err != nil || got != "hello from survivor" {
		t.Fatalf("after restart: %q %v", got, err)
	}
	// The new kubelet writes a status again; nothing restarted.
	time.Sleep(2 * time.Second)
	p = e.waitPod(t, p.Name, 30*time.Second, "Running", isRunningReady)
	after, _ := PodProcesses(e.cfg.Dir, testNS, p.Name)
	if len(after) != 1 || after[0] != before[0] || p.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Fatalf("processes %v -> %v, restarts %d: want the same process kept", before, after, p.Status.ContainerStatuses[0].RestartCount)
	}
	// Deleting it through the new kubelet ends the adopted process.
	e.deleteAndWait(t, testNS, p.Name)
	if _, err := procStartTicks(before[0]); err == nil { // gone or a zombie
		t.Fatalf("adopted process %d survived its pod's deletion", before[0])
	}
}
