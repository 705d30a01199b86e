package s3

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// ---- the stall timeout, on a fake clock (synctest) and a fake transport ----

type doFunc func(*http.Request) (*http.Response, error)

func (f doFunc) Do(r *http.Request) (*http.Response, error) { return f(r) }

// trickle feeds n bytes into a pipe, one every gap, then stopAt: when stopAt < n it
// stops after stopAt bytes and waits for the request's context (a server gone silent).
// The pipe fails once the context ends, as a connection does.
func trickle(ctx context.Context, n, stopAt int, gap time.Duration) io.ReadCloser {
	pr, pw := io.Pipe()
	context.AfterFunc(ctx, func() { pr.CloseWithError(context.Cause(ctx)) })
	go func() {
		for i := 0; i < n; i++ {
			if i == stopAt {
				<-ctx.Done()
				pw.CloseWithError(context.Cause(ctx))
				return
			}
			time.Sleep(gap)
			if _, err := pw.Write([]byte{'x'}); err != nil {
				return
			}
		}
		pw.Close()
	}()
	return pr
}

func okResponse(body io.ReadCloser) *http.Response {
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: body}
}

func newRequest(t *testing.T, body io.Reader) *http.Request {
	method := http.MethodGet
	if body != nil {
		method = http.MethodPut
	}
	req, err := http.NewRequestWithContext(context.Background(), method, "http://s3.test/bucket/key", body)
	require.NoError(t, err)
	return req
}

// TestStallTimeoutBoundsWaitsNotTransfers: RequestTimeout bounds each wait on the
// server, not a transfer: a body that arrives (or an upload that is taken) a byte
// every 3/4 of the timeout, for 15 timeouts in all, succeeds, and so does a caller
// that stops reading for 5 timeouts; a server that stops sending the body, never
// answers, or stops taking the upload fails the attempt with *StallError saying
// what it waited for.
func TestStallTimeoutBoundsWaitsNotTransfers(t *testing.T) {
	const timeout = 200 * time.Millisecond
	gap := timeout * 3 / 4
	stalled := func(t *testing.T, err error, while string) {
		t.Helper()
		var se *StallError
		require.ErrorAs(t, err, &se)
		require.Equal(t, while, se.While)
		require.Equal(t, timeout, se.After)
		require.ErrorContains(t, err, "no progress for 200ms while "+while)
	}

	t.Run("slow download", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := &stallClient{timeout: timeout, next: doFunc(func(r *http.Request) (*http.Response, error) {
				return okResponse(trickle(r.Context(), 20, 20, gap)), nil
			})}
			resp, err := c.Do(newRequest(t, nil))
			require.NoError(t, err)
			head := make([]byte, 10)
			_, err = io.ReadFull(resp.Body, head)
			require.NoError(t, err)
			time.Sleep(5 * timeout) // the caller's own pause does not count
			rest, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Len(t, rest, 10)
			require.NoError(t, resp.Body.Close())
		})
	})
	t.Run("slow upload", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := &stallClient{timeout: timeout, next: doFunc(func(r *http.Request) (*http.Response, error) {
				got, err := io.ReadAll(r.Body)
				if err != nil {
					return nil, err
				}
				if err := r.Context().Err(); err != nil { // as a transport does
					return nil, err
				}
				return okResponse(io.NopCloser(bytes.NewReader(got))), nil
			})}
			upload := trickle(context.Background(), 20, 20, gap)
			resp, err := c.Do(newRequest(t, upload))
			require.NoError(t, err)
			got, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Len(t, got, 20)
			require.NoError(t, resp.Body.Close())
		})
	})
	t.Run("body stalls", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := &stallClient{timeout: timeout, next: doFunc(func(r *http.Request) (*http.Response, error) {
				return okResponse(trickle(r.Context(), 20, 3, gap)), nil
			})}
			resp, err := c.Do(newRequest(t, nil))
			require.NoError(t, err)
			got, err := io.ReadAll(resp.Body)
			require.Len(t, got, 3)
			stalled(t, err, phaseBody)
			require.NoError(t, resp.Body.Close())
		})
	})
	t.Run("no response", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := &stallClient{timeout: timeout, next: doFunc(func(r *http.Request) (*http.Response, error) {
				<-r.Context().Done()
				return nil, &url.Error{Op: "Get", URL: r.URL.String(), Err: r.Context().Err()}
			})}
			_, err := c.Do(newRequest(t, nil))
			stalled(t, err, phaseHeaders)
			var ue *url.Error
			require.ErrorAs(t, err, &ue, "the method and URL stay in the error")
			require.True(t, ue.Timeout())
		})
	})
	t.Run("upload stalls", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c := &stallClient{timeout: timeout, next: doFunc(func(r *http.Request) (*http.Response, error) {
				_, _ = io.ReadFull(r.Body, make([]byte, 2)) // the connection takes 2 bytes, then nothing
				<-r.Context().Done()
				return nil, r.Context().Err()
			})}
			_, err := c.Do(newRequest(t, bytes.NewReader(make([]byte, 100))))
			stalled(t, err, phaseSend)
		})
	})
}

// ---- real HTTP servers on loopback ----

func fastRetryOptions(endpoint string) Options {
	return Options{Endpoint: endpoint, Region: "us-east-1", AccessKeyID: "k", SecretAccessKey: "s",
		RequestTimeout: 200 * time.Millisecond, MaxAttempts: 3, MaxBackoff: time.Millisecond}
}

// guard bounds a test's call generously: if the timeout under test did not work the
// call fails on this context instead of hanging the test, and the test says so.
func guard(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// silentServer accepts connections and never reads or answers; it counts them.
func silentServer(t *testing.T) (endpoint string, accepted *atomic.Int64) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	accepted = new(atomic.Int64)
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String(), accepted
}

// TestHungEndpointFailsEachAttempt: an endpoint that accepts connections and
// never answers fails a read, and an upload it never takes, with *StallError
// after MaxAttempts attempts (one connection each), not on the caller's context.
func TestHungEndpointFailsEachAttempt(t *testing.T) {
	endpoint, accepted := silentServer(t)
	fio, err := New(context.Background(), "b", fastRetryOptions(endpoint))
	require.NoError(t, err)

	ctx := guard(t)
	_, err = fio.Read(ctx, "/k")
	require.NoError(t, ctx.Err(), "the call returned on its own timeout")
	var se *StallError
	require.ErrorAs(t, err, &se)
	require.Equal(t, phaseHeaders, se.While)
	require.ErrorContains(t, err, "s3: get s3://b/k")
	require.ErrorContains(t, err, "no progress for 200ms")
	require.EqualValues(t, 3, accepted.Load(), "one connection per attempt")

	// 32 MiB is more than loopback's socket buffers take: the upload stalls sending.
	accepted.Store(0)
	err = fio.WriteAtomic(ctx, "/big", make([]byte, 32<<20))
	require.NoError(t, ctx.Err())
	require.ErrorAs(t, err, &se)
	require.EqualValues(t, 3, accepted.Load())
}

// TestBodyStallFailsTheRead: a GET whose body stops arriving fails the read with
// *StallError (the response had come: no retry).
func TestBodyStallFailsTheRead(t *testing.T) {
	release := make(chan struct{})
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(200)
		_, _ = w.Write([]byte("0123456789"))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	fio, err := New(context.Background(), "b", fastRetryOptions(srv.URL))
	require.NoError(t, err)
	ctx := guard(t)
	_, err = fio.Read(ctx, "/k")
	require.NoError(t, ctx.Err())
	var se *StallError
	require.ErrorAs(t, err, &se)
	require.Equal(t, phaseBody, se.While)
	require.EqualValues(t, 1, requests.Load())
}

// flakyServer answers the first fail requests with 503 and code, then serves GETs
// with body; it counts requests.
func flakyServer(t *testing.T, fail int64, code, body string) (*httptest.Server, *atomic.Int64) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) <= fail {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>`+code+
				`</Code><Message>Please reduce your request rate.</Message><RequestId>r</RequestId></Error>`)
			return
		}
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, &requests
}

// TestRetriesUnavailable: 503 SlowDown (throttling) and 503 ServiceUnavailable are
// retried: MaxAttempts-1 of them, then a success, is a success on the last attempt;
// a server that always answers 503 fails after MaxAttempts attempts with an error
// that names the status and the code.
func TestRetriesUnavailable(t *testing.T) {
	for _, code := range []string{"SlowDown", "ServiceUnavailable"} {
		t.Run(code, func(t *testing.T) {
			srv, requests := flakyServer(t, 2, code, "hello")
			fio, err := New(context.Background(), "b", fastRetryOptions(srv.URL))
			require.NoError(t, err)
			got, err := fio.Read(guard(t), "/k")
			require.NoError(t, err)
			require.Equal(t, "hello", string(got))
			require.EqualValues(t, 3, requests.Load(), "two 503s, then the answer")

			srv, requests = flakyServer(t, 1<<30, code, "")
			fio, err = New(context.Background(), "b", fastRetryOptions(srv.URL))
			require.NoError(t, err)
			_, err = fio.Read(guard(t), "/k")
			require.Error(t, err)
			require.Equal(t, http.StatusServiceUnavailable, httpStatus(err))
			require.ErrorContains(t, err, "StatusCode: 503")
			require.ErrorContains(t, err, code)
			require.ErrorContains(t, err, "exceeded maximum number of attempts, 3")
			require.EqualValues(t, 3, requests.Load())
		})
	}
}

// TestRetryDefaults: 30s per attempt and 4 attempts unless set; $AWS_MAX_ATTEMPTS
// stands in for an unset MaxAttempts; a negative RequestTimeout turns the stall
// timeout off.
func TestRetryDefaults(t *testing.T) {
	ctx := context.Background()
	base := Options{Endpoint: "http://127.0.0.1:1", Region: "us-east-1", AccessKeyID: "k", SecretAccessKey: "s"}
	t.Setenv("AWS_MAX_ATTEMPTS", "")
	fio, err := New(ctx, "b", base)
	require.NoError(t, err)
	o := fio.Client().Options()
	require.Equal(t, defaultMaxAttempts, o.Retryer.MaxAttempts())
	sc, ok := o.HTTPClient.(*stallClient)
	require.True(t, ok)
	require.Equal(t, defaultRequestTimeout, sc.timeout)

	t.Setenv("AWS_MAX_ATTEMPTS", "2")
	fio, err = New(ctx, "b", base)
	require.NoError(t, err)
	require.Equal(t, 2, fio.Client().Options().Retryer.MaxAttempts())
	o2 := base
	o2.MaxAttempts, o2.RequestTimeout = 5, -1
	fio, err = New(ctx, "b", o2)
	require.NoError(t, err)
	require.Equal(t, 5, fio.Client().Options().Retryer.MaxAttempts(), "the option wins over the environment")
	_, stall := fio.Client().Options().HTTPClient.(*stallClient)
	require.False(t, stall)
}
