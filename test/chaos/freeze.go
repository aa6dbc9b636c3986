package chaos

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// Frozen is a majority of members held lost: their pods paused (SIGSTOP) and
// every node cordoned. Before it forces, the operator fences the members the
// force drops (it deletes their pods, docs/design/recovery.md): with the
// nodes cordoned their replacements stay Pending, so the members stay lost
// until Thaw, as when the kubelet killed a hung mongod and no node can run
// it again. Thaw uncordons, then resumes the pods not replaced meanwhile.
type Frozen struct {
	kube     kubernetes.Interface
	faults   Faults
	ns       string
	uids     map[string]types.UID // pod → the UID paused
	cordoned []string
}

// Freeze pauses pods of namespace ns, then cordons every schedulable node.
// On an error it thaws what it froze. The evidence names each step.
func Freeze(ctx context.Context, kube kubernetes.Interface, faults Faults, ns string, pods []string) (*Frozen, []string, error) {
	f := &Frozen{kube: kube, faults: faults, ns: ns, uids: map[string]types.UID{}}
	var evidence []string
	fail := func(err error) (*Frozen, []string, error) {
		_, _ = f.Thaw(context.WithoutCancel(ctx))
		return nil, evidence, err
	}
	for _, p := range pods {
		uid, err := f.uid(ctx, p)
		if err != nil {
			return fail(err)
		}
		ev, err := faults.Pause(ctx, ns, p)
		if err != nil {
			return fail(err)
		}
		f.uids[p] = uid
		evidence = append(evidence, ev)
	}
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	nodes, err := kube.CoreV1().Nodes().List(lctx, metav1.ListOptions{})
	cancel()
	if err != nil {
		return fail(fmt.Errorf("listing nodes: %w", err))
	}
	for _, n := range nodes.Items {
		if n.Spec.Unschedulable {
			continue
		}
		if err := f.schedulable(ctx, n.Name, false); err != nil {
			return fail(err)
		}
		f.cordoned = append(f.cordoned, n.Name)
	}
	evidence = append(evidence, "cordoned "+strings.Join(f.cordoned, ", "))
	return f, evidence, nil
}

// Thaw uncordons the nodes Freeze cordoned, then resumes each pod still the
// one paused; a pod deleted or replaced since (fenced) has nothing to resume.
// It goes on past an error and returns the first.
func (f *Frozen) Thaw(ctx context.Context) ([]string, error) {
	var evidence []string
	var first error
	keep := func(err error) {
		if first == nil {
			first = err
		}
	}
	for _, n := range f.cordoned {
		if err := f.schedulable(ctx, n, true); err != nil {
			keep(err)
		}
	}
	if len(f.cordoned) > 0 {
		evidence = append(evidence, "uncordoned "+strings.Join(f.cordoned, ", "))
	}
	f.cordoned = nil
	for p, paused := range f.uids {
		uid, err := f.uid(ctx, p)
		switch {
		case apierrors.IsNotFound(err) || err == nil && uid != paused:
			evidence = append(evidence, fmt.Sprintf("pod %s/%s fenced (deleted or replaced since the pause): nothing to resume", f.ns, p))
		case err != nil:
			keep(err)
		default:
			ev, err := f.faults.Resume(ctx, f.ns, p)
			if err != nil {
				keep(err)
				continue
			}
			evidence = append(evidence, ev)
		}
		delete(f.uids, p)
	}
	return evidence, first
}

func (f *Frozen) uid(ctx context.Context, pod string) (types.UID, error) {
	gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	p, err := f.kube.CoreV1().Pods(f.ns).Get(gctx, pod, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return p.UID, nil
}

func (f *Frozen) schedulable(ctx context.Context, node string, yes bool) error {
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	patch := fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, !yes)
	if _, err := f.kube.CoreV1().Nodes().Patch(pctx, node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("node %s unschedulable=%t: %w", node, !yes, err)
	}
	return nil
}
