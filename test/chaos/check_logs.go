package chaos

import (
	"encoding/base64"
	"encoding/json"
	"regexp"
	"strings"
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
	r := newRedactor(h.Secrets)
	for _, src := range sortedKeys(h.Logs) {
		text := h.Logs[src]
		for n, line := range strings.Split(text, "\n") {
			if why := panicLine(line); why != "" {
				v.add(PropertyPanic, 0, nil, "%s line %d, %s: %s", src, n+1, why, clip(r.redact(line), 300))
			}
		}
		for _, s := range r.secrets {
			if where, how := s.find(text); where >= 0 {
				line := strings.Count(text[:where], "\n") + 1
				v.add(PropertySecret, 0, nil, "%s line %d: secret #%d (%d bytes) appears %s", src, line, s.n+1, s.len, how)
			}
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

// secretForms are the texts that betray one secret.
type secretForms struct {
	n, len int
	plain  string
	quoted string   // as a JSON string holds it (a keyfile's newlines escaped)
	b64    []string // the characters of its base64 encoding that do not depend on its neighbours, at offsets 0, 1, 2
}

// redactor finds and blanks secrets.
type redactor struct{ secrets []secretForms }

// minSecret is the shortest value scanned for: a shorter one (a port, a
// replica-set name) would match innocent text.
const minSecret = 8

func newRedactor(secrets []string) redactor {
	var r redactor
	for n, s := range secrets {
		if len(s) < minSecret {
			continue
		}
		var q strings.Builder
		e := json.NewEncoder(&q)
		e.SetEscapeHTML(false) // as zerolog writes strings
		_ = e.Encode(s)        // a string always encodes
		quoted := strings.TrimSuffix(q.String(), "\n")
		f := secretForms{n: n, len: len(s), plain: s, quoted: quoted[1 : len(quoted)-1]}
		for shift := 0; shift < 3; shift++ {
			enc := base64.StdEncoding.EncodeToString(append(make([]byte, shift), s...))
			// Characters carry 6 bits: skip those holding the leading zero
			// bytes and stop before the last, which shares bits with what follows.
			from, to := (8*shift+5)/6, 8*(shift+len(s))/6
			f.b64 = append(f.b64, enc[from:to])
		}
		r.secrets = append(r.secrets, f)
	}
	return r
}

// find returns where a form of the secret first appears in text (-1 if
// nowhere) and how.
func (f secretForms) find(text string) (int, string) {
	if i := strings.Index(text, f.plain); i >= 0 {
		return i, "in plain text"
	}
	if i := strings.Index(text, f.quoted); i >= 0 {
		return i, "in plain text (JSON-escaped)"
	}
	for _, b := range f.b64 {
		if i := strings.Index(text, b); i >= 0 {
			return i, "base64-encoded"
		}
	}
	return -1, ""
}

func (r redactor) redact(s string) string {
	for _, f := range r.secrets {
		s = strings.ReplaceAll(s, f.plain, "[secret]")
		s = strings.ReplaceAll(s, f.quoted, "[secret]")
		for _, b := range f.b64 {
			s = strings.ReplaceAll(s, b, "[secret]")
		}
	}
	return s
}
