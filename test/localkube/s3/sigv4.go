package s3

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// maxSkew is how far a request's X-Amz-Date may be from the server's clock,
// as S3 allows (RequestTimeTooSkewed past it).
const maxSkew = 15 * time.Minute

// sigError is a refusal with S3's error code.
type sigError struct{ code, msg string }

func (e *sigError) Error() string { return e.code + ": " + e.msg }

func refuse(code, msg string) error { return &sigError{code: code, msg: msg} }

// verify checks the request's AWS signature version 4 (the Authorization
// header form; S3's streaming uploads are checked by their seed signature,
// the chunk signatures are not). It follows the canonical request of AWS's
// "Create a signed AWS API request": method, URI as sent (S3 does not
// normalise it), sorted query, the signed headers, the payload hash header.
func verify(r *http.Request, access, secret string, now time.Time) error {
	auth := r.Header.Get("Authorization")
	if auth == "" {
		return refuse("AccessDenied", "Access Denied: the request is not signed")
	}
	const algorithm = "AWS4-HMAC-SHA256"
	rest, ok := strings.CutPrefix(auth, algorithm+" ")
	if !ok {
		return refuse("AccessDenied", "only "+algorithm+" signatures are accepted")
	}
	fields := map[string]string{}
	for f := range strings.SplitSeq(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
		fields[k] = v
	}
	cred := strings.Split(fields["Credential"], "/")
	signedHeaders, signature := fields["SignedHeaders"], fields["Signature"]
	if len(cred) != 5 || signedHeaders == "" || signature == "" || cred[4] != "aws4_request" {
		return refuse("AuthorizationHeaderMalformed", "the Authorization header is malformed")
	}
	if cred[0] != access {
		return refuse("InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records.")
	}
	amzDate := r.Header.Get("X-Amz-Date")
	at, err := time.Parse("20060102T150405Z", amzDate)
	if err != nil || !strings.HasPrefix(amzDate, cred[1]) {
		return refuse("AccessDenied", "X-Amz-Date is missing or does not match the credential scope")
	}
	if d := now.Sub(at); d > maxSkew || d < -maxSkew {
		return refuse("RequestTimeTooSkewed", "The difference between the request time and the current time is too large.")
	}
	payload := r.Header.Get("X-Amz-Content-Sha256")
	if payload == "" {
		return refuse("InvalidRequest", "Missing required header for this request: x-amz-content-sha256")
	}
	canonical, err := canonicalRequest(r, signedHeaders, payload)
	if err != nil {
		return err
	}
	scope := strings.Join(cred[1:], "/")
	sum := sha256.Sum256([]byte(canonical))
	toSign := algorithm + "\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(sum[:])
	key := []byte("AWS4" + secret)
	for _, part := range cred[1:] {
		key = hmacSHA256(key, part)
	}
	want := hex.EncodeToString(hmacSHA256(key, toSign))
	if !hmac.Equal([]byte(want), []byte(signature)) {
		return refuse("SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided. Check your key and signing method.")
	}
	return nil
}

func canonicalRequest(r *http.Request, signedHeaders, payload string) (string, error) {
	var b strings.Builder
	b.WriteString(r.Method + "\n")
	path := r.URL.EscapedPath()
	if path == "" {
		path = "/"
	}
	b.WriteString(path + "\n")
	b.WriteString(canonicalQuery(r.URL.RawQuery) + "\n")
	names := strings.Split(signedHeaders, ";")
	if !sort.StringsAreSorted(names) {
		return "", refuse("AuthorizationHeaderMalformed", "SignedHeaders are not sorted")
	}
	hasHost := false
	for _, name := range names {
		var value string
		switch name {
		case "host":
			hasHost, value = true, r.Host
		case "content-length":
			value = r.Header.Get("Content-Length")
			if value == "" && r.ContentLength >= 0 {
				value = strconv.FormatInt(r.ContentLength, 10)
			}
		default:
			vals := r.Header.Values(name)
			for i, v := range vals {
				vals[i] = strings.Join(strings.Fields(v), " ")
			}
			value = strings.Join(vals, ",")
		}
		b.WriteString(name + ":" + value + "\n")
	}
	if !hasHost {
		return "", refuse("AccessDenied", "the host header must be signed")
	}
	b.WriteString("\n" + signedHeaders + "\n" + payload)
	return b.String(), nil
}

// canonicalQuery sorts the parameters by name, then value, each encoded as
// AWS encodes them (RFC 3986 unreserved characters kept, the rest %XX).
func canonicalQuery(raw string) string {
	if raw == "" {
		return ""
	}
	var pairs []string
	for p := range strings.SplitSeq(raw, "&") {
		if p == "" {
			continue
		}
		k, v, _ := strings.Cut(p, "=")
		uk, err1 := url.QueryUnescape(k)
		uv, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil {
			uk, uv = k, v
		}
		pairs = append(pairs, awsEscape(uk)+"="+awsEscape(uv))
	}
	sort.Strings(pairs)
	return strings.Join(pairs, "&")
}

func awsEscape(s string) string {
	const hexdigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexdigits[c>>4])
		b.WriteByte(hexdigits[c&15])
	}
	return b.String()
}

func hmacSHA256(key []byte, data string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(data))
	return h.Sum(nil)
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
