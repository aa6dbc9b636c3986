package eventlog

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func lines(recs ...Record) []byte {
	var b bytes.Buffer
	for _, r := range recs {
		l, _ := EncodeLine(r)
		b.Write(l)
	}
	return b.Bytes()
}

var st = Stream{Namespace: "db", Name: "demo", UID: "u-1"}

func TestDecodeTornTail(t *testing.T) {
	good := lines(rec(st, 1, "A"), rec(st, 2, "B"))
	for name, tail := range map[string]string{
		"half a line":   `{"schema":1,"seq":3,"ty`,
		"no newline":    strings.TrimSuffix(string(lines(rec(st, 3, "C"))), "\n"),
		"garbage bytes": "\x00\x01\x02",
	} {
		t.Run(name, func(t *testing.T) {
			d, err := Decode(bytes.NewReader(append(append([]byte{}, good...), tail...)))
			if err != nil {
				t.Fatal(err)
			}
			if !d.TornTail || len(d.Records) != 2 || d.ValidBytes != int64(len(good)) {
				t.Fatalf("decoded %+v", d)
			}
		})
	}
}

func TestDecodeCorruptionNamesTheLine(t *testing.T) {
	in := string(lines(rec(st, 1, "A"))) + "{not json}\n" + string(lines(rec(st, 3, "C")))
	_, err := Decode(strings.NewReader(in))
	var le *LineError
	if !errors.As(err, &le) || le.Line != 2 {
		t.Fatalf("err = %v, want a LineError on line 2", err)
	}
}

func TestDecodeRejectsFutureSchema(t *testing.T) {
	r := rec(st, 1, "A")
	r.Schema = SchemaVersion + 1
	b, _ := EncodeLine(r)
	_, err := Decode(bytes.NewReader(append(b, lines(rec(st, 2, "B"))...)))
	if err == nil || !strings.Contains(err.Error(), "unsupported record schema") {
		t.Fatalf("err = %v", err)
	}
}

func TestDecodeToleratesUnknownFields(t *testing.T) {
	in := `{"schema":1,"seq":1,"type":"A","time":"2026-11-29T12:00:00Z","added_later":{"x":1}}` + "\n"
	d, err := Decode(strings.NewReader(in))
	if err != nil || len(d.Records) != 1 {
		t.Fatalf("%+v %v", d, err)
	}
}

// A crash in the middle of an append leaves a torn line; the file store cuts it
// and the next append continues the sequence.
func TestFileStoreRecoversFromTornTail(t *testing.T) {
	dir := t.TempDir()
	f, _ := NewFile(dir)
	ctx := t.Context()
	if err := f.Append(ctx, st, rec(st, 1, "A"), rec(st, 2, "B")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "db", "demo", "u-1", "log.jsonl")
	fh, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if _, err := fh.WriteString(`{"schema":1,"seq":3,"type":"C","da`); err != nil {
		t.Fatal(err)
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}

	g, _ := NewFile(dir) // the restarted operator
	_, recs, err := g.Load(ctx, st)
	if err != nil || len(recs) != 2 {
		t.Fatalf("load after crash: %v %v", recs, err)
	}
	if err := g.Append(ctx, st, rec(st, 3, "C")); err != nil {
		t.Fatal(err)
	}
	_, recs, err = NewMustFile(t, dir).Load(ctx, st)
	if err != nil || len(recs) != 3 || recs[2].Type != "C" {
		t.Fatalf("after repair: %v %v", recs, err)
	}
}

func NewMustFile(t *testing.T, dir string) *File {
	f, err := NewFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestLogLinesReplay(t *testing.T) {
	var out bytes.Buffer
	log := zerolog.New(&out).With().Timestamp().Logger()
	want := []Record{rec(st, 1, "ClusterObserved"), rec(st, 2, "PhaseChanged")}
	out.WriteString("plain text from somewhere else\n")
	log.Info().Str("cluster", "db/demo").Msg("an ordinary log line")
	for _, r := range want {
		LogEvent(log, r, Transition{PhaseBefore: "Provisioning", Phase: "Initiating", Reason: "MembersAnswer"})
	}
	// kubectl logs --timestamps prefixes each line.
	stamped := strings.ReplaceAll(out.String(), "\n{", "\n2026-11-29T12:00:00.000000000Z {")
	got, err := ParseLogs(strings.NewReader(stamped))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("parsed %d events from\n%s", len(got), stamped)
	}
	for i := range want {
		w := want[i]
		w.Schema = SchemaVersion
		if got[i].Seq != w.Seq || got[i].Type != w.Type || string(got[i].Data) != string(w.Data) ||
			!got[i].Time.Equal(w.Time) || got[i].UID != w.UID || got[i].Cluster != w.Cluster {
			t.Fatalf("event %d: got %+v, want %+v", i, got[i], w)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(lines(rec(st, 1, "A"), rec(st, 2, "B")))
	f.Add([]byte(`{"schema":1,"seq":3,"ty`))
	f.Add([]byte("{}\n{}\n"))
	f.Add([]byte("\n\n\n"))
	f.Add([]byte(`{"schema":1,"seq":1,"type":"A","data":{"deep":[[[[[]]]]]}}` + "\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		d, err := Decode(bytes.NewReader(in))
		if err != nil {
			var le *LineError
			if !errors.As(err, &le) || le.Line < 1 {
				t.Fatalf("error %v does not name a line", err)
			}
			return
		}
		if d.ValidBytes > int64(len(in)) {
			t.Fatalf("ValidBytes %d beyond input %d", d.ValidBytes, len(in))
		}
		// What decodes must decode the same from its valid prefix.
		again, err := Decode(bytes.NewReader(in[:d.ValidBytes]))
		if err != nil || len(again.Records) != len(d.Records) || again.TornTail {
			t.Fatalf("prefix decodes differently: %v %+v", err, again)
		}
		_, _ = ParseLogs(bytes.NewReader(in))
	})
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
