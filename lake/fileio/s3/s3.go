package s3

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/flightd/flightd/lake/fileio"
)

// Options configures FileIO. Empty fields fall back to the environment (see each field), then to
// the AWS SDK's default configuration chain (shared config/credentials files, web identity, IMDS …).
type Options struct {
	// Endpoint is the S3 endpoint URL, e.g. http://127.0.0.1:7070 for an S3-compatible server.
	// Fallback: $AWS_ENDPOINT_URL_S3, then $AWS_ENDPOINT_URL; empty means AWS S3.
	Endpoint string
	// Region. Fallback: $AWS_REGION, $AWS_DEFAULT_REGION, the shared config, then "us-east-1".
	Region string
	// AccessKeyID and SecretAccessKey are static credentials (both or neither). Fallback:
	// $AWS_ACCESS_KEY_ID / $AWS_SECRET_ACCESS_KEY (+ $AWS_SESSION_TOKEN), then the default chain.
	AccessKeyID     string
	SecretAccessKey string
	SessionToken    string
	// PathStyle selects path-style addressing (http://host/bucket/key). nil: true when an endpoint is
	// set (S3-compatible servers), false for AWS S3 (virtual-hosted style).
	PathStyle *bool
	// PartSize is the multipart upload part size for data files (default 8 MiB, minimum 5 MiB).
	// Files smaller than one part are written with a single PutObject.
	PartSize int64
	// UploadConcurrency is the number of parts uploaded at once per file (default 2). A writer holds
	// at most UploadConcurrency+1 parts in memory.
	UploadConcurrency int
	// DisableConditionalWrites turns off `If-None-Match: *` on exclusive creates, for servers that
	// reject it (HTTP 501). CreateExclusive then checks existence and PUTs, which is NOT safe
	// against concurrent committers: use it only with a single writer per table. Create (data
	// files, always under fresh unique names) then does not check existence at all.
	DisableConditionalWrites bool

	// RequestTimeout bounds each attempt of a request while it waits on the server: to
	// connect and send the request, for the response headers, and within each read of
	// the response body. It does not bound a whole transfer: a large GET or upload that
	// keeps moving bytes takes as long as it needs. A stalled attempt fails with
	// *StallError and is retried. Default 30s; negative: no timeout.
	RequestTimeout time.Duration
	// MaxAttempts is how often a request is tried, the first time included, by the
	// SDK's standard retryer: throttling (503 SlowDown), 5xx, connection errors and
	// stalls, with exponential backoff and jitter. Fallback: $AWS_MAX_ATTEMPTS (or
	// max_attempts in the shared config), then 4. 1 disables retries.
	MaxAttempts int
	// MaxBackoff caps the wait between two attempts (default 20s).
	MaxBackoff time.Duration
}

func firstEnv(names ...string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

// FileIO is a fileio.FileIO over one S3 bucket. Its paths are slash-separated keys with a leading "/"
// ("/wh/db.db/t/snapshot/snapshot-1" is the key "wh/db.db/t/snapshot/snapshot-1"); "s3://bucket/…"
// is accepted too. Directories are key prefixes; MkdirAll writes a zero-byte "dir/" marker object
// (as Hadoop S3A does) so that empty databases exist.
type FileIO struct {
	client   *awss3.Client
	bucket   string
	partSize int64
	conc     int
	cond     bool
}

var _ fileio.ObjectStore = (*FileIO)(nil)

const (
	defaultPartSize = 8 << 20
	minPartSize     = 5 << 20
)

// New makes an FileIO for bucket. It does not contact the server.
func New(ctx context.Context, bucket string, opts Options) (*FileIO, error) {
	if bucket == "" {
		return nil, fmt.Errorf("s3: empty bucket name")
	}
	if opts.Endpoint == "" {
		opts.Endpoint = firstEnv("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
	}
	if opts.Region == "" {
		opts.Region = firstEnv("AWS_REGION", "AWS_DEFAULT_REGION")
	}
	if opts.AccessKeyID == "" && opts.SecretAccessKey == "" {
		opts.AccessKeyID = os.Getenv("AWS_ACCESS_KEY_ID")
		opts.SecretAccessKey = os.Getenv("AWS_SECRET_ACCESS_KEY")
		if opts.SessionToken == "" {
			opts.SessionToken = os.Getenv("AWS_SESSION_TOKEN")
		}
	}
	if (opts.AccessKeyID == "") != (opts.SecretAccessKey == "") {
		return nil, fmt.Errorf("s3: access key id and secret access key must be given together")
	}
	var lo []func(*config.LoadOptions) error
	if opts.Region != "" {
		lo = append(lo, config.WithRegion(opts.Region))
	}
	if opts.AccessKeyID != "" {
		lo = append(lo, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(opts.AccessKeyID, opts.SecretAccessKey, opts.SessionToken)))
	}
	// Checksums only where S3 requires them: S3-compatible servers differ in their support of
	// streaming (aws-chunked) trailing checksums.
	lo = append(lo,
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired))
	cfg, err := config.LoadDefaultConfig(ctx, lo...)
	if err != nil {
		return nil, fmt.Errorf("s3: load AWS config: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	pathStyle := opts.Endpoint != ""
	if opts.PathStyle != nil {
		pathStyle = *opts.PathStyle
	}
	if opts.Endpoint != "" {
		if u, err := url.Parse(opts.Endpoint); err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("s3: invalid endpoint %q (want e.g. http://127.0.0.1:7070)", opts.Endpoint)
		}
	}
	timeout := opts.RequestTimeout
	if timeout == 0 {
		timeout = defaultRequestTimeout
	}
	attempts := opts.MaxAttempts
	if attempts <= 0 {
		attempts = cfg.RetryMaxAttempts
	}
	if attempts <= 0 {
		attempts = defaultMaxAttempts
	}
	backoff := opts.MaxBackoff
	if backoff <= 0 {
		backoff = defaultMaxBackoff
	}
	client := awss3.NewFromConfig(cfg, func(o *awss3.Options) {
		if opts.Endpoint != "" {
			o.BaseEndpoint = aws.String(opts.Endpoint)
		}
		o.UsePathStyle = pathStyle
		o.HTTPClient = httpClient(cfg.HTTPClient, timeout)
		o.Retryer = retryer(attempts, backoff)
		o.RetryMaxAttempts = 0 // in the retryer already
	})
	ps := opts.PartSize
	if ps == 0 {
		ps = defaultPartSize
	}
	if ps < minPartSize {
		ps = minPartSize
	}
	conc := opts.UploadConcurrency
	if conc <= 0 {
		conc = 2
	}
	return &FileIO{client: client, bucket: bucket, partSize: ps, conc: conc, cond: !opts.DisableConditionalWrites}, nil
}

// Client returns the underlying S3 client.
func (f *FileIO) Client() *awss3.Client { return f.client }

// Bucket returns the bucket name.
func (f *FileIO) Bucket() string { return f.bucket }

// urlSchemes are the prefixes of the URLs a FileIO accepts as paths.
var urlSchemes = []string{"s3://", "s3:/", "s3a://", "s3a:/"}

// key maps a FileIO path to an object key ("" is the bucket root).
func (f *FileIO) key(p string) (string, error) {
	for _, scheme := range urlSchemes {
		if rest, ok := strings.CutPrefix(p, scheme); ok {
			b, k, _ := strings.Cut(rest, "/")
			if b != f.bucket {
				return "", fmt.Errorf("s3: path %s is not in bucket %s", p, f.bucket)
			}
			p = k
			break
		}
	}
	k := strings.TrimPrefix(path.Clean("/"+p), "/")
	return k, nil
}

// PathOf implements fileio.ObjectStore: the path ("/key") of s3://bucket/key (or s3a://);
// a URL of another bucket is an error.
func (f *FileIO) PathOf(u string) (p string, isURL bool, err error) {
	for _, scheme := range urlSchemes {
		if strings.HasPrefix(u, scheme) {
			k, err := f.key(u)
			if err != nil {
				return "", true, err
			}
			return "/" + k, true, nil
		}
	}
	return "", false, nil
}

// URL implements fileio.ObjectStore: s3://bucket/key for a FileIO path.
func (f *FileIO) URL(p string) string {
	k, err := f.key(p)
	if err != nil {
		return p
	}
	return "s3://" + f.bucket + "/" + k
}

func (f *FileIO) loc(key string) string { return "s3://" + f.bucket + "/" + key }

func httpStatus(err error) int {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func isNotFound(err error) bool {
	var nsk *s3types.NoSuchKey
	var nf *s3types.NotFound
	if errors.As(err, &nsk) || errors.As(err, &nf) {
		return true
	}
	return httpStatus(err) == http.StatusNotFound && apiCode(err) != "NoSuchBucket"
}

// wrap names the object in err; a missing object matches fs.ErrNotExist.
func (f *FileIO) wrap(op, key string, err error) error {
	if isNotFound(err) {
		return fmt.Errorf("s3: %s %s: %w", op, f.loc(key), fs.ErrNotExist)
	}
	if apiCode(err) == "NoSuchBucket" {
		return fmt.Errorf("s3: %s %s: bucket %q does not exist: %w", op, f.loc(key), f.bucket, err)
	}
	return fmt.Errorf("s3: %s %s: %w", op, f.loc(key), err)
}

// Read implements FileIO.
func (f *FileIO) Read(ctx context.Context, p string) ([]byte, error) {
	key, err := f.key(p)
	if err != nil {
		return nil, err
	}
	out, err := f.client.GetObject(ctx, &awss3.GetObjectInput{Bucket: &f.bucket, Key: &key})
	if err != nil {
		return nil, f.wrap("get", key, err)
	}
	defer out.Body.Close()
	var buf bytes.Buffer
	if out.ContentLength != nil && *out.ContentLength > 0 {
		buf.Grow(int(*out.ContentLength))
	}
	if _, err := buf.ReadFrom(out.Body); err != nil {
		return nil, f.wrap("get", key, err)
	}
	return buf.Bytes(), nil
}

// Open implements FileIO: one HEAD for the size, then one ranged GET per ReadAt (or Read).
func (f *FileIO) Open(ctx context.Context, p string) (fileio.ReadAtSeekCloser, error) {
	key, err := f.key(p)
	if err != nil {
		return nil, err
	}
	out, err := f.client.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &f.bucket, Key: &key})
	if err != nil {
		return nil, f.wrap("head", key, err)
	}
	r := &s3Reader{ctx: ctx, f: f, key: key, size: aws.ToInt64(out.ContentLength)}
	r.SectionReader = io.NewSectionReader(r, 0, r.size)
	return r, nil
}

// s3Reader reads an immutable object with ranged GETs; its Read, Seek and
// Size are the SectionReader's over its ReadAt.
type s3Reader struct {
	*io.SectionReader
	ctx  context.Context
	f    *FileIO
	key  string
	size int64
}

func (r *s3Reader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("s3: read %s: negative offset", r.f.loc(r.key))
	}
	if off >= r.size {
		return 0, io.EOF
	}
	n := int64(len(p))
	if n == 0 {
		return 0, nil
	}
	var eof error
	if off+n > r.size {
		n = r.size - off
		eof = io.EOF
	}
	rng := fmt.Sprintf("bytes=%d-%d", off, off+n-1)
	out, err := r.f.client.GetObject(r.ctx, &awss3.GetObjectInput{Bucket: &r.f.bucket, Key: &r.key, Range: &rng})
	if err != nil {
		return 0, r.f.wrap("get "+rng, r.key, err)
	}
	defer out.Body.Close()
	got, err := io.ReadFull(out.Body, p[:n])
	if err != nil {
		return got, r.f.wrap("get "+rng, r.key, err)
	}
	return got, eof
}

func (r *s3Reader) Close() error { return nil }

func (f *FileIO) ifNoneMatch() *string {
	if f.cond {
		return aws.String("*")
	}
	return nil
}

// isPreconditionFailed: the object exists (If-None-Match: * failed).
func isPreconditionFailed(err error) bool {
	return httpStatus(err) == http.StatusPreconditionFailed || apiCode(err) == "PreconditionFailed"
}

// isConditionalConflict: AWS answers 409 ConditionalRequestConflict while another conditional
// write of the same key is in flight; the retry then sees 412 or succeeds.
func isConditionalConflict(err error) bool {
	return httpStatus(err) == http.StatusConflict || apiCode(err) == "ConditionalRequestConflict"
}

func (f *FileIO) condError(op, key string, err error) error {
	if isPreconditionFailed(err) {
		return fmt.Errorf("s3: %s %s: %w", op, f.loc(key), fs.ErrExist)
	}
	if f.cond && (httpStatus(err) == http.StatusNotImplemented || apiCode(err) == "NotImplemented") {
		return fmt.Errorf("s3: %s %s: the server does not support conditional writes (If-None-Match: *); "+
			"set s3.Options.DisableConditionalWrites for a single-writer best effort: %w", op, f.loc(key), err)
	}
	return f.wrap(op, key, err)
}

// Create implements FileIO with a streaming writer: a single PutObject when the file is smaller
// than one part, otherwise a multipart upload (parts uploaded in the background). The object
// becomes visible only on a successful Close; it is created with If-None-Match: * so an existing
// object is never replaced.
func (f *FileIO) Create(ctx context.Context, p string) (io.WriteCloser, error) {
	key, err := f.key(p)
	if err != nil {
		return nil, err
	}
	return &s3Writer{ctx: ctx, f: f, key: key, sem: make(chan struct{}, f.conc)}, nil
}

type s3Writer struct {
	ctx      context.Context
	f        *FileIO
	key      string
	buf      []byte
	uploadID *string
	partNum  int32
	sem      chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex
	parts    []s3types.CompletedPart
	err      error
	closed   bool
}

func (w *s3Writer) setErr(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
}

func (w *s3Writer) getErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

func (w *s3Writer) Write(p []byte) (int, error) {
	if w.closed {
		return 0, fmt.Errorf("s3: write %s: writer closed", w.f.loc(w.key))
	}
	if err := w.getErr(); err != nil {
		return 0, err
	}
	n := len(p)
	for len(p) > 0 {
		if w.buf == nil {
			w.buf = make([]byte, 0, w.f.partSize)
		}
		room := int(w.f.partSize) - len(w.buf)
		take := min(room, len(p))
		w.buf = append(w.buf, p[:take]...)
		p = p[take:]
		if int64(len(w.buf)) == w.f.partSize {
			if err := w.flushPart(); err != nil {
				return n - len(p), err
			}
		}
	}
	return n, nil
}

// flushPart hands the full buffer to a background part upload.
func (w *s3Writer) flushPart() error {
	if w.uploadID == nil {
		out, err := w.f.client.CreateMultipartUpload(w.ctx, &awss3.CreateMultipartUploadInput{Bucket: &w.f.bucket, Key: &w.key})
		if err != nil {
			err = w.f.wrap("create multipart upload", w.key, err)
			w.setErr(err)
			return err
		}
		w.uploadID = out.UploadId
	}
	w.partNum++
	num, data := w.partNum, w.buf
	w.buf = nil
	select {
	case w.sem <- struct{}{}:
	case <-w.ctx.Done():
		w.setErr(w.ctx.Err())
		return w.ctx.Err()
	}
	w.wg.Add(1)
	go func() {
		defer func() { <-w.sem; w.wg.Done() }()
		if w.getErr() != nil {
			return
		}
		out, err := w.f.client.UploadPart(w.ctx, &awss3.UploadPartInput{Bucket: &w.f.bucket, Key: &w.key,
			UploadId: w.uploadID, PartNumber: aws.Int32(num), Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data)))})
		if err != nil {
			w.setErr(w.f.wrap(fmt.Sprintf("upload part %d", num), w.key, err))
			return
		}
		w.mu.Lock()
		w.parts = append(w.parts, s3types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(num)})
		w.mu.Unlock()
	}()
	return w.getErr()
}

func (w *s3Writer) abort() {
	if w.uploadID == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.ctx), 30*time.Second)
	defer cancel()
	_, _ = w.f.client.AbortMultipartUpload(ctx, &awss3.AbortMultipartUploadInput{Bucket: &w.f.bucket, Key: &w.key, UploadId: w.uploadID})
}

// Close publishes the object (or aborts the upload on an earlier error).
func (w *s3Writer) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	if w.uploadID == nil && w.getErr() == nil {
		_, err := w.f.client.PutObject(w.ctx, &awss3.PutObjectInput{Bucket: &w.f.bucket, Key: &w.key,
			Body: bytes.NewReader(w.buf), ContentLength: aws.Int64(int64(len(w.buf))), IfNoneMatch: w.f.ifNoneMatch()})
		w.buf = nil
		if err != nil {
			return w.f.condError("put", w.key, err)
		}
		return nil
	}
	if w.getErr() == nil && len(w.buf) > 0 {
		_ = w.flushPart()
	}
	w.wg.Wait()
	if err := w.getErr(); err != nil {
		w.abort()
		return err
	}
	sort.Slice(w.parts, func(i, j int) bool { return *w.parts[i].PartNumber < *w.parts[j].PartNumber })
	_, err := w.f.client.CompleteMultipartUpload(w.ctx, &awss3.CompleteMultipartUploadInput{Bucket: &w.f.bucket, Key: &w.key,
		UploadId: w.uploadID, MultipartUpload: &s3types.CompletedMultipartUpload{Parts: w.parts}, IfNoneMatch: w.f.ifNoneMatch()})
	if err != nil {
		w.abort()
		return w.f.condError("complete multipart upload", w.key, err)
	}
	return nil
}

// WriteAtomic implements FileIO with one PutObject: S3 never shows a partial object, readers see
// the old or the new content.
func (f *FileIO) WriteAtomic(ctx context.Context, p string, data []byte) error {
	key, err := f.key(p)
	if err != nil {
		return err
	}
	_, err = f.client.PutObject(ctx, &awss3.PutObjectInput{Bucket: &f.bucket, Key: &key,
		Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data)))})
	if err != nil {
		return f.wrap("put", key, err)
	}
	return nil
}

// CreateExclusive implements FileIO with a conditional PutObject (If-None-Match: *): the server
// publishes the object only if the key does not exist, atomically against concurrent creators;
// HTTP 412 becomes fs.ErrExist. Each call tags its object with a token of its own (user
// metadata createMetaKey): a 412 on an object that carries the call's token is a retried
// request whose first attempt published the object (its response was lost), and a success.
// So exactly one creator succeeds, also when several write the same bytes. With
// DisableConditionalWrites it is a HEAD then a PUT (racy).
func (f *FileIO) CreateExclusive(ctx context.Context, p string, data []byte) error {
	key, err := f.key(p)
	if err != nil {
		return err
	}
	if !f.cond {
		ok, err := f.Exists(ctx, p)
		if err != nil {
			return err
		}
		if ok {
			return fmt.Errorf("s3: put %s: %w", f.loc(key), fs.ErrExist)
		}
	}
	token := rand.Text()
	backoff := 20 * time.Millisecond
	for attempt := 0; ; attempt++ {
		_, err = f.client.PutObject(ctx, &awss3.PutObjectInput{Bucket: &f.bucket, Key: &key,
			Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))), IfNoneMatch: f.ifNoneMatch(),
			Metadata: map[string]string{createMetaKey: token}})
		if err == nil {
			return nil
		}
		if isPreconditionFailed(err) && f.cond {
			// The SDK retries a PUT whose response was lost; if the first attempt had published
			// the object, the retry fails with 412. Our token means it is ours.
			out, herr := f.client.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &f.bucket, Key: &key})
			if herr == nil && out.Metadata[createMetaKey] == token {
				return nil
			}
		}
		if !isConditionalConflict(err) || attempt >= 8 {
			return f.condError("put", key, err)
		}
		select {
		case <-ctx.Done():
			return f.wrap("put", key, ctx.Err())
		case <-time.After(backoff):
		}
		backoff *= 2
	}
}

// createMetaKey is the user metadata (x-amz-meta-flightd-create) that holds the token of
// the CreateExclusive call that created an object.
const createMetaKey = "flightd-create"

// List implements FileIO: one level under dir ("/" delimiter); sub-prefixes are directories.
func (f *FileIO) List(ctx context.Context, dir string) ([]fileio.FileInfo, error) {
	key, err := f.key(dir)
	if err != nil {
		return nil, err
	}
	prefix := key
	if prefix != "" {
		prefix += "/"
	}
	var out []fileio.FileInfo
	pg := awss3.NewListObjectsV2Paginator(f.client, &awss3.ListObjectsV2Input{Bucket: &f.bucket, Prefix: &prefix, Delimiter: aws.String("/")})
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return nil, f.wrap("list", prefix, err)
		}
		for _, cp := range page.CommonPrefixes {
			name := strings.TrimSuffix(strings.TrimPrefix(aws.ToString(cp.Prefix), prefix), "/")
			if name != "" {
				out = append(out, fileio.FileInfo{Name: name, IsDir: true})
			}
		}
		for _, o := range page.Contents {
			name := strings.TrimPrefix(aws.ToString(o.Key), prefix)
			if name == "" || strings.Contains(name, "/") { // the directory's own marker
				continue
			}
			out = append(out, fileio.FileInfo{Name: name, Size: aws.ToInt64(o.Size), ModTime: aws.ToTime(o.LastModified)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Exists implements FileIO: an object, or a directory (a marker or any key under the prefix).
func (f *FileIO) Exists(ctx context.Context, p string) (bool, error) {
	key, err := f.key(p)
	if err != nil {
		return false, err
	}
	if key == "" {
		if _, err := f.client.HeadBucket(ctx, &awss3.HeadBucketInput{Bucket: &f.bucket}); err != nil {
			if httpStatus(err) == http.StatusNotFound {
				return false, nil
			}
			return false, f.wrap("head bucket", key, err)
		}
		return true, nil
	}
	_, err = f.client.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &f.bucket, Key: &key})
	if err == nil {
		return true, nil
	}
	if !isNotFound(err) {
		return false, f.wrap("head", key, err)
	}
	prefix := key + "/"
	out, err := f.client.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: &f.bucket, Prefix: &prefix, MaxKeys: aws.Int32(1)})
	if err != nil {
		return false, f.wrap("list", prefix, err)
	}
	return len(out.Contents) > 0 || len(out.CommonPrefixes) > 0, nil
}

// Version implements FileIO: one HEAD.
func (f *FileIO) Version(ctx context.Context, p string) (string, error) {
	key, err := f.key(p)
	if err != nil {
		return "", err
	}
	out, err := f.client.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &f.bucket, Key: &key})
	if err != nil {
		return "", f.wrap("head", key, err)
	}
	return fmt.Sprintf("%s/%d", aws.ToString(out.ETag), aws.ToInt64(out.ContentLength)), nil
}

// Remove implements FileIO.
func (f *FileIO) Remove(ctx context.Context, p string) error {
	key, err := f.key(p)
	if err != nil {
		return err
	}
	if _, err := f.client.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &f.bucket, Key: &key}); err != nil && !isNotFound(err) {
		return f.wrap("delete", key, err)
	}
	return nil
}

// RemoveAll implements FileIO: the object p and every key under p/ (objects first, then directory
// markers, deepest first).
func (f *FileIO) RemoveAll(ctx context.Context, p string) error {
	key, err := f.key(p)
	if err != nil {
		return err
	}
	if key == "" {
		return fmt.Errorf("s3: refusing to remove the whole bucket %s", f.bucket)
	}
	prefix := key + "/"
	var files, markers []string
	pg := awss3.NewListObjectsV2Paginator(f.client, &awss3.ListObjectsV2Input{Bucket: &f.bucket, Prefix: &prefix})
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return f.wrap("list", prefix, err)
		}
		for _, o := range page.Contents {
			k := aws.ToString(o.Key)
			if strings.HasSuffix(k, "/") {
				markers = append(markers, k)
			} else {
				files = append(files, k)
			}
		}
	}
	for len(files) > 0 {
		n := min(len(files), 1000)
		batch := files[:n]
		files = files[n:]
		ids := make([]s3types.ObjectIdentifier, len(batch))
		for i := range batch {
			ids[i] = s3types.ObjectIdentifier{Key: aws.String(batch[i])}
		}
		out, err := f.client.DeleteObjects(ctx, &awss3.DeleteObjectsInput{Bucket: &f.bucket,
			Delete: &s3types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
		if err != nil {
			return f.wrap("delete objects under", prefix, err)
		}
		for _, e := range out.Errors {
			if aws.ToString(e.Code) == "NoSuchKey" {
				continue
			}
			return fmt.Errorf("s3: delete %s: %s: %s", f.loc(aws.ToString(e.Key)), aws.ToString(e.Code), aws.ToString(e.Message))
		}
	}
	markers = append(markers, prefix)
	sort.Slice(markers, func(i, j int) bool { return len(markers[i]) > len(markers[j]) })
	for _, m := range markers {
		if _, err := f.client.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &f.bucket, Key: aws.String(m)}); err != nil && !isNotFound(err) {
			return f.wrap("delete", m, err)
		}
	}
	return f.Remove(ctx, p)
}

// MkdirAll implements FileIO: it writes a zero-byte "dir/" marker unless something is already
// under the prefix; for the bucket root it checks that the bucket is reachable.
func (f *FileIO) MkdirAll(ctx context.Context, dir string) error {
	key, err := f.key(dir)
	if err != nil {
		return err
	}
	if key == "" {
		if _, err := f.client.HeadBucket(ctx, &awss3.HeadBucketInput{Bucket: &f.bucket}); err != nil {
			return f.wrap("head bucket", key, err)
		}
		return nil
	}
	prefix := key + "/"
	out, err := f.client.ListObjectsV2(ctx, &awss3.ListObjectsV2Input{Bucket: &f.bucket, Prefix: &prefix, MaxKeys: aws.Int32(1)})
	if err != nil {
		return f.wrap("list", prefix, err)
	}
	if len(out.Contents) > 0 || len(out.CommonPrefixes) > 0 {
		return nil
	}
	if _, err := f.client.PutObject(ctx, &awss3.PutObjectInput{Bucket: &f.bucket, Key: &prefix,
		Body: bytes.NewReader(nil), ContentLength: aws.Int64(0)}); err != nil {
		return f.wrap("put", prefix, err)
	}
	return nil
}

// SyncDir implements FileIO: a completed PUT or DELETE is durable, there is nothing to sync.
func (f *FileIO) SyncDir(context.Context, string) error { return nil }

// ParseURL splits s3://bucket/prefix (or s3a://) into bucket and prefix (no leading or trailing
// slash); ok is false for other strings.
func ParseURL(u string) (bucket, prefix string, ok bool) {
	var rest string
	switch {
	case strings.HasPrefix(u, "s3://"):
		rest = u[len("s3://"):]
	case strings.HasPrefix(u, "s3a://"):
		rest = u[len("s3a://"):]
	default:
		return "", "", false
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	prefix = strings.Trim(path.Clean("/"+prefix), "/")
	return bucket, prefix, bucket != ""
}
