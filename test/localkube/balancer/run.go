package balancer

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"time"

	"github.com/rs/zerolog"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// retryEvery is how often a pass runs without a change, to retry a listener
// that could not open or a status write that failed.
const retryEvery = 5 * time.Second

// Run serves Services of type LoadBalancer until ctx ends: informers on Services
// and EndpointSlices only signal a change; one loop lists their caches, decides
// (Decide), applies the listeners (Forwarder) and writes the statuses that
// differ. State survives a restart through the statuses: a new process finds each
// Service's address there and listens on it again.
func Run(ctx context.Context, cs kubernetes.Interface, log zerolog.Logger) error {
	factory := informers.NewSharedInformerFactory(cs, 0)
	services := factory.Core().V1().Services()
	endpoints := factory.Discovery().V1().EndpointSlices()
	changed := make(chan struct{}, 1)
	signal := func(any) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{AddFunc: signal, UpdateFunc: func(_, n any) { signal(n) }, DeleteFunc: signal}
	if _, err := services.Informer().AddEventHandler(handler); err != nil {
		return err
	}
	if _, err := endpoints.Informer().AddEventHandler(handler); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("cache of %v did not sync", typ)
		}
	}
	fw := NewForwarder(log)
	defer fw.Close()
	log.Info().Str("range", Range.String()).Str("hostSuffix", HostSuffix).Msg("load balancer running")
	var held map[types.UID]netip.Addr
	tick := time.NewTicker(retryEvery)
	defer tick.Stop()
	for {
		svcs, err := services.Lister().List(labels.Everything())
		if err != nil {
			return err
		}
		slices, err := endpoints.Lister().List(labels.Everything())
		if err != nil {
			return err
		}
		held = pass(ctx, cs, fw, svcs, slices, held, log)
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-tick.C:
		}
	}
}

// pass decides, opens and closes listeners, and writes the statuses; a Service
// whose listeners did not all open keeps the status it has until they do.
func pass(ctx context.Context, cs kubernetes.Interface, fw *Forwarder, svcs []*corev1.Service, slices []*discoveryv1.EndpointSlice,
	held map[types.UID]netip.Addr, log zerolog.Logger) map[types.UID]netip.Addr {
	plan := Decide(svcs, slices, held)
	for _, s := range plan.Unaddressed {
		log.Warn().Str("service", s).Str("range", Range.String()).Msg("no free address")
	}
	failed := fw.Apply(plan.Listeners)
	for s, err := range failed {
		log.Warn().Err(err).Str("service", s).Msg("listener did not open")
	}
	for _, st := range plan.Status {
		if _, bad := failed[st.Namespace+"/"+st.Name]; bad && st.Ingress != nil {
			continue
		}
		if err := writeStatus(ctx, cs, st); err != nil {
			log.Warn().Err(err).Str("service", st.Namespace+"/"+st.Name).Msg("status not written")
			continue
		}
		ev := log.Info().Str("service", st.Namespace+"/"+st.Name)
		if len(st.Ingress) > 0 {
			ev = ev.Str("ip", st.Ingress[0].IP).Str("hostname", st.Ingress[0].Hostname)
		}
		ev.Msg("status written")
	}
	return plan.Held
}

// writeStatus merge-patches status.loadBalancer.ingress (null clears it), with
// the UID as a precondition so that a Service deleted and made again under the
// same name is not given its predecessor's status.
func writeStatus(ctx context.Context, cs kubernetes.Interface, st Status) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": st.UID},
		"status":   map[string]any{"loadBalancer": map[string]any{"ingress": st.Ingress}},
	})
	if err != nil {
		return err
	}
	_, err = cs.CoreV1().Services(st.Namespace).Patch(ctx, st.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or another Service now: the informer brings the next pass
	}
	return err
}
