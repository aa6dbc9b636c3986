package kubelet

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Log rotation: a container run's log is cut at logMaxBytes and keeps logKeep
// rotated files (N.log.1 is the newest of them).
const (
	logMaxBytes = 10 << 20
	logKeep     = 3
)

// logFile writes CRI-format lines ("TIME STREAM P|F TEXT") of one container run and
// rotates itself.
type logFile struct {
	mu   sync.Mutex
	path string
	f    *os.File
	size int64
	max  int64
}

func openLog(path string) (*logFile, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o640)
	if err != nil {
		return nil, err
	}
	st, _ := f.Stat()
	return &logFile{path: path, f: f, size: st.Size(), max: logMaxBytes}, nil
}

func (l *logFile) write(stream string, partial bool, text []byte, now time.Time) error {
	tag := "F"
	if partial {
		tag = "P"
	}
	line := fmt.Sprintf("%s %s %s %s\n", now.UTC().Format(time.RFC3339Nano), stream, tag, text)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.size+int64(len(line)) > l.max && l.size > 0 {
		if err := l.rotate(); err != nil {
			return err
		}
	}
	n, err := l.f.WriteString(line)
	l.size += int64(n)
	return err
}

func (l *logFile) rotate() error {
	_ = l.f.Close() // every line was written already; the file is renamed next
	for i := logKeep - 1; i >= 1; i-- {
		_ = os.Rename(fmt.Sprintf("%s.%d", l.path, i), fmt.Sprintf("%s.%d", l.path, i+1))
	}
	_ = os.Remove(fmt.Sprintf("%s.%d", l.path, logKeep+1))
	if err := os.Rename(l.path, l.path+".1"); err != nil {
		return err
	}
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o640)
	if err != nil {
		return err
	}
	l.f, l.size = f, 0
	return nil
}

func (l *logFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}

// copyLines moves a container's output from r into the log, a line at a time; a line
// longer than 16 KiB is split into partial entries as CRI runtimes do.
func copyLines(r io.Reader, stream string, l *logFile) {
	br := bufio.NewReaderSize(r, 16<<10)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			partial := errors.Is(err, bufio.ErrBufferFull)
			text := bytes.TrimSuffix(line, []byte("\n"))
			_ = l.write(stream, partial, text, time.Now())
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

// logLine is one parsed CRI log entry.
type logLine struct {
	Time    time.Time
	Stream  string
	Partial bool
	Text    string
	Raw     string // the timestamp as written
}

func parseLogLine(s string) (logLine, bool) {
	parts := strings.SplitN(s, " ", 4)
	if len(parts) < 3 {
		return logLine{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, parts[0])
	if err != nil {
		return logLine{}, false
	}
	l := logLine{Time: t, Stream: parts[1], Partial: parts[2] == "P", Raw: parts[0]}
	if len(parts) == 4 {
		l.Text = parts[3]
	}
	return l, true
}

// logOptions are the containerLogs query parameters a kubelet honours.
type logOptions struct {
	Follow     bool
	Previous   bool
	TailLines  int64 // -1: all
	Timestamps bool
	Since      time.Time
	LimitBytes int64 // 0: no limit
}

// renderLog turns stored entries into what `kubectl logs` prints.
func renderLog(lines []logLine, o logOptions) []byte {
	var out bytes.Buffer
	var pending strings.Builder
	var firstRaw string
	var full []string
	for _, l := range lines {
		if !o.Since.IsZero() && l.Time.Before(o.Since) {
			continue
		}
		if pending.Len() == 0 {
			firstRaw = l.Raw
		}
		pending.WriteString(l.Text)
		if l.Partial {
			continue
		}
		s := pending.String() + "\n"
		if o.Timestamps {
			s = firstRaw + " " + s
		}
		full = append(full, s)
		pending.Reset()
	}
	if o.TailLines >= 0 && int64(len(full)) > o.TailLines {
		full = full[int64(len(full))-o.TailLines:]
	}
	for _, s := range full {
		out.WriteString(s)
	}
	b := out.Bytes()
	if o.LimitBytes > 0 && int64(len(b)) > o.LimitBytes {
		b = b[:o.LimitBytes]
	}
	return b
}

// readLogFiles reads a run's log with its rotated files, oldest first.
func readLogFiles(path string) []logLine {
	var files []string
	for i := logKeep; i >= 1; i-- {
		files = append(files, path+"."+strconv.Itoa(i))
	}
	files = append(files, path)
	var lines []logLine
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, s := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			if l, ok := parseLogLine(s); ok {
				lines = append(lines, l)
			}
		}
	}
	return lines
}
