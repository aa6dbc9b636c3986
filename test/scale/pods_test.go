package scale

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/mgors/operator/kube"
)

func memberPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: name, UID: "uid-rs-0000-0",
			Labels: map[string]string{kube.LabelManagedBy: kube.ManagedBy}},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: kube.MongodContainer, Image: "mongo:7.0.14"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}

func TestKubeletWritesReadyThenHoldsDown(t *testing.T) {
	ctx := context.Background()
	kc := fake.NewClientset(memberPod("rs-0000-0"))
	k := &Kubelet{Client: kc, Namespace: "db"}
	p, err := kc.CoreV1().Pods("db").Get(ctx, "rs-0000-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	k.settle(ctx, p)
	p, _ = kc.CoreV1().Pods("db").Get(ctx, "rs-0000-0", metav1.GetOptions{})
	if p.Status.Phase != corev1.PodRunning || !podIsReady(p) || p.Status.PodIP == "" ||
		len(p.Status.ContainerStatuses) != 1 || !p.Status.ContainerStatuses[0].Ready {
		t.Fatalf("after settle: %+v", p.Status)
	}
	k.settle(ctx, p) // already as it should be: no write
	if n := k.Writes.Load(); n != 1 {
		t.Errorf("%d writes, want 1", n)
	}
	if _, err := k.Down(ctx, "rs-0000-0", true); err != nil {
		t.Fatal(err)
	}
	p, _ = kc.CoreV1().Pods("db").Get(ctx, "rs-0000-0", metav1.GetOptions{})
	if podIsReady(p) || p.Status.ContainerStatuses[0].Ready {
		t.Fatalf("held down but Ready: %+v", p.Status)
	}
	k.settle(ctx, p) // a pod event while down keeps it down
	if n := k.Writes.Load(); n != 2 {
		t.Errorf("%d writes, want 2", n)
	}
	if _, err := k.Down(ctx, "rs-0000-0", false); err != nil {
		t.Fatal(err)
	}
	p, _ = kc.CoreV1().Pods("db").Get(ctx, "rs-0000-0", metav1.GetOptions{})
	if !podIsReady(p) {
		t.Fatalf("let up but not Ready: %+v", p.Status)
	}
}

func TestKubeletSeesTheVersionItWrote(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kc := fake.NewClientset(memberPod("rs-0000-0"))
	k := &Kubelet{Client: kc, Namespace: "db"}
	go k.Run(ctx)
	// A write made before the watch started is never seen: write again
	// until one is (the fake's watch does not replay).
	var rv string
	for i := 0; ; i++ {
		if i == 60 {
			t.Fatal("the watch never saw a version the kubelet wrote")
		}
		k.Track("rs-0000-0")
		var err error
		if rv, err = k.Down(ctx, "rs-0000-0", i%2 == 0); err != nil {
			t.Fatal(err)
		}
		if _, ok := k.Seen(ctx, "rs-0000-0", rv, time.Second); ok {
			break
		}
	}
	if _, ok := k.Seen(ctx, "rs-0000-0", rv, time.Second); ok {
		t.Error("a pod no longer tracked was seen")
	}
}
