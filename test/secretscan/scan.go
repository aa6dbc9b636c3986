// Package secretscan finds Secret values in texts the operator produced (its
// logs, Events, event-log records, statuses), plain, JSON-escaped or base64
// at any alignment, and blanks them (invariant 5). The chaos checker and the
// end-to-end harness share it.
package secretscan

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// secretForms are the texts that betray one secret.
type secretForms struct {
	n, len int
	plain  string
	quoted string   // as a JSON string holds it (a keyfile's newlines escaped)
	b64    []string // the characters of its base64 encoding that do not depend on its neighbours, at offsets 0, 1, 2
}

// Scanner finds and blanks secrets.
type Scanner struct{ secrets []secretForms }

// MinSecret is the shortest value scanned for: a shorter one (a port, a
// replica-set name) would match innocent text.
const MinSecret = 8

// New returns a Scanner for the given secret values (those shorter than
// MinSecret are skipped).
func New(secrets []string) Scanner {
	var r Scanner
	for n, s := range secrets {
		if len(s) < MinSecret {
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

// Redact blanks every form of every secret in s.
func (r Scanner) Redact(s string) string {
	for _, f := range r.secrets {
		s = strings.ReplaceAll(s, f.plain, "[secret]")
		s = strings.ReplaceAll(s, f.quoted, "[secret]")
		for _, b := range f.b64 {
			s = strings.ReplaceAll(s, b, "[secret]")
		}
	}
	return s
}

// Leak is one secret found in a text: which (its number among the secrets
// given to New, and its length, never its value), where and how.
type Leak struct {
	// Secret is the secret's index in New's list; Len its length.
	Secret, Len int
	// Line is the 1-based line of the text where it first appears.
	Line int
	// How is "in plain text", "in plain text (JSON-escaped)" or "base64-encoded".
	How string
}

// String names the leak without the secret.
func (l Leak) String() string {
	return fmt.Sprintf("line %d: secret #%d (%d bytes) appears %s", l.Line, l.Secret+1, l.Len, l.How)
}

// Find returns every secret that appears in text, at its first place.
func (r Scanner) Find(text string) []Leak {
	var out []Leak
	for _, s := range r.secrets {
		if where, how := s.find(text); where >= 0 {
			out = append(out, Leak{Secret: s.n, Len: s.len, Line: strings.Count(text[:where], "\n") + 1, How: how})
		}
	}
	return out
}
