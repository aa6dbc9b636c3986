// Package scale is the scale benchmark of issue 13 (`make bench-scale`,
// docs/performance.md): N Mgors on a real API server whose pods and members
// are simulated in this process, run either by the operator's own pieces
// (watch.Dispatcher feeding an actors.Manager, KubeWorld, the kube event
// log) or by a controller-runtime baseline calling the same World, under the
// same fault schedule. It measures, never asserts.
package scale

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// Requests counts the API requests that pass through a rest.Config's
// transport, by kind (see Counts).
type Requests struct {
	reads, writes, appends atomic.Int64

	mu     sync.Mutex
	byKind map[string]int64 // "VERB resource[/subresource]": what the rows' logs break the counts into
}

// Counts are requests so far: Reads are GETs (gets, lists and the start of
// each watch), Appends the writes to ConfigMaps (the kube event log is the
// only ConfigMap the operator writes), Writes every other write (objects,
// status, Kubernetes Events).
type Counts struct {
	Reads, Writes, Appends int64
}

// Sub is c minus an earlier count.
func (c Counts) Sub(o Counts) Counts {
	return Counts{Reads: c.Reads - o.Reads, Writes: c.Writes - o.Writes, Appends: c.Appends - o.Appends}
}

// Counts returns the requests counted so far.
func (r *Requests) Counts() Counts {
	return Counts{Reads: r.reads.Load(), Writes: r.writes.Load(), Appends: r.appends.Load()}
}

// Wrap is a rest.Config WrapTransport that counts every request rt carries.
func (r *Requests) Wrap(rt http.RoundTripper) http.RoundTripper {
	return countingTransport{next: rt, r: r}
}

type countingTransport struct {
	next http.RoundTripper
	r    *Requests
}

// ByKind returns the requests so far by method and resource
// ("PATCH configmaps", "PUT mgors/status", "GET events"; watches are GETs).
func (r *Requests) ByKind() map[string]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int64, len(r.byKind))
	for k, v := range r.byKind {
		out[k] = v
	}
	return out
}

// resourceOf is the resource (and subresource) a request's path names:
// /api/v1/namespaces/ns/pods/x/status is "pods/status".
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i, p := range parts {
		if p == "namespaces" && i+2 < len(parts) {
			parts = parts[i+2:]
			break
		}
	}
	if len(parts) >= 3 && (parts[0] == "api" || parts[0] == "apis") {
		parts = parts[len(parts)-1:] // cluster-scoped or across namespaces: the last segment
	}
	if len(parts) >= 3 {
		return parts[0] + "/" + parts[2]
	}
	return parts[0]
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	key := req.Method + " " + resourceOf(req.URL.Path)
	t.r.mu.Lock()
	if t.r.byKind == nil {
		t.r.byKind = map[string]int64{}
	}
	t.r.byKind[key]++
	t.r.mu.Unlock()
	switch {
	case req.Method == http.MethodGet || req.Method == http.MethodHead:
		t.r.reads.Add(1)
	case strings.Contains(req.URL.Path, "/configmaps"):
		t.r.appends.Add(1)
	default:
		t.r.writes.Add(1)
	}
	return t.next.RoundTrip(req)
}
