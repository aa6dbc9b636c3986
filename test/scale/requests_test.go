package scale

import (
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRequestsCountedByKind(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	var r Requests
	c := &http.Client{Transport: r.Wrap(http.DefaultTransport)}
	for _, q := range []struct{ method, path string }{
		{http.MethodGet, "/api/v1/namespaces/db/pods"},
		{http.MethodGet, "/api/v1/namespaces/db/pods?watch=true"},
		{http.MethodPatch, "/api/v1/namespaces/db/configmaps/mgors-events-x"},
		{http.MethodPut, "/apis/mgors.io/v1alpha1/namespaces/db/mgorses/a/status"},
		{http.MethodPost, "/api/v1/namespaces/db/events"},
	} {
		req, err := http.NewRequestWithContext(context.Background(), q.method, srv.URL+q.path, strings.NewReader(""))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	got := r.Counts()
	if want := (Counts{Reads: 2, Writes: 2, Appends: 1}); got != want {
		t.Errorf("counts %+v, want %+v", got, want)
	}
	if d := got.Sub(Counts{Reads: 1}); d.Reads != 1 || d.Writes != 2 {
		t.Errorf("Sub: %+v", d)
	}
	want := map[string]int64{"GET pods": 2, "PATCH configmaps": 1, "PUT mgorses/status": 1, "POST events": 1}
	if got := r.ByKind(); !maps.Equal(got, want) {
		t.Errorf("ByKind %v, want %v", got, want)
	}
}

func TestResourceOf(t *testing.T) {
	for path, want := range map[string]string{
		"/api/v1/namespaces/db/pods/x/status":                  "pods/status",
		"/apis/apps/v1/namespaces/db/statefulsets":             "statefulsets",
		"/apis/mgors.io/v1alpha1/mgorses":                      "mgorses",
		"/api/v1/pods":                                         "pods",
		"/apis/policy/v1/namespaces/db/poddisruptionbudgets/x": "poddisruptionbudgets",
	} {
		if got := resourceOf(path); got != want {
			t.Errorf("resourceOf(%s) = %q, want %q", path, got, want)
		}
	}
}
