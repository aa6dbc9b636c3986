package actors

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/yaml"

	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
	kubefake "github.com/mgors/operator/kube/client/fake"
	"github.com/mgors/operator/mongo"
	"github.com/mgors/operator/mongo/mongotest"
)

// With spec.tls and no certificate Secret named, the real KubeWorld issues
// the cluster's CA and the members' certificate, every admin client trusts
// that CA (and checks each member's name against the certificate), the
// status' connection string says tls=true, and neither private key reaches
// a record, a log line, an Event or the status.
func TestKubeWorldTLSIssuesAndConnectsWithTheCA(t *testing.T) {
	m := mgors()
	m.APIVersion, m.Kind = "mgors.io/v1alpha1", "Mgors"
	m.Spec.TLS = &v1alpha1.TLSSpec{Mode: "requireTLS"}
	kc := k8sfake.NewClientset()
	runningPods(kc)
	mc := kubefake.NewClientset(m)
	var hosts []string
	for _, dm := range mongo.Desired(m, "cluster.local") {
		hosts = append(hosts, dm.Host)
	}
	rs := mongotest.New(m.ReplSetName(), hosts...)
	events := record.NewFakeRecorder(100)
	var mu sync.Mutex
	var opts []mongo.Options
	world := &KubeWorld{
		Cache: kubefake.NewReader(kc, mc), Applier: kube.NewApplier(kc), Status: kube.NewStatusWriter(mc), Recorder: kube.NewRecorder(events),
		ClusterDomain: "cluster.local",
		NewAdmin: func(o mongo.Options) mongo.Admin {
			mu.Lock()
			defer mu.Unlock()
			opts = append(opts, o)
			return keepOpen{rs}
		},
	}
	store := eventlog.NewMemory()
	logs := &syncBuffer{}
	deps := testDeps(store, world)
	deps.Log = zerolog.New(logs)
	sys := actor.NewActorSystem()
	mgr, err := sys.Root.SpawnNamed(NewManagerProps(deps), "manager")
	if err != nil {
		t.Fatal(err)
	}
	sys.Root.Send(mgr, ClusterChanged{Mgors: m.DeepCopy()})
	var cur *v1alpha1.Mgors
	waitFor(t, "Healthy through KubeWorld with TLS", func() bool {
		var err error
		cur, err = mc.Mgorses("db").Get(context.Background(), "demo", metav1.GetOptions{})
		return err == nil && cur.Status.Phase == v1alpha1.PhaseHealthy
	})
	_ = sys.Root.PoisonFuture(mgr).Wait()

	if !strings.Contains(cur.Status.ConnectionString, "&tls=true") {
		t.Errorf("connection string %q", cur.Status.ConnectionString)
	}
	certSec, err := kc.CoreV1().Secrets("db").Get(context.Background(), "demo-tls", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	issuer, err := kc.CoreV1().Secrets("db").Get(context.Background(), "demo-ca", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(certSec.Data[corev1.TLSCertKey])
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(opts) == 0 {
		t.Fatal("no admin client was built")
	}
	for _, o := range opts {
		if o.TLS == nil || o.TLS.RootCAs == nil || o.TLS.InsecureSkipVerify {
			t.Fatalf("an admin client without the cluster's CA: %+v", o.TLS)
		}
		for _, h := range hosts {
			name := strings.TrimSuffix(h, ":27017")
			if _, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: o.TLS.RootCAs}); err != nil {
				t.Fatalf("the client does not accept %s's certificate: %v", name, err)
			}
		}
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
	st, _ := yaml.Marshal(cur.Status)
	all.Write(st)
	for _, key := range [][]byte{certSec.Data[corev1.TLSPrivateKeyKey], issuer.Data["ca.key"]} {
		b, _ := pem.Decode(key)
		if b == nil || strings.Contains(all.String(), string(key)) || strings.Contains(all.String(), string(pemBody(key))) {
			t.Fatal("a private key leaked into the records, logs, Events or status (or is missing)")
		}
	}
}

// pemBody is the base64 lines of a PEM block, without its armour.
func pemBody(p []byte) []byte {
	lines := strings.Split(strings.TrimSpace(string(p)), "\n")
	if len(lines) < 3 {
		return p
	}
	return []byte(strings.Join(lines[1:len(lines)-1], "\n"))
}

// While members are built with TLS but some still run without it (a TLS
// step from none to allowTLS), the operator connects plain: it neither
// needs nor reads the CA.
func TestClientTLSPlainWhileMembersLackIt(t *testing.T) {
	m := mgors()
	m.Spec.TLS = &v1alpha1.TLSSpec{Mode: "allowTLS"}
	kc := k8sfake.NewClientset()
	w := &KubeWorld{Cache: kubefake.NewReader(kc, nil), Applier: kube.NewApplier(kc)}
	if _, _, err := w.clientTLS(context.Background(), m); err == nil {
		t.Fatal("a TLS client without its CA Secret")
	}
	m.Annotations = map[string]string{PlainClientAnnotation: "true"}
	conf, key, err := w.clientTLS(context.Background(), m)
	if conf != nil || key != "" || err != nil {
		t.Fatalf("want a plain client: %v %q %v", conf, key, err)
	}
}

// The World reads the members' certificate into the observation (serial
// and life, never the key) and renews the one the operator issued through
// the action (the fake API keeps no resourceVersion, so the patch's binding
// to it is left to the API server and not tested here).
func TestKubeWorldObservesAndRenewsTheCertificate(t *testing.T) {
	ctx := context.Background()
	m := mgors()
	m.Spec.TLS = &v1alpha1.TLSSpec{Mode: "requireTLS"}
	kc := k8sfake.NewClientset()
	a := kube.NewApplier(kc)
	a.CertificateLifetime = time.Minute
	w := &KubeWorld{Cache: kubefake.NewReader(kc, nil), Applier: a, ClusterDomain: "cluster.local"}
	if err := a.EnsureTLS(ctx, m, "cluster.local"); err != nil {
		t.Fatal(err)
	}
	observe := func() *CertificateView {
		t.Helper()
		var o Observation
		if err := w.observeCertificate(ctx, m, &o); err != nil {
			t.Fatal(err)
		}
		if o.Certificate == nil {
			t.Fatal("no certificate observed")
		}
		return o.Certificate
	}
	first := observe()
	if !first.Issued || first.Serial == "" || first.NotAfter.Sub(first.NotBefore) > 2*time.Minute {
		t.Fatalf("%+v", first)
	}
	if err := w.Act(ctx, m, Action{Kind: ActRenewCertificate, Credential: Credential{Secret: first.Secret, SecretVersion: first.Version}}); err != nil {
		t.Fatal(err)
	}
	second := observe()
	if second.Serial == first.Serial || first.Lacks != nil || second.Lacks != nil {
		t.Fatalf("not renewed, or lacking names: %+v", second)
	}
	// An external host added to the spec the members run: the observation
	// says the certificate lacks it until the renewal, which issues for it.
	m.Spec.ExternalAccess = &v1alpha1.ExternalAccessSpec{Members: []v1alpha1.ExternalMember{{Ordinal: 0, Host: "db-0.example.com"}}}
	if lacks := observe().Lacks; !slices.Equal(lacks, []string{"db-0.example.com"}) {
		t.Fatalf("lacks %v; want the external host", lacks)
	}
	if err := w.Act(ctx, m, Action{Kind: ActRenewCertificate, Credential: Credential{Secret: second.Secret, SecretVersion: second.Version}}); err != nil {
		t.Fatal(err)
	}
	if third := observe(); third.Serial == second.Serial || third.Lacks != nil {
		t.Fatalf("not reissued for the external host: %+v", third)
	}
}
