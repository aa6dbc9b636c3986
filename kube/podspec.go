package kube

import (
	"fmt"
	"maps"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// Paths and names inside a member pod. The keyfile is copied from its Secret
// into an in-memory emptyDir because mongod refuses a keyfile that group or
// others can read, and a Secret volume under fsGroup is always group-readable.
const (
	// DataVolume is the name of the volume claim template, so a member's claim is
	// "data-<name>-<ordinal>".
	DataVolume = "data"
	// DataPath is mongod's --dbpath.
	DataPath = "/data/db"
	// KeyfileDir holds the keyfile mongod reads (mode 0400, owned by mongod).
	KeyfileDir = "/var/run/mgors/keyfile"
	// KeyfilePath is mongod's --keyFile.
	KeyfilePath = KeyfileDir + "/" + v1alpha1.KeyfileSecretKey
	// TLSDir holds the PEM mongod reads: certificate and key in one file, as
	// mongod wants them, and the CA.
	TLSDir = "/var/run/mgors/tls"
	// MongodContainer is the name of the mongod container.
	MongodContainer = "mongod"
	// PortName is the name of mongod's port on pods and on the Service.
	PortName = "mongodb"
	// TemplateHashAnnotation on the pod template is a hash of everything that
	// needs a pod restart to take effect. The StatefulSet rolls nothing by itself
	// (OnDelete): the actor compares a pod's value with the template's and
	// restarts out-of-date members one at a time, primary last.
	TemplateHashAnnotation = "mgors.io/template-hash"
	// MongodUID is the mongod user and group of the official images.
	MongodUID = 999
)

const (
	keyfileSecretDir  = "/var/run/mgors/keyfile-secret"
	tlsSecretDir      = "/var/run/mgors/tls-secret"
	caSecretDir       = "/var/run/mgors/ca-secret"
	keyfileVolume     = "keyfile"
	keyfileSecretVol  = "keyfile-secret"
	tlsVolume         = "tls"
	tlsSecretVolume   = "tls-secret"
	caSecretVolume    = "ca-secret"
	tlsPEM            = TLSDir + "/server.pem"
	tlsCA             = TLSDir + "/ca.crt"
	terminationGrace  = 30
	startupFailures   = 180 // × 10 s: mongod may replay a long journal after a crash
	livenessFailures  = 6
	readinessFailures = 3
)

// MongodArgs is the mongod command line of the members and arbiters.
// Authentication is always on: --keyFile for members, --auth for clients.
func MongodArgs(m *v1alpha1.Mgors) []string {
	args := []string{
		"mongod",
		"--replSet", m.ReplSetName(),
		"--bind_ip_all",
		"--port", strconv.Itoa(v1alpha1.MongoPort),
		"--dbpath", DataPath,
		"--keyFile", KeyfilePath,
		"--auth",
		// The quiesce period after SIGTERM (MongoDB 5.0+): a primary steps down
		// and running operations finish, within the pod's 30 s grace period.
		"--setParameter", "shutdownTimeoutMillisForSignaledShutdown=20000",
	}
	if mb := m.Spec.Storage.OplogSizeMB; mb != nil {
		// Used only when mongod creates the oplog (a new or emptied volume).
		args = append(args, "--oplogSize", strconv.Itoa(int(*mb)))
	}
	if t := m.Spec.TLS; t != nil {
		mode := string(t.Mode)
		if mode == "" {
			mode = "requireTLS"
		}
		// Clients need the CA, not a certificate of their own (they log in with
		// SCRAM); one that presents a certificate is still verified.
		args = append(args, "--tlsMode", mode, "--tlsCertificateKeyFile", tlsPEM, "--tlsCAFile", tlsCA,
			"--tlsAllowConnectionsWithoutCertificates")
	}
	return append(args, configArgs(m)...) // spec.config (config.go)
}

// initScript copies the keyfile (and the TLS material) out of the Secret
// volumes into the emptyDirs with mode 0400, owned by the user running it
// (mongod's). It removes an old copy first: a 0400 file cannot be overwritten.
func initScript(m *v1alpha1.Mgors) string {
	var b strings.Builder
	b.WriteString("set -eu\numask 077\n")
	fmt.Fprintf(&b, "rm -f %[2]s\ncp %[1]s/%[3]s %[2]s\nchmod 0400 %[2]s\n",
		keyfileSecretDir, KeyfilePath, v1alpha1.KeyfileSecretKey)
	if t := m.Spec.TLS; t != nil {
		caSrc := tlsSecretDir + "/ca.crt"
		if t.CASecretRef != nil {
			caSrc = caSecretDir + "/ca.crt"
		}
		fmt.Fprintf(&b, "rm -f %[3]s %[4]s\ncat %[1]s/tls.crt %[1]s/tls.key > %[3]s\ncp %[2]s %[4]s\nchmod 0400 %[3]s %[4]s\n",
			tlsSecretDir, caSrc, tlsPEM, tlsCA)
	}
	return b.String()
}

func podSpec(m *v1alpha1.Mgors, component string, res corev1.ResourceRequirements) corev1.PodSpec {
	probe := func(period, failures int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString(PortName)}},
			PeriodSeconds:    period,
			TimeoutSeconds:   5,
			FailureThreshold: failures,
			SuccessThreshold: 1,
		}
	}
	secure := &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		RunAsNonRoot:             ptr.To(true),
	}
	mounts := []corev1.VolumeMount{
		{Name: DataVolume, MountPath: DataPath},
		{Name: keyfileVolume, MountPath: KeyfileDir, ReadOnly: true},
	}
	initMounts := []corev1.VolumeMount{
		{Name: keyfileSecretVol, MountPath: keyfileSecretDir, ReadOnly: true},
		{Name: keyfileVolume, MountPath: KeyfileDir},
	}
	volumes := []corev1.Volume{
		{Name: keyfileSecretVol, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName:  m.KeyfileSecretName(),
			Items:       []corev1.KeyToPath{{Key: v1alpha1.KeyfileSecretKey, Path: v1alpha1.KeyfileSecretKey}},
			DefaultMode: ptr.To[int32](0o400),
		}}},
		{Name: keyfileVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
	}
	if component == ComponentArbiter {
		volumes = append(volumes, corev1.Volume{Name: DataVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	if t := m.Spec.TLS; t != nil {
		mounts = append(mounts, corev1.VolumeMount{Name: tlsVolume, MountPath: TLSDir, ReadOnly: true})
		initMounts = append(initMounts,
			corev1.VolumeMount{Name: tlsSecretVolume, MountPath: tlsSecretDir, ReadOnly: true},
			corev1.VolumeMount{Name: tlsVolume, MountPath: TLSDir})
		volumes = append(volumes,
			corev1.Volume{Name: tlsSecretVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
				SecretName: CertificateSecretName(m), DefaultMode: ptr.To[int32](0o400)}}},
			corev1.Volume{Name: tlsVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}})
		if t.CASecretRef != nil {
			initMounts = append(initMounts, corev1.VolumeMount{Name: caSecretVolume, MountPath: caSecretDir, ReadOnly: true})
			volumes = append(volumes, corev1.Volume{Name: caSecretVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
				SecretName: t.CASecretRef.Name, DefaultMode: ptr.To[int32](0o400)}}})
		}
	}
	image := m.MemberImage()
	s := m.Spec.Scheduling
	return corev1.PodSpec{
		InitContainers: []corev1.Container{{
			Name:            "keyfile",
			Image:           image,
			Command:         []string{"sh", "-c", initScript(m)},
			Env:             append(certificateEnv(m), keyfileEnv(m)...),
			Resources:       *res.DeepCopy(), // no more than mongod asks: the pod's request stays mongod's
			VolumeMounts:    initMounts,
			SecurityContext: secure.DeepCopy(),
			// The last lines of output say why a copy failed (Diagnose reports them).
			TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		}},
		Containers: []corev1.Container{{
			Name:    MongodContainer,
			Image:   image,
			Command: MongodArgs(m),
			Ports:   []corev1.ContainerPort{{Name: PortName, ContainerPort: v1alpha1.MongoPort, Protocol: corev1.ProtocolTCP}},
			Env: []corev1.EnvVar{
				{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
			},
			Resources:       *res.DeepCopy(),
			VolumeMounts:    mounts,
			StartupProbe:    probe(10, startupFailures),
			LivenessProbe:   probe(10, livenessFailures),
			ReadinessProbe:  probe(10, readinessFailures),
			SecurityContext: secure,
			// mongod's last log lines say why it exited (a keyfile it refuses, a
			// bad option); Diagnose reports them for a CrashLoopBackOff.
			TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		}},
		Volumes:                       volumes,
		TerminationGracePeriodSeconds: ptr.To[int64](terminationGrace),
		// mongod needs no API access and no Service environment variables.
		AutomountServiceAccountToken: ptr.To(false),
		EnableServiceLinks:           ptr.To(false),
		SecurityContext: &corev1.PodSecurityContext{
			RunAsUser:           ptr.To[int64](MongodUID),
			RunAsGroup:          ptr.To[int64](MongodUID),
			FSGroup:             ptr.To[int64](MongodUID),
			RunAsNonRoot:        ptr.To(true),
			FSGroupChangePolicy: ptr.To(corev1.FSGroupChangeOnRootMismatch),
			SeccompProfile:      &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		NodeSelector:      maps.Clone(s.NodeSelector),
		Tolerations:       cloneTolerations(s.Tolerations),
		PriorityClassName: s.PriorityClassName,
		Affinity:          affinity(m),
	}
}

func cloneTolerations(t []corev1.Toleration) []corev1.Toleration {
	if t == nil {
		return nil
	}
	out := make([]corev1.Toleration, len(t))
	for i := range t {
		t[i].DeepCopyInto(&out[i])
	}
	return out
}

// affinity is the user's affinity plus a pod anti-affinity by host that
// spreads all mongod pods of the cluster (members and arbiters), unless
// antiAffinity is None or the user brought a pod anti-affinity of their own.
func affinity(m *v1alpha1.Mgors) *corev1.Affinity {
	s := m.Spec.Scheduling
	var a *corev1.Affinity
	if s.Affinity != nil {
		a = s.Affinity.DeepCopy()
	}
	if s.AntiAffinity == v1alpha1.AntiAffinityNone || (a != nil && a.PodAntiAffinity != nil) {
		return a
	}
	term := corev1.PodAffinityTerm{
		LabelSelector: &metav1.LabelSelector{MatchLabels: ClusterSelectorLabels(m)},
		TopologyKey:   corev1.LabelHostname,
	}
	if a == nil {
		a = &corev1.Affinity{}
	}
	if s.AntiAffinity == v1alpha1.AntiAffinityRequired {
		a.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{term}}
	} else { // Preferred, and empty as the schema defaults it to Preferred
		a.PodAntiAffinity = &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 100, PodAffinityTerm: term}}}
	}
	return a
}
