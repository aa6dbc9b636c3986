package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"go.mongodb.org/mongo-driver/v2/bson"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/test/localkube/harness"
)

// spec.externalAccess (issue 15): a TLS replica set with NodePort access
// and the members' external DNS names given in the spec. The operator makes
// one NodePort Service per member, the config carries each member's
// horizon (name:nodePort), the status has the external connection string,
// and a client that reaches a member with the external name as TLS SNI is
// answered by hello with the external hosts (the certificate names them).
// The names do not resolve here: the test dials the member's own address
// and sends the external name as SNI, as a client outside would after DNS.
func TestExternalAccessNodePortHorizons(t *testing.T) {
	t.Parallel()
	env := harness.Cluster(t)
	deployOperator(t, env)
	ctx := context.Background()
	m := sample(t, env, "mgors-dev-1.yaml", func(m *v1alpha1.Mgors) {
		m.Name, m.Spec.Members = "ext", 2
		m.Spec.Storage.Reclaim = v1alpha1.VolumeDelete
		m.Spec.TLS = &v1alpha1.TLSSpec{Mode: "requireTLS"}
		m.Spec.ExternalAccess = &v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalNodePort,
			Members: []v1alpha1.ExternalMember{{Ordinal: 0, Host: "db-0.example.test"}, {Ordinal: 1, Host: "db-1.example.test"}}}
	})
	created := time.Now()
	if _, err := mgorsClient(t, env).Mgorses(env.Namespace).Create(ctx, m, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = mgorsClient(t, env).Mgorses(env.Namespace).Delete(context.Background(), m.Name, metav1.DeleteOptions{})
	})
	got := waitMgors(t, env, m.Name, "Healthy with external access", 3*time.Minute, func(m *v1alpha1.Mgors) bool {
		return m.Status.Phase == v1alpha1.PhaseHealthy && m.Status.Ready == "2/2" && m.Status.ExternalConnectionString != ""
	})
	t.Logf("Healthy with external access %s after the create: %s", time.Since(created).Round(time.Second), got.Status.ExternalConnectionString)
	var want []string
	for i := range 2 {
		pod := got.PodName(int32(i))
		svc, err := env.Client.CoreV1().Services(env.Namespace).Get(ctx, kube.ExternalServiceName(pod), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if svc.Spec.Type != "NodePort" || svc.Spec.Ports[0].NodePort == 0 || svc.Spec.Selector["statefulset.kubernetes.io/pod-name"] != pod {
			t.Fatalf("Service %s: %+v", svc.Name, svc.Spec)
		}
		want = append(want, net.JoinHostPort(got.ExternalHost(int32(i)), strconv.Itoa(int(svc.Spec.Ports[0].NodePort))))
	}
	if s := got.Status.ExternalConnectionString; !strings.HasPrefix(s, "mongodb://"+strings.Join(want, ",")+"/?replicaSet=ext") || !strings.Contains(s, "tls=true") {
		t.Errorf("external connection string %q, want hosts %v", s, want)
	}

	sec, err := env.Client.CoreV1().Secrets(env.Namespace).Get(ctx, kube.CertificateSecretName(got), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(sec.Data[kube.TLSCAKey]) {
		t.Fatal("the certificate Secret has no ca.crt")
	}
	// hello through the horizon: dial member 0, send its external name.
	hello := func(sni string) ([]string, error) {
		o := options.Client().SetHosts([]string{got.MemberHost(0, "cluster.local")}).SetDirect(true).
			SetServerSelectionTimeout(10 * time.Second).
			SetDialer(&net.Dialer{Resolver: env.Resolver(), Timeout: 10 * time.Second}).
			SetTLSConfig(&tls.Config{RootCAs: pool, ServerName: sni, MinVersion: tls.VersionTLS12})
		c, err := driver.Connect(o)
		if err != nil {
			return nil, err
		}
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		defer func() { _ = c.Disconnect(cctx) }()
		var r struct {
			Hosts    []string `bson:"hosts"`
			Passives []string `bson:"passives"` // a two-member set's second member has no vote
		}
		err = c.Database("admin").RunCommand(cctx, bson.D{{Key: "hello", Value: 1}}).Decode(&r)
		return append(r.Hosts, r.Passives...), err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		hosts, err := hello("db-0.example.test")
		if err == nil && strings.Join(hosts, ",") == strings.Join(want, ",") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hello through the horizon: %v %v, want %v", hosts, err, want)
		}
		time.Sleep(2 * time.Second)
	}
	if hosts, err := hello(""); err != nil || strings.Contains(strings.Join(hosts, ","), "example.test") {
		t.Errorf("hello by the internal name: %v %v, want the internal hosts", hosts, err)
	}

	// Removing spec.externalAccess removes the Services and the horizons.
	mustKubectl(t, env, "", "-n", env.Namespace, "patch", "mgors", m.Name, "--type=json",
		"-p", `[{"op":"remove","path":"/spec/externalAccess"}]`)
	waitMgors(t, env, m.Name, "Healthy without external access", 2*time.Minute, func(m *v1alpha1.Mgors) bool {
		return m.Status.Phase == v1alpha1.PhaseHealthy && m.Status.ExternalConnectionString == "" && m.Status.ObservedGeneration == m.Generation
	})
	deadline = time.Now().Add(time.Minute)
	for {
		hosts, err := hello("db-0.example.test")
		left, _ := env.Client.CoreV1().Services(env.Namespace).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelComponent + "=" + kube.ComponentExternal})
		if err == nil && !strings.Contains(strings.Join(hosts, ","), "example.test") && len(left.Items) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after removal: hello %v %v, %d external Services left", hosts, err, len(left.Items))
		}
		time.Sleep(2 * time.Second)
	}
}

// spec.externalAccess with type LoadBalancer and no members[] hosts: the
// external addresses are the load balancers' host names (kube.ExternalAddress
// rule 2). localkube's load balancer (docs/design/localkube.md, "Load
// balancer") gives each member's Service an address of its own on the host's
// loopback and the host name <svc>.<ns>.lb.localkube, which nothing resolves:
// the test's dialer maps each host name to its ingress IP, as a client's DNS
// would, and refuses every other host, so that every connection the driver
// makes goes through a load balancer.
//
// The certificate: the operator's names the internal names (and members[]
// hosts, none here); a load balancer's host name is not known when it is
// issued (external-access.md, "Certificates"). A client that verifies the
// host name it dialled would refuse it; naming the host names in members[]
// once they are known reissues the certificate and rolls the members, which
// is the production answer and not what this test is about. So the client
// sends the load balancer's host name as SNI (mongod picks the horizon by it)
// and verifies the certificate for real, against the set's CA, for the
// internal name of the member behind that load balancer (the pod its Service
// selects): the chain and the identity are checked, only the name looked at is
// the internal one.
func TestExternalAccessLoadBalancerHorizons(t *testing.T) {
	t.Parallel()
	env := harness.Cluster(t)
	deployOperator(t, env)
	ctx := context.Background()
	m := sample(t, env, "mgors-dev-1.yaml", func(m *v1alpha1.Mgors) {
		m.Name, m.Spec.Members = "lbx", 3
		m.Spec.Storage.Reclaim = v1alpha1.VolumeDelete
		m.Spec.TLS = &v1alpha1.TLSSpec{Mode: "requireTLS"}
		m.Spec.ExternalAccess = &v1alpha1.ExternalAccessSpec{Type: v1alpha1.ExternalLoadBalancer}
	})
	created := time.Now()
	if _, err := mgorsClient(t, env).Mgorses(env.Namespace).Create(ctx, m, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = mgorsClient(t, env).Mgorses(env.Namespace).Delete(context.Background(), m.Name, metav1.DeleteOptions{})
	})
	got := waitMgors(t, env, m.Name, "Healthy with external access", 4*time.Minute, func(m *v1alpha1.Mgors) bool {
		return m.Status.Phase == v1alpha1.PhaseHealthy && m.Status.Ready == "3/3" && m.Status.ExternalConnectionString != ""
	})
	t.Logf("Healthy with external access %s after the create: %s", time.Since(created).Round(time.Second), got.Status.ExternalConnectionString)

	// Each member's Service is a load balancer with an address and a host name.
	ingressIP := map[string]string{} // LB host name -> ingress IP
	internal := map[string]string{}  // LB host name -> the member's internal name
	var want []string                // the members' horizons, by ordinal
	for i := range int32(3) {
		pod := got.PodName(i)
		svc, err := env.Client.CoreV1().Services(env.Namespace).Get(ctx, kube.ExternalServiceName(pod), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		in := svc.Status.LoadBalancer.Ingress
		if svc.Spec.Type != "LoadBalancer" || svc.Spec.Selector["statefulset.kubernetes.io/pod-name"] != pod || len(in) != 1 ||
			in[0].Hostname != svc.Name+"."+env.Namespace+".lb.localkube" || in[0].IP == "" {
			t.Fatalf("Service %s: %+v %+v", svc.Name, svc.Spec, svc.Status)
		}
		ingressIP[in[0].Hostname] = in[0].IP
		host, _, _ := net.SplitHostPort(got.MemberHost(i, "cluster.local"))
		internal[in[0].Hostname] = host
		want = append(want, net.JoinHostPort(in[0].Hostname, "27017"))
	}
	if s := got.Status.ExternalConnectionString; !strings.HasPrefix(s, "mongodb://"+strings.Join(want, ",")+"/?replicaSet=lbx") || !strings.Contains(s, "tls=true") {
		t.Errorf("external connection string %q, want hosts %v", s, want)
	}

	// The config's horizons are the load balancers' host names (read through
	// the internal names).
	inside := adminClient(t, env, got, true)
	defer func() { _ = inside.Disconnect(ctx) }()
	horizons := func() []string {
		var r struct {
			Config struct {
				Members []struct {
					Horizons map[string]string `bson:"horizons"`
				} `bson:"members"`
			} `bson:"config"`
		}
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if err := inside.Database("admin").RunCommand(cctx, bson.D{{Key: "replSetGetConfig", Value: 1}}).Decode(&r); err != nil {
			return []string{err.Error()}
		}
		var out []string
		for _, mem := range r.Config.Members {
			out = append(out, mem.Horizons["external"])
		}
		return out
	}
	if h := horizons(); strings.Join(h, ",") != strings.Join(want, ",") {
		t.Fatalf("config horizons %v, want %v", h, want)
	}

	// A driver outside, through the load balancers only.
	sec, err := env.Client.CoreV1().Secrets(env.Namespace).Get(ctx, kube.CertificateSecretName(got), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(sec.Data[kube.TLSCAKey]) {
		t.Fatal("the certificate Secret has no ca.crt")
	}
	dialer := &lbDialer{ingress: ingressIP}
	admin, err := env.Client.CoreV1().Secrets(env.Namespace).Get(ctx, got.AdminSecretName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o := options.Client().ApplyURI(got.Status.ExternalConnectionString).
		SetAuth(options.Credential{AuthSource: "admin", Username: string(admin.Data[v1alpha1.AdminUsernameSecretKey]),
			Password: string(admin.Data[v1alpha1.AdminPasswordSecretKey])}).
		SetDialer(dialer).
		SetTLSConfig(&tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true, // verified below, for the internal name
			VerifyConnection: func(cs tls.ConnectionState) error {
				name, ok := internal[cs.ServerName]
				if !ok || len(cs.PeerCertificates) == 0 {
					return fmt.Errorf("SNI %q is not a load balancer's host name", cs.ServerName)
				}
				inter := x509.NewCertPool()
				for _, c := range cs.PeerCertificates[1:] {
					inter.AddCert(c)
				}
				_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, DNSName: name})
				return err
			}}).
		SetServerSelectionTimeout(30 * time.Second).SetTimeout(30 * time.Second).SetWriteConcern(writeconcern.Majority())
	outside, err := driver.Connect(o)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = outside.Disconnect(ctx) }()
	var hello struct {
		Hosts []string `bson:"hosts"`
		Me    string   `bson:"me"`
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := outside.Database("admin").RunCommand(cctx, bson.D{{Key: "hello", Value: 1}}).Decode(&hello); err != nil {
		t.Fatal(err)
	}
	if strings.Join(hello.Hosts, ",") != strings.Join(want, ",") || !slices.Contains(want, hello.Me) {
		t.Errorf("hello through a load balancer: hosts %v, me %s; want %v", hello.Hosts, hello.Me, want)
	}
	items := outside.Database("app").Collection("external")
	if _, err := items.InsertOne(cctx, bson.D{{Key: "_id", Value: "through-the-lb"}, {Key: "n", Value: 1}}); err != nil {
		t.Fatalf("w:majority write through the load balancers: %v", err)
	}
	var doc struct {
		N int `bson:"n"`
	}
	if err := items.FindOne(cctx, bson.D{{Key: "_id", Value: "through-the-lb"}}).Decode(&doc); err != nil || doc.N != 1 {
		t.Fatalf("read back through the load balancers: %+v %v", doc, err)
	}
	// A secondary, through its own load balancer.
	secondary := outside.Database("app", options.Database().SetReadPreference(readpref.Secondary())).Collection("external")
	deadline := time.Now().Add(time.Minute)
	for {
		n, err := secondary.CountDocuments(cctx, bson.D{{Key: "_id", Value: "through-the-lb"}})
		if err == nil && n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("read from a secondary through its load balancer: %d %v", n, err)
		}
		time.Sleep(time.Second)
	}
	dialled, refused := dialer.seen()
	if len(refused) > 0 || len(dialled) != 3 {
		t.Errorf("the driver dialled %v through the load balancers and tried %v besides; want the three host names only", dialled, refused)
	}
	t.Logf("the driver dialled only the load balancers' host names: %v", dialled)
	mongoshThroughLoadBalancer(t, got.Status.ExternalConnectionString, ingressIP, internal, sec.Data[kube.TLSCAKey], admin.Data)

	// Removing spec.externalAccess removes the Services, their load balancers
	// and the horizons.
	mustKubectl(t, env, "", "-n", env.Namespace, "patch", "mgors", m.Name, "--type=json",
		"-p", `[{"op":"remove","path":"/spec/externalAccess"}]`)
	waitMgors(t, env, m.Name, "Healthy without external access", 2*time.Minute, func(m *v1alpha1.Mgors) bool {
		return m.Status.Phase == v1alpha1.PhaseHealthy && m.Status.ExternalConnectionString == "" && m.Status.ObservedGeneration == m.Generation
	})
	deadline = time.Now().Add(time.Minute)
	for {
		h := horizons()
		left, _ := env.Client.CoreV1().Services(env.Namespace).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelComponent + "=" + kube.ComponentExternal})
		open := 0
		for _, ip := range ingressIP {
			if c, err := net.DialTimeout("tcp", net.JoinHostPort(ip, "27017"), time.Second); err == nil {
				_ = c.Close()
				open++
			}
		}
		if strings.Join(h, "") == "" && len(h) == 3 && len(left.Items) == 0 && open == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after removal: horizons %v, %d external Services left, %d load-balancer addresses still open", h, len(left.Items), open)
		}
		time.Sleep(2 * time.Second)
	}
}

// lbDialer resolves the load balancers' host names to their ingress IPs and
// refuses any other host, recording both.
type lbDialer struct {
	ingress map[string]string
	mu      sync.Mutex
	dialled map[string]bool
	refused map[string]bool
}

func (d *lbDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	ip, ok := d.ingress[host]
	if d.dialled == nil {
		d.dialled, d.refused = map[string]bool{}, map[string]bool{}
	}
	if ok {
		d.dialled[addr] = true
	} else {
		d.refused[addr] = true
	}
	d.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%s is not a load balancer's host name", host)
	}
	return (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, network, net.JoinHostPort(ip, port))
}

func (d *lbDialer) seen() (dialled, refused []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for a := range d.dialled {
		dialled = append(dialled, a)
	}
	for a := range d.refused {
		refused = append(refused, a)
	}
	slices.Sort(dialled)
	slices.Sort(refused)
	return dialled, refused
}

// lbPreload makes mongosh (the MongoDB Node driver's tls.connect) do what the
// Go test's dialer and VerifyConnection do: resolve a load balancer's host
// name to its ingress IP, send the host name as SNI, and check the
// certificate (against --tlsCAFile, by Node) for the internal name of the
// member behind it.
const lbPreload = `
const tls = require("tls");
const lbs = JSON.parse(process.env.LB_HOSTS);
const connect = tls.connect;
tls.connect = function (...args) {
  const o = args[0];
  const lb = o && typeof o === "object" ? lbs[o.host] : undefined;
  if (lb) {
    o.servername = o.host;
    o.lookup = (host, opts, cb) => {
      if (typeof opts === "function") { cb = opts; opts = {}; }
      if (opts && opts.all) cb(null, [{ address: lb.ip, family: 4 }]); else cb(null, lb.ip, 4);
    };
    o.checkServerIdentity = (host, cert) => tls.checkServerIdentity(lb.internal, cert);
  }
  return connect.apply(this, args);
};
`

// mongoshThroughLoadBalancer runs mongosh (MONGOSH_DIR) against the external
// connection string: hello through a load balancer answers the external
// hosts, and a w:majority write is read back. The credentials reach the
// script through its environment, never its command line.
func mongoshThroughLoadBalancer(t *testing.T, uri string, ingressIP, internal map[string]string, caPEM []byte, admin map[string][]byte) {
	t.Helper()
	dir := os.Getenv("MONGOSH_DIR")
	js := filepath.Join(dir, "node_modules", "mongosh", "bin", "mongosh.js")
	node, err := exec.LookPath("node")
	if dir == "" || err != nil {
		t.Log("MONGOSH_DIR or node missing: the mongosh check is skipped")
		return
	}
	if _, err := os.Stat(js); err != nil {
		t.Logf("no mongosh under MONGOSH_DIR (%v): the mongosh check is skipped", err)
		return
	}
	tmp := t.TempDir()
	ca, preload := filepath.Join(tmp, "ca.crt"), filepath.Join(tmp, "lb.js")
	lbs := map[string]map[string]string{}
	for host, ip := range ingressIP {
		lbs[host] = map[string]string{"ip": ip, "internal": internal[host]}
	}
	hosts, err := json.Marshal(lbs)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ca, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(preload, []byte(lbPreload), 0o600); err != nil {
		t.Fatal(err)
	}
	script := `db.getSiblingDB("admin").auth(process.env.LB_USER, process.env.LB_PASSWORD);
print("HOSTS " + db.hello().hosts.join(","));
const c = db.getSiblingDB("app").external;
c.insertOne({_id: "mongosh", n: 2}, {writeConcern: {w: "majority"}});
print("READ " + c.findOne({_id: "mongosh"}).n);`
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, js, "--quiet", "--norc", "--tlsCAFile", ca, uri, "--eval", script)
	cmd.Env = append(os.Environ(), "MONGOSH_NO_UPDATE_CHECK=1", "DO_NOT_TRACK=1", "NODE_OPTIONS=--require "+preload,
		"LB_HOSTS="+string(hosts), "LB_USER="+string(admin[v1alpha1.AdminUsernameSecretKey]),
		"LB_PASSWORD="+string(admin[v1alpha1.AdminPasswordSecretKey]))
	out, err := cmd.CombinedOutput()
	var want []string
	for host := range ingressIP {
		want = append(want, net.JoinHostPort(host, "27017"))
	}
	slices.Sort(want)
	if err != nil || !strings.Contains(string(out), "HOSTS "+strings.Join(want, ",")) || !strings.Contains(string(out), "READ 2") {
		t.Errorf("mongosh through the load balancers: %v\n%s", err, out)
		return
	}
	t.Logf("mongosh through the load balancers: %s", strings.Join(strings.Fields(string(out)), " "))
}
