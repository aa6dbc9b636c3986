package secretscan

import (
	"encoding/base64"
	"strings"
	"testing"
)

func TestFindAndRedact(t *testing.T) {
	const key = "KEY-line-one\nKEY-line-two"
	const pw = "p4ssw0rd-long-enough"
	s := New([]string{pw, "short", key})
	for text, want := range map[string]string{
		"nothing to see":   "",
		"login with " + pw: "line 1: secret #1 (20 bytes) appears in plain text",
		"a\n" + `{"msg":"KEY-line-one\nKEY-line-two"}`:       "line 2: secret #3 (25 bytes) appears in plain text (JSON-escaped)",
		base64.StdEncoding.EncodeToString([]byte("x=" + pw)): "line 1: secret #1 (20 bytes) appears base64-encoded",
	} {
		var got []string
		for _, l := range s.Find(text) {
			got = append(got, l.String())
		}
		if strings.Join(got, "; ") != want {
			t.Errorf("%q: %v, want %q", text, got, want)
		}
		if want != "" && len(s.Find(s.Redact(text))) != 0 {
			t.Errorf("%q: redacted text still holds a secret: %q", text, s.Redact(text))
		}
	}
}
