package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/testserver"
	"github.com/flightd/flightd/lake/fileio"
	"github.com/flightd/flightd/lake/fileio/fileiotest"
)

// ---- a real S3 server: Versity S3 Gateway over a temp directory ----

const testBucket = "lake"

// gateway is a running `versitygw posix` on loopback; its objects are files under
// Root/<bucket>/.
type gateway struct {
	Endpoint string
	Root     string
}

// Options returns Options with the gateway's root credentials.
func (g *gateway) Options() Options {
	return Options{Endpoint: g.Endpoint, Region: testserver.S3Region,
		AccessKeyID: testserver.S3AccessKey, SecretAccessKey: testserver.S3SecretKey}
}

// startGateway starts the gateway with the bucket testBucket (testserver.StartS3: skipped
// without a versitygw binary).
func startGateway(t *testing.T) *gateway {
	endpoint, root := testserver.StartS3(t, testBucket)
	return &gateway{Endpoint: endpoint, Root: root}
}

func newTestFileIO(t *testing.T, g *gateway, opts func(*Options)) *FileIO {
	o := g.Options()
	if opts != nil {
		opts(&o)
	}
	fio, err := New(context.Background(), testBucket, o)
	require.NoError(t, err)
	return fio
}

// TestConformance runs the FileIO suite against a real S3 server, on the FileIO itself and
// on a Rooted one, with the smallest part size so that large files take three parts.
func TestConformance(t *testing.T) {
	g := startGateway(t)
	fio := newTestFileIO(t, g, func(o *Options) { o.PartSize = minPartSize })
	var n atomic.Int64
	t.Run("FileIO", func(t *testing.T) {
		fileiotest.Run(t, fileiotest.Harness{Open: func(t *testing.T) (fileio.FileIO, string) {
			return fio, fmt.Sprintf("/c%d", n.Add(1))
		}})
	})
	t.Run("Rooted", func(t *testing.T) {
		fileiotest.Run(t, fileiotest.Harness{Open: func(t *testing.T) (fileio.FileIO, string) {
			return fileio.NewRooted(fio, fmt.Sprintf("/r%d/wh", n.Add(1))), ""
		}})
	})
}

// TestCreateIsVisibleOnClose: a file written with Create (here a multipart upload) is not
// visible before Close; it is read by its s3:// URL too.
func TestCreateIsVisibleOnClose(t *testing.T) {
	g := startGateway(t)
	ctx := context.Background()
	fio := newTestFileIO(t, g, func(o *Options) { o.PartSize = minPartSize })
	data := fileiotest.PseudoRandom(13<<20+12345, 7) // three parts
	w, err := fio.Create(ctx, "/big/data-1.parquet")
	require.NoError(t, err)
	_, err = w.Write(data)
	require.NoError(t, err)
	ok, err := fio.Exists(ctx, "/big/data-1.parquet")
	require.NoError(t, err)
	require.False(t, ok, "not visible before Close")
	require.NoError(t, w.Close())
	r, err := fio.Open(ctx, "s3://"+testBucket+"/big/data-1.parquet")
	require.NoError(t, err)
	defer r.Close()
	size, err := r.Seek(0, io.SeekEnd)
	require.NoError(t, err)
	require.Equal(t, int64(len(data)), size)
}

// TestCanceledUploadIsAborted: a multipart upload whose context ends is aborted on Close:
// no object, no upload left.
func TestCanceledUploadIsAborted(t *testing.T) {
	g := startGateway(t)
	ctx := context.Background()
	fio := newTestFileIO(t, g, func(o *Options) { o.PartSize = minPartSize })
	cctx, cancel := context.WithCancel(ctx)
	w, err := fio.Create(cctx, "/big/canceled")
	require.NoError(t, err)
	_, err = w.Write(fileiotest.PseudoRandom(6<<20, 3))
	require.NoError(t, err)
	cancel()
	_, _ = w.Write(fileiotest.PseudoRandom(6<<20, 4))
	require.Error(t, w.Close())
	ok, err := fio.Exists(ctx, "/big/canceled")
	require.NoError(t, err)
	require.False(t, ok)
	ups, err := fio.Client().ListMultipartUploads(ctx, &awss3.ListMultipartUploadsInput{Bucket: aws.String(testBucket)})
	require.NoError(t, err)
	require.Empty(t, ups.Uploads, "the multipart upload was aborted")
}

// loseFirstPut passes requests on, but reports the first PUT as failed after the server
// took it, as a connection lost before the response: the SDK then retries the request.
type loseFirstPut struct {
	next aws.HTTPClient
	once sync.Once
	puts atomic.Int64
}

func (l *loseFirstPut) Do(req *http.Request) (*http.Response, error) {
	resp, err := l.next.Do(req)
	if err != nil || req.Method != http.MethodPut {
		return resp, err
	}
	l.puts.Add(1)
	lost := false
	l.once.Do(func() { lost = true })
	if !lost {
		return resp, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return nil, &StallError{Request: req.Method + " " + req.URL.Redacted(), While: phaseHeaders}
}

// TestCreateExclusive: a create retried after its response was lost (the server had
// published the object) succeeds, as the object carries the call's token; another create
// of the same key fails with fs.ErrExist naming the object, with other bytes or the same.
// Without conditional writes, a HEAD before the PUT still refuses an existing key.
func TestCreateExclusive(t *testing.T) {
	g := startGateway(t)
	ctx := context.Background()
	fio := newTestFileIO(t, g, nil)
	lossy := newTestFileIO(t, g, nil)
	lost := &loseFirstPut{next: lossy.client.Options().HTTPClient}
	lossy.client = awss3.New(lossy.client.Options(), func(o *awss3.Options) { o.HTTPClient = lost })
	require.NoError(t, lossy.CreateExclusive(ctx, "/idem/snapshot-1", []byte("same")))
	require.EqualValues(t, 2, lost.puts.Load(), "the PUT was sent again")
	got, err := fio.Read(ctx, "/idem/snapshot-1")
	require.NoError(t, err)
	require.Equal(t, "same", string(got))

	err = fio.CreateExclusive(ctx, "/idem/snapshot-1", []byte("same"))
	require.ErrorIs(t, err, fs.ErrExist, "another create with the same bytes")
	require.ErrorContains(t, err, "s3://"+testBucket+"/idem/snapshot-1")
	require.ErrorIs(t, fio.CreateExclusive(ctx, "/idem/snapshot-1", []byte("other")), fs.ErrExist)

	nc := newTestFileIO(t, g, func(o *Options) { o.DisableConditionalWrites = true })
	require.ErrorIs(t, nc.CreateExclusive(ctx, "/idem/snapshot-1", []byte("other")), os.ErrExist)
	require.NoError(t, nc.CreateExclusive(ctx, "/idem/snapshot-2", []byte("x")))
}

// TestErrorsNameBucketAndKey: errors name s3://bucket/key; a missing bucket or wrong
// credentials are not a missing file; a URL of another bucket is refused.
func TestErrorsNameBucketAndKey(t *testing.T) {
	g := startGateway(t)
	ctx := context.Background()
	fio := newTestFileIO(t, g, nil)
	other := newTestFileIO(t, g, nil)
	other.bucket = "no-such-bucket"
	_, err := other.Read(ctx, "/x/y")
	require.Error(t, err)
	require.Contains(t, err.Error(), "s3://no-such-bucket/x/y")
	require.False(t, errors.Is(err, os.ErrNotExist), "a missing bucket is not a missing file: %v", err)
	require.ErrorContains(t, other.MkdirAll(ctx, "/wh"), "no-such-bucket")

	bad := newTestFileIO(t, g, func(o *Options) { o.SecretAccessKey = "wrong" })
	_, err = bad.Read(ctx, "/x/y")
	require.Error(t, err)
	require.Contains(t, err.Error(), "s3://"+testBucket+"/x/y")
	require.False(t, errors.Is(err, os.ErrNotExist))

	_, err = fio.Read(ctx, "s3://other-bucket/x")
	require.ErrorContains(t, err, "not in bucket")
}

// TestOptionsFromEnvironment: empty Options take the endpoint, region and credentials from
// the environment (as `flightd serve` gets them); explicit options win over it.
func TestOptionsFromEnvironment(t *testing.T) {
	g := startGateway(t)
	ctx := context.Background()
	t.Setenv("AWS_ENDPOINT_URL", g.Endpoint)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", testserver.S3AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", testserver.S3SecretKey)
	fio, err := New(ctx, testBucket, Options{})
	require.NoError(t, err)
	require.NoError(t, fio.MkdirAll(ctx, "/env/wh"))
	_, err = os.Stat(g.Root + "/" + testBucket + "/env/wh")
	require.NoError(t, err)

	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
	fio, err = New(ctx, testBucket, Options{})
	require.NoError(t, err)
	require.Error(t, fio.MkdirAll(ctx, "/env/wh"))
	fio, err = New(ctx, testBucket, g.Options())
	require.NoError(t, err)
	require.NoError(t, fio.MkdirAll(ctx, "/env/wh"))
}

func TestParseURL(t *testing.T) {
	for _, c := range []struct{ in, bucket, prefix string }{
		{"s3://b/wh", "b", "wh"},
		{"s3://b/wh/", "b", "wh"},
		{"s3://b", "b", ""},
		{"s3://b/", "b", ""},
		{"s3a://b/a//c", "b", "a/c"},
	} {
		b, p, ok := ParseURL(c.in)
		require.True(t, ok, c.in)
		require.Equal(t, c.bucket, b, c.in)
		require.Equal(t, c.prefix, p, c.in)
	}
	for _, bad := range []string{"/tmp/x", "s3:/b", "s3://", "file:///x"} {
		_, _, ok := ParseURL(bad)
		require.False(t, ok, bad)
	}
}

// recorder is a FileIO whose Read records the path it was given and fails with err.
type recorder struct {
	*FileIO
	got string
	err error
}

func (r *recorder) Read(_ context.Context, p string) ([]byte, error) {
	r.got = p
	return nil, r.err
}

// TestRootedKeys: a Rooted S3 FileIO maps relative paths, absolute keys and s3:// (s3a://)
// URLs of its bucket into the root, refuses everything else before a request is made (the
// endpoint does not exist), and names keys in errors relative to the root.
func TestRootedKeys(t *testing.T) {
	ctx := context.Background()
	fio, err := New(ctx, "bkt", Options{Endpoint: "http://127.0.0.1:1", Region: "us-east-1",
		AccessKeyID: "k", SecretAccessKey: "s"})
	require.NoError(t, err)
	rec := &recorder{FileIO: fio}
	r := fileio.NewRooted(rec, "/wh")
	require.Equal(t, "s3://bkt/wh", r.Location())
	for p, want := range map[string]string{
		"db.db/t/snapshot/snapshot-1": "/wh/db.db/t/snapshot/snapshot-1",
		".":                           "/wh",
		"":                            "/wh",
		"/wh/db.db":                   "/wh/db.db",
		"db.db/x/../t":                "/wh/db.db/t",
		"s3://bkt/wh/db.db/t/f":       "/wh/db.db/t/f",
		"s3a://bkt/wh/db.db/t/f":      "/wh/db.db/t/f",
		"d.db/x:/y":                   "/wh/d.db/x:/y",
	} {
		_, err := r.Read(ctx, p)
		require.NoError(t, err, "%q", p)
		require.Equal(t, want, rec.got, "%q", p)
	}
	for _, p := range []string{"../x", "..", "/x", "/wh2/x", "/whx", "db.db/../../x", "s3://bkt/other/x",
		"s3://bkt/wh2/x", "s3://other/wh/x", "s3://bkt/wh/../x", "db.db/\x00", "/"} {
		_, err := r.Read(ctx, p)
		require.ErrorIs(t, err, fileio.ErrInvalidPath, "%q", p)
		require.NotContains(t, err.Error(), "\x00")
		// Refused before any request (the endpoint does not exist).
		require.ErrorIs(t, r.WriteAtomic(ctx, p, []byte("x")), fileio.ErrInvalidPath, "%q", p)
		require.ErrorIs(t, r.Remove(ctx, p), fileio.ErrInvalidPath, "%q", p)
	}
	// A bucket-wide root holds every key, but never the bucket root itself for RemoveAll.
	all := fileio.NewRooted(rec, "/")
	require.Equal(t, "s3://bkt", all.Location())
	_, err = all.Read(ctx, "../../x")
	require.NoError(t, err)
	require.Equal(t, "/x", rec.got)
	require.ErrorIs(t, all.RemoveAll(ctx, ""), fileio.ErrInvalidPath)

	// S3 errors name keys relative to the root, not s3://bucket/prefix.
	rec.err = fio.wrap("get", "wh/db.db/t/snapshot/snapshot-9", errors.New("boom"))
	_, err = r.Read(ctx, "db.db/t/snapshot/snapshot-9")
	require.Equal(t, "s3: get db.db/t/snapshot/snapshot-9: boom", err.Error())
	rec.err = fio.wrap("list", "wh", errors.New("boom"))
	_, err = r.Read(ctx, ".")
	require.Equal(t, "s3: list .: boom", err.Error())
}
