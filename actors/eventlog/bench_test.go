package eventlog

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// BenchmarkAppend measures one durable append of one record per store (the
// file store fsyncs each; the kube store is measured against client-go's fake,
// so it shows the store's own cost, not the API server's).
func BenchmarkAppend(b *testing.B) {
	for name, mk := range map[string]func(b *testing.B) Store{
		"memory": func(*testing.B) Store { return NewMemory() },
		"file": func(b *testing.B) Store {
			f, err := NewFile(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			return f
		},
		"kube-fake": func(*testing.B) Store { return NewKube(apiServerLike()) },
	} {
		b.Run(name, func(b *testing.B) {
			st := mk(b)
			s := Stream{Namespace: "db", Name: "demo", UID: "u-1"}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 1; i <= b.N; i++ {
				if err := st.Append(ctx, s, rec(s, int64(i), "MembersObserved")); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecode measures reading a log back: records per second in the
// reported ns/op of one record.
func BenchmarkDecode(b *testing.B) {
	var recs []Record
	for i := int64(1); i <= 1000; i++ {
		recs = append(recs, rec(st, i, fmt.Sprintf("T%d", i%7)))
	}
	data := lines(recs...)
	b.SetBytes(int64(len(data)) / 1000)
	b.ResetTimer()
	for i := 0; i < b.N; i += 1000 {
		if _, err := Decode(bytesReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

// appendRound is how many single-record appends a round of benchAppendAt times
// before it refills the stream: the segment stays near the fullness asked for.
const appendRound = 100

// benchAppendAt measures single-record appends to a stream whose newest segment
// already holds about fill bytes of records (0: a fresh stream), the fullness a
// long-running cluster's log has. Each round deletes the stream and refills it
// with one batch append, untimed, then times appendRound appends.
func benchAppendAt(b *testing.B, st Store, s Stream, fill int) {
	b.Helper()
	ctx := context.Background()
	var prefix []Record
	for size := 0; size < fill; {
		r := rec(s, int64(len(prefix)+1), "MembersObserved")
		line, err := EncodeLine(r)
		if err != nil {
			b.Fatal(err)
		}
		size += len(line)
		prefix = append(prefix, r)
	}
	next := int64(0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%appendRound == 0 {
			b.StopTimer()
			if err := st.Delete(ctx, s); err != nil {
				b.Fatal(err)
			}
			if len(prefix) > 0 {
				if err := st.Append(ctx, s, prefix...); err != nil {
					b.Fatal(err)
				}
			}
			next = int64(len(prefix)) + 1
			b.StartTimer()
		}
		if err := st.Append(ctx, s, rec(s, next, "MembersObserved")); err != nil {
			b.Fatal(err)
		}
		next++
	}
}

// BenchmarkAppendSegment measures the kube store on an empty segment and on
// one that already holds 400 KiB: an append should cost what the event costs,
// not what the segment holds. kube-fake runs against client-go's fake, whose
// merge patch re-encodes the whole object and tracks managed fields (it
// measures the fake); kube-wire runs over HTTP against wireAPIServer, so it
// shows the store's and client-go's own cost per append.
func BenchmarkAppendSegment(b *testing.B) {
	for _, fill := range []int{0, 400 << 10} {
		b.Run(fmt.Sprintf("kube-fake/fill=%dKiB", fill>>10), func(b *testing.B) {
			benchAppendAt(b, NewKube(apiServerLike()), Stream{Namespace: "db", Name: "demo", UID: "u-1"}, fill)
		})
		b.Run(fmt.Sprintf("kube-wire/fill=%dKiB", fill>>10), func(b *testing.B) {
			srv := httptest.NewServer(wireAPIServer())
			defer srv.Close()
			benchAppendAt(b, NewKube(kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL, QPS: -1})), Stream{Namespace: "db", Name: "demo", UID: "u-1"}, fill)
		})
	}
}

// wireAPIServer answers the store's requests the way the API server does when
// asked for metadata only, without keeping anything: lists are empty, writes
// are acknowledged with a new resourceVersion. It is a cost model of the
// client side, not a conformance fake (apiServerLike and TestKubeAPIServer are).
func wireAPIServer() http.Handler {
	var rv atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		switch r.Method {
		case http.MethodGet:
			_, _ = io.WriteString(w, `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}`)
		case http.MethodPost, http.MethodPatch:
			if r.Method == http.MethodPost {
				w.WriteHeader(http.StatusCreated)
			}
			_, _ = fmt.Fprintf(w, `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"s","namespace":"db","resourceVersion":"%d"}}`, rv.Add(1))
		default:
			_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Success"}`)
		}
	})
}
