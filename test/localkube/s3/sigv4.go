package s3

import (
	"crypto/hmac"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
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
// the chunk signatures are not): the signature is computed again by the AWS
// SDK's own signer (signature) and compared.
func verify(r *http.Request, access, secret string, now time.Time) error {
	auth := r.Header.Get("Authorization")
	if auth == "" {
		return refuse("AccessDenied", "Access Denied: the request is not signed")
	}
	const algorithm = "AWS4-HMAC-SHA256"
	if !strings.HasPrefix(auth, algorithm+" ") {
		return refuse("AccessDenied", "only "+algorithm+" signatures are accepted")
	}
	fields := authFields(auth)
	cred := strings.Split(fields["Credential"], "/")
	signedHeaders, sig := fields["SignedHeaders"], fields["Signature"]
	if len(cred) != 5 || signedHeaders == "" || sig == "" || cred[4] != "aws4_request" {
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
	want, err := signature(r, access, secret, signedHeaders, payload, cred[3], cred[2], at)
	if err != nil {
		return err
	}
	if !hmac.Equal([]byte(want), []byte(sig)) {
		return refuse("SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided. Check your key and signing method.")
	}
	return nil
}

// signature is the signature the AWS SDK's signer computes for r with the
// secret: r as the client signed it (the headers it named in signedHeaders
// and no other, its content length only when signed), at its own time, for
// S3's canonical URI (not escaped twice), in the credential's service and
// region.
func signature(r *http.Request, access, secret, signedHeaders, payload, service, region string, at time.Time) (string, error) {
	c := r.Clone(r.Context())
	c.Header, c.ContentLength = http.Header{}, 0
	for name := range strings.SplitSeq(signedHeaders, ";") {
		switch name {
		case "host":
		case "content-length":
			c.ContentLength = r.ContentLength
		default:
			c.Header[http.CanonicalHeaderKey(name)] = r.Header.Values(name)
		}
	}
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	creds := aws.Credentials{AccessKeyID: access, SecretAccessKey: secret}
	if err := signer.SignHTTP(r.Context(), creds, c, payload, service, region, at); err != nil {
		return "", refuse("AccessDenied", err.Error())
	}
	got := authFields(c.Header.Get("Authorization"))
	if got["SignedHeaders"] != signedHeaders {
		// A header the signer never signs (User-Agent, Expect, ...), or the
		// host or a content length left out.
		return "", refuse("SignatureDoesNotMatch", "the signed headers "+signedHeaders+" are not those S3 signs")
	}
	return got["Signature"], nil
}

// authFields are the fields of an Authorization header of the AWS4-HMAC-SHA256
// form after the algorithm: Credential, SignedHeaders, Signature.
func authFields(auth string) map[string]string {
	_, rest, _ := strings.Cut(auth, " ")
	fields := map[string]string{}
	for f := range strings.SplitSeq(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
		fields[k] = v
	}
	return fields
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
