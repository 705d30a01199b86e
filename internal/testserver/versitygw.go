package testserver

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Fixed root credentials of the test S3 server.
const (
	S3AccessKey = "flightdtestak"
	S3SecretKey = "flightdtestsecretkey"
	S3Region    = "us-east-1"
)

// VersityGWBinary returns Versity S3 Gateway: $VERSITYGW, else versitygw on
// PATH; without either the test is skipped with how to build it (make test
// builds it, so there it never skips).
func VersityGWBinary(t testing.TB) string {
	if p := os.Getenv("VERSITYGW"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("VERSITYGW=%s: %v", p, err)
		}
		return p
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	t.Skip("S3 tests need Versity S3 Gateway: set VERSITYGW=/path/to/versitygw or put versitygw on PATH " +
		"(`make tools` builds it into bin/tools: GOBIN=$PWD/bin/tools go install github.com/versity/versitygw/cmd/versitygw@v1.8.0)")
	return ""
}

// StartVersityGW starts a real S3 server (Versity S3 Gateway, posix
// backend) on a free 127.0.0.1 port over a temporary directory, with the
// fixed credentials above, and stops it when the test ends. It returns the
// endpoint URL and the directory that holds the buckets.
func StartVersityGW(t testing.TB) (endpoint, root string) {
	t.Helper()
	bin := VersityGWBinary(t)
	root = filepath.Join(t.TempDir(), "gw")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		addr := freePort(t)
		var out bytes.Buffer
		cmd := exec.Command(bin, "--access", S3AccessKey, "--secret", S3SecretKey, "--region", S3Region,
			"--port", addr, "--quiet", "posix", root)
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.Env = append(os.Environ(), "VGW_LOG_LEVEL=silent")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		if lastErr = waitListening(addr, exited, 20*time.Second); lastErr != nil {
			_ = cmd.Process.Kill()
			<-exited
			lastErr = fmt.Errorf("versitygw on %s: %w; output:\n%s", addr, lastErr, out.String())
			continue
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-exited
		})
		return "http://" + addr, root
	}
	t.Fatal(lastErr)
	return "", ""
}

// StartS3 starts a real S3 server (StartVersityGW) and creates bucket in it. It returns
// the endpoint URL and the directory that holds the buckets (the bucket's objects are
// files under root/bucket/).
func StartS3(t testing.TB, bucket string) (endpoint, root string) {
	t.Helper()
	endpoint, root = StartVersityGW(t)
	client := s3.New(s3.Options{
		BaseEndpoint: aws.String(endpoint),
		Region:       S3Region,
		Credentials:  credentials.NewStaticCredentialsProvider(S3AccessKey, S3SecretKey, ""),
		UsePathStyle: true,
	})
	if _, err := client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("create bucket %s: %v", bucket, err)
	}
	return endpoint, root
}

func waitListening(addr string, exited <-chan error, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("exited early: %v", err)
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("not listening after %s", timeout)
}
