package eventlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rs/zerolog"
)

// LogMarker is the field whose presence (value 1) marks a log line as an event
// record, so `kubectl logs` of the operator is a replayable log.
const LogMarker = "eventlog"

// Transition is what a record did to the cluster's phase, and why, for the log line.
type Transition struct {
	PhaseBefore string
	Phase       string
	Reason      string
}

// logLine is the JSON shape of an event's log line: the record's fields flat,
// in the operator's field vocabulary, beside zerolog's own level/time/message.
type logLine struct {
	Marker      int             `json:"eventlog"`
	Schema      int             `json:"schema"`
	Cluster     string          `json:"cluster"`
	UID         string          `json:"uid"`
	Seq         int64           `json:"seq"`
	Event       string          `json:"event"`
	Version     int             `json:"v"`
	At          time.Time       `json:"at"`
	Cause       string          `json:"cause"`
	Writer      string          `json:"writer"`
	PhaseBefore string          `json:"phase_before"`
	Phase       string          `json:"phase"`
	Reason      string          `json:"reason"`
	Data        json.RawMessage `json:"data"`
}

// LogEvent writes the record as one structured log line.
func LogEvent(log zerolog.Logger, r Record, t Transition) {
	ev := log.Info().
		Int(LogMarker, 1).
		Int("schema", orDefault(r.Schema)).
		Str("cluster", r.Cluster).
		Str("uid", r.UID).
		Int64("seq", r.Seq).
		Str("event", r.Type).
		Int("v", r.Version).
		Str("at", r.Time.UTC().Format(time.RFC3339Nano)).
		Str("cause", r.Cause).
		Str("writer", r.Writer).
		Str("phase_before", t.PhaseBefore).
		Str("phase", t.Phase).
		Str("reason", t.Reason)
	if len(r.Data) > 0 {
		ev = ev.RawJSON("data", r.Data)
	}
	ev.Msg(r.Type)
}

func orDefault(schema int) int {
	if schema == 0 {
		return SchemaVersion
	}
	return schema
}

// ParseLogs reads an operator's log (as `kubectl logs` prints it, with or
// without --timestamps prefixes) and returns the event records in it, in the
// order written. Lines that are not events are skipped; an event line that
// cannot be read is an error naming the line.
func ParseLogs(r io.Reader) ([]Record, error) {
	var out []Record
	br := bufio.NewReaderSize(r, 64<<10)
	for lineNo := 1; ; lineNo++ {
		line, err := readLine(br)
		if len(line) > 0 {
			rec, ok, perr := parseLogLine(line)
			if perr != nil {
				return out, &LineError{Line: lineNo, Err: perr}
			}
			if ok {
				out = append(out, rec)
			}
		}
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, &LineError{Line: lineNo, Err: err}
		}
	}
}

func parseLogLine(line []byte) (Record, bool, error) {
	i := bytes.IndexByte(line, '{')
	if i < 0 {
		return Record{}, false, nil
	}
	body := bytes.TrimSpace(line[i:])
	var probe map[string]json.RawMessage
	if !json.Valid(body) {
		return Record{}, false, nil // not JSON: another program's output
	}
	if err := json.Unmarshal(body, &probe); err != nil {
		return Record{}, false, nil //nolint:nilerr // valid JSON that is not an object (e.g. an array) is not an event line either
	}
	if string(probe[LogMarker]) != "1" {
		return Record{}, false, nil
	}
	var l logLine
	if err := json.Unmarshal(body, &l); err != nil {
		return Record{}, false, fmt.Errorf("event line: %w", err)
	}
	r := Record{
		Schema: l.Schema, Seq: l.Seq, Time: l.At, Cluster: l.Cluster, UID: l.UID,
		Type: l.Event, Version: l.Version, Cause: l.Cause, Writer: l.Writer, Data: l.Data,
	}
	enc, err := json.Marshal(r)
	if err != nil {
		return Record{}, false, err
	}
	rec, err := DecodeLine(enc) // the same checks as the stores apply
	if err != nil {
		return Record{}, false, fmt.Errorf("event line: %w", err)
	}
	return rec, true, nil
}
