package kubelet

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rs/zerolog"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
)

// Kubelet serves one Node: it owns the pod workers of the pods bound to it.
type Kubelet struct {
	cfg     Config
	log     zerolog.Logger
	cs      kubernetes.Interface
	api     apiSource
	ipam    *ipam
	images  *imageTable
	imgDirs map[string]string
	net     podNetwork
	backoff backoffPolicy
	self    string
	dir     string // Dir/nodes/NODE

	mu      sync.Mutex
	workers map[types.UID]*podWorker
	wg      sync.WaitGroup

	// services lists Services for pods' service link variables (nil until synced).
	services corev1listers.ServiceLister

	// events records what happens to pods as a kubelet does (Created, Started,
	// Killing, BackOff, Unhealthy, Failed), for `kubectl describe` and the operator.
	events record.EventRecorder

	// attachAPI reads pods, claims and volumes for the attach/detach controller's
	// decision (attach.go); attachEvents sends its Events, as that controller.
	attachAPI    kubernetes.Interface
	attachEvents record.EventRecorder
}

// Run registers the Node, keeps it alive and runs the pods bound to it until ctx
// ends. Pods keep running when Run returns: a restarted kubelet re-adopts them from
// the state under Dir, and `localkube down` ends them with KillAll.
func Run(ctx context.Context, cfg Config, log zerolog.Logger) error {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return err
	}
	log = log.With().Str("node", cfg.NodeName).Logger()
	rc, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	rc.Timeout = 30 * time.Second
	rc.UserAgent = "localkube-kubelet/" + cfg.NodeName
	rc.QPS, rc.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	k, err := newKubelet(cfg, cs, log)
	if err != nil {
		return err
	}
	if cfg.AttachKubeconfig != "" {
		arc, err := clientcmd.BuildConfigFromFlags("", cfg.AttachKubeconfig)
		if err != nil {
			return fmt.Errorf("attachKubeconfig: %w", err)
		}
		arc.Timeout = 30 * time.Second
		arc.UserAgent = "localkube-kubelet/" + cfg.NodeName + "/attachdetach"
		if k.attachAPI, err = kubernetes.NewForConfig(arc); err != nil {
			return err
		}
	}
	return k.run(ctx)
}

func newKubelet(cfg Config, cs kubernetes.Interface, log zerolog.Logger) (*Kubelet, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	dir := nodeDir(cfg.Dir, cfg.NodeName)
	a, err := newIPAM(filepath.Join(dir, "ipam"), cfg.PodCIDR, cfg.Gateway)
	if err != nil {
		return nil, err
	}
	table, err := loadImageTable(cfg.ImageTable)
	if err != nil {
		return nil, err
	}
	imgDirs, missing, err := assembleImages(filepath.Join(dir, "images"), imageSources{
		BinDir: cfg.BinDir, MongodBin: cfg.MongodBin, MongoshDir: cfg.MongoshDir,
	})
	if err != nil {
		return nil, fmt.Errorf("assemble images: %w", err)
	}
	if len(missing) > 0 {
		log.Warn().Strs("missing", missing).Msg("built-in images lack some binaries")
	}
	gw, err := netip.ParseAddr(cfg.Gateway)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	var initial, maxDelay time.Duration
	if cfg.CrashLoopBackOff != "" {
		if initial, err = time.ParseDuration(cfg.CrashLoopBackOff); err != nil {
			return nil, fmt.Errorf("crashLoopBackOff: %w", err)
		}
	}
	if cfg.CrashLoopBackOffMax != "" {
		if maxDelay, err = time.ParseDuration(cfg.CrashLoopBackOffMax); err != nil {
			return nil, fmt.Errorf("crashLoopBackOffMax: %w", err)
		}
	}
	backoff := newBackoffPolicy(initial, maxDelay)
	k := &Kubelet{
		cfg: cfg, log: log, cs: cs, ipam: a, images: table, imgDirs: imgDirs,
		net:     podNetwork{Bridge: cfg.Bridge, Gateway: gw, PrefixLen: cfg.bridgePrefixLen()},
		backoff: backoff, self: self, dir: dir,
		workers: map[types.UID]*podWorker{},
	}
	k.api = &liveAPI{cs: cs}
	k.attachAPI = cs
	k.events = &record.FakeRecorder{} // discards; run sets the real one
	k.attachEvents = &record.FakeRecorder{}
	return k, nil
}

func (k *Kubelet) imageDir(img *Image) string {
	if filepath.IsAbs(img.Dir) {
		return img.Dir
	}
	return k.imgDirs[img.Dir]
}

func (k *Kubelet) run(ctx context.Context) error {
	if err := os.MkdirAll(filepath.Join(k.dir, "pods"), 0o755); err != nil {
		return err
	}
	var node *corev1.Node
	for {
		n, err := registerNode(ctx, k.cs, k.cfg)
		if err == nil {
			node = n
			break
		}
		k.log.Warn().Err(err).Msg("register node; retrying")
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
	k.log.Info().Msg("node registered")
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: k.cs.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	k.events = broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubelet", Host: k.cfg.NodeName})
	k.attachEvents = broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "attachdetach-controller"})
	go heartbeat(ctx, k.cs, k.cfg, node, k.log)

	srvErr := make(chan error, 1)
	if k.cfg.TLSCert != "" {
		go func() { srvErr <- k.serve(ctx) }()
	}

	factory := informers.NewSharedInformerFactoryWithOptions(k.cs, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", k.cfg.NodeName).String()
		}))
	inf := factory.Core().V1().Pods().Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.podChanged(ctx, obj, false) },
		UpdateFunc: func(_, obj any) { k.podChanged(ctx, obj, false) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			k.podChanged(ctx, obj, true)
		},
	})
	svcFactory := informers.NewSharedInformerFactory(k.cs, 0)
	svcInf := svcFactory.Core().V1().Services()
	svcSynced := svcInf.Informer().HasSynced
	svcFactory.Start(ctx.Done())
	defer svcFactory.Shutdown()
	syncCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	ok := cache.WaitForCacheSync(syncCtx.Done(), svcSynced)
	cancel()
	if !ok {
		return errors.New("service informer did not sync")
	}
	k.services = svcInf.Lister()

	factory.Start(ctx.Done())
	syncCtx, cancel = context.WithTimeout(ctx, 2*time.Minute)
	ok = cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced)
	cancel()
	if !ok {
		return errors.New("pod informer did not sync")
	}
	k.removeOrphans(inf.GetStore())

	select {
	case <-ctx.Done():
	case err := <-srvErr:
		if err != nil {
			return fmt.Errorf("kubelet server: %w", err)
		}
		<-ctx.Done()
	}
	factory.Shutdown()
	k.wg.Wait()
	return nil
}

// podChanged hands the newest pod to its worker, starting one for a new pod.
func (k *Kubelet) podChanged(ctx context.Context, obj any, deleted bool) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	k.mu.Lock()
	w := k.workers[pod.UID]
	if w == nil {
		if deleted {
			k.mu.Unlock()
			return
		}
		w = &podWorker{
			k: k, uid: string(pod.UID), dir: filepath.Join(k.dir, "pods", string(pod.UID)),
			log:  k.log.With().Str("pod", pod.Namespace+"/"+pod.Name).Str("uid", string(pod.UID)).Logger(),
			kick: make(chan struct{}, 1), ctrs: map[string]*ctr{}, pod: pod,
		}
		w.recover()
		k.workers[pod.UID] = w
		k.wg.Add(1)
		go func() {
			defer k.wg.Done()
			w.run(ctx)
			k.mu.Lock()
			delete(k.workers, pod.UID)
			k.mu.Unlock()
		}()
	}
	k.mu.Unlock()
	w.update(pod, deleted)
}

// removeOrphans kills and removes pods found on disk whose objects no longer exist:
// they were deleted while no kubelet ran.
func (k *Kubelet) removeOrphans(store cache.Store) {
	known := map[string]bool{}
	for _, obj := range store.List() {
		if p, ok := obj.(*corev1.Pod); ok {
			known[string(p.UID)] = true
		}
	}
	entries, _ := os.ReadDir(filepath.Join(k.dir, "pods"))
	for _, e := range entries {
		if known[e.Name()] {
			continue
		}
		dir := filepath.Join(k.dir, "pods", e.Name())
		w := &podWorker{k: k, uid: e.Name(), dir: dir, ctrs: map[string]*ctr{},
			log: k.log.With().Str("uid", e.Name()).Logger()}
		w.recover()
		// As a kubelet cleans up a runtime pod it had not seen: grace override 1 s.
		w.terminate(podKillGrace(nil, ptr.To(int64(1))))
		w.teardown()
		w.cleanupDisk()
		k.log.Info().Str("uid", e.Name()).Msg("removed orphaned pod")
	}
}

// liveAPI reads what pods need from the API server, each call with a deadline.
type liveAPI struct{ cs kubernetes.Interface }

func apiCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}

func (a *liveAPI) Secret(ns, name string) (*corev1.Secret, error) {
	ctx, cancel := apiCtx()
	defer cancel()
	return a.cs.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
}

func (a *liveAPI) ConfigMap(ns, name string) (*corev1.ConfigMap, error) {
	ctx, cancel := apiCtx()
	defer cancel()
	return a.cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
}

func (a *liveAPI) Token(pod *corev1.Pod, audience string, exp int64) (string, error) {
	ctx, cancel := apiCtx()
	defer cancel()
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &exp,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if audience != "" {
		req.Spec.Audiences = []string{audience}
	}
	tr, err := a.cs.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return tr.Status.Token, nil
}

func (a *liveAPI) ClaimPath(ns, claim string) (string, error) {
	ctx, cancel := apiCtx()
	defer cancel()
	pvc, err := a.cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if pvc.Spec.VolumeName == "" || pvc.Status.Phase != corev1.ClaimBound {
		return "", fmt.Errorf("persistentvolumeclaim %s/%s is not bound", ns, claim)
	}
	pv, err := a.cs.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	var p string
	switch {
	case pv.Spec.HostPath != nil:
		p = pv.Spec.HostPath.Path
	case pv.Spec.Local != nil:
		p = pv.Spec.Local.Path
	default:
		return "", fmt.Errorf("persistentvolume %s is neither hostPath nor local", pv.Name)
	}
	if err := os.MkdirAll(p, 0o777); err != nil {
		return "", err
	}
	return p, nil
}
