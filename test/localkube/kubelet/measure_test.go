package kubelet

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
)

func rssKiB(pid int) int {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer func() { _ = f.Close() }()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.Fields(v)[0])
			return n
		}
	}
	return 0
}

// TestMeasure reports pod start latency (create with nodeName set, i.e. bound, to
// Running as seen by a watching client) and memory: the kubelet process's RSS
// growth per pod and each pod's own processes. Figures only, no assertions on
// them; run with LOCALKUBE_KUBELET_MEASURE=1.
func TestMeasure(t *testing.T) {
	if os.Getenv("LOCALKUBE_KUBELET_MEASURE") == "" {
		t.Skip("set LOCALKUBE_KUBELET_MEASURE=1 to measure")
	}
	e := cluster(t)
	const n = 10
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	w, err := e.cs.CoreV1().Pods(testNS).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", testNode).String()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	time.Sleep(time.Second)
	before := rssKiB(os.Getpid())
	created := map[string]time.Time{}
	var latencies []time.Duration
	for i := 0; i < n; i++ {
		p := shellPod(fmt.Sprintf("m-%d", i), "sleep 3600")
		if i%2 == 1 {
			p.Spec.Containers[0].Image = "mongo:7.0"
			p.Spec.Containers[0].Command = nil
			p.Spec.Containers[0].Args = []string{"--bind_ip_all", "--port", "27017", "--dbpath", "/tmp"}
		}
		created[p.Name] = time.Now()
		e.create(t, p)
	}
	running := map[string]bool{}
	for len(running) < n {
		select {
		case ev := <-w.ResultChan():
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Deleted || running[p.Name] || p.Status.Phase != corev1.PodRunning {
				continue
			}
			if at, ok := created[p.Name]; ok {
				running[p.Name] = true
				latencies = append(latencies, time.Since(at))
			}
		case <-ctx.Done():
			t.Fatalf("only %d of %d pods Running", len(running), n)
		}
	}
	time.Sleep(3 * time.Second)
	after := rssKiB(os.Getpid())
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	t.Logf("pod start (created bound -> Running seen by a watch), %d pods created at once: min %v median %v max %v",
		n, latencies[0].Round(time.Millisecond), latencies[n/2].Round(time.Millisecond), latencies[n-1].Round(time.Millisecond))
	t.Logf("test process (kubelet + client) RSS: %d MiB before, %d MiB with %d pods: %d KiB per pod",
		before/1024, after/1024, n, (after-before)/n)
	for i := 0; i < 2; i++ {
		name := fmt.Sprintf("m-%d", i)
		pids, _ := PodProcesses(e.cfg.Dir, testNS, name)
		total := 0
		for _, pid := range pids {
			total += rssKiB(pid)
		}
		t.Logf("pod %s (%s): %d process(es), %d KiB RSS", name, map[int]string{0: "sleep", 1: "mongod-sim"}[i], len(pids), total)
	}
}
