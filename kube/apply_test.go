package kube

import (
	"context"
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/mgors/operator/kube/api/v1alpha1"
)

// writes counts the create, update and delete actions on a resource.
func writes(c *fake.Clientset, resource string) map[string]int {
	n := map[string]int{}
	for _, a := range c.Actions() {
		if a.GetResource().Resource == resource {
			switch a.GetVerb() {
			case "create", "update", "delete", "patch":
				n[a.GetVerb()]++
			}
		}
	}
	return n
}

// failOnce makes the first verb on resource fail with err, then lets calls through.
func failOnce(c *fake.Clientset, verb, resource string, err error) *int {
	calls := 0
	c.PrependReactor(verb, resource, func(k8stesting.Action) (bool, runtime.Object, error) {
		calls++
		if calls == 1 {
			return true, nil, err
		}
		return false, nil, nil
	})
	return &calls
}

func conflict(resource string) error {
	return apierrors.NewConflict(schema.GroupResource{Resource: resource}, "x", errors.New("the object has been modified"))
}

func internal() error { return apierrors.NewInternalError(errors.New("etcd is down")) }

// defaulted fills in what the API server adds to a StatefulSet we create, so
// tests see that defaults never look like a change.
func defaulted(s *appsv1.StatefulSet) *appsv1.StatefulSet {
	s = s.DeepCopy()
	s.ResourceVersion = "7"
	s.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	s.Spec.MinReadySeconds = 0
	p := &s.Spec.Template.Spec
	p.RestartPolicy = corev1.RestartPolicyAlways
	p.DNSPolicy = corev1.DNSClusterFirst
	p.SchedulerName = corev1.DefaultSchedulerName
	for _, cs := range [][]corev1.Container{p.InitContainers, p.Containers} {
		for i := range cs {
			c := &cs[i]
			c.ImagePullPolicy = corev1.PullIfNotPresent
			c.TerminationMessagePath = corev1.TerminationMessagePathDefault
			for j := range c.Env {
				if c.Env[j].ValueFrom != nil && c.Env[j].ValueFrom.FieldRef != nil {
					c.Env[j].ValueFrom.FieldRef.APIVersion = "v1"
				}
			}
		}
	}
	for i := range p.Volumes {
		if p.Volumes[i].Secret != nil {
			p.Volumes[i].Secret.DefaultMode = ptr.To[int32](0o400)
		}
	}
	for i := range s.Spec.VolumeClaimTemplates {
		s.Spec.VolumeClaimTemplates[i].Spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
		s.Spec.VolumeClaimTemplates[i].Status.Phase = corev1.ClaimPending
	}
	return s
}

func TestEnsureStatefulSet(t *testing.T) {
	ctx := context.Background()
	m := sample()
	desired := StatefulSet(m, Options{})
	for _, tc := range []struct {
		name     string
		existing *appsv1.StatefulSet
		desired  *appsv1.StatefulSet
		react    func(*fake.Clientset)
		changed  bool
		updates  int
		creates  int
		errIs    func(error) bool
		check    func(*testing.T, *appsv1.StatefulSet)
	}{
		{name: "missing: created", desired: desired, changed: true, creates: 1},
		{name: "as built: untouched", existing: desired, desired: desired},
		{name: "server defaults are no change", existing: defaulted(desired), desired: desired},
		{name: "replicas belong to the actor", existing: defaulted(StatefulSet(m, Options{Replicas: ptr.To[int32](1)})), desired: desired,
			check: func(t *testing.T, s *appsv1.StatefulSet) {
				if *s.Spec.Replicas != 1 {
					t.Errorf("replicas %d, want 1", *s.Spec.Replicas)
				}
			}},
		{name: "new version: template updated, defaults and replicas kept",
			existing: defaulted(StatefulSet(m, Options{Replicas: ptr.To[int32](2)})),
			desired:  StatefulSet(sample(func(m *v1alpha1.Mgors) { m.Spec.Version = "8.0.4" }), Options{}),
			changed:  true, updates: 1,
			check: func(t *testing.T, s *appsv1.StatefulSet) {
				if s.Spec.Template.Spec.Containers[0].Image != "mongo:8.0.4" || *s.Spec.Replicas != 2 || *s.Spec.RevisionHistoryLimit != 10 {
					t.Errorf("image %s replicas %d", s.Spec.Template.Spec.Containers[0].Image, *s.Spec.Replicas)
				}
			}},
		{name: "hand-edited image is reverted", desired: desired, changed: true, updates: 1,
			existing: func() *appsv1.StatefulSet {
				s := defaulted(desired)
				s.Spec.Template.Spec.Containers[0].Image = "mongo:evil"
				return s
			}()},
		{name: "foreign labels kept, ours added", desired: desired, changed: true, updates: 1,
			existing: func() *appsv1.StatefulSet {
				s := defaulted(desired)
				s.Labels = map[string]string{"argocd": "x"}
				return s
			}(),
			check: func(t *testing.T, s *appsv1.StatefulSet) {
				if s.Labels["argocd"] != "x" || s.Labels[LabelCluster] != "db" {
					t.Errorf("labels %v", s.Labels)
				}
			}},
		{name: "grown storage is immutable", existing: defaulted(desired),
			desired: StatefulSet(sample(func(m *v1alpha1.Mgors) { m.Spec.Storage.Size = ptr.To(resource.MustParse("20Gi")) }), Options{}),
			errIs: func(err error) bool {
				var ic *ImmutableChange
				return errors.As(err, &ic) && ic.Field == "spec.volumeClaimTemplates" && ic.Kind == "StatefulSet"
			}},
		{name: "other podManagementPolicy is immutable", desired: desired,
			existing: func() *appsv1.StatefulSet {
				s := defaulted(desired)
				s.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
				return s
			}(),
			errIs: func(err error) bool {
				var ic *ImmutableChange
				return errors.As(err, &ic) && ic.Field == "spec.podManagementPolicy"
			}},
		{name: "not owned: refused", desired: desired,
			existing: func() *appsv1.StatefulSet {
				s := defaulted(desired)
				s.OwnerReferences = nil
				return s
			}(),
			errIs: func(err error) bool { var no *NotOwned; return errors.As(err, &no) }},
		{name: "previous incarnation's: refused", desired: desired,
			existing: defaulted(StatefulSet(sample(func(m *v1alpha1.Mgors) { m.UID = "old" }), Options{})),
			errIs:    func(err error) bool { var no *NotOwned; return errors.As(err, &no) }},
		{name: "conflict on update: retried from a fresh read", changed: true, updates: 2,
			existing: defaulted(desired),
			desired:  StatefulSet(sample(func(m *v1alpha1.Mgors) { m.Spec.Version = "8.0.4" }), Options{}),
			react:    func(c *fake.Clientset) { failOnce(c, "update", "statefulsets", conflict("statefulsets")) }},
		{name: "server error on get: returned", desired: desired,
			react: func(c *fake.Clientset) { failOnce(c, "get", "statefulsets", internal()) },
			errIs: apierrors.IsInternalError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			if tc.existing != nil {
				objs = append(objs, tc.existing.DeepCopy())
			}
			c := fake.NewClientset(objs...)
			if tc.react != nil {
				tc.react(c)
			}
			changed, err := NewApplier(c).EnsureStatefulSet(ctx, tc.desired)
			if tc.errIs != nil {
				if err == nil || !tc.errIs(err) {
					t.Fatalf("err = %v", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if changed != tc.changed {
				t.Errorf("changed = %v, want %v", changed, tc.changed)
			}
			w := writes(c, "statefulsets")
			if w["update"] != tc.updates || w["create"] != tc.creates {
				t.Errorf("writes %v, want %d updates %d creates", w, tc.updates, tc.creates)
			}
			if tc.check != nil {
				got, err := c.AppsV1().StatefulSets("ns").Get(ctx, "db", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				tc.check(t, got)
			}
		})
	}
}

func TestEnsureService(t *testing.T) {
	ctx := context.Background()
	m := sample()
	desired := HeadlessService(m)
	withDefaults := desired.DeepCopy()
	withDefaults.Spec.Type = corev1.ServiceTypeClusterIP
	withDefaults.Spec.SessionAffinity = corev1.ServiceAffinityNone
	withDefaults.Spec.ClusterIPs = []string{"None"}
	withDefaults.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	withDefaults.Spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyCluster)
	wrongSelector := withDefaults.DeepCopy()
	wrongSelector.Spec.Selector = map[string]string{"x": "y"}
	notHeadless := withDefaults.DeepCopy()
	notHeadless.Spec.ClusterIP = "10.96.0.7"
	foreign := withDefaults.DeepCopy()
	foreign.OwnerReferences = nil
	for _, tc := range []struct {
		name     string
		existing *corev1.Service
		changed  bool
		writes   int
		errIs    func(error) bool
	}{
		{name: "missing", changed: true, writes: 1},
		{name: "server defaults", existing: withDefaults},
		{name: "selector repaired", existing: wrongSelector, changed: true, writes: 1},
		{name: "not headless", existing: notHeadless, errIs: func(err error) bool { var ic *ImmutableChange; return errors.As(err, &ic) }},
		{name: "foreign", existing: foreign, errIs: func(err error) bool { var no *NotOwned; return errors.As(err, &no) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			if tc.existing != nil {
				objs = append(objs, tc.existing)
			}
			c := fake.NewClientset(objs...)
			changed, err := NewApplier(c).EnsureService(ctx, desired)
			if (err != nil) != (tc.errIs != nil) || (err != nil && !tc.errIs(err)) {
				t.Fatalf("err = %v", err)
			}
			w := writes(c, "services")
			if changed != tc.changed || w["create"]+w["update"] != tc.writes {
				t.Errorf("changed %v writes %v", changed, w)
			}
			if tc.name == "selector repaired" {
				got, _ := c.CoreV1().Services("ns").Get(ctx, desired.Name, metav1.GetOptions{})
				if got.Spec.Selector["x"] != "" || got.Spec.Type != corev1.ServiceTypeClusterIP {
					t.Errorf("selector %v type %s", got.Spec.Selector, got.Spec.Type)
				}
			}
		})
	}
}

func TestEnsurePodDisruptionBudget(t *testing.T) {
	ctx := context.Background()
	m := sample()
	c := fake.NewClientset()
	a := NewApplier(c)
	for i, tc := range []struct {
		minAvailable int32
		changed      bool
	}{{2, true}, {2, false}, {3, true}} {
		changed, err := a.EnsurePodDisruptionBudget(ctx, PodDisruptionBudget(m, tc.minAvailable))
		if err != nil || changed != tc.changed {
			t.Errorf("step %d: changed %v err %v", i, changed, err)
		}
	}
	got, _ := c.PolicyV1().PodDisruptionBudgets("ns").Get(ctx, "db", metav1.GetOptions{})
	if got.Spec.MinAvailable.IntVal != 3 {
		t.Errorf("minAvailable %v", got.Spec.MinAvailable)
	}
	if n := writes(c, "poddisruptionbudgets"); n["create"] != 1 || n["update"] != 1 {
		t.Errorf("writes %v", n)
	}
}

func TestEnsureSecrets(t *testing.T) {
	ctx := context.Background()
	m := sample()
	c := fake.NewClientset()
	a := NewApplier(c)
	for i, want := range []bool{true, false} {
		changed, err := a.EnsureKeyfile(ctx, m)
		if err != nil || changed != want {
			t.Fatalf("keyfile %d: changed %v err %v", i, changed, err)
		}
	}
	k, _ := a.Secret(ctx, "ns", "db-keyfile")
	first := string(k.Data["keyfile"])
	// Kept with the volumes (reclaim Retain): not owned by the Mgors.
	if len(first) != 756 || OwnedBy(k, m) != (m.Spec.Storage.Reclaim == v1alpha1.VolumeDelete) {
		t.Errorf("keyfile of %d chars, owned %v", len(first), OwnedBy(k, m))
	}
	// An existing Secret is never regenerated, even when asked with other content.
	if changed, err := a.EnsureSecret(ctx, KeyfileSecret(m, "other")); changed || err != nil {
		t.Errorf("changed %v err %v", changed, err)
	}
	k, _ = a.Secret(ctx, "ns", "db-keyfile")
	if string(k.Data["keyfile"]) != first {
		t.Error("keyfile regenerated")
	}
	if changed, err := a.EnsureAdminCredentials(ctx, m, "admin"); !changed || err != nil {
		t.Fatalf("admin: changed %v err %v", changed, err)
	}
	s, _ := a.Secret(ctx, "ns", "db-admin")
	if string(s.Data["username"]) != "admin" || len(s.Data["password"]) != 32 {
		t.Errorf("admin secret keys %d", len(s.Data))
	}
	if n := writes(c, "secrets"); n["create"] != 2 || n["update"] != 0 {
		t.Errorf("writes %v", n)
	}
}

func TestEnsureUserSecrets(t *testing.T) {
	ctx := context.Background()
	m := sample(func(m *v1alpha1.Mgors) {
		m.Spec.Auth.KeyfileSecretRef = &v1alpha1.SecretReference{Name: "mine"}
		m.Spec.Auth.AdminCredentialsSecretRef = &v1alpha1.SecretReference{Name: "partial"}
	})
	mine := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: "ns"}, Data: map[string][]byte{"keyfile": []byte("users-key")}}
	partial := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "partial", Namespace: "ns"}, Data: map[string][]byte{"username": []byte("root")}}
	c := fake.NewClientset(mine, partial)
	a := NewApplier(c)
	if changed, err := a.EnsureKeyfile(ctx, m); changed || err != nil {
		t.Errorf("user keyfile: changed %v err %v", changed, err)
	}
	_, err := a.EnsureAdminCredentials(ctx, m, "admin")
	var mk *MissingSecretKey
	if !errors.As(err, &mk) || mk.Key != "password" || mk.Name != "partial" {
		t.Errorf("err = %v, want a missing password", err)
	}
	if n := writes(c, "secrets"); len(n) != 0 {
		t.Errorf("a user's Secret was written: %v", n)
	}
}

func TestEnsureSecretRace(t *testing.T) {
	// Another writer creates the Secret between our read and our create: theirs stands.
	ctx := context.Background()
	m := sample()
	c := fake.NewClientset()
	c.PrependReactor("create", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		theirs := KeyfileSecret(m, "theirs")
		if err := c.Tracker().Add(theirs); err != nil {
			t.Fatal(err)
		}
		return true, nil, apierrors.NewAlreadyExists(schema.GroupResource{Resource: "secrets"}, theirs.Name)
	})
	changed, err := NewApplier(c).EnsureKeyfile(ctx, m)
	if changed || err != nil {
		t.Fatalf("changed %v err %v", changed, err)
	}
	s, _ := c.CoreV1().Secrets("ns").Get(ctx, "db-keyfile", metav1.GetOptions{})
	if string(s.Data["keyfile"]) != "theirs" {
		t.Error("our keyfile replaced theirs")
	}
}

func TestScaleStatefulSet(t *testing.T) {
	ctx := context.Background()
	m := sample()
	c := fake.NewClientset(StatefulSet(m, Options{Replicas: ptr.To[int32](1)}))
	calls := failOnce(c, "update", "statefulsets", conflict("statefulsets"))
	a := NewApplier(c)
	if changed, err := a.ScaleStatefulSet(ctx, m, "db", 2); !changed || err != nil {
		t.Fatalf("changed %v err %v", changed, err)
	}
	if *calls != 2 {
		t.Errorf("update calls %d, want a retry after the conflict", *calls)
	}
	if changed, err := a.ScaleStatefulSet(ctx, m, "db", 2); changed || err != nil {
		t.Errorf("same replicas: changed %v err %v", changed, err)
	}
	got, _ := c.AppsV1().StatefulSets("ns").Get(ctx, "db", metav1.GetOptions{})
	if *got.Spec.Replicas != 2 {
		t.Errorf("replicas %d", *got.Spec.Replicas)
	}
	other := sample(func(m *v1alpha1.Mgors) { m.UID = "other" })
	var no *NotOwned
	if _, err := a.ScaleStatefulSet(ctx, other, "db", 3); !errors.As(err, &no) {
		t.Errorf("scaling another incarnation's set: %v", err)
	}
}

func TestReplaceStatefulSetWaitsForTheOldOne(t *testing.T) {
	ctx := context.Background()
	m := sample()
	c := fake.NewClientset(StatefulSet(m, Options{}))
	// The garbage collector has not yet orphaned the pods: the old object is still there.
	c.PrependReactor("delete", "statefulsets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, nil
	})
	var term *Terminating
	if err := NewApplier(c).ReplaceStatefulSet(ctx, m, StatefulSet(m, Options{})); !errors.As(err, &term) {
		t.Fatalf("err = %v, want Terminating", err)
	}
	deleting := StatefulSet(m, Options{})
	deleting.DeletionTimestamp = ptr.To(metav1.Now())
	deleting.Finalizers = []string{"orphan"}
	c = fake.NewClientset(deleting)
	if err := NewApplier(c).ReplaceStatefulSet(ctx, m, StatefulSet(m, Options{})); !errors.As(err, &term) {
		t.Errorf("replace while terminating: err = %v", err)
	}
	if _, err := NewApplier(c).EnsureStatefulSet(ctx, StatefulSet(sample(func(m *v1alpha1.Mgors) { m.Spec.Version = "8.0.1" }), Options{})); !errors.As(err, &term) {
		t.Errorf("ensure while terminating: err = %v", err)
	}
	if n := writes(c, "statefulsets"); len(n) != 0 {
		t.Errorf("writes to a terminating StatefulSet: %v", n)
	}
}

func TestReplaceStatefulSet(t *testing.T) {
	ctx := context.Background()
	m := sample()
	old := StatefulSet(m, Options{Replicas: ptr.To[int32](2)})
	c := fake.NewClientset(old)
	grown := sample(func(m *v1alpha1.Mgors) { m.Spec.Storage.Size = ptr.To(resource.MustParse("20Gi")) })
	if err := NewApplier(c).ReplaceStatefulSet(ctx, m, StatefulSet(grown, Options{})); err != nil {
		t.Fatal(err)
	}
	var orphaned bool
	for _, act := range c.Actions() {
		if d, ok := act.(k8stesting.DeleteAction); ok && act.GetResource().Resource == "statefulsets" {
			p := d.GetDeleteOptions().PropagationPolicy
			orphaned = p != nil && *p == metav1.DeletePropagationOrphan
		}
	}
	if !orphaned {
		t.Error("the StatefulSet was not deleted with orphan propagation: pods would go with it")
	}
	got, _ := c.AppsV1().StatefulSets("ns").Get(ctx, "db", metav1.GetOptions{})
	if *got.Spec.Replicas != 2 || got.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests.Storage().String() != "20Gi" {
		t.Errorf("replicas %d, claim %v", *got.Spec.Replicas, got.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests)
	}
}

func pvc(m *v1alpha1.Mgors, ordinal int32, size string, owned bool) *corev1.PersistentVolumeClaim {
	p := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: PVCName(m, ordinal), Namespace: m.Namespace, UID: "pvc-uid"},
		Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}},
	}
	if owned {
		p.Labels = Labels(m, ComponentMember)
	}
	return p
}

func TestExpandPVCs(t *testing.T) {
	ctx := context.Background()
	m := sample()
	c := fake.NewClientset(pvc(m, 0, "10Gi", true), pvc(m, 1, "30Gi", true))
	changed, err := NewApplier(c).ExpandPVCs(ctx, m, []int32{0, 1}, resource.MustParse("20Gi"))
	if err != nil || !changed {
		t.Fatalf("changed %v err %v", changed, err)
	}
	for _, tc := range []struct{ name, want string }{{"data-db-0", "20Gi"}, {"data-db-1", "30Gi"}} {
		p, _ := c.CoreV1().PersistentVolumeClaims("ns").Get(ctx, tc.name, metav1.GetOptions{})
		if got := p.Spec.Resources.Requests.Storage().String(); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestCallDeadline(t *testing.T) {
	for _, tc := range []struct {
		timeout, want time.Duration
	}{{0, DefaultCallTimeout}, {time.Second, time.Second}} {
		ctx, cancel := (&Applier{Timeout: tc.timeout}).call(context.Background())
		dl, ok := ctx.Deadline()
		cancel()
		if !ok || time.Until(dl) > tc.want {
			t.Errorf("timeout %v: deadline %v", tc.timeout, dl)
		}
	}
}
