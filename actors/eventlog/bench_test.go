package eventlog

import (
	"context"
	"fmt"
	"testing"
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
