package main

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/client"
	"github.com/mgors/operator/watch"
)

// newInformers makes the shared informers the dispatcher and the World use
// (one watch per kind). Nodes and storage classes are watched only when the
// operator may list and watch them: the namespaced install may not
// (deploy/namespaced), and its informers would never sync.
func newInformers(ctx context.Context, o options, kc kubernetes.Interface, mc client.Interface, owner string, reg prometheus.Registerer, log zerolog.Logger) *kube.Informers {
	clusterScoped := true
	for _, r := range []authorizationv1.ResourceAttributes{
		{Resource: "nodes", Verb: "list"}, {Resource: "nodes", Verb: "watch"},
		{Group: "storage.k8s.io", Resource: "storageclasses", Verb: "list"},
		{Group: "storage.k8s.io", Resource: "storageclasses", Verb: "watch"},
	} {
		if !allowed(ctx, kc, r) {
			log.Info().Str("resource", r.Resource).Str("verb", r.Verb).
				Msg("not allowed: nodes and storage classes are not watched (node loss and storage diagnoses stay unknown)")
			clusterScoped = false
			break
		}
	}
	inf := kube.NewInformers(kc, mc, kube.InformerOptions{Namespace: o.namespace,
		MgorsSelector: watch.OwnerSelector(owner), ClusterScoped: clusterScoped})
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "mgors_secret_reads_total",
		Help: "GETs of Secret data by the observation: one per Secret and resourceVersion (kube.Informers.SecretData)"},
		func() float64 { return float64(inf.SecretValueReads()) }))
	return inf
}

// allowed asks the API server whether the operator may do r (a
// SelfSubjectAccessReview, which every authenticated user may create); a
// failed review is a no.
func allowed(ctx context.Context, kc kubernetes.Interface, r authorizationv1.ResourceAttributes) bool {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rev, err := kc.AuthorizationV1().SelfSubjectAccessReviews().Create(cctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &r}}, metav1.CreateOptions{})
	return err == nil && rev.Status.Allowed
}
