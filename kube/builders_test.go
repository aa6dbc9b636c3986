package kube

import (
	"encoding/base64"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// sample is a defaulted Mgors as the API server would hand it over.
func sample(mut ...func(*v1alpha1.Mgors)) *v1alpha1.Mgors {
	m := &v1alpha1.Mgors{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", UID: "uid-1", Generation: 1}}
	m.Default()
	for _, f := range mut {
		f(m)
	}
	return m
}

func TestLabelsAndSelector(t *testing.T) {
	m := sample()
	l := Labels(m, ComponentMember)
	want := map[string]string{
		"app.kubernetes.io/name": "mongodb", "app.kubernetes.io/instance": "db",
		"app.kubernetes.io/managed-by": "mgors", "app.kubernetes.io/component": "member",
		"mgors.io/cluster": "db",
	}
	if !equalMaps(l, want) {
		t.Errorf("Labels = %v, want %v", l, want)
	}
	if _, ok := Labels(m, "")[LabelComponent]; ok {
		t.Error("Labels without a component carry a component label")
	}
	sel, err := labels.Parse(PodSelector(m))
	if err != nil {
		t.Fatalf("PodSelector %q does not parse: %v", PodSelector(m), err)
	}
	if !sel.Matches(labels.Set(Labels(m, ComponentMember))) {
		t.Error("PodSelector does not match member pods")
	}
	if sel.Matches(labels.Set(Labels(m, ComponentArbiter))) {
		t.Error("PodSelector matches arbiter pods: the scale subresource counts members only")
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestOwnedBy(t *testing.T) {
	m := sample()
	other := sample(func(m *v1alpha1.Mgors) { m.UID = "uid-2" })
	owned := HeadlessService(m)
	notController := HeadlessService(m)
	notController.OwnerReferences[0].Controller = ptr.To(false)
	newVersion := HeadlessService(m)
	newVersion.OwnerReferences[0].APIVersion = "mgors.io/v1"
	foreign := HeadlessService(m)
	foreign.OwnerReferences[0].APIVersion = "example.com/v1alpha1"
	for _, tc := range []struct {
		name string
		obj  metav1.Object
		m    *v1alpha1.Mgors
		want bool
	}{
		{"owned", owned, m, true},
		{"another incarnation", owned, other, false},
		{"not controller", notController, m, false},
		{"newer API version", newVersion, m, true},
		{"other group", foreign, m, false},
		{"no owner", &corev1.Secret{}, m, false},
	} {
		if got := OwnedBy(tc.obj, tc.m); got != tc.want {
			t.Errorf("%s: OwnedBy = %v, want %v", tc.name, got, tc.want)
		}
	}
	ref := OwnerReference(m)
	if !*ref.Controller || !*ref.BlockOwnerDeletion || ref.UID != m.UID || ref.APIVersion != "mgors.io/v1alpha1" || ref.Kind != "Mgors" {
		t.Errorf("OwnerReference = %+v", ref)
	}
}

func TestHeadlessService(t *testing.T) {
	m := sample()
	s := HeadlessService(m)
	if s.Name != "db-svc" || s.Namespace != "ns" {
		t.Errorf("name = %s/%s", s.Namespace, s.Name)
	}
	if s.Spec.ClusterIP != corev1.ClusterIPNone || !s.Spec.PublishNotReadyAddresses {
		t.Errorf("not headless with unready addresses: %+v", s.Spec)
	}
	if len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Port != 27017 || s.Spec.Ports[0].Name != "mongodb" {
		t.Errorf("ports = %+v", s.Spec.Ports)
	}
	for _, c := range []string{ComponentMember, ComponentArbiter} {
		if !labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(Labels(m, c))) {
			t.Errorf("service does not select %s pods", c)
		}
	}
	other := sample(func(m *v1alpha1.Mgors) { m.Name = "other" })
	if labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(Labels(other, ComponentMember))) {
		t.Error("service selects another cluster's pods")
	}
}

func container(t *testing.T, p corev1.PodSpec, name string) corev1.Container {
	t.Helper()
	for _, c := range append(slices.Clone(p.InitContainers), p.Containers...) {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no container %q", name)
	return corev1.Container{}
}

func TestStatefulSet(t *testing.T) {
	m := sample(func(m *v1alpha1.Mgors) {
		m.Spec.ReplicaSetName = "rs0"
		m.Spec.Storage.StorageClassName = ptr.To("fast")
		m.Spec.Storage.Size = ptr.To(resource.MustParse("20Gi"))
		m.Spec.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}
		m.Spec.PodLabels = map[string]string{"team": "a", LabelCluster: "spoofed"}
		m.Spec.PodAnnotations = map[string]string{"note": "x"}
		m.Spec.Scheduling.NodeSelector = map[string]string{"disk": "ssd"}
		m.Spec.Scheduling.PriorityClassName = "db"
		m.Spec.Scheduling.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
	})
	s := StatefulSet(m, Options{})
	sp := s.Spec
	if s.Name != "db" || *sp.Replicas != 3 || sp.ServiceName != "db-svc" {
		t.Errorf("name %s replicas %d service %s", s.Name, *sp.Replicas, sp.ServiceName)
	}
	if sp.PodManagementPolicy != appsv1.ParallelPodManagement || sp.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType {
		t.Errorf("policy %s, update %s", sp.PodManagementPolicy, sp.UpdateStrategy.Type)
	}
	if r := sp.PersistentVolumeClaimRetentionPolicy; r.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType || r.WhenScaled != appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
		t.Errorf("retention %+v", r)
	}
	if len(sp.VolumeClaimTemplates) != 1 {
		t.Fatalf("claims %d", len(sp.VolumeClaimTemplates))
	}
	c := sp.VolumeClaimTemplates[0]
	if c.Name != "data" || *c.Spec.StorageClassName != "fast" || c.Spec.Resources.Requests.Storage().String() != "20Gi" {
		t.Errorf("claim %+v", c)
	}
	sel, _ := metav1.LabelSelectorAsSelector(sp.Selector)
	tmpl := sp.Template
	if !sel.Matches(labels.Set(tmpl.Labels)) {
		t.Error("selector does not match the template")
	}
	if tmpl.Labels["team"] != "a" || tmpl.Labels[LabelCluster] != "db" {
		t.Errorf("template labels %v: user labels must be added and never override ours", tmpl.Labels)
	}
	if tmpl.Annotations["note"] != "x" || tmpl.Annotations[TemplateHashAnnotation] == "" {
		t.Errorf("template annotations %v", tmpl.Annotations)
	}
	p := tmpl.Spec
	mongod := container(t, p, MongodContainer)
	want := "mongod --replSet rs0 --bind_ip_all --port 27017 --dbpath /data/db --keyFile /var/run/mgors/keyfile/keyfile --auth"
	if got := strings.Join(mongod.Command, " "); !strings.HasPrefix(got, want) {
		t.Errorf("command %q, want prefix %q", got, want)
	}
	if mongod.Image != "mongo:7.0.14" || mongod.Resources.Requests.Memory().String() != "1Gi" {
		t.Errorf("image %s resources %v", mongod.Image, mongod.Resources)
	}
	for _, pr := range []*corev1.Probe{mongod.ReadinessProbe, mongod.LivenessProbe, mongod.StartupProbe} {
		if pr == nil || pr.TCPSocket == nil || pr.TCPSocket.Port.StrVal != PortName {
			t.Errorf("probe %+v is not a TCP probe on mongodb", pr)
		}
	}
	if mongod.StartupProbe.FailureThreshold*mongod.StartupProbe.PeriodSeconds < 600 {
		t.Error("startup probe gives mongod less than 10 minutes")
	}
	env := map[string]string{}
	for _, e := range mongod.Env {
		env[e.Name] = e.ValueFrom.FieldRef.FieldPath
	}
	if env["POD_NAME"] != "metadata.name" || env["POD_NAMESPACE"] != "metadata.namespace" {
		t.Errorf("env %v", env)
	}
	sc := mongod.SecurityContext
	if *sc.AllowPrivilegeEscalation || sc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("container security %+v", sc)
	}
	ps := p.SecurityContext
	if *ps.RunAsUser != 999 || *ps.RunAsGroup != 999 || *ps.FSGroup != 999 || !*ps.RunAsNonRoot || ps.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security %+v", ps)
	}
	if *p.TerminationGracePeriodSeconds != 30 || p.PriorityClassName != "db" || p.NodeSelector["disk"] != "ssd" || len(p.Tolerations) != 1 {
		t.Errorf("pod spec %+v", p)
	}
	init := container(t, p, "keyfile")
	if init.Image != mongod.Image || init.Command[0] != "sh" || !strings.Contains(init.Command[2], "chmod 0400 "+KeyfilePath) {
		t.Errorf("init container %+v", init)
	}
	var keyfileEmptyDir, secretVol bool
	for _, v := range p.Volumes {
		if v.Name == keyfileVolume && v.EmptyDir != nil {
			keyfileEmptyDir = true
		}
		if v.Secret != nil && v.Secret.SecretName == "db-keyfile" {
			secretVol = true
		}
	}
	if !keyfileEmptyDir || !secretVol {
		t.Errorf("volumes %+v", p.Volumes)
	}

	if got := *StatefulSet(m, Options{Replicas: ptr.To[int32](1)}).Spec.Replicas; got != 1 {
		t.Errorf("replicas from options = %d", got)
	}
	// The result shares no memory with the spec: callers may edit either.
	*c.Spec.StorageClassName = "changed"
	tmpl.Spec.NodeSelector["disk"] = "hdd"
	tmpl.Spec.Tolerations[0].Key = "other"
	if *m.Spec.Storage.StorageClassName != "fast" || m.Spec.Scheduling.NodeSelector["disk"] != "ssd" || m.Spec.Scheduling.Tolerations[0].Key != "dedicated" {
		t.Error("the StatefulSet aliases the Mgors spec")
	}
	undefaulted := &v1alpha1.Mgors{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns"}}
	if got := *StatefulSet(undefaulted, Options{}).Spec.Replicas; got != v1alpha1.DefaultMembers {
		t.Errorf("replicas of an undefaulted spec = %d", got)
	}
}

func TestTemplateHash(t *testing.T) {
	base := sample()
	hash := func(m *v1alpha1.Mgors) string {
		return StatefulSet(m, Options{}).Spec.Template.Annotations[TemplateHashAnnotation]
	}
	h := hash(base)
	if h != hash(sample()) {
		t.Fatal("hash is not stable")
	}
	for _, tc := range []struct {
		name string
		mut  func(*v1alpha1.Mgors)
		roll bool
	}{
		{"version", func(m *v1alpha1.Mgors) { m.Spec.Version = "8.0.1" }, true},
		{"resources", func(m *v1alpha1.Mgors) {
			m.Spec.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
		}, true},
		{"tls", func(m *v1alpha1.Mgors) {
			m.Spec.TLS = &v1alpha1.TLSSpec{CertificateSecretRef: &v1alpha1.SecretReference{Name: "tls"}}
		}, true},
		{"members", func(m *v1alpha1.Mgors) { m.Spec.Members = 5 }, false},
		{"pod annotations", func(m *v1alpha1.Mgors) { m.Spec.PodAnnotations = map[string]string{"a": "b"} }, false},
	} {
		if got := hash(sample(tc.mut)) != h; got != tc.roll {
			t.Errorf("%s: hash changed = %v, want %v", tc.name, got, tc.roll)
		}
	}
}

func TestPodOutdated(t *testing.T) {
	set := StatefulSet(sample(), Options{})
	current := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: set.Spec.Template.Annotations}}
	old := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{TemplateHashAnnotation: "0000"}}}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{{"current", current, false}, {"old", old, true}, {"no annotation", &corev1.Pod{}, true}} {
		if got := PodOutdated(tc.pod, set); got != tc.want {
			t.Errorf("%s: PodOutdated = %v", tc.name, got)
		}
	}
}

func TestAffinity(t *testing.T) {
	userAnti := &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "zone"}}}}
	userNode := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}
	for _, tc := range []struct {
		name      string
		mode      v1alpha1.AntiAffinity
		user      *corev1.Affinity
		preferred bool
		required  bool
		userTerm  bool
		node      bool
	}{
		{name: "preferred", mode: v1alpha1.AntiAffinityPreferred, preferred: true},
		{name: "required", mode: v1alpha1.AntiAffinityRequired, required: true},
		{name: "none", mode: v1alpha1.AntiAffinityNone},
		{name: "user anti-affinity wins", mode: v1alpha1.AntiAffinityRequired, user: userAnti, userTerm: true},
		{name: "merged with node affinity", mode: v1alpha1.AntiAffinityPreferred, user: userNode, preferred: true, node: true},
	} {
		m := sample(func(m *v1alpha1.Mgors) {
			m.Spec.Scheduling.AntiAffinity = tc.mode
			m.Spec.Scheduling.Affinity = tc.user
		})
		a := StatefulSet(m, Options{}).Spec.Template.Spec.Affinity
		var pref, req, user, node bool
		if a != nil && a.PodAntiAffinity != nil {
			pa := a.PodAntiAffinity
			if len(pa.PreferredDuringSchedulingIgnoredDuringExecution) == 1 {
				w := pa.PreferredDuringSchedulingIgnoredDuringExecution[0]
				pref = w.Weight == 100 && w.PodAffinityTerm.TopologyKey == corev1.LabelHostname
			}
			if len(pa.RequiredDuringSchedulingIgnoredDuringExecution) == 1 {
				tk := pa.RequiredDuringSchedulingIgnoredDuringExecution[0].TopologyKey
				req, user = tk == corev1.LabelHostname, tk == "zone"
			}
		}
		node = a != nil && a.NodeAffinity != nil
		if pref != tc.preferred || req != tc.required || user != tc.userTerm || node != tc.node {
			t.Errorf("%s: affinity %+v", tc.name, a)
		}
	}
	// The builder must not write into the user's spec.
	m := sample(func(m *v1alpha1.Mgors) { m.Spec.Scheduling.Affinity = &corev1.Affinity{} })
	StatefulSet(m, Options{})
	if m.Spec.Scheduling.Affinity.PodAntiAffinity != nil {
		t.Error("builder modified spec.scheduling.affinity")
	}
}

func TestArbiterStatefulSet(t *testing.T) {
	m := sample(func(m *v1alpha1.Mgors) { m.Spec.Arbiters = 1 })
	s := ArbiterStatefulSet(m)
	if s.Name != "db-arbiter" || *s.Spec.Replicas != 1 || len(s.Spec.VolumeClaimTemplates) != 0 || s.Spec.ServiceName != "db-svc" {
		t.Errorf("arbiter %s replicas %d claims %d", s.Name, *s.Spec.Replicas, len(s.Spec.VolumeClaimTemplates))
	}
	if s.Spec.Template.Labels[LabelComponent] != ComponentArbiter {
		t.Errorf("labels %v", s.Spec.Template.Labels)
	}
	var data bool
	for _, v := range s.Spec.Template.Spec.Volumes {
		data = data || (v.Name == DataVolume && v.EmptyDir != nil)
	}
	if !data {
		t.Error("arbiter has no emptyDir data volume")
	}
	ms, _ := metav1.LabelSelectorAsSelector(StatefulSet(m, Options{}).Spec.Selector)
	if ms.Matches(labels.Set(s.Spec.Template.Labels)) {
		t.Error("the member StatefulSet would adopt arbiter pods")
	}
	if got := ArbiterHost(m, 0, ""); got != "db-arbiter-0.db-svc.ns.svc.cluster.local:27017" {
		t.Errorf("ArbiterHost = %s", got)
	}
	if got := s.Spec.Template.Spec.Containers[0].Resources.Requests.Memory().String(); got != "256Mi" {
		t.Errorf("default arbiter memory request %s, want 256Mi", got)
	}
}

// spec.arbiterResources are the arbiter's, never the members'; a change of
// them changes the arbiter's template hash only.
func TestArbiterResourcesFromTheSpec(t *testing.T) {
	m := sample(func(m *v1alpha1.Mgors) { m.Spec.Arbiters = 1 })
	before, members := ArbiterStatefulSet(m), StatefulSet(m, Options{})
	m.Spec.ArbiterResources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}}
	after := ArbiterStatefulSet(m)
	res := after.Spec.Template.Spec.Containers[0].Resources
	if res.Requests.Memory().String() != "128Mi" || res.Limits != nil {
		t.Errorf("arbiter resources %+v, want spec.arbiterResources as given", res)
	}
	if before.Spec.Template.Annotations[TemplateHashAnnotation] == after.Spec.Template.Annotations[TemplateHashAnnotation] {
		t.Error("the arbiter's template hash did not change with its resources")
	}
	if StatefulSet(m, Options{}).Spec.Template.Annotations[TemplateHashAnnotation] != members.Spec.Template.Annotations[TemplateHashAnnotation] {
		t.Error("the members' template changed with spec.arbiterResources")
	}
}

func TestTLS(t *testing.T) {
	m := sample(func(m *v1alpha1.Mgors) {
		m.Spec.TLS = &v1alpha1.TLSSpec{Mode: "preferTLS", CertificateSecretRef: &v1alpha1.SecretReference{Name: "cert"},
			CASecretRef: &v1alpha1.SecretReference{Name: "ca"}}
	})
	p := StatefulSet(m, Options{}).Spec.Template.Spec
	cmd := strings.Join(container(t, p, MongodContainer).Command, " ")
	if !strings.Contains(cmd, "--tlsMode preferTLS --tlsCertificateKeyFile "+tlsPEM+" --tlsCAFile "+tlsCA) {
		t.Errorf("command %q", cmd)
	}
	script := container(t, p, "keyfile").Command[2]
	if !strings.Contains(script, caSecretDir+"/ca.crt") || !strings.Contains(script, "tls.key") {
		t.Errorf("script %q", script)
	}
	if !strings.HasSuffix(ConnectionString(m, ""), "&tls=true") {
		t.Errorf("connection string %q", ConnectionString(m, ""))
	}
}

func TestMinAvailable(t *testing.T) {
	for _, tc := range []struct {
		pods, voters, minAvailable int32
	}{
		{1, 1, 0}, // one member: nothing to protect, never block drains
		{2, 2, 2},
		{3, 3, 2},
		{4, 4, 3},
		{5, 5, 3},
		{7, 7, 4},
		{9, 7, 6}, // two non-voters: lose at most three voters of seven
		{3, 3, 2}, // 2 members + arbiter
		{5, 3, 4}, // 3 voters while two more pods join: still one pod at most
	} {
		if got := MinAvailable(tc.pods, tc.voters); got != tc.minAvailable {
			t.Errorf("pods %d voters %d: minAvailable %d, want %d", tc.pods, tc.voters, got, tc.minAvailable)
		}
	}
}

func TestPodDisruptionBudget(t *testing.T) {
	m := sample()
	p := PodDisruptionBudget(m, 2)
	if p.Spec.MinAvailable.IntVal != 2 || p.Name != m.Name {
		t.Errorf("budget %s minAvailable %v", p.Name, p.Spec.MinAvailable)
	}
	sel, _ := metav1.LabelSelectorAsSelector(p.Spec.Selector)
	if !sel.Matches(labels.Set(Labels(m, ComponentArbiter))) || !sel.Matches(labels.Set(Labels(m, ComponentMember))) {
		t.Error("budget does not cover members and arbiters")
	}
}

func TestSecrets(t *testing.T) {
	m := sample(func(m *v1alpha1.Mgors) {
		m.Spec.Auth.AdminCredentialsSecretRef = &v1alpha1.SecretReference{Name: "mine"}
	})
	k := KeyfileSecret(m, "abc")
	// Credentials live as long as the volumes (see TestGeneratedSecretsFollowVolumeRetention).
	owned := m.Spec.Storage.Reclaim == v1alpha1.VolumeDelete
	if k.Name != "db-keyfile" || string(k.Data["keyfile"]) != "abc" || OwnedBy(k, m) != owned || k.Labels[LabelCluster] != "db" {
		t.Errorf("keyfile secret %+v", k.ObjectMeta)
	}
	a := AdminSecret(m, "admin", "pw")
	if a.Name != "mine" || string(a.Data["username"]) != "admin" || string(a.Data["password"]) != "pw" || OwnedBy(a, m) != owned {
		t.Errorf("admin secret %+v", a.ObjectMeta)
	}
}

func TestGenerators(t *testing.T) {
	keyfileChars := regexp.MustCompile(`^[A-Za-z0-9+/=]+$`)
	k1, err := GenerateKeyfile()
	if err != nil {
		t.Fatal(err)
	}
	k2, _ := GenerateKeyfile()
	if len(k1) != 756 || !keyfileChars.MatchString(k1) || k1 == k2 {
		t.Errorf("keyfile of %d chars, valid %v, distinct %v", len(k1), keyfileChars.MatchString(k1), k1 != k2)
	}
	if _, err := base64.StdEncoding.DecodeString(k1); err != nil {
		t.Errorf("keyfile is not base64: %v", err)
	}
	p1, err := GeneratePassword()
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := GeneratePassword()
	if len(p1) != 32 || !regexp.MustCompile(`^[A-Za-z0-9_-]+$`).MatchString(p1) || p1 == p2 {
		t.Errorf("password of %d chars is not 32 distinct URL-safe chars", len(p1))
	}
}

func TestConnectionString(t *testing.T) {
	m := sample(func(m *v1alpha1.Mgors) { m.Spec.Members = 2; m.Spec.ReplicaSetName = "rs0" })
	want := "mongodb://db-0.db-svc.ns.svc.example.org:27017,db-1.db-svc.ns.svc.example.org:27017/?replicaSet=rs0&authSource=admin"
	if got := ConnectionString(m, "example.org"); got != want {
		t.Errorf("ConnectionString = %s, want %s", got, want)
	}
	if got := ConnectionString(m, ""); !strings.Contains(got, ".svc.cluster.local:") {
		t.Errorf("default domain: %s", got)
	}
	if (Options{}).Domain() != "cluster.local" || (Options{ClusterDomain: "x"}).Domain() != "x" {
		t.Error("Options.Domain")
	}
	if PVCName(m, 2) != "data-db-2" {
		t.Errorf("PVCName = %s", PVCName(m, 2))
	}
}

// Invariant 4: volumes go with the Mgors only when spec.storage.reclaim says
// Delete, and never on a scale-down.
func TestVolumeRetentionFollowsReclaim(t *testing.T) {
	for reclaim, want := range map[v1alpha1.VolumeReclaim]appsv1.PersistentVolumeClaimRetentionPolicyType{
		v1alpha1.VolumeRetain: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
		v1alpha1.VolumeDelete: appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
	} {
		m := sample(func(m *v1alpha1.Mgors) { m.Spec.Storage.Reclaim = reclaim })
		p := StatefulSet(m, Options{}).Spec.PersistentVolumeClaimRetentionPolicy
		if p.WhenDeleted != want || p.WhenScaled != appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
			t.Errorf("reclaim %s: retention %+v", reclaim, p)
		}
	}
}

// Generated credentials live as long as the data they open.
func TestGeneratedSecretsFollowVolumeRetention(t *testing.T) {
	for reclaim, owned := range map[v1alpha1.VolumeReclaim]bool{v1alpha1.VolumeRetain: false, v1alpha1.VolumeDelete: true} {
		m := sample(func(m *v1alpha1.Mgors) { m.Spec.Storage.Reclaim = reclaim })
		for _, s := range []*corev1.Secret{KeyfileSecret(m, "k"), AdminSecret(m, "admin", "p")} {
			if got := len(s.OwnerReferences) == 1; got != owned {
				t.Errorf("reclaim %s: Secret %s owned by the Mgors = %t, want %t", reclaim, s.Name, got, owned)
			}
			if s.Labels[LabelManagedBy] != ManagedBy {
				t.Errorf("Secret %s lacks the managed-by label", s.Name)
			}
		}
	}
}
