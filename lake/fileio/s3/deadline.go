package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// Deadlines and retries of S3 requests (Options.RequestTimeout, MaxAttempts,
// MaxBackoff). Without them a server that accepts a connection and never answers
// holds a statement or a tiering round for good.
//
// Each attempt of a request runs under a stall timeout rather than a deadline on the
// whole attempt: a large GET or part upload that keeps moving bytes runs as long as it
// needs, while an attempt that waits RequestTimeout on the server — to connect and
// take the request's bytes, for the response headers, or within one read of the
// response body — is cancelled. The time the caller spends between reads of a body
// does not count. A stalled attempt before the response is an error the standard
// retryer retries (as a connection error); a stall while the caller reads the body
// fails that read.

const (
	defaultRequestTimeout = 30 * time.Second
	defaultMaxAttempts    = 4
	defaultMaxBackoff     = 20 * time.Second
	connectTimeout        = 10 * time.Second
)

// retryer is the SDK's standard retryer (throttling, 5xx and connection errors;
// exponential backoff with full jitter, at most maxBackoff; a token bucket that stops
// retrying when most attempts fail) with maxAttempts tries per request.
func retryer(maxAttempts int, maxBackoff time.Duration) aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = maxAttempts
		o.MaxBackoff = maxBackoff
	})
}

// httpClient returns base's transport (the SDK's, with what the AWS config set on
// it, e.g. a CA bundle) under the stall timeout (timeout > 0). The transport's own
// connect, TLS and response-header timeouts are a backstop at twice the stall timeout
// (connect and TLS: at most their defaults), so that the stall timeout, which names
// what the attempt waited for, is the one that fires.
func httpClient(base aws.HTTPClient, timeout time.Duration) aws.HTTPClient {
	bc, ok := base.(*awshttp.BuildableClient)
	if !ok || bc == nil {
		bc = awshttp.NewBuildableClient()
	}
	if timeout <= 0 {
		return bc
	}
	bc = bc.WithDialerOptions(func(d *net.Dialer) {
		d.Timeout = min(connectTimeout, 2*timeout)
	}).WithTransportOptions(func(tr *http.Transport) {
		tr.TLSHandshakeTimeout = min(awshttp.DefaultHTTPTransportTLSHandleshakeTimeout, 2*timeout)
		tr.ResponseHeaderTimeout = 2 * timeout
	})
	return &stallClient{next: bc, timeout: timeout}
}

// stallClient runs each request (each attempt: the retryer calls Do once per
// attempt) under a stall timeout.
type stallClient struct {
	next    aws.HTTPClient
	timeout time.Duration
}

func (c *stallClient) Do(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	w := newStallWatch(c.timeout, cancel, req.Method+" "+req.URL.Redacted())
	req = req.WithContext(ctx)
	if req.Body != nil && req.Body != http.NoBody {
		req.Body = &sendBody{ReadCloser: req.Body, w: w}
		if get := req.GetBody; get != nil {
			req.GetBody = func() (io.ReadCloser, error) {
				b, err := get()
				if err != nil || b == nil || b == http.NoBody {
					return b, err
				}
				return &sendBody{ReadCloser: b, w: w}, nil
			}
		}
	} else {
		w.sent()
	}
	resp, err := c.next.Do(req)
	if err != nil {
		stalled := w.stop()
		cancel(nil)
		if stalled != nil {
			var ue *url.Error
			if errors.As(err, &ue) {
				return nil, &url.Error{Op: ue.Op, URL: ue.URL, Err: stalled}
			}
			return nil, stalled
		}
		return nil, err
	}
	if stalled := w.disarm(); stalled != nil { // the response came as the attempt was cancelled
		resp.Body.Close()
		cancel(nil)
		return nil, &url.Error{Op: urlOp(req.Method), URL: req.URL.Redacted(), Err: stalled}
	}
	// The response is here; its body is watched per read.
	resp.Body = &recvBody{ReadCloser: resp.Body, w: w, cancel: cancel}
	return resp, nil
}

// urlOp is the Op of net/http's *url.Error for method.
func urlOp(method string) string {
	if method == "" {
		return "Get"
	}
	return method[:1] + strings.ToLower(method[1:])
}

// StallError reports an attempt of an S3 request that waited on the server for
// Options.RequestTimeout. It is a timeout (net.Error), which the retryer retries.
type StallError struct {
	Request string        // method and URL
	While   string        // what the attempt waited for
	After   time.Duration // Options.RequestTimeout
}

func (e *StallError) Error() string {
	return fmt.Sprintf("s3: no progress for %s while %s (the per-attempt timeout, s3.Options.RequestTimeout)", e.After, e.While)
}

// Timeout marks the error as a timeout for the retryer and for net.Error checks.
func (e *StallError) Timeout() bool { return true }

// Temporary: a stalled attempt may well succeed when tried again.
func (e *StallError) Temporary() bool { return true }

const (
	phaseSend    = "connecting and sending the request"
	phaseHeaders = "waiting for the response"
	phaseBody    = "reading the response body"
)

// stallWatch cancels an attempt's context when it has been armed, without progress,
// for d. One timer per attempt: progress moves the deadline, and the timer, when it
// fires early, sets itself for the rest.
type stallWatch struct {
	d       time.Duration
	cancel  context.CancelCauseFunc
	request string

	mu       sync.Mutex
	timer    *time.Timer
	pending  bool // the timer is set
	armed    bool // the attempt is waiting on the server
	deadline time.Time
	phase    string
	fired    *StallError
	stopped  bool
}

func newStallWatch(d time.Duration, cancel context.CancelCauseFunc, request string) *stallWatch {
	w := &stallWatch{d: d, cancel: cancel, request: request}
	w.mu.Lock()
	w.armed, w.phase, w.deadline, w.pending = true, phaseSend, time.Now().Add(d), true
	w.timer = time.AfterFunc(d, w.fire)
	w.mu.Unlock()
	return w
}

func (w *stallWatch) fire() {
	w.mu.Lock()
	if w.fired != nil || w.stopped || !w.armed {
		w.pending = false
		w.mu.Unlock()
		return
	}
	if left := time.Until(w.deadline); left > 0 {
		w.timer.Reset(left)
		w.mu.Unlock()
		return
	}
	w.pending = false
	w.fired = &StallError{Request: w.request, While: w.phase, After: w.d}
	err := w.fired
	w.mu.Unlock()
	w.cancel(err)
}

// arm starts a wait on the server.
func (w *stallWatch) arm(phase string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped || w.fired != nil {
		return
	}
	w.armed, w.phase, w.deadline = true, phase, time.Now().Add(w.d)
	if !w.pending {
		w.pending = true
		w.timer.Reset(w.d)
	}
}

// progress moves the deadline of an armed wait.
func (w *stallWatch) progress() {
	w.mu.Lock()
	if w.armed {
		w.deadline = time.Now().Add(w.d)
	}
	w.mu.Unlock()
}

// sent: the request's body is all handed to the connection; now the response.
func (w *stallWatch) sent() {
	w.mu.Lock()
	if w.armed && w.phase == phaseSend {
		w.phase, w.deadline = phaseHeaders, time.Now().Add(w.d)
	}
	w.mu.Unlock()
}

// disarm ends a wait and returns the stall, if the watch fired.
func (w *stallWatch) disarm() *StallError {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed = false
	return w.fired
}

// stop ends the watch for good and returns the stall, if it fired.
func (w *stallWatch) stop() *StallError {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed, w.stopped = false, true
	w.timer.Stop()
	return w.fired
}

// sendBody is a request body: every read by the transport is progress (it reads
// as the connection takes the bytes).
type sendBody struct {
	io.ReadCloser
	w *stallWatch
}

func (b *sendBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.w.sent()
	} else {
		b.w.progress()
	}
	return n, err
}

// recvBody is a response body: each read waits at most the stall timeout for bytes.
// Closing it ends the attempt.
type recvBody struct {
	io.ReadCloser
	w      *stallWatch
	cancel context.CancelCauseFunc
}

func (b *recvBody) Read(p []byte) (int, error) {
	b.w.arm(phaseBody)
	n, err := b.ReadCloser.Read(p)
	if stalled := b.w.disarm(); stalled != nil && err != nil && err != io.EOF {
		return n, stalled
	}
	return n, err
}

func (b *recvBody) Close() error {
	b.w.stop()
	err := b.ReadCloser.Close()
	b.cancel(nil)
	return err
}
