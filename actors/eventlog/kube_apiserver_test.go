package eventlog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/kube/client"
)

// answer is one write the store sent and what the API server answered.
type answer struct {
	method string
	kind   string
	bytes  int
}

// answers records the API server's answers to ConfigMap writes.
type answers struct {
	next http.RoundTripper
	mu   sync.Mutex
	seen []answer
}

func (a *answers) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := a.next.RoundTrip(req)
	if err != nil || (req.Method != http.MethodPatch && req.Method != http.MethodPost) || !strings.Contains(req.URL.Path, "/configmaps") {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var tm metav1.TypeMeta
	_ = json.Unmarshal(body, &tm)
	a.mu.Lock()
	a.seen = append(a.seen, answer{req.Method, tm.Kind, len(body)})
	a.mu.Unlock()
	return resp, nil
}

// TestKubeAPIServer holds the kube store to what the fakes cannot show, on a
// real API server (MGORS_TEST_KUBECONFIG names its kubeconfig, with the Mgors
// CRD installed; localkube's control plane is enough): a write is answered
// with metadata only, a patch carrying a stale resourceVersion is refused with
// 409 Conflict, and the segments go with the Mgors that owns them.
func TestKubeAPIServer(t *testing.T) {
	path := os.Getenv("MGORS_TEST_KUBECONFIG")
	if path == "" {
		t.Skip("needs a real API server: set MGORS_TEST_KUBECONFIG (a fake neither checks a patch's resourceVersion nor answers metadata only)")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	rec := &answers{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { rec.next = rt; return rec })
	kc := kubernetes.NewForConfigOrDie(cfg)
	mc, err := client.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m := &v1alpha1.Mgors{ObjectMeta: metav1.ObjectMeta{GenerateName: "eventlog-test-", Namespace: "default"}}
	m.Spec.Paused = true
	m.Default()
	owner, err := mc.Mgorses("default").Create(ctx, m, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = mc.Mgorses("default").Delete(context.Background(), owner.Name, metav1.DeleteOptions{}) }()
	s := Stream{Namespace: "default", Name: owner.Name, UID: string(owner.UID)}

	a := NewKube(kc)
	if _, ok := a.writer.(restWriter); !ok {
		t.Fatalf("a real clientset's store writes through %T", a.writer)
	}
	// A segment holding 400 KiB, then appends to it.
	var fill []Record
	for size := 0; size < 400<<10; {
		r := recAt(s, int64(len(fill)+1))
		line, _ := EncodeLine(r)
		size += len(line)
		fill = append(fill, r)
	}
	if err := a.Append(ctx, s, fill...); err != nil {
		t.Fatal(err)
	}
	next := int64(len(fill)) + 1
	for ; next <= int64(len(fill))+5; next++ {
		if err := a.Append(ctx, s, recAt(s, next)); err != nil {
			t.Fatalf("append %d: %v", next, err)
		}
	}
	if len(rec.seen) != 6 {
		t.Fatalf("%d writes for one segment and 5 appends: %+v", len(rec.seen), rec.seen)
	}
	// Metadata only; it still grows with the segment, as its managedFields
	// name every data key (about 33 bytes a record), but stays well under it.
	for _, w := range rec.seen {
		if w.kind != "PartialObjectMetadata" || w.bytes > 200<<10 {
			t.Fatalf("a %s to a 400 KiB segment was answered with a %q of %d bytes", w.method, w.kind, w.bytes)
		}
		t.Logf("%s answered with %s, %d bytes", w.method, w.kind, w.bytes)
	}

	// A stale writer: its patch carries a resourceVersion the segment has left.
	b := NewKube(kc)
	if _, _, err := b.Load(ctx, s); err != nil {
		t.Fatal(err)
	}
	staleRV := b.state(s).head.resourceVersion
	if err := a.Append(ctx, s, recAt(s, next)); err != nil {
		t.Fatal(err)
	}
	err = b.Append(ctx, s, recAt(s, next))
	if !errors.Is(err, ErrSequence) || !apierrors.IsConflict(err) {
		t.Fatalf("a stale writer's append: %v, want ErrSequence from a 409 Conflict", err)
	}
	body, _ := appendPatch(staleRV, next+1, map[string]string{recordKey(next + 1): "{}"})
	if _, err := a.writer.patch(ctx, s.Namespace, segmentName(s, 1), body); !apierrors.IsConflict(err) {
		t.Fatalf("a patch with a stale resourceVersion: %v, want 409 Conflict", err)
	}
	_, recs, err := NewKube(kc).Load(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(recs)) != next || CheckSequence(0, recs) != nil {
		t.Fatalf("loaded %d records (want %d), sequence %v", len(recs), next, CheckSequence(0, recs))
	}

	// The log goes with its Mgors (the garbage collector follows the owner reference).
	if err := mc.Mgorses("default").Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		list, err := kc.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{LabelSelector: LabelUID + "=" + s.UID})
		if err != nil {
			t.Fatalf("waiting for the log to go with its Mgors: %v", err)
		}
		if len(list.Items) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d segments outlived their Mgors", len(list.Items))
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// recAt is a record the size of an observation's.
func recAt(s Stream, seq int64) Record { return rec(s, seq, "MembersObserved") }
