package eventlog

import (
	"context"
	"fmt"
	"os"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/kube/client"
)

// BenchmarkAppendKubeAPIServer measures the kube store against a real API
// server: MGORS_BENCH_KUBECONFIG names its kubeconfig (with the Mgors CRD
// installed). A paused Mgors owns the segments, as in production, so garbage
// collection leaves them alone; it is deleted afterwards with its log. Like
// BenchmarkAppendSegment it appends to an empty segment, a 48 KiB one and a
// 400 KiB one.
func BenchmarkAppendKubeAPIServer(b *testing.B) {
	path := os.Getenv("MGORS_BENCH_KUBECONFIG")
	if path == "" {
		b.Skip("set MGORS_BENCH_KUBECONFIG to measure the kube store against a real API server")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		b.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	kc := kubernetes.NewForConfigOrDie(cfg)
	mc, err := client.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	m := &v1alpha1.Mgors{ObjectMeta: metav1.ObjectMeta{GenerateName: "eventlog-bench-", Namespace: "default"}}
	m.Spec.Paused = true
	m.Default()
	owner, err := mc.Mgorses("default").Create(ctx, m, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = mc.Mgorses("default").Delete(context.Background(), owner.Name, metav1.DeleteOptions{}) }()
	st := NewKube(kc)
	s := Stream{Namespace: "default", Name: owner.Name, UID: string(owner.UID)}
	for _, fill := range []int{0, 12 << 10, 400 << 10} {
		b.Run(fmt.Sprintf("fill=%dKiB", fill>>10), func(b *testing.B) { benchAppendAt(b, st, s, fill) })
	}
}
