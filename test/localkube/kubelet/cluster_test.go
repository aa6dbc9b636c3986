package kubelet

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The API-level tests run one etcd, one kube-apiserver (binaries from
// $LOCALKUBE_BIN) and this package's kubelet in-process, on a bridge of their own
// (lkt0, 10.247.0.0/16) so that they never meet a cluster of `localkube up`.
const (
	testBridge  = "lkt0"
	testGateway = "10.247.0.1"
	testPodCIDR = "10.247.1.0/24"
	testNode    = "kubelet-test-1"
	testNS      = "kt"
)

type sharedEnv struct {
	root    string
	cs      kubernetes.Interface
	rest    *rest.Config
	cfg     Config
	procs   []*exec.Cmd
	cancel  context.CancelFunc
	done    chan error
	bridge  bool
	err     error
	logFile *os.File
	lock    *os.File // held while this binary owns the test bridge
}

var (
	sharedOnce sync.Once
	shared     *sharedEnv
)

// cluster returns the shared test cluster, skipping the test when no control-plane
// binaries were given.
func cluster(t *testing.T) *sharedEnv {
	t.Helper()
	if os.Getenv("LOCALKUBE_BIN") == "" {
		t.Skip("LOCALKUBE_BIN is unset: set it to a directory with etcd and kube-apiserver to run the API-level kubelet tests")
	}
	if os.Geteuid() != 0 {
		t.Skip("the kubelet tests need root")
	}
	sharedOnce.Do(func() {
		shared = &sharedEnv{}
		shared.err = shared.start()
	})
	if shared.err != nil {
		t.Fatalf("test cluster: %v", shared.err)
	}
	return shared
}

func stopShared() {
	if shared != nil {
		shared.stop()
	}
}

// machineLock serialises test binaries of this package on one machine: they share
// the bridge name and the pod range, so a second run waits for the first.
func machineLock() (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "localkube-kubelet-test.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

func (e *sharedEnv) start() error {
	lock, err := machineLock()
	if err != nil {
		return err
	}
	e.lock = lock
	bin := os.Getenv("LOCALKUBE_BIN")
	root, err := os.MkdirTemp("", "lk-kubelet-test-")
	if err != nil {
		return err
	}
	e.root = root
	pki, err := newTestPKI()
	if err != nil {
		return err
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(root, name)
		_ = os.WriteFile(p, b, 0o600)
		return p
	}
	caFile := write("ca.crt", pki.caPEM)
	kcCert, kcKey, err := pki.issue("kube-apiserver-kubelet-client", nil, true)
	if err != nil {
		return err
	}
	kubeletCert, kubeletKey, err := pki.issue(testNode, []net.IP{net.ParseIP(testGateway)}, false)
	if err != nil {
		return err
	}
	saKey, saPub, err := rsaKeyPair()
	if err != nil {
		return err
	}
	token := "admin-token-for-tests"
	write("tokens.csv", []byte(token+",admin,admin,system:masters\n"))
	etcdPort, _ := freePort()
	peerPort, _ := freePort()
	apiPort, _ := freePort()
	kubeletPort, _ := freePort()
	e.logFile, _ = os.Create(filepath.Join(root, "control-plane.log"))
	startProc := func(args ...string) error {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Stdout, cmd.Stderr = e.logFile, e.logFile
		// No Pdeathsig: it fires when the forking OS thread ends, and the kubelet ends
		// the threads it moved into pod network namespaces.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			return err
		}
		e.procs = append(e.procs, cmd)
		return nil
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdPort)
	if err := startProc(filepath.Join(bin, "etcd"), "--data-dir="+filepath.Join(root, "etcd"),
		"--listen-client-url="+etcdURL, "--listen-peer-url=http://127.0.0.1:"+strconv.Itoa(peerPort)); err != nil {
		return err
	}
	if err := startProc(filepath.Join(bin, "kube-apiserver"),
		"--etcd-servers="+etcdURL, "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--endpoint-reconciler-type=none", "--secure-port="+strconv.Itoa(apiPort),
		"--cert-dir="+filepath.Join(root, "apiserver-certs"),
		"--token-auth-file="+filepath.Join(root, "tokens.csv"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+write("sa.pub", saPub),
		"--service-account-signing-key-file="+write("sa.key", saKey),
		"--service-cluster-ip-range=10.96.0.0/16", "--authorization-mode=RBAC", "--allow-privileged=true",
		"--kubelet-client-certificate="+write("kc.crt", kcCert), "--kubelet-client-key="+write("kc.key", kcKey),
		"--kubelet-certificate-authority="+caFile, "--kubelet-preferred-address-types=InternalIP",
		"--profiling=false"); err != nil {
		return err
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["t"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:" + strconv.Itoa(apiPort), InsecureSkipTLSVerify: true}
	kc.AuthInfos["t"] = &clientcmdapi.AuthInfo{Token: token}
	kc.Contexts["t"] = &clientcmdapi.Context{Cluster: "t", AuthInfo: "t"}
	kc.CurrentContext = "t"
	kcPath := filepath.Join(root, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, kcPath); err != nil {
		return err
	}
	e.rest, err = clientcmd.BuildConfigFromFlags("", kcPath)
	if err != nil {
		return err
	}
	e.rest.Timeout = 30 * time.Second
	e.cs = kubernetes.NewForConfigOrDie(e.rest)
	deadline := time.Now().Add(90 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		body, err := e.cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		cancel()
		if err == nil && bytes.Equal(body, []byte("ok")) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver not ready: %w (see %s)", err, e.logFile.Name())
		}
		time.Sleep(300 * time.Millisecond)
	}
	gw := netip.MustParseAddr(testGateway)
	created, err := ensureBridge(context.Background(), testBridge, gw, 16)
	if err != nil {
		return err
	}
	e.bridge = created
	e.cfg = Config{
		NodeName: testNode, Dir: filepath.Join(root, "cluster"), Kubeconfig: kcPath,
		NodeIP: testGateway, Port: kubeletPort, Bridge: testBridge, Gateway: testGateway,
		PodCIDR: testPodCIDR, ClusterDNS: "10.96.0.10", ClusterDomain: "cluster.local",
		APIServerHost: testGateway, APIServerPort: apiPort,
		TLSCert: write("kubelet.crt", kubeletCert), TLSKey: write("kubelet.key", kubeletKey), ClientCA: caFile,
		CrashLoopBackOff: "5s", // the first restart is at once whatever this says
		// What the built-in images hold, as make test provides them.
		BinDir: os.Getenv("LOCALKUBE_BIN_DIR"), MongoshDir: os.Getenv("MONGOSH_DIR"), MongodBin: os.Getenv("MONGOD_BIN"),
	}
	ctx := context.Background()
	if err := e.prepareNamespace(ctx, testNS, pki.caPEM); err != nil {
		return err
	}
	return e.startKubelet()
}

func (e *sharedEnv) startKubelet() error {
	logf, _ := os.OpenFile(filepath.Join(e.root, "kubelet.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	log := zerolog.New(logf).With().Timestamp().Logger()
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	e.done = make(chan error, 1)
	go func() { e.done <- Run(ctx, e.cfg, log) }()
	// Wait until the Node is registered.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		cctx, c := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := e.cs.CoreV1().Nodes().Get(cctx, testNode, metav1.GetOptions{})
		c()
		if err == nil {
			return nil
		}
		select {
		case err := <-e.done:
			return fmt.Errorf("kubelet ended: %w", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("node %s not registered", testNode)
}

// stopKubelet ends the kubelet process part, leaving pods running.
func (e *sharedEnv) stopKubelet() error {
	e.cancel()
	select {
	case err := <-e.done:
		return err
	case <-time.After(30 * time.Second):
		return fmt.Errorf("kubelet did not stop")
	}
}

func (e *sharedEnv) prepareNamespace(ctx context.Context, ns string, ca []byte) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	objs := []func() error{
		func() error {
			_, err := e.cs.CoreV1().Namespaces().Create(cctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := e.cs.CoreV1().ServiceAccounts(ns).Create(cctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			// Exists before the kubelet starts, so its service link variables are
			// certain to be known when a test's pod starts.
			_, err := e.cs.CoreV1().Services(ns).Create(cctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db-svc"},
				Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "mongo", Port: 27017}}}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := e.cs.CoreV1().ConfigMaps(ns).Create(cctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt"},
				Data: map[string]string{"ca.crt": string(ca)}}, metav1.CreateOptions{})
			return err
		},
	}
	for _, f := range objs {
		if err := f(); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

func (e *sharedEnv) stop() {
	if e.cancel != nil {
		_ = e.stopKubelet() // at exit: how the kubelet ended no longer matters
	}
	if e.cfg.Dir != "" {
		_ = KillAll(e.cfg.Dir)
		killPauses(e.cfg.Dir)
	}
	for i := len(e.procs) - 1; i >= 0; i-- {
		p := e.procs[i]
		_ = syscall.Kill(-p.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-p.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	if e.bridge {
		_ = runIP(context.Background(), "", "link del "+testBridge+"\n")
	}
	if os.Getenv("LOCALKUBE_KEEP_TEST_DIR") == "" && e.root != "" {
		_ = os.RemoveAll(e.root)
	}
	if e.lock != nil {
		_ = e.lock.Close() // releases the flock
	}
}
