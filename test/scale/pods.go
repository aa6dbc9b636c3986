package scale

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/mgors/operator/kube"
)

// Kubelet stands in for the kubelets the control plane has none of: it
// writes to the status of every member pod (the StatefulSet controller
// creates them; nothing schedules them) what a kubelet would once mongod
// runs, Running and Ready, or not Ready while the harness holds the member
// down. It keeps no cache of the pods (its memory would be counted as the
// operator's): a raw watch, resumed from the last resourceVersion it saw
// when it ends, and a LIST in pages of listPage pods only at the start and
// when the watch cannot resume (its resourceVersion expired).
type Kubelet struct {
	Client    kubernetes.Interface
	Namespace string

	mu   sync.Mutex
	down map[string]bool // pod names held down
	// seen is, for the pods a fault is measured on (Track), when the watch
	// saw each of their resourceVersions: how long the API server took to
	// deliver a write to a watcher, beside the operator's own informers.
	seen map[string]*seenPod
	// Writes counts the status writes, for the report's sanity checks.
	Writes atomic.Int64
}

// listPage bounds the pods one page of the LIST holds: the whole list of
// N = 1,000 clusters' pods, held while their statuses were written, was
// 13 KiB per cluster of the row's heap figure.
const listPage = 100

// Run keeps the pods' status until ctx ends.
func (k *Kubelet) Run(ctx context.Context) {
	rv := ""
	for ctx.Err() == nil {
		if rv == "" {
			var err error
			if rv, err = k.settleAll(ctx); err != nil {
				sleep(ctx, time.Second)
				continue
			}
		}
		rv = k.follow(ctx, rv)
	}
}

// settleAll lists the member pods a page at a time and settles each; it
// returns the resourceVersion of the list, where a watch starts.
func (k *Kubelet) settleAll(ctx context.Context) (string, error) {
	o := metav1.ListOptions{LabelSelector: kube.LabelManagedBy + "=" + kube.ManagedBy, Limit: listPage}
	for {
		lctx, cancel := context.WithTimeout(ctx, time.Minute)
		list, err := k.Client.CoreV1().Pods(k.Namespace).List(lctx, o)
		cancel()
		if err != nil {
			return "", err
		}
		for i := range list.Items {
			k.settle(ctx, &list.Items[i])
		}
		if list.Continue == "" {
			return list.ResourceVersion, nil
		}
		o.Continue = list.Continue
	}
}

// follow watches the member pods from rv and settles each one added or
// changed; it returns the last resourceVersion seen when the watch ends,
// to resume from, or "" when it cannot resume (an error: list again).
func (k *Kubelet) follow(ctx context.Context, rv string) string {
	o := metav1.ListOptions{LabelSelector: kube.LabelManagedBy + "=" + kube.ManagedBy,
		ResourceVersion: rv, AllowWatchBookmarks: true}
	w, err := k.Client.CoreV1().Pods(k.Namespace).Watch(ctx, o)
	if err != nil {
		sleep(ctx, time.Second)
		return ""
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			return ""
		}
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			continue
		}
		rv = p.ResourceVersion
		k.saw(p.Name, rv)
		if ev.Type == watch.Added || ev.Type == watch.Modified {
			k.settle(ctx, p)
		}
	}
	return rv
}

type seenPod struct {
	at   map[string]time.Time // by resourceVersion
	wake chan struct{}        // closed (and replaced) when one is added
}

// Track starts noting when the watch sees each version of pod.
func (k *Kubelet) Track(pod string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.seen == nil {
		k.seen = map[string]*seenPod{}
	}
	k.seen[pod] = &seenPod{at: map[string]time.Time{}, wake: make(chan struct{})}
}

func (k *Kubelet) saw(pod, rv string) {
	now := time.Now()
	k.mu.Lock()
	defer k.mu.Unlock()
	if s := k.seen[pod]; s != nil {
		s.at[rv] = now
		close(s.wake)
		s.wake = make(chan struct{})
	}
}

// Seen waits up to wait for the watch to see version rv of a tracked pod
// and returns when it did; it stops tracking the pod.
func (k *Kubelet) Seen(ctx context.Context, pod, rv string, wait time.Duration) (time.Time, bool) {
	t := time.NewTimer(wait)
	defer t.Stop()
	defer func() {
		k.mu.Lock()
		delete(k.seen, pod)
		k.mu.Unlock()
	}()
	for {
		k.mu.Lock()
		s := k.seen[pod]
		if s == nil {
			k.mu.Unlock()
			return time.Time{}, false
		}
		at, ok := s.at[rv]
		wake := s.wake
		k.mu.Unlock()
		if ok {
			return at, true
		}
		select {
		case <-wake:
		case <-t.C:
			return time.Time{}, false
		case <-ctx.Done():
			return time.Time{}, false
		}
	}
}

// Down holds a pod down (not Ready) or lets it up again, and writes it now:
// the write the reaction is measured from. It returns when the API server
// answered, with the resourceVersion the write made.
func (k *Kubelet) Down(ctx context.Context, pod string, down bool) (string, error) {
	k.mu.Lock()
	if k.down == nil {
		k.down = map[string]bool{}
	}
	k.down[pod] = down
	if !down {
		delete(k.down, pod)
	}
	k.mu.Unlock()
	p, err := k.get(ctx, pod)
	if err != nil {
		return "", err
	}
	return k.write(ctx, p, !down)
}

func (k *Kubelet) get(ctx context.Context, name string) (*corev1.Pod, error) {
	cctx, cancel := context.WithTimeout(ctx, kube.DefaultCallTimeout)
	defer cancel()
	return k.Client.CoreV1().Pods(k.Namespace).Get(cctx, name, metav1.GetOptions{})
}

// settle writes the status the pod should have when it has another.
func (k *Kubelet) settle(ctx context.Context, p *corev1.Pod) {
	if p.DeletionTimestamp != nil {
		return
	}
	k.mu.Lock()
	ready := !k.down[p.Name]
	k.mu.Unlock()
	if p.Status.Phase == corev1.PodRunning && podIsReady(p) == ready && p.Status.PodIP != "" {
		return
	}
	_, _ = k.write(ctx, p, ready) // the next event of the pod, or the harness, retries
}

func podIsReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// write patches the status (a strategic merge: the scheduler's condition
// stays) and returns the resourceVersion it made.
func (k *Kubelet) write(ctx context.Context, p *corev1.Pod, ready bool) (string, error) {
	now := metav1.Now()
	cond := corev1.ConditionFalse
	if ready {
		cond = corev1.ConditionTrue
	}
	var containers []corev1.ContainerStatus
	for _, c := range p.Spec.Containers {
		containers = append(containers, corev1.ContainerStatus{Name: c.Name, Image: c.Image, Ready: ready, Started: &ready,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}})
	}
	ip := podIP(string(p.UID))
	status := corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, StartTime: &now,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: cond, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: cond, LastTransitionTime: now},
		},
		ContainerStatuses: containers}
	if p.Status.StartTime != nil {
		status.StartTime = p.Status.StartTime
	}
	b, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return "", err
	}
	cctx, cancel := context.WithTimeout(ctx, kube.DefaultCallTimeout)
	defer cancel()
	out, err := k.Client.CoreV1().Pods(k.Namespace).Patch(cctx, p.Name, types.StrategicMergePatchType, b, metav1.PatchOptions{}, "status")
	if err != nil {
		return "", err
	}
	k.Writes.Add(1)
	return out.ResourceVersion, nil
}

// podIP is a stable address in 10.200.0.0/16 for a pod (nothing dials it:
// the members are in process).
func podIP(uid string) string {
	h := uint32(2166136261)
	for i := 0; i < len(uid); i++ {
		h = (h ^ uint32(uid[i])) * 16777619
	}
	return fmt.Sprintf("10.200.%d.%d", h>>8&0xff, 1+h%254)
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
