package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/mgors/operator/actors/eventlog"
	"github.com/mgors/operator/kube/api/v1alpha1"
	"github.com/mgors/operator/kube/client"
	"github.com/mgors/operator/test/localkube/harness"
)

// answer is one ConfigMap write the store sent and what the API server answered.
type answer struct {
	method string
	kind   string
	sent   int
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
	a.seen = append(a.seen, answer{req.Method, tm.Kind, int(req.ContentLength), len(body)})
	a.mu.Unlock()
	return resp, nil
}

// The kube event-log store on a real API server, where the fakes cannot
// show it (the test is the stream's only writer): an append to a full segment sends its records and one chunk and is
// answered with metadata only, a stale writer's append is refused with 409
// Conflict (ErrSequence), and the segments go with the Mgors that owns them.
func TestEventLogOnTheAPIServer(t *testing.T) {
	env := harness.Cluster(t)
	installCRD(t, env)
	withoutOperator(t, env) // it would write the test Mgors's log too
	cfg := rest.CopyConfig(env.Config)
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
	s := eventlog.Stream{Namespace: "default", Name: owner.Name, UID: string(owner.UID)}
	record := func(seq int64) eventlog.Record {
		return eventlog.Record{Seq: seq, Time: time.Unix(1_800_000_000, 0).UTC(), Cluster: s.Namespace + "/" + s.Name, UID: s.UID,
			Type: "MembersObserved", Version: 1, Cause: "observed", Writer: "e2e",
			Data: json.RawMessage(`{"members":["demo-0.demo-headless.default.svc.cluster.local:27017","demo-1.demo-headless.default.svc.cluster.local:27017"],"primary":"demo-0"}`)}
	}

	a := eventlog.NewKube(kc)
	// A segment holding 400 KiB, then appends to it one record at a time.
	var fill []eventlog.Record
	for size := 0; size < 400<<10; {
		r := record(int64(len(fill) + 1))
		line, err := eventlog.EncodeLine(r)
		if err != nil {
			t.Fatal(err)
		}
		size += len(line)
		fill = append(fill, r)
	}
	if err := a.Append(ctx, s, fill...); err != nil {
		t.Fatal(err)
	}
	next := int64(len(fill)) + 1
	for ; next <= int64(len(fill))+50; next++ {
		if err := a.Append(ctx, s, record(next)); err != nil {
			t.Fatalf("append %d: %v", next, err)
		}
	}
	if len(rec.seen) != 51 {
		t.Fatalf("%d writes for one segment and 50 appends", len(rec.seen))
	}
	for _, w := range rec.seen[1:] {
		if w.kind != "PartialObjectMetadata" || w.bytes > 8<<10 || w.sent > a.ChunkBytes+4<<10 {
			t.Fatalf("an append to a 400 KiB segment sent %d bytes and was answered with a %q of %d bytes", w.sent, w.kind, w.bytes)
		}
	}
	t.Logf("the last append sent %d bytes, answered with %s, %d bytes", rec.seen[50].sent, rec.seen[50].kind, rec.seen[50].bytes)

	// A stale writer: its append carries a resourceVersion the segment has left.
	b := eventlog.NewKube(kc)
	if _, _, err := b.Load(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := a.Append(ctx, s, record(next)); err != nil {
		t.Fatal(err)
	}
	err = b.Append(ctx, s, record(next))
	if !errors.Is(err, eventlog.ErrSequence) || !apierrors.IsConflict(err) {
		t.Fatalf("a stale writer's append: %v, want ErrSequence from a 409 Conflict", err)
	}
	_, recs, err := eventlog.NewKube(kc).Load(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(recs)) != next || eventlog.CheckSequence(0, recs) != nil {
		t.Fatalf("loaded %d records (want %d), sequence %v", len(recs), next, eventlog.CheckSequence(0, recs))
	}

	// The log goes with its Mgors (the garbage collector follows the owner reference).
	if err := mc.Mgorses("default").Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		list, err := kc.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{LabelSelector: eventlog.LabelUID + "=" + s.UID})
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
