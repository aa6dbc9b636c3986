package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/rs/zerolog"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

// Client returns an admin client of the cluster in dir.
func Client(dir string) (*rest.Config, kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", layout{dir: dir}.kubeconfig())
	if err != nil {
		return nil, nil, err
	}
	cfg.Timeout = 30 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	return cfg, cs, err
}

// bootstrap creates the objects a cluster made by kubeadm would have and that no
// controller creates: RBAC for CoreDNS and kube-proxy, the default StorageClass and
// the kube-dns Service with an EndpointSlice leading to CoreDNS on the bridge.
// Existing objects are left as they are.
func bootstrap(ctx context.Context, l layout, opts Options) error {
	_, cs, err := Client(l.dir)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	create := func(what string, err error) error {
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s: %w", what, err)
		}
		return nil
	}
	opt := metav1.CreateOptions{}
	if err := create("clusterrole system:coredns", func() error {
		_, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "system:coredns"},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"endpoints", "services", "pods", "namespaces"}, Verbs: []string{"list", "watch"}},
				{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
			},
		}, opt)
		return err
	}()); err != nil {
		return err
	}
	bindings := []rbacv1.ClusterRoleBinding{
		{
			ObjectMeta: metav1.ObjectMeta{Name: "system:coredns"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:coredns"},
			Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: "system:coredns"}},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "localkube:kube-proxy"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "system:node-proxier"},
			Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: "system:kube-proxy"}},
		},
	}
	for i := range bindings {
		_, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &bindings[i], opt)
		if err := create("clusterrolebinding "+bindings[i].Name, err); err != nil {
			return err
		}
	}

	reclaim := corev1.PersistentVolumeReclaimDelete
	binding := storagev1.VolumeBindingWaitForFirstConsumer
	_, err = cs.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        StorageClass,
			Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"},
		},
		Provisioner:          Provisioner,
		ReclaimPolicy:        &reclaim,
		VolumeBindingMode:    &binding,
		AllowVolumeExpansion: ptr.To(true),
	}, opt)
	if err := create("storageclass "+StorageClass, err); err != nil {
		return err
	}
	if err := allowExpansion(ctx, cs); err != nil {
		return err
	}

	labels := map[string]string{"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS"}
	// Get first: creating a Service that exists fails on its taken cluster IP
	// before the name clash is noticed.
	_, err = cs.CoreV1().Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = cs.CoreV1().Services("kube-system").Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Labels: labels},
			Spec: corev1.ServiceSpec{
				ClusterIP: DNSServiceIP,
				Ports: []corev1.ServicePort{
					{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromInt32(DNSPort)},
					{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(DNSPort)},
				},
			},
		}, opt)
	}
	if err := create("service kube-dns", err); err != nil {
		return err
	}
	ready := true
	udp, tcp := corev1.ProtocolUDP, corev1.ProtocolTCP
	dnsName, dnsTCP, port := "dns", "dns-tcp", int32(DNSPort)
	_, err = cs.DiscoveryV1().EndpointSlices("kube-system").Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns-localkube", Labels: map[string]string{
			discoveryv1.LabelServiceName: "kube-dns",
			discoveryv1.LabelManagedBy:   "localkube",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{Gateway}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports: []discoveryv1.EndpointPort{
			{Name: &dnsName, Protocol: &udp, Port: &port},
			{Name: &dnsTCP, Protocol: &tcp, Port: &port},
		},
	}, opt)
	return create("endpointslice kube-dns-localkube", err)
}

// waitNodesReady waits until the named Nodes exist and report Ready.
func waitNodesReady(ctx context.Context, l layout, names []string, log zerolog.Logger) error {
	if len(names) == 0 {
		return nil
	}
	_, cs, err := Client(l.dir)
	if err != nil {
		return err
	}
	began := time.Now()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	for {
		notReady := []string{}
		for _, name := range names {
			if pid, ok := pidOf(l, "kubelet-"+name); !ok && !alive(pid) {
				return fmt.Errorf("kubelet %s exited; last lines of %s:\n%s", name, l.log("kubelet-"+name), logTail(l, "kubelet-"+name, 25))
			}
			node, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil || !nodeReady(node) {
				notReady = append(notReady, name)
			}
		}
		if len(notReady) == 0 {
			log.Info().Str("step", "nodes").Int("nodes", len(names)).Dur("took", time.Since(began)).Msg("all nodes Ready")
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("nodes not Ready: %v", notReady)
		case <-time.After(300 * time.Millisecond):
		}
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Resolver returns a resolver that asks the cluster's CoreDNS, so that host
// processes (tests, tools) can resolve names such as
// "svc.ns.svc.cluster.local" the way pods do.
func Resolver() *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			d := net.Dialer{Timeout: 2 * time.Second}
			return d.DialContext(ctx, network, net.JoinHostPort(Gateway, itoa(DNSPort)))
		},
	}
}

// waitDNS waits until CoreDNS resolves the kubernetes Service to its cluster IP.
func waitDNS(ctx context.Context, l layout) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var last error
	for {
		if pid, ok := pidOf(l, "coredns"); !ok && !alive(pid) {
			return fmt.Errorf("coredns exited; last lines of %s:\n%s", l.log("coredns"), logTail(l, "coredns", 25))
		}
		qctx, qcancel := context.WithTimeout(ctx, 2*time.Second)
		addrs, err := Resolver().LookupHost(qctx, "kubernetes.default.svc."+ClusterDomain)
		qcancel()
		if err == nil && len(addrs) == 1 && addrs[0] == KubernetesServiceIP {
			return nil
		}
		last = err
		if err == nil {
			last = fmt.Errorf("kubernetes.default resolved to %v", addrs)
		}
		select {
		case <-ctx.Done():
			return errors.Join(fmt.Errorf("CoreDNS does not answer: %w", last), fmt.Errorf("last lines of coredns log:\n%s", logTail(l, "coredns", 25)))
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// waitPodsAdmitted waits until a pod in namespace default passes admission (a
// server-side dry run): the controller manager has made the "default"
// ServiceAccount and the API server's admission sees it. Until then every pod
// creation fails, and a cluster that refuses pods is not ready.
func waitPodsAdmitted(ctx context.Context, l layout) error {
	_, cs, err := Client(l.dir)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "localkube-admission-probe"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: "probe"}}},
	}
	for {
		_, err := cs.CoreV1().Pods("default").Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil || apierrors.IsAlreadyExists(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pods are not admitted: %w; last lines of the controller manager log:\n%s", err, logTail(l, "kube-controller-manager", 25))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// allowExpansion turns on allowVolumeExpansion (a mutable field) in the class of
// a cluster made before the provisioner could resize.
func allowExpansion(ctx context.Context, cs kubernetes.Interface) error {
	sc, err := cs.StorageV1().StorageClasses().Get(ctx, StorageClass, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read storageclass %s: %w", StorageClass, err)
	}
	if sc.Provisioner != Provisioner || ptr.Deref(sc.AllowVolumeExpansion, false) {
		return nil
	}
	sc.AllowVolumeExpansion = ptr.To(true)
	if _, err := cs.StorageV1().StorageClasses().Update(ctx, sc, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("allow expansion in storageclass %s: %w", StorageClass, err)
	}
	return nil
}
