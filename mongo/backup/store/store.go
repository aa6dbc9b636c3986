// Package store is the operator's S3-compatible object store client:
// put, get, list and delete of whole objects in one bucket, every request
// with a deadline. It is built on the AWS SDK's S3 client; the store may be
// any server that speaks S3 (test/localkube/s3 is the one the tests run).
package store

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// DefaultTimeout bounds every request unless Config.Timeout says otherwise.
const DefaultTimeout = 30 * time.Second

// DefaultRegion is the region signed into requests when Config.Region is
// empty; S3-compatible servers other than AWS accept any.
const DefaultRegion = "us-east-1"

// ErrNotFound is returned for a key (or a bucket) the store does not hold.
var ErrNotFound = errors.New("store: not found")

// Config says where the store is and how to sign requests. Formatting it
// never shows the secret key.
type Config struct {
	// Endpoint is host:port, or a URL whose scheme then decides TLS.
	Endpoint string
	Bucket   string
	Region   string
	// AccessKey and SecretKey sign every request (AWS signature version 4).
	AccessKey string
	SecretKey string
	// TLS dials the endpoint with https; CA, when set, is the PEM bundle
	// trusted instead of the system roots.
	TLS bool
	CA  []byte
	// Timeout bounds each request; DefaultTimeout when zero.
	Timeout time.Duration
}

// String never shows the secret key.
func (c Config) String() string {
	return fmt.Sprintf("s3(%s/%s tls=%t key=%s)", c.Endpoint, c.Bucket, c.TLS, c.AccessKey)
}

// GoString never shows the secret key.
func (c Config) GoString() string { return c.String() }

// URL is the endpoint as a URL: the scheme from TLS unless Endpoint has one.
func (c Config) URL() string {
	if strings.Contains(c.Endpoint, "://") {
		return c.Endpoint
	}
	if c.TLS {
		return "https://" + c.Endpoint
	}
	return "http://" + c.Endpoint
}

// Object is one listed object.
type Object struct {
	Key  string
	Size int64
}

// Client reads and writes the objects of one bucket.
type Client struct {
	s3      *s3.Client
	bucket  string
	timeout time.Duration
}

// New is a Client for cfg; it connects on the first request.
func New(cfg Config) (*Client, error) {
	if cfg.Endpoint == "" || cfg.Bucket == "" {
		return nil, errors.New("store: endpoint and bucket are required")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if len(cfg.CA) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(cfg.CA) {
			return nil, errors.New("store: the CA bundle holds no PEM certificate")
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	access, secret := cfg.AccessKey, cfg.SecretKey
	client := s3.New(s3.Options{
		Region:       cfg.Region,
		BaseEndpoint: aws.String(cfg.URL()),
		UsePathStyle: true, // buckets as path segments: no wildcard DNS needed
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: access, SecretAccessKey: secret, Source: "store"}, nil
		}),
		HTTPClient: &http.Client{Transport: transport},
		// Checksums only where S3 requires them: the SDK's default trailing
		// checksums (aws-chunked bodies) are not understood by every
		// S3-compatible server; the body's SHA-256 is signed anyway.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
		RetryMaxAttempts:           3,
	})
	return &Client{s3: client, bucket: cfg.Bucket, timeout: cfg.Timeout}, nil
}

// Bucket is the bucket the client reads and writes.
func (c *Client) Bucket() string { return c.bucket }

// Put writes body under key, replacing any object there.
func (c *Client) Put(ctx context.Context, key string, body []byte, contentType string) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	_, err := c.s3.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(c.bucket), Key: aws.String(key), Body: bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))), ContentType: aws.String(contentType),
	})
	return c.wrap("put", key, err)
}

// Get reads the object under key; ErrNotFound when there is none.
func (c *Client) Get(ctx context.Context, key string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	out, err := c.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(c.bucket), Key: aws.String(key)})
	if err != nil {
		return nil, c.wrap("get", key, err)
	}
	defer func() { _ = out.Body.Close() }()
	b, err := io.ReadAll(out.Body)
	return b, c.wrap("get", key, err)
}

// List lists the objects whose key starts with prefix, in key order.
func (c *Client) List(ctx context.Context, prefix string) ([]Object, error) {
	var objs []Object
	var token *string
	for {
		page, err := c.listPage(ctx, prefix, token)
		if err != nil {
			return nil, c.wrap("list", prefix, err)
		}
		for _, o := range page.Contents {
			objs = append(objs, Object{Key: aws.ToString(o.Key), Size: aws.ToInt64(o.Size)})
		}
		if !aws.ToBool(page.IsTruncated) || page.NextContinuationToken == nil {
			return objs, nil
		}
		token = page.NextContinuationToken
	}
}

func (c *Client) listPage(ctx context.Context, prefix string, token *string) (*s3.ListObjectsV2Output, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	return c.s3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(c.bucket), Prefix: aws.String(prefix), ContinuationToken: token})
}

// Delete removes the object under key; a missing one is not an error.
func (c *Client) Delete(ctx context.Context, key string) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	_, err := c.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(c.bucket), Key: aws.String(key)})
	if err = c.wrap("delete", key, err); errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// CreateBucket makes the client's bucket; one that exists already is not an error.
func (c *Client) CreateBucket(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	_, err := c.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(c.bucket)})
	var owned *types.BucketAlreadyOwnedByYou
	var exists *types.BucketAlreadyExists
	if errors.As(err, &owned) || errors.As(err, &exists) {
		return nil
	}
	return c.wrap("create bucket", c.bucket, err)
}

// wrap names the operation and key, and turns S3's not-found answers into
// ErrNotFound.
func (c *Client) wrap(op, key string, err error) error {
	if err == nil {
		return nil
	}
	var nsk *types.NoSuchKey
	var nsb *types.NoSuchBucket
	var api smithy.APIError
	if errors.As(err, &nsk) || errors.As(err, &nsb) || errors.As(err, &api) && (api.ErrorCode() == "NotFound" || api.ErrorCode() == "NoSuchKey") {
		return fmt.Errorf("store: %s %s/%s: %w", op, c.bucket, key, ErrNotFound)
	}
	return fmt.Errorf("store: %s %s/%s: %w", op, c.bucket, key, err)
}
