package chaos

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/mgors/operator/test/secretscan"
)

// checkLogs scans every text in History.Logs:
//   - panic: a Go runtime panic or fatal error (its prefix at the start of a
//     line), a klog fatal line (client-go's), a zerolog line at level fatal or panic, an err field that the
//     operator's recovered goroutine panics start with "panic: ", or a mongod
//     log line of severity F. Only these structured marks count, so a command
//     or a value that merely contains the word is no failure.
//   - secret: a Secret value (8 bytes or longer) in the text, plain or base64
//     (standard encoding, at any alignment inside a longer encoded blob).
//
// A Detail quotes a panic line with every secret in it blanked, and names a
// leaked secret only by its number and length.
func checkLogs(h *History, v *Verdict) {
	r := secretscan.New(h.Secrets)
	for _, src := range sortedKeys(h.Logs) {
		text := h.Logs[src]
		for n, line := range strings.Split(text, "\n") {
			if why := panicLine(line); why != "" {
				v.add(PropertyPanic, 0, nil, "%s line %d, %s: %s", src, n+1, why, clip(r.Redact(line), 300))
			}
		}
		for _, l := range r.Find(text) {
			v.add(PropertySecret, 0, nil, "%s %s", src, l)
		}
	}
}

// klogFatal is klog's header of a fatal line: Fmmdd hh:mm:ss.uuuuuu threadid file:line]
var klogFatal = regexp.MustCompile(`^F\d{4} \d\d:\d\d:\d\d\.\d{6}\s+\d+ [^ \]]+:\d+\] `)

// panicLine says why a log line is a panic or fatal line, "" when it is not.
func panicLine(line string) string {
	l := strings.TrimSpace(line)
	// `kubectl logs --timestamps` puts an RFC 3339 time first.
	if sp := strings.IndexByte(l, ' '); sp > 0 && len(l) > 20 && l[4] == '-' && l[10] == 'T' {
		l = strings.TrimSpace(l[sp+1:])
	}
	switch {
	case strings.HasPrefix(l, "panic: "):
		return "a Go panic"
	case strings.HasPrefix(l, "fatal error: "):
		return "a Go fatal error"
	case klogFatal.MatchString(l):
		return "a klog fatal line" // client-go's klog.Fatal exits the process
	}
	marked := strings.Contains(l, "fatal") || strings.Contains(l, "panic") || strings.Contains(l, `"F"`)
	if !marked || !strings.HasPrefix(l, "{") {
		return ""
	}
	var rec map[string]any
	if json.Unmarshal([]byte(l), &rec) != nil {
		return ""
	}
	str := func(k string) string { s, _ := rec[k].(string); return s }
	switch {
	case str("level") == "fatal" || str("level") == "panic":
		return "level " + str("level")
	case str("s") == "F" && rec["c"] != nil: // mongod's severity and component (mongod-sim's exit lines carry no "t")
		return "mongod severity F"
	case strings.HasPrefix(str("err"), "panic: ") || strings.HasPrefix(str("error"), "panic: "):
		return "a recovered panic"
	}
	return ""
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
