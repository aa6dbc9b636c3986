package s3_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mgors/operator/mongo/backup/store"
	"github.com/mgors/operator/test/localkube/s3"
)

const (
	access = "mgors-test"
	secret = "c2VjcmV0LWtleS1vZi10aGUtc3RvcmU"
)

func start(t *testing.T, dir string) *httptest.Server {
	t.Helper()
	h, err := s3.Handler(s3.Options{Dir: dir, AccessKey: access, SecretKey: secret, Buckets: []string{"backups"},
		Log: zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func client(t *testing.T, srv *httptest.Server, key, sec string) *store.Client {
	t.Helper()
	c, err := store.New(store.Config{Endpoint: srv.URL, Bucket: "backups", AccessKey: key, SecretKey: sec, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRoundTrip: objects written through the client are read back byte for
// byte, listed in key order under their prefix (across list pages), survive a
// restart of the server on the same directory, and a missing key is
// ErrNotFound. Keys carry the characters database and collection names may.
func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	srv := start(t, dir)
	c := client(t, srv, access, secret)
	objs := map[string][]byte{
		"demo/b1/manifest.json":                    []byte(`{"cluster":"default/demo"}`),
		"demo/b1/data/shop/orders%20v2/00000.bson": bytes.Repeat([]byte{0, 1, 2, 0xff}, 1<<18),
		"demo/b1/data/shop/a+b=c/00000.bson":       []byte("x"),
		"demo/b1/oplog/00000.bson":                 {},
	}
	for k, v := range objs {
		if err := c.Put(ctx, k, v, "application/octet-stream"); err != nil {
			t.Fatalf("put %s: %v", k, err)
		}
	}
	for i := range 1005 {
		if err := c.Put(ctx, fmt.Sprintf("many/%05d", i), []byte{byte(i)}, "application/octet-stream"); err != nil {
			t.Fatal(err)
		}
	}
	srv.Close()
	srv = start(t, dir)
	c = client(t, srv, access, secret)
	for k, v := range objs {
		got, err := c.Get(ctx, k)
		if err != nil || !bytes.Equal(got, v) {
			t.Fatalf("get %s after restart: %d bytes, %v; want %d bytes", k, len(got), err, len(v))
		}
	}
	list, err := c.List(ctx, "demo/b1/")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range list {
		keys = append(keys, o.Key)
		if o.Size != int64(len(objs[o.Key])) {
			t.Errorf("%s listed with size %d, want %d", o.Key, o.Size, len(objs[o.Key]))
		}
	}
	want := "demo/b1/data/shop/a+b=c/00000.bson demo/b1/data/shop/orders%20v2/00000.bson demo/b1/manifest.json demo/b1/oplog/00000.bson"
	if strings.Join(keys, " ") != want {
		t.Errorf("list = %v, want %s", keys, want)
	}
	many, err := c.List(ctx, "many/")
	if err != nil || len(many) != 1005 || many[1004].Key != "many/01004" {
		t.Errorf("list of 1005 objects: %d, %v", len(many), err)
	}
	if _, err := c.Get(ctx, "demo/b1/none"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("get of a missing key: %v, want ErrNotFound", err)
	}
	if err := c.Delete(ctx, "demo/b1/manifest.json"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, "demo/b1/manifest.json"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("get after delete: %v", err)
	}
}

// TestSignatureRequired: a request signed with another secret, another
// access key, or not signed at all is refused with S3's codes, and nothing
// is written.
func TestSignatureRequired(t *testing.T) {
	ctx := context.Background()
	srv := start(t, t.TempDir())
	for _, tc := range []struct{ key, secret, code string }{
		{access, "wrong-secret", "SignatureDoesNotMatch"},
		{"someone-else", secret, "InvalidAccessKeyId"},
	} {
		err := client(t, srv, tc.key, tc.secret).Put(ctx, "x", []byte("y"), "text/plain")
		if err == nil || !strings.Contains(err.Error(), tc.code) {
			t.Errorf("put with key %s: %v, want %s", tc.key, err, tc.code)
		}
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, srv.URL+"/backups/x", strings.NewReader("y"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("unsigned put: %s, want 403", resp.Status)
	}
	if _, err := client(t, srv, access, secret).Get(ctx, "x"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused put wrote the object: %v", err)
	}
}
