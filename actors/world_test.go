package actors

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ktypes "k8s.io/apimachinery/pkg/types"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/yaml"

	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
	kubefake "github.com/mgors/operator/kube/client/fake"
	"github.com/mgors/operator/mongo"
	"github.com/mgors/operator/mongo/mongotest"
)

// syncBuffer is a log sink the actor's goroutines may write concurrently.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The real KubeWorld (API objects through a fake clientset, members through a
// fake replica set) takes a cluster from nothing to Healthy: initiated as
// __system, the operator's own user created as __system with OperatorRoles,
// the switch to it recorded, and the admin user created by it. Neither the
// keyfile nor a password ever reaches a record, a log line, an Event or the
// status (invariant 5).
func TestKubeWorldBootstrapKeepsSecretsOut(t *testing.T) {
	const keyfile = "KEYFILE-SECRET-0123456789abcdefghijklmnopqrstuvwxyz"
	const password = "PASSWORD-SECRET-9876543210"
	m := mgors()
	m.APIVersion, m.Kind = "mgors.io/v1alpha1", "Mgors"
	kc := k8sfake.NewClientset(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: m.KeyfileSecretName(), Namespace: m.Namespace},
			Data: map[string][]byte{v1alpha1.KeyfileSecretKey: []byte(keyfile)}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: m.AdminSecretName(), Namespace: m.Namespace},
			Data: map[string][]byte{v1alpha1.AdminUsernameSecretKey: []byte("admin"), v1alpha1.AdminPasswordSecretKey: []byte(password)}},
	)
	runningPods(kc)
	mc := kubefake.NewClientset(m)
	var hosts []string
	for _, dm := range mongo.Desired(m, "cluster.local") {
		hosts = append(hosts, dm.Host)
	}
	rs := mongotest.New(m.ReplSetName(), hosts...)
	events := record.NewFakeRecorder(100)
	var credsMu sync.Mutex // an observation still under way at stop may build a client again
	var gotCreds []mongo.Credentials
	world := &KubeWorld{
		Cache: kubefake.NewReader(kc, mc), Applier: kube.NewApplier(kc), Status: kube.NewStatusWriter(mc), Recorder: kube.NewRecorder(events),
		ClusterDomain: "cluster.local",
		NewAdmin: func(o mongo.Options) mongo.Admin {
			credsMu.Lock()
			defer credsMu.Unlock()
			gotCreds = append(gotCreds, o.Credentials)
			return keepOpen{rs}
		},
	}
	store := eventlog.NewMemory()
	logs := &syncBuffer{}
	deps := testDeps(store, world)
	deps.Log = zerolog.New(logs)
	deps.SnapshotEvery = 0 // the assertions read the whole log
	stop := runOperator(t, deps)
	waitFor(t, "Healthy through KubeWorld", func() bool {
		cur, err := mc.Mgorses("db").Get(context.Background(), "demo", metav1.GetOptions{})
		return err == nil && cur.Status.Phase == v1alpha1.PhaseHealthy
	})
	userCreated := hasUser(t, rs, hosts) // before stop: stopping closes the admin client
	stop()

	credsMu.Lock()
	creds := slices.Clone(gotCreds)
	credsMu.Unlock()
	opSecret, err := kc.CoreV1().Secrets(m.Namespace).Get(context.Background(), m.OperatorSecretName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	opPassword := string(opSecret.Data[v1alpha1.AdminPasswordSecretKey])
	if len(creds) < 2 || string(creds[0].Keyfile) != keyfile {
		t.Fatalf("the first admin client was not given the cluster's keyfile: %v", creds)
	}
	if last := creds[len(creds)-1]; last.Username != mongo.OperatorUser || last.Password != opPassword || opPassword == "" {
		t.Fatalf("the operator did not switch to its own user: %v", creds)
	}
	if !userCreated {
		t.Fatal("the admin user was not created")
	}
	if got := rs.Roles(mongo.OperatorUser); !slices.Equal(got, mongo.OperatorRoles()) {
		t.Fatalf("the operator's user has roles %v, want %v", got, mongo.OperatorRoles())
	}
	_, recs, err := store.Load(context.Background(), eventlog.Stream{Namespace: "db", Name: "demo", UID: "u-1"})
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, r := range recs {
		line, _ := eventlog.EncodeLine(r)
		all.Write(line)
	}
	all.WriteString(logs.String())
	close(events.Events)
	for e := range events.Events {
		all.WriteString(e + "\n")
	}
	cur, _ := mc.Mgorses("db").Get(context.Background(), "demo", metav1.GetOptions{})
	st, _ := yaml.Marshal(cur.Status)
	all.Write(st)
	var order []string
	for _, r := range recs {
		if r.Type == "OperatorUserReady" || r.Type == "AuthSwitched" || r.Type == "AdminUserReady" {
			order = append(order, r.Type)
		}
	}
	if !slices.Equal(order, []string{"OperatorUserReady", "AuthSwitched", "AdminUserReady"}) {
		t.Fatalf("users recorded in the order %v", order)
	}
	for _, secret := range []string{keyfile, password, opPassword, mongo.KeyfilePassword([]byte(keyfile))} {
		if strings.Contains(all.String(), secret) {
			t.Fatalf("a secret leaked into the records, logs, Events or status")
		}
	}
	if !strings.Contains(all.String(), "Initiated") || len(recs) == 0 {
		t.Fatalf("nothing was recorded:\n%s", all.String())
	}
}

func hasUser(t *testing.T, rs *mongotest.ReplicaSet, hosts []string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ok, err := rs.UserExists(ctx, rs.Primary(), AdminUsername)
	return err == nil && ok
}

// kubeFixture builds KubeWorlds over the same fake clientsets and fake
// replica set, whose admin Secret names user: one per operator, as a restarted
// process builds its own (a stopped operator's last observation may still run).
func kubeFixture(t *testing.T, user string) (func(mongo.Admin) *KubeWorld, *mongotest.ReplicaSet, *kubefake.Clientset, []string) {
	t.Helper()
	m := mgors()
	m.APIVersion, m.Kind = "mgors.io/v1alpha1", "Mgors"
	kc := k8sfake.NewClientset(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: m.KeyfileSecretName(), Namespace: m.Namespace},
			Data: map[string][]byte{v1alpha1.KeyfileSecretKey: []byte("keyfile-0123456789abcdef")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: m.AdminSecretName(), Namespace: m.Namespace},
			Data: map[string][]byte{v1alpha1.AdminUsernameSecretKey: []byte(user), v1alpha1.AdminPasswordSecretKey: []byte("pw")}},
	)
	runningPods(kc)
	mc := kubefake.NewClientset(m)
	var hosts []string
	for _, dm := range mongo.Desired(m, "cluster.local") {
		hosts = append(hosts, dm.Host)
	}
	rs := mongotest.New(m.ReplSetName(), hosts...)
	newWorld := func(admin mongo.Admin) *KubeWorld {
		if admin == nil {
			admin = keepOpen{rs}
		}
		return &KubeWorld{
			Cache: kubefake.NewReader(kc, mc), Applier: kube.NewApplier(kc), Status: kube.NewStatusWriter(mc), Recorder: kube.NewRecorder(record.NewFakeRecorder(1000)),
			ClusterDomain: "cluster.local", NewAdmin: func(mongo.Options) mongo.Admin { return admin },
		}
	}
	return newWorld, rs, mc, hosts
}

// healthyFixture is kubeFixture (admin user "admin") after an operator brought
// the set to Healthy and stopped.
func healthyFixture(t *testing.T) (func(mongo.Admin) *KubeWorld, *mongotest.ReplicaSet, []string) {
	t.Helper()
	newWorld, rs, mc, hosts := kubeFixture(t, "admin")
	stop := runOperator(t, testDeps(eventlog.NewMemory(), newWorld(nil)))
	waitFor(t, "Healthy", healthyIn(mc))
	stop()
	return newWorld, rs, hosts
}

// keepOpen outlives the operators that close it, as a real replica set does.
type keepOpen struct{ *mongotest.ReplicaSet }

func (keepOpen) Close(context.Context) error { return nil }

func healthyIn(mc *kubefake.Clientset) func() bool {
	return func() bool {
		cur, err := mc.Mgorses("db").Get(context.Background(), "demo", metav1.GetOptions{})
		return err == nil && cur.Status.Phase == v1alpha1.PhaseHealthy
	}
}

// The admin user is looked up by the Secret's username, the name it was
// created with: an operator that lost its log finds the user and creates
// nothing.
func TestKubeWorldChecksTheAdminUserTheSecretNames(t *testing.T) {
	newWorld, rs, mc, _ := kubeFixture(t, "dba")
	stop := runOperator(t, testDeps(eventlog.NewMemory(), newWorld(nil)))
	waitFor(t, "Healthy", healthyIn(mc))
	stop()
	fresh := eventlog.NewMemory()
	deps := testDeps(fresh, newWorld(nil))
	deps.SnapshotEvery = 0 // the assertion reads the whole log
	stop = runOperator(t, deps)
	waitFor(t, "the user found by a new operator", func() bool {
		_, recs, _ := fresh.Load(context.Background(), eventlog.Stream{Namespace: "db", Name: "demo", UID: "u-1"})
		for _, r := range recs {
			if e, ok, _ := Decode(r); ok {
				if u, ok := e.(AdminUserReady); ok && u.Found {
					return true
				}
			}
		}
		return false
	})
	stop()
	creates := 0
	for _, c := range rs.Calls() {
		if c.Command == "createUser" {
			creates++
		}
	}
	if creates != 2 {
		t.Fatalf("createUser sent %d times, want 2 (the operator's user and the admin user)", creates)
	}
}

// A failed replSetGetConfig is reported, not taken for "no config".
func TestKubeWorldReportsAnUnreadableConfig(t *testing.T) {
	newWorld, rs, hosts := healthyFixture(t)
	m := mgors()
	world := newWorld(noConfig{keepOpen{rs}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	o, err := world.Observe(ctx, m, mongo.Desired(m, "cluster.local"), AuthKeyfile)
	if err != nil {
		t.Fatal(err)
	}
	if o.Config != nil || !strings.Contains(o.ConfigErr, "not authorized") || !o.Members[hosts[0]].HasConfig {
		t.Fatalf("config %v, err %q, member %+v", o.Config, o.ConfigErr, o.Members[hosts[0]])
	}
}

// noConfig is a replica set whose replSetGetConfig always fails.
type noConfig struct{ keepOpen }

func (noConfig) Config(context.Context, string) (mongo.Config, error) {
	return mongo.Config{}, &mongo.ServerError{Code: 13, Name: "Unauthorized", Message: "not authorized"}
}

// KubeWorld's WipeMember deletes the member's claim, then its pod, and touches
// nothing else: no other member, no Mongo call.
func TestKubeWorldWipesAMemberClaimThenPod(t *testing.T) {
	m := mgors()
	var objs []runtime.Object
	for i := int32(0); i < 3; i++ {
		objs = append(objs,
			&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: m.PodName(i), Namespace: m.Namespace, UID: ktypes.UID(m.PodName(i)),
				Labels: kube.Labels(m, kube.ComponentMember)},
				Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: kube.DataVolume, VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: kube.PVCName(m, i)}}}}}},
			&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: kube.PVCName(m, i), Namespace: m.Namespace,
				UID: ktypes.UID(kube.PVCName(m, i)), Labels: kube.Labels(m, kube.ComponentMember)}})
	}
	kc := k8sfake.NewClientset(objs...)
	w := &KubeWorld{Cache: kubefake.NewReader(kc, nil), Applier: kube.NewApplier(kc), NewAdmin: func(mongo.Options) mongo.Admin {
		t.Fatal("the wipe asked a member")
		return nil
	}}
	if err := w.Act(context.Background(), m, Action{Kind: ActWipeMember, Host: m.PodName(2)}); err != nil {
		t.Fatal(err)
	}
	var deleted []string
	for _, a := range kc.Actions() {
		if d, ok := a.(k8stesting.DeleteAction); ok {
			deleted = append(deleted, a.GetResource().Resource+"/"+d.GetName())
		}
	}
	want := []string{"persistentvolumeclaims/" + kube.PVCName(m, 2), "pods/" + m.PodName(2)}
	if strings.Join(deleted, " ") != strings.Join(want, " ") {
		t.Fatalf("deleted %v, want %v", deleted, want)
	}
}

// A member removed from the config answers hello without one; the world reads
// its local database: REMOVED, at its own last optime.
func TestKubeWorldReadsARemovedMembersOwnOptime(t *testing.T) {
	newWorld, rs, hosts := healthyFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	primary := rs.Primary()
	cfg, err := rs.Config(ctx, primary)
	if err != nil {
		t.Fatal(err)
	}
	gone := hosts[len(hosts)-1]
	if mongo.SameHost(gone, primary) {
		gone = hosts[0]
	}
	next := cfg.Clone()
	next.Version++
	next.Members = slices.DeleteFunc(next.Members, func(m mongo.Member) bool { return mongo.SameHost(m.Host, gone) })
	if err := rs.Reconfig(ctx, primary, next, false); err != nil {
		t.Fatal(err)
	}
	m := mgors()
	o, err := newWorld(nil).Observe(ctx, m, mongo.Desired(m, "cluster.local"), AuthKeyfile)
	if err != nil {
		t.Fatal(err)
	}
	mv := o.Members[gone]
	if !mv.Answers || mv.HasConfig || !mv.Removed || mv.LastWrite.IsZero() || mv.LastWrite != rs.Optime(gone) {
		t.Fatalf("removed member seen as %+v, want REMOVED at %+v", mv, rs.Optime(gone))
	}
	for _, h := range hosts {
		if h != gone && o.Members[h].Removed {
			t.Errorf("%s seen REMOVED", h)
		}
	}
}

// A scale-down asks the members it is taking away too: until the config no
// longer names them one may be the primary (stepped down before its removal),
// and a primary not asked is a primary not seen.
func TestKubeWorldObservesTheMembersAScaleDownTakesAway(t *testing.T) {
	newWorld, rs, hosts := healthyFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i := 0; rs.Primary() != hosts[2]; i++ { // a stepped-down primary is not elected again
		if i == 2 {
			t.Fatalf("primary %s after two stepdowns", rs.Primary())
		}
		if err := rs.StepDown(ctx, rs.Primary(), 60); err != nil {
			t.Fatal(err)
		}
	}
	m := mgors()
	m.Spec.Members = 2
	o, err := newWorld(nil).Observe(ctx, m, mongo.Desired(m, "cluster.local"), AuthKeyfile)
	if err != nil {
		t.Fatal(err)
	}
	if o.Replicas != 3 || o.Primary != hosts[2] || o.Members[hosts[2]].Name != "demo-2" || o.Status == nil {
		t.Fatalf("replicas %d, primary %q, leaving member %+v: want demo-2 seen as the primary", o.Replicas, o.Primary, o.Members[hosts[2]])
	}
}
