// Package s3 is an S3-compatible object store for tests and the local
// cluster: gofakes3 (the S3 protocol rclone's "serve s3" is built on) over
// files in a directory, behind a check of AWS signature version 4 with one
// access key. It is not a production store: one process, no replication.
package s3

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3afero"
	"github.com/rs/zerolog"
)

// Options configure a server.
type Options struct {
	// Dir holds the buckets (Dir/buckets/<bucket>/<key>) and their
	// metadata (Dir/metadata); it is created when missing.
	Dir string
	// AccessKey and SecretKey are the one credential requests must be
	// signed with. Both empty accepts unsigned requests (tests only).
	AccessKey string
	SecretKey string
	// Buckets are created at start when missing.
	Buckets []string
	// Log receives one line per refused request and gofakes3's warnings;
	// never a secret.
	Log zerolog.Logger
	// Now is the clock signatures are checked against; time.Now when nil.
	Now func() time.Time
}

// Handler is the S3 API over opts.Dir.
func Handler(opts Options) (http.Handler, error) {
	if opts.Dir == "" {
		return nil, errors.New("s3 server: a directory is required")
	}
	if (opts.AccessKey == "") != (opts.SecretKey == "") {
		return nil, errors.New("s3 server: set both the access key and the secret key, or neither")
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, err
	}
	fs, err := s3afero.FsPath(opts.Dir, s3afero.FsPathCreateAll)
	if err != nil {
		return nil, fmt.Errorf("s3 server: %w", err)
	}
	backend, err := s3afero.MultiBucket(fs)
	if err != nil {
		return nil, fmt.Errorf("s3 server: %w", err)
	}
	for _, b := range opts.Buckets {
		if err := backend.CreateBucket(b); err != nil && !gofakes3.IsAlreadyExists(err) {
			return nil, fmt.Errorf("s3 server: bucket %s: %w", b, err)
		}
	}
	fake := gofakes3.New(backend, gofakes3.WithLogger(logger{opts.Log}), gofakes3.WithoutVersioning())
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &signed{next: fake.Server(), access: opts.AccessKey, secret: opts.SecretKey, log: opts.Log, now: now}, nil
}

// signed refuses requests not signed with the server's key, as S3 answers them.
type signed struct {
	next           http.Handler
	access, secret string
	log            zerolog.Logger
	now            func() time.Time
}

func (s *signed) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.access != "" {
		if err := verify(r, s.access, s.secret, s.now()); err != nil {
			var se *sigError
			if !errors.As(err, &se) {
				se = &sigError{code: "AccessDenied", msg: err.Error()}
			}
			s.log.Warn().Str("method", r.Method).Str("path", r.URL.Path).Str("code", se.code).Msg(se.msg)
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			_, _ = fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message></Error>`, se.code, xmlEscape(se.msg))
			return
		}
	}
	s.next.ServeHTTP(w, r)
}

// logger routes gofakes3's log into zerolog.
type logger struct{ log zerolog.Logger }

func (l logger) Print(level gofakes3.LogLevel, v ...any) {
	ev := l.log.Debug()
	switch level {
	case gofakes3.LogErr:
		ev = l.log.Error()
	case gofakes3.LogWarn:
		ev = l.log.Warn()
	}
	ev.Msg(fmt.Sprint(v...))
}
