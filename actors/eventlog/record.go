// Package eventlog keeps each cluster's event log: an append-only, gapless sequence
// of records, one stream per Mgors incarnation, behind one Store interface with
// three implementations (memory for tests, file for an operator outside a cluster,
// kube for the log kept in the cluster itself).
//
// The log is write-ahead: the Cluster actor appends a decision's record and only
// then carries the decision out, so nothing happens that the log does not show.
// The package knows the envelope, not the payloads: actors define the event types
// and the fold over them. See docs/design/event-log.md.
package eventlog

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// SchemaVersion is the version of the record envelope written today. Readers
// accept every version up to it and migrate older ones in Migrate.
const SchemaVersion = 1

// Record is one event of a cluster's log.
type Record struct {
	// Schema is the envelope's schema version.
	Schema int `json:"schema"`
	// Seq is the record's position in its stream: 1, 2, 3, ... without gaps.
	Seq int64 `json:"seq"`
	// Time is when the record was made (UTC, RFC 3339 with nanoseconds).
	Time time.Time `json:"time"`
	// Cluster is the Mgors object's namespace/name.
	Cluster string `json:"cluster"`
	// UID is the Mgors object's UID: a re-created object is a new stream.
	UID string `json:"uid"`
	// Type names the payload's type, e.g. "PhaseChanged".
	Type string `json:"type"`
	// Version is the payload's own schema version, for migrating old payloads.
	Version int `json:"v,omitempty"`
	// Cause says what led to the event: the message or observation, by name.
	Cause string `json:"cause,omitempty"`
	// Writer names the operator instance that wrote the record.
	Writer string `json:"writer,omitempty"`
	// Data is the payload, JSON. It never holds a secret.
	Data json.RawMessage `json:"data,omitempty"`
}

// Stream names one cluster incarnation's log.
type Stream struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
}

// Key is the cluster's namespace/name, as records and logs name it.
func (s Stream) Key() string { return s.Namespace + "/" + s.Name }

func (s Stream) String() string { return s.Key() + "@" + s.UID }

func (s Stream) valid() error {
	if s.Namespace == "" || s.Name == "" || s.UID == "" {
		return fmt.Errorf("eventlog: stream %q needs a namespace, a name and a uid", s.String())
	}
	return nil
}

// Snapshot is a folded state at a sequence number, so loading need not read the
// whole history; records up to Seq may then be compacted away.
type Snapshot struct {
	// Schema is the envelope schema version of the snapshot.
	Schema int `json:"schema"`
	// Seq is the last record folded into State.
	Seq int64 `json:"seq"`
	// Time is when the snapshot was taken.
	Time time.Time `json:"time"`
	// State is the folded state, JSON, as the actors encode it.
	State json.RawMessage `json:"state"`
}

// Store keeps event logs. Implementations are safe for concurrent use by
// different streams; one stream has one writer (the cluster's actor), and a
// second writer is detected by the sequence check, never silently interleaved.
type Store interface {
	// Append stores records durably, in order. The first record must follow the
	// stream's last sequence number (ErrSequence otherwise); when Append returns
	// nil the records survive a crash of the process.
	Append(ctx context.Context, s Stream, recs ...Record) error
	// Load returns the stream's latest snapshot (nil if none) and every record
	// after it, in order. A stream that was never written loads empty.
	Load(ctx context.Context, s Stream) (*Snapshot, []Record, error)
	// SaveSnapshot stores a snapshot; records up to its Seq may be compacted.
	SaveSnapshot(ctx context.Context, s Stream, snap Snapshot) error
	// Delete removes a stream, for a Mgors that is gone.
	Delete(ctx context.Context, s Stream) error
	// Name is the store's kind: "memory", "file" or "kube".
	Name() string
}

// ErrSequence means an append did not continue the stream: another writer got
// there first, or the caller's state is stale. The caller must reload.
var ErrSequence = errors.New("eventlog: record does not continue the stream's sequence")

// checkContinues verifies that recs continue a stream whose last seq is last.
func checkContinues(s Stream, last int64, recs []Record) error {
	next := last + 1
	for _, r := range recs {
		if r.Seq != next {
			return fmt.Errorf("%w: %s: want seq %d, got %d", ErrSequence, s, next, r.Seq)
		}
		if r.UID != "" && r.UID != s.UID {
			return fmt.Errorf("eventlog: record %d of uid %s appended to stream %s", r.Seq, r.UID, s)
		}
		next++
	}
	return nil
}

// checkView fences a snapshot as appends are fenced: only a writer whose view
// of the stream (loaded, ending at last) is still the stream's (now ends at
// current) may save one. A writer that never loaded the stream, or whose last
// append failed (its view was dropped), has no view to vouch for; another
// writer's records after its view make it stale. Either way: ErrSequence.
func checkView(s Stream, viewed bool, last, current int64) error {
	if !viewed {
		return fmt.Errorf("%w: %s: a snapshot from a writer without a current view of the log", ErrSequence, s)
	}
	if current != last {
		return fmt.Errorf("%w: %s: the log ends at %d, past this writer's %d: another writer", ErrSequence, s, current, last)
	}
	return nil
}

// EncodeLine encodes a record as one JSON line, newline included.
func EncodeLine(r Record) ([]byte, error) {
	if r.Schema == 0 {
		r.Schema = SchemaVersion
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("eventlog: encoding record %d: %w", r.Seq, err)
	}
	return append(b, '\n'), nil
}

// encodeLines encodes records as consecutive JSON lines.
func encodeLines(recs []Record) ([]byte, error) {
	var buf bytes.Buffer
	for _, r := range recs {
		line, err := EncodeLine(r)
		if err != nil {
			return nil, err
		}
		buf.Write(line)
	}
	return buf.Bytes(), nil
}

// LineError is a record line that could not be decoded; Line counts from 1.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("eventlog: line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// DecodeLine decodes one record line (without or with its newline).
func DecodeLine(line []byte) (Record, error) {
	var r Record
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return r, errors.New("empty line")
	}
	if err := json.Unmarshal(line, &r); err != nil {
		return r, err
	}
	if r.Schema < 1 || r.Schema > SchemaVersion {
		return r, fmt.Errorf("unsupported record schema %d (this build reads 1 to %d)", r.Schema, SchemaVersion)
	}
	if r.Seq < 1 {
		return r, fmt.Errorf("sequence number %d is not positive", r.Seq)
	}
	if r.Type == "" {
		return r, errors.New("record has no type")
	}
	return Migrate(r), nil
}

// Migrate brings a record of an older envelope schema to the current one. There
// is only schema 1 so far; the function is where a schema 2 would be mapped.
func Migrate(r Record) Record { return r }

// Decoded is the result of decoding a log: its records, and whether a torn last
// line (a write cut short by a crash, never acknowledged) was dropped.
type Decoded struct {
	Records []Record
	// TornTail is true when the last line was incomplete and was left out.
	TornTail bool
	// ValidBytes is the length of the input up to the end of the last good line,
	// where a writer truncates a torn tail before appending again.
	ValidBytes int64
}

// maxLine bounds one record line; a longer one is an error, not an allocation.
const maxLine = 4 << 20

// Decode reads JSON-line records. A bad line in the middle is an error naming
// the line; a bad or unterminated last line is a torn tail from a crash and is
// dropped (reported in Decoded.TornTail), because an append is acknowledged only
// after its newline reached the disk.
func Decode(r io.Reader) (Decoded, error) {
	var d Decoded
	br := bufio.NewReaderSize(r, 64<<10)
	lineNo := 0
	var pendingErr *LineError
	for {
		line, err := readLine(br)
		if len(line) > 0 {
			lineNo++
			if pendingErr != nil {
				return d, pendingErr // a bad line followed by more lines: corruption, not a tear
			}
			terminated := line[len(line)-1] == '\n'
			rec, derr := DecodeLine(line)
			switch {
			case derr != nil && len(bytes.TrimSpace(line)) == 0:
				d.ValidBytes += int64(len(line)) // blank line: skip
			case derr != nil:
				pendingErr = &LineError{Line: lineNo, Err: derr}
			case !terminated:
				pendingErr = &LineError{Line: lineNo, Err: errors.New("line has no newline")}
			default:
				d.Records = append(d.Records, rec)
				d.ValidBytes += int64(len(line))
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return d, &LineError{Line: lineNo + 1, Err: err}
		}
	}
	if pendingErr != nil {
		d.TornTail = true
	}
	return d, nil
}

// readLine reads one line with its newline, refusing lines over maxLine.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxLine {
			return nil, fmt.Errorf("line longer than %d bytes", maxLine)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return line, err
	}
}

// CheckSequence verifies that records continue from after (0 for the start)
// without gaps or repeats, naming the first record that does not.
func CheckSequence(after int64, recs []Record) error {
	next := after + 1
	for _, r := range recs {
		if r.Seq != next {
			return fmt.Errorf("eventlog: gap or repeat: want seq %d, found %d (%s)", next, r.Seq, r.Type)
		}
		next++
	}
	return nil
}
