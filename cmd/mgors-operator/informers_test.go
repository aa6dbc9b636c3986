package main

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/mgors/operator/kube"
	"github.com/mgors/operator/kube/client/fake"
)

// Nodes and storage classes are watched only when the API server says the
// operator may list and watch them (the namespaced install may not: its
// informers would never sync).
func TestNewInformersWatchesClusterScopedKindsOnlyWhenAllowed(t *testing.T) {
	for _, allow := range []bool{true, false} {
		kc := k8sfake.NewClientset()
		kc.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
			r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview).DeepCopy()
			r.Status.Allowed = allow || r.Spec.ResourceAttributes.Resource != "storageclasses"
			return true, r, nil
		})
		inf := newInformers(context.Background(), options{namespace: "db"}, kc, fake.NewClientset(), "", prometheus.NewRegistry(), zerolog.Nop())
		ctx, cancel := context.WithCancel(context.Background())
		inf.Start(ctx)
		if err := inf.WaitForSync(ctx); err != nil {
			t.Fatal(err)
		}
		_, err := inf.StorageClasses()
		if notWatched := errors.Is(err, kube.ErrNotWatched); notWatched == allow {
			t.Errorf("allowed %v: storage classes %v", allow, err)
		}
		cancel()
		inf.Shutdown()
	}
}
