package actors

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/mgors/operator/kube"
	mgorsfake "github.com/mgors/operator/kube/client/fake"
)

// The World reads what a growth needs (the claim template, each claim's
// request and capacity, whether the class allows expansion), and carries out
// ExpandVolumes and ReplaceStatefulSet on the API objects.
func TestKubeWorldGrowsStorage(t *testing.T) {
	for _, allow := range []bool{true, false} {
		t.Run(fmt.Sprintf("allowVolumeExpansion=%t", allow), func(t *testing.T) {
			m := sizedDemo("1Gi")
			objs := []runtime.Object{
				kube.StatefulSet(m, kube.Options{ClusterDomain: "cluster.local"}),
				&storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "standard"}, AllowVolumeExpansion: ptr.To(allow)},
			}
			for i := range int32(3) {
				objs = append(objs, &corev1.PersistentVolumeClaim{
					ObjectMeta: metav1.ObjectMeta{Name: kube.PVCName(m, i), Namespace: m.Namespace, Labels: kube.Labels(m, kube.ComponentMember)},
					Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("standard"),
						Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
					Status: corev1.PersistentVolumeClaimStatus{Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				})
			}
			kc := k8sfake.NewClientset(objs...)
			w := &KubeWorld{Cache: mgorsfake.NewReader(kc, nil), Applier: kube.NewApplier(kc), ClusterDomain: "cluster.local"}
			ctx := context.Background()
			grown := resource.MustParse("2Gi")
			m.Spec.Storage.Size = &grown

			o := Observation{Replicas: -1, ArbiterReplicas: -1, Pods: map[string]PodView{}}
			if err := w.observeObjects(m, &o); err != nil {
				t.Fatal(err)
			}
			s := o.Storage
			if s.Template.String() != "1Gi" || len(s.Claims) != 3 || s.Class != "standard" || s.Expandable == nil || *s.Expandable != allow {
				t.Fatalf("observed %+v", s)
			}
			if c := s.Claims["demo-2"]; c.Name != "data-demo-2" || c.Ordinal != 2 || c.Requested.String() != "1Gi" || c.Capacity.String() != "1Gi" {
				t.Fatalf("claim of demo-2: %+v", c)
			}
			if !allow {
				return
			}
			if err := w.Act(ctx, m, Action{Kind: ActExpandVolumes, Ordinals: []int32{0, 1, 2}, Size: "2Gi"}); err != nil {
				t.Fatal(err)
			}
			for i := range int32(3) {
				pvc, _ := kc.CoreV1().PersistentVolumeClaims(m.Namespace).Get(ctx, kube.PVCName(m, i), metav1.GetOptions{})
				if q := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; q.Cmp(grown) != 0 {
					t.Errorf("%s requests %s", pvc.Name, q.String())
				}
			}
			if err := w.Act(ctx, m, Action{Kind: ActReplaceStatefulSet, Host: m.Name, Replicas: 3}); err != nil {
				t.Fatal(err)
			}
			sts, err := kc.AppsV1().StatefulSets(m.Namespace).Get(ctx, m.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if q := claimTemplateSize(sts); q.Cmp(grown) != 0 || *sts.Spec.Replicas != 3 {
				t.Fatalf("replaced StatefulSet: template %s, replicas %d", q.String(), *sts.Spec.Replicas)
			}
			// Sent again (a cache that showed the old one gone and not yet the
			// new one), the replace finds it done: the new one is not deleted.
			if err := w.Act(ctx, m, Action{Kind: ActReplaceStatefulSet, Host: m.Name, Replicas: 3}); err != nil {
				t.Fatal(err)
			}
			deletes := 0
			for _, a := range kc.Actions() {
				if a.GetVerb() == "delete" && a.GetResource().Resource == "statefulsets" {
					deletes++
				}
			}
			if deletes != 1 {
				t.Fatalf("%d deletes of the StatefulSet, want 1: a replace already done was done again", deletes)
			}
		})
	}
}
