package actors

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	ktypes "k8s.io/apimachinery/pkg/types"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/mongo"
)

// AdminUsername is the name of the admin user the operator creates when the
// admin Secret names none.
const AdminUsername = "admin"

// KubeWorld is the World of a real cluster: the Kubernetes API through kube,
// and the members through mongo, authenticated as the operator's own user
// once it exists, and before that with the cluster's keyfile as mongod's
// internal user (which works before any user exists, so the first users are
// created without the localhost exception). world_users.go has the users.
// The observation reads the Kubernetes objects from Cache only (the shared
// informer caches, docs/design/lifecycle.md); writes go through Applier and
// Status, each only when something must change.
type KubeWorld struct {
	// Cache is what the observation reads: kube.Informers in the operator.
	Cache    kube.Reader
	Applier  *kube.Applier
	Status   *kube.StatusWriter
	Recorder *kube.Recorder
	// Mongo are the options of each cluster's admin client (resolver, timeout);
	// the credentials are filled in from the cluster's Secrets.
	Mongo         mongo.Options
	ClusterDomain string
	// NewAdmin builds an admin client; mongo.NewClient when nil (tests swap it).
	NewAdmin func(mongo.Options) mongo.Admin

	mu     sync.Mutex
	admins map[string]cachedAdmin // by Mgors UID
	// wakers wake the actors whose members moved, by Mgors UID (Watch).
	wakers map[string]func()
	// opened remembers, by Secret, the resourceVersion whose password last
	// opened its user and when (world_users.go).
	opened map[string]openedAt
	// expectations are what the cache must show after the World's last
	// write to each cluster, by Mgors UID (world_expect.go).
	expectations map[ktypes.UID]expectation
}

// cachedAdmin is a cluster's admin client and the credentials it was built
// with: the identity and the resourceVersion of the Secret they came from.
type cachedAdmin struct {
	admin mongo.Admin
	key   string
}

var _ World = (*KubeWorld)(nil)

// admin returns the cluster's admin client for auth, built from the keyfile
// Secret or from the operator's Secret (read each time: a changed Secret
// is a new client, and the old one is closed).
func (w *KubeWorld) admin(ctx context.Context, m *v1alpha1.Mgors, auth Auth) (mongo.Admin, error) {
	opts, key, err := w.memberOptions(ctx, m, auth)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	c, ok := w.admins[string(m.UID)]
	if ok && c.key == key {
		return c.admin, nil
	}
	if ok {
		go func() { _ = c.admin.Close(context.Background()) }()
	}
	opts.Changed = w.changed(string(m.UID))
	newAdmin := w.NewAdmin
	if newAdmin == nil {
		newAdmin = func(o mongo.Options) mongo.Admin { return mongo.NewClient(o) }
	}
	a := newAdmin(opts)
	if w.admins == nil {
		w.admins = map[string]cachedAdmin{}
	}
	w.admins[string(m.UID)] = cachedAdmin{admin: a, key: key}
	return a, nil
}

// memberOptions are the options of a client of m's members authenticated as
// auth (the credentials from the keyfile or the operator's Secret, the TLS
// config from the CA Secret), and a key that changes with them.
func (w *KubeWorld) memberOptions(ctx context.Context, m *v1alpha1.Mgors, auth Auth) (mongo.Options, string, error) {
	name := m.KeyfileSecretName()
	if auth == AuthOperator {
		name = m.OperatorSecretName()
	}
	sec, err := w.Cache.SecretData(ctx, m.Namespace, name)
	if err != nil {
		return mongo.Options{}, "", fmt.Errorf("reading the Secret %s: %w", name, err)
	}
	var cred mongo.Credentials
	if auth == AuthOperator {
		u, pw := userAndPassword(sec, mongo.OperatorUser)
		cred = mongo.AdminUser(u, pw)
	} else {
		// Its first key: while a key rotates the Secret holds two, and the
		// members that run either step's keyfile accept the first.
		keys, err := kube.KeyfileKeys(sec.Data[v1alpha1.KeyfileSecretKey])
		if err != nil {
			return mongo.Options{}, "", fmt.Errorf("the keyfile Secret %s, key %q: %w", name, v1alpha1.KeyfileSecretKey, err)
		}
		cred = mongo.KeyfileAuth([]byte(keys[0]))
	}
	tlsConf, tlsKey, err := w.clientTLS(ctx, m)
	if err != nil {
		return mongo.Options{}, "", err
	}
	opts := w.Mongo
	opts.Credentials, opts.TLS = cred, tlsConf
	return opts, auth.String() + "@" + sec.ResourceVersion + tlsKey, nil
}

// Forget closes the admin client of a cluster that is gone, and stops
// waking its actor.
func (w *KubeWorld) Forget(m *v1alpha1.Mgors) {
	w.mu.Lock()
	c, ok := w.admins[string(m.UID)]
	delete(w.admins, string(m.UID))
	delete(w.expectations, m.UID)
	delete(w.wakers, string(m.UID))
	w.mu.Unlock()
	if ok {
		_ = c.admin.Close(context.Background())
	}
}

// Observe reads the cluster's objects and asks every member, concurrently,
// each call bounded by ctx, authenticated as auth.
func (w *KubeWorld) Observe(ctx context.Context, m *v1alpha1.Mgors, desired []mongo.DesiredMember, auth Auth) (Observation, error) {
	o := Observation{Replicas: -1, ArbiterReplicas: -1, Budget: -1, Pods: map[string]PodView{}, Members: map[string]MemberView{},
		ForceAnnotation: m.Annotations[ForceAnnotation], ReinitiateApproval: m.Annotations[ReinitiateAnnotation],
		RotateKeyfile: m.Annotations[RotateKeyfileAnnotation], RotateCA: m.Annotations[RotateCAAnnotation]}
	if err := w.awaitOwnWrite(ctx, m); err != nil {
		return o, err
	}
	if err := w.observeObjects(m, &o); err != nil {
		return o, err
	}
	w.observeBackups(m, &o)
	w.observeRestores(m, &o)
	if err := w.observeCertificate(ctx, m, &o); err != nil {
		return o, err
	}
	w.observeKeyfile(ctx, m, &o)
	problems, err := kube.Diagnose(w.Cache, m)
	if err != nil {
		return o, fmt.Errorf("diagnosing: %w", err)
	}
	for _, p := range problems {
		o.Problems = append(o.Problems, Problem{Reason: p.Reason, Message: p.Message})
	}
	if o.Replicas < 0 {
		return o, nil // nothing runs yet
	}
	users := w.readUsers(ctx, m)
	o.Admin, o.Operator = users.admin.Credential, users.operator.Credential
	admin, err := w.admin(ctx, m, auth)
	var ce *caError
	switch {
	case errors.As(err, &ce) && apierrors.IsNotFound(errors.Unwrap(ce.err)):
		return o, nil // the TLS Secrets come with EnsureObjects
	case errors.As(err, &ce):
		return o, err
	case auth == AuthOperator && err != nil:
		// Its Secret is gone: nothing opens the user. That is an observation,
		// not a failed one: the decider switches back to the keyfile.
		o.OperatorLogin = new(false)
		return o, nil //nolint:nilerr // the error is the observation above
	case err != nil && apierrors.IsNotFound(errors.Unwrap(err)):
		return o, nil // the keyfile comes with EnsureObjects
	case err != nil:
		return o, err
	}
	source := w.observeMembers(ctx, admin, w.withLeaving(m, desired, o.Replicas), &o)
	if auth == AuthOperator && !w.observeOwnLogin(ctx, admin, source, users.operator, &o) {
		return o, nil // read blind: Decide goes back to the keyfile
	}
	w.observeReplicaSet(ctx, admin, source, &o)
	w.observeMongod(ctx, admin, m, &o)
	w.observeUsers(ctx, admin, auth, users, &o)
	if r, ok := admin.(mongo.Retainer); ok && len(o.Members) > 0 {
		r.Retain(slices.Collect(maps.Keys(o.Members))) // the members asked and those in the config
	}
	return o, nil
}

// withLeaving is desired and the data members a scale-down is taking away:
// the StatefulSet still runs the ordinals below its replicas, and until the
// config no longer names them one of them may be the primary, stepped down
// before it is removed. A member not asked is a primary not seen: the set
// would look as if it had none, and wait for an election that never comes.
func (w *KubeWorld) withLeaving(m *v1alpha1.Mgors, desired []mongo.DesiredMember, replicas int32) []mongo.DesiredMember {
	data := int32(0)
	for _, dm := range desired {
		if !dm.Arbiter {
			data++
		}
	}
	out := desired
	for i := data; i < replicas; i++ {
		out = append(slices.Clip(out), mongo.DesiredMember{Ordinal: i, Name: m.PodName(i), Host: m.MemberHost(i, w.ClusterDomain)})
	}
	return out
}

// observeNodes fills in the readiness of the member pods' nodes: of every
// pod's node when spec.recovery.nodeLossGracePeriod is set (nodeLoss), else
// only of the nodes of pods not Ready (fencing skips a pod whose node is
// NotReady). A failed read (ErrNotWatched in the namespaced install) leaves
// the nodes unknown, which no rule acts on.
func (w *KubeWorld) observeNodes(m *v1alpha1.Mgors, o *Observation) {
	every := m.Spec.Recovery.NodeLossGracePeriod != nil
	var names []string
	for _, p := range o.Pods {
		if p.Node != "" && (every || !p.Ready) && !slices.Contains(names, p.Node) {
			names = append(names, p.Node)
		}
	}
	sort.Strings(names)
	nodes, err := kube.Nodes(w.Cache, names)
	if err != nil {
		return
	}
	for name, p := range o.Pods {
		if n, ok := nodes[p.Node]; ok {
			p.NodeReady, p.NodeNotReadySince = n.Ready, n.NotReadySince
			o.Pods[name] = p
		}
	}
}

// observeObjects reads the cluster's objects from the cache: what is
// missing or outdated (ObjectsReady), the StatefulSets' replicas, the
// budget, the pods, their nodes and the claims.
func (w *KubeWorld) observeObjects(m *v1alpha1.Mgors, o *Observation) error {
	var missing []string
	get := func(what string, err error) error {
		if apierrors.IsNotFound(err) {
			missing = append(missing, what)
			return nil
		}
		return err
	}
	c := w.Cache
	_, svcErr := c.Service(m.Namespace, m.ServiceName())
	sts, stsErr := c.StatefulSet(m.Namespace, m.Name)
	// read also when spec.arbiters is 0: one left over is deleted
	arb, arbErr := c.StatefulSet(m.Namespace, kube.ArbiterName(m))
	if apierrors.IsNotFound(arbErr) {
		arb, arbErr = nil, nil
		if m.Spec.Arbiters > 0 {
			missing = append(missing, "StatefulSet "+kube.ArbiterName(m))
		}
	}
	// the budget is decided apart (decide_budget.go): only read here
	pdb, pdbErr := c.PodDisruptionBudget(m.Namespace, m.Name)
	if pdbErr == nil && pdb.Spec.MinAvailable != nil {
		o.Budget = pdb.Spec.MinAvailable.IntVal
	}
	if apierrors.IsNotFound(pdbErr) {
		pdbErr = nil
	}
	err := errors.Join(
		get("Service "+m.ServiceName(), svcErr),
		func() error { // the keyfile and credentials: world_secrets.go
			miss, problems, err := w.observeSecrets(m)
			missing = append(missing, miss...)
			o.Problems = append(o.Problems, problems...)
			return err
		}(),
		w.observeTLSSecrets(m, get),
		pdbErr,
		get("StatefulSet "+m.Name, stsErr),
		arbErr,
		w.observeExternal(m, o, &missing),
	)
	if apierrors.IsNotFound(stsErr) {
		sts = nil
	}
	if err != nil {
		return fmt.Errorf("reading the cluster's objects: %w", err)
	}
	if sts != nil && sts.Spec.Replicas != nil {
		o.Replicas = *sts.Spec.Replicas
		o.Storage.Template, o.Storage.Deleting = claimTemplateSize(sts), sts.DeletionTimestamp != nil
		want := kube.StatefulSet(m, kube.Options{ClusterDomain: w.ClusterDomain, Replicas: sts.Spec.Replicas})
		if templateHash(sts) != templateHash(want) {
			missing = append(missing, "an up-to-date pod template in StatefulSet "+m.Name)
		}
		if p := sts.Spec.PersistentVolumeClaimRetentionPolicy; p == nil || *p != *want.Spec.PersistentVolumeClaimRetentionPolicy {
			missing = append(missing, "the volume retention of spec.storage.reclaim in StatefulSet "+m.Name)
		}
	}
	if arb != nil && arb.Spec.Replicas != nil {
		o.ArbiterReplicas = *arb.Spec.Replicas
		if m.Spec.Arbiters > 0 && templateHash(arb) != templateHash(kube.ArbiterStatefulSet(m)) {
			missing = append(missing, "an up-to-date pod template in StatefulSet "+kube.ArbiterName(m))
		}
	}
	sort.Strings(missing)
	o.ObjectsReady = len(missing) == 0
	if !o.ObjectsReady {
		o.ObjectsMessage = "to create or update: " + strings.Join(missing, ", ")
	}

	pods, err := c.Pods(m.Namespace, labels.SelectorFromSet(kube.ClusterSelectorLabels(m)))
	if err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	for _, p := range pods {
		pv := PodView{Name: p.Name, UID: string(p.UID), Phase: string(p.Status.Phase), Ready: podReady(p),
			Deleting: p.DeletionTimestamp != nil, Outdated: outdatedPod(p, m, sts, arb),
			Node: p.Spec.NodeName}
		for _, c := range p.Status.ContainerStatuses {
			if c.Name == kube.MongodContainer {
				pv.Restarts = c.RestartCount
				if t := c.LastTerminationState.Terminated; t != nil {
					pv.LastExitCode = t.ExitCode
				}
			}
		}
		o.Pods[p.Name] = pv
	}
	w.observeNodes(m, o)
	w.observeClaims(m, o)
	w.observeExpansion(m, o)
	return nil
}

// observeClaims reads the UIDs of the members' data claims; a failed read
// leaves them unknown, which no rule acts on.
func (w *KubeWorld) observeClaims(m *v1alpha1.Mgors, o *Observation) {
	l, err := w.Cache.Claims(m.Namespace, labels.SelectorFromSet(kube.ClusterSelectorLabels(m)))
	if err != nil {
		return
	}
	o.Claims = map[string]string{}
	o.Storage.Claims = map[string]ClaimSize{}
	for _, c := range l {
		pod, ok := strings.CutPrefix(c.Name, kube.DataVolume+"-")
		if ok && c.DeletionTimestamp == nil && podOrdinal(m, pod) >= 0 {
			o.Claims[pod] = string(c.UID)
			o.Storage.Claims[pod] = claimSize(c, podOrdinal(m, pod))
		}
	}
}

// templateHash is the hash of a StatefulSet's pod template (kube.PodSpecHash).
func templateHash(s *appsv1.StatefulSet) string {
	return s.Spec.Template.Annotations[kube.TemplateHashAnnotation]
}

// outdatedPod is true for a member's pod older than the members' template, and
// for the arbiter's pod older than the arbiters' template.
func outdatedPod(p *corev1.Pod, m *v1alpha1.Mgors, members, arbiters *appsv1.StatefulSet) bool {
	switch p.Labels[kube.LabelComponent] {
	case kube.ComponentMember:
		return members != nil && podOrdinal(m, p.Name) >= 0 && kube.PodOutdated(p, members)
	case kube.ComponentArbiter:
		return arbiters != nil && m.Spec.Arbiters > 0 && kube.PodOutdated(p, arbiters)
	}
	return false
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// WriteStatus writes st when it differs from what is stored; conditions keep
// their lastTransitionTime while their status holds.
func (w *KubeWorld) WriteStatus(ctx context.Context, m *v1alpha1.Mgors, st v1alpha1.MgorsStatus) error {
	_, err := w.Status.Update(ctx, m.Namespace, m.Name, m.UID, func(cur *v1alpha1.MgorsStatus) {
		conds := cur.Conditions
		*cur = st
		cur.Conditions = conds
		for _, c := range st.Conditions {
			kube.SetCondition(cur, c.ObservedGeneration, c.Type, c.Status, c.Reason, c.Message)
		}
	})
	if apierrors.IsNotFound(err) {
		return nil // the Mgors is gone; its actor stops soon
	}
	return err
}

// Event records a Kubernetes Event on the Mgors.
func (w *KubeWorld) Event(m *v1alpha1.Mgors, warning bool, reason, message string) {
	w.Recorder.Event(m, warning, reason, message)
}
