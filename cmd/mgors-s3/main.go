// Command mgors-s3 serves an S3-compatible object store from a directory
// (test/localkube/s3): the store the backup tests and the local cluster use.
// Wiring only. The credential comes from the environment (S3_ACCESS_KEY,
// S3_SECRET_KEY, as a pod takes them from a Secret), never the command line.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/mgors/operator/test/localkube/s3"
)

func main() {
	addr := flag.String("addr", ":9000", "address to listen on")
	dir := flag.String("dir", "/data", "directory holding the buckets")
	buckets := flag.String("buckets", "", "comma-separated buckets to create at start")
	cert := flag.String("tls-cert", "", "PEM certificate to serve https with (with -tls-key)")
	key := flag.String("tls-key", "", "PEM private key of -tls-cert")
	flag.Parse()
	zerolog.TimeFieldFormat = time.RFC3339Nano
	log := zerolog.New(os.Stdout).With().Timestamp().Str("component", "mgors-s3").Logger()
	opts := s3.Options{Dir: *dir, AccessKey: os.Getenv("S3_ACCESS_KEY"), SecretKey: os.Getenv("S3_SECRET_KEY"), Log: log}
	if *buckets != "" {
		opts.Buckets = strings.Split(*buckets, ",")
	}
	if opts.AccessKey == "" {
		log.Warn().Msg("S3_ACCESS_KEY and S3_SECRET_KEY are not set: unsigned requests are accepted")
	}
	h, err := s3.Handler(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	srv := &http.Server{Addr: *addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	log.Info().Str("addr", *addr).Str("dir", *dir).Bool("tls", *cert != "").Msg("serving S3")
	if *cert != "" {
		err = srv.ListenAndServeTLS(*cert, *key)
	} else {
		err = srv.ListenAndServe()
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Error().Err(err).Msg("serving S3")
		os.Exit(1)
	}
}
