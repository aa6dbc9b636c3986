package kube

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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
	defaultDomain     = "cluster.local"
	terminationGrace  = 30
	startupFailures   = 180 // × 10 s: mongod may replay a long journal after a crash
	livenessFailures  = 6
	readinessFailures = 3
)

// Options are the operator-wide settings of the builders, and the one
// per-call choice of the actor (how many member pods).
type Options struct {
	// ClusterDomain is the cluster's DNS domain, in members' host names
	// (see Domain). Empty means cluster.local.
	ClusterDomain string
	// Replicas is the member StatefulSet's replicas; nil means spec.members.
	// The actor sets it, since it grows and shrinks the set one member at a time.
	Replicas *int32
}

// Domain is the cluster's DNS domain, cluster.local unless set: pass it to
// MemberHost, ArbiterHost and ConnectionString.
func (o Options) Domain() string {
	if o.ClusterDomain == "" {
		return defaultDomain
	}
	return o.ClusterDomain
}

// ArbiterName is the arbiters' StatefulSet, and the prefix of their pods.
func ArbiterName(m *v1alpha1.Mgors) string { return m.Name + "-arbiter" }

// ArbiterHost is the host:port an arbiter is known by in the replica-set
// config, from the same headless Service as the members.
func ArbiterHost(m *v1alpha1.Mgors, ordinal int32, clusterDomain string) string {
	if clusterDomain == "" {
		clusterDomain = defaultDomain
	}
	return fmt.Sprintf("%s-%d.%s.%s.svc.%s:%d", ArbiterName(m), ordinal, m.ServiceName(), m.Namespace, clusterDomain, v1alpha1.MongoPort)
}

// PVCName is the claim of a member's data volume, as the StatefulSet names it.
func PVCName(m *v1alpha1.Mgors, ordinal int32) string {
	return fmt.Sprintf("%s-%s", DataVolume, m.PodName(ordinal))
}

// HeadlessService gives every member and arbiter a stable DNS name
// (<pod>.<service>.<namespace>.svc.<domain>). It publishes pods that are not
// ready, since members must find each other to become ready at all, and it
// selects arbiters too, as they are hosts of the config like the members.
func HeadlessService(m *v1alpha1.Mgors) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: objectMeta(m, m.ServiceName(), ""),
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			PublishNotReadyAddresses: true,
			Selector:                 ClusterSelectorLabels(m),
			Ports: []corev1.ServicePort{{
				Name:       PortName,
				Port:       v1alpha1.MongoPort,
				TargetPort: intstr.FromString(PortName),
				Protocol:   corev1.ProtocolTCP,
			}},
		},
	}
}

// StatefulSet runs the data-bearing members.
//
//   - Parallel pod management: under OrderedReady a member that never becomes
//     ready (lagging, or waiting for peers) blocks every higher ordinal, and the
//     set can deadlock without a quorum (MCO #909). The actor orders changes.
//   - OnDelete updates: the StatefulSet never restarts a member by itself; the
//     actor rolls them, secondaries first and the stepped-down primary last.
//   - Volume claims are retained on delete and on scale-down whatever
//     spec.storage.reclaim says: the operator deletes volumes itself, and only
//     when reclaim is Delete, after the member left the config.
func StatefulSet(m *v1alpha1.Mgors, o Options) *appsv1.StatefulSet {
	replicas := members(m)
	if o.Replicas != nil {
		replicas = *o.Replicas
	}
	claim := corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: DataVolume, Labels: Labels(m, ComponentMember)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: cloneString(m.Spec.Storage.StorageClassName),
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: storageSize(m)},
			},
		},
	}
	return statefulSet(m, m.Name, ComponentMember, replicas, m.Spec.Resources,
		[]corev1.PersistentVolumeClaim{claim})
}

// ArbiterStatefulSet runs the arbiters (spec.arbiters, 0 or 1): a vote and no
// data, so no volume claim; its dbpath is an emptyDir. It is a StatefulSet of
// its own so that scaling members never renumbers the arbiter.
//
// Its resources are spec.arbiterResources; unset, a small default, as an
// arbiter holds no data.
func ArbiterStatefulSet(m *v1alpha1.Mgors) *appsv1.StatefulSet {
	res := m.Spec.ArbiterResources
	if len(res.Requests) == 0 && len(res.Limits) == 0 {
		res = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("50m"),
				corev1.ResourceMemory: resource.MustParse("256Mi"),
			},
			Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
		}
	}
	return statefulSet(m, ArbiterName(m), ComponentArbiter, m.Spec.Arbiters, res, nil)
}

// members is spec.members, defaulted as the API server defaults it.
func members(m *v1alpha1.Mgors) int32 {
	if m.Spec.Members == 0 {
		return v1alpha1.DefaultMembers
	}
	return m.Spec.Members
}

func cloneString(p *string) *string {
	if p == nil {
		return nil
	}
	return ptr.To(*p)
}

func storageSize(m *v1alpha1.Mgors) resource.Quantity { return m.StorageSize() }

// retention keeps volumes unless the user asked for them to go with the Mgors
// (spec.storage.reclaim: Delete, invariant 4). Then the StatefulSet owns its
// claims, and garbage collection removes them after the StatefulSet, which
// goes with the Mgors: no finalizer is needed. Scaling down always keeps the
// volume of the member that left.
func retention(m *v1alpha1.Mgors) *appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy {
	p := &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
		WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
	}
	if m.Spec.Storage.Reclaim == v1alpha1.VolumeDelete {
		p.WhenDeleted = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	}
	return p
}

func statefulSet(m *v1alpha1.Mgors, name, component string, replicas int32,
	res corev1.ResourceRequirements, claims []corev1.PersistentVolumeClaim) *appsv1.StatefulSet {
	pod := podSpec(m, component, res)
	annotations := maps.Clone(m.Spec.PodAnnotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[TemplateHashAnnotation] = PodSpecHash(restartSpec(&pod)) // what needs a restart (config.go)
	podLabels := maps.Clone(m.Spec.PodLabels)
	if podLabels == nil {
		podLabels = map[string]string{}
	}
	maps.Copy(podLabels, Labels(m, component)) // ours win: the selector depends on them
	return &appsv1.StatefulSet{
		ObjectMeta: objectMeta(m, name, component),
		Spec: appsv1.StatefulSetSpec{
			Replicas:                             ptr.To(replicas),
			Selector:                             &metav1.LabelSelector{MatchLabels: SelectorLabels(m, component)},
			ServiceName:                          m.ServiceName(),
			PodManagementPolicy:                  appsv1.ParallelPodManagement,
			UpdateStrategy:                       appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
			PersistentVolumeClaimRetentionPolicy: retention(m),
			VolumeClaimTemplates:                 claims,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: annotations},
				Spec:       pod,
			},
		},
	}
}

// PodSpecHash is a short hash of a pod spec: pods whose TemplateHashAnnotation
// differs from their StatefulSet template's run an old spec.
func PodSpecHash(spec *corev1.PodSpec) string {
	b, err := json.Marshal(spec) // struct fields in order, map keys sorted: stable
	if err != nil {
		panic(fmt.Sprintf("encoding a pod spec: %v", err)) // cannot happen for a PodSpec
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// PodOutdated reports whether a pod runs an older pod spec than its
// StatefulSet's template, so the actor knows which members still need a
// restart. A pod without the annotation predates it and is outdated too.
func PodOutdated(pod *corev1.Pod, set *appsv1.StatefulSet) bool {
	return pod.Annotations[TemplateHashAnnotation] != set.Spec.Template.Annotations[TemplateHashAnnotation]
}

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

// MinAvailable is the budget that keeps a voluntary disruption (a node drain,
// an eviction) from taking the voting majority: pods is the number of mongod
// pods (members and arbiters) and voters how many of them vote.
//
// It is pods − (voters − majority): even when each evicted pod is a voter, a
// majority of voters stays, so the set keeps its primary. When every pod votes
// this is the majority itself (2 of 3, 3 of 5). A single voter has no majority
// to protect: its budget allows the disruption rather than block every node
// drain forever.
func MinAvailable(pods, voters int32) int32 {
	if voters <= 1 {
		return 0
	}
	return max(pods-(voters-(voters/2+1)), 0)
}

// PodDisruptionBudget selects every mongod pod of the cluster (members and
// arbiters) and keeps minAvailable of them (MinAvailable; the actor chooses
// the numbers, as the set is and as it is becoming). minAvailable rather than
// maxUnavailable: it counts pods, so it needs no scale from two StatefulSets,
// and a member that is already down counts against it.
func PodDisruptionBudget(m *v1alpha1.Mgors, minAvailable int32) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: objectMeta(m, m.Name, ""),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(minAvailable)),
			Selector:     &metav1.LabelSelector{MatchLabels: ClusterSelectorLabels(m)},
			// An unready member is no vote to protect; evicting it must not block a drain.
			UnhealthyPodEvictionPolicy: ptr.To(policyv1.AlwaysAllow),
		},
	}
}

// KeyfileSecret holds the members' shared key under "keyfile".
func KeyfileSecret(m *v1alpha1.Mgors, key string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: secretMeta(m, m.KeyfileSecretName()),
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{v1alpha1.KeyfileSecretKey: []byte(key)},
	}
}

// AdminSecret holds the admin user's credentials under "username" and "password".
func AdminSecret(m *v1alpha1.Mgors, username, password string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: secretMeta(m, m.AdminSecretName()),
		Type:       corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			v1alpha1.AdminUsernameSecretKey: []byte(username),
			v1alpha1.AdminPasswordSecretKey: []byte(password),
		},
	}
}

// OperatorSecret is the Secret of the operator's own user: same keys as the
// admin Secret, same lifetime as the data it opens.
func OperatorSecret(m *v1alpha1.Mgors, username, password string) *corev1.Secret {
	s := AdminSecret(m, username, password)
	s.ObjectMeta = secretMeta(m, m.OperatorSecretName())
	return s
}

// secretMeta is the metadata of a generated Secret. Credentials live as long as
// the data they open: with spec.storage.reclaim Retain (the default) the
// volumes outlive the Mgors, so the Secrets do too (no owner reference), and a
// Mgors re-created on those volumes finds the keyfile and admin password its
// data was made with. With Delete they go with the Mgors, like the volumes.
func secretMeta(m *v1alpha1.Mgors, name string) metav1.ObjectMeta {
	meta := objectMeta(m, name, "")
	if m.Spec.Storage.Reclaim != v1alpha1.VolumeDelete {
		meta.OwnerReferences = nil
	}
	return meta
}

// keyfileBytes of randomness encode to 756 base64 characters, within the 6 to
// 1024 characters of the base64 set that mongod accepts in a keyfile.
const keyfileBytes = 567

// GenerateKeyfile returns a new random keyfile: 756 base64 characters.
func GenerateKeyfile() (string, error) {
	b := make([]byte, keyfileBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating a keyfile: %w", err)
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// GeneratePassword returns a new random password: 32 URL-safe characters
// (192 bits), safe in a mongodb:// URI without escaping.
func GeneratePassword() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating a password: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// ConnectionString is a mongodb:// URI of the data-bearing members, without
// credentials (it goes into status).
func ConnectionString(m *v1alpha1.Mgors, clusterDomain string) string {
	if clusterDomain == "" {
		clusterDomain = defaultDomain
	}
	n := members(m)
	hosts := make([]string, n)
	for i := range n {
		hosts[i] = m.MemberHost(i, clusterDomain)
	}
	uri := "mongodb://" + strings.Join(hosts, ",") + "/?replicaSet=" + m.ReplSetName() + "&authSource=admin"
	if m.Spec.TLS != nil {
		uri += "&tls=true"
	}
	return uri
}
