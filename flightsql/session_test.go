package flightsql

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/flightd/flightd/engine"
)

// sessionEngine is fakeEngine that remembers the database each statement
// ran in and runs USE as the real engine does.
type sessionEngine struct {
	fakeEngine
	mu  sync.Mutex
	ran map[string]string // statement -> the database it last ran or was prepared in
}

func (e *sessionEngine) saw(ctx context.Context, sql string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ran == nil {
		e.ran = map[string]string{}
	}
	e.ran[sql] = engine.Database(ctx)
	if engine.Streaming(ctx) {
		e.ran[sql] += " streaming"
	}
}

func (e *sessionEngine) db(sql string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ran[sql]
}

func (e *sessionEngine) Execute(ctx context.Context, st engine.Statement) (engine.Result, error) {
	sql := st.SQL()
	e.saw(ctx, sql)
	if db, ok := strings.CutPrefix(sql, "USE "); ok {
		if !strings.EqualFold(db, "shop") && !strings.EqualFold(db, "default") {
			return engine.Result{}, engine.ErrNotFound
		}
		return engine.Result{Update: true, Database: strings.ToLower(db)}, nil
	}
	if v, ok := strings.CutPrefix(sql, "SET streaming = "); ok {
		on := v == "true"
		return engine.Result{Update: true, Streaming: &on}, nil
	}
	return e.fakeEngine.Execute(ctx, st)
}

func (e *sessionEngine) Prepare(ctx context.Context, st engine.Statement) (engine.Prepared, error) {
	sql := st.SQL()
	e.saw(ctx, "prepare "+sql)
	return e.fakeEngine.Prepare(ctx, st)
}

// cookieClient is a Flight SQL client that keeps cookies, as JDBC always
// does and ADBC does with its cookie option. It keeps them with gRPC
// interceptors of its own, not arrow-go's cookie middleware: arrow-go's
// stream wrapper races the end of a stream (DoAction: SetSessionOptions)
// against reading its headers and sometimes drops them, which made these
// tests flaky; this jar reads a stream's headers before its end returns.
func cookieClient(t *testing.T, addr string) *flightsql.Client {
	t.Helper()
	jar := &cookieJar{}
	cl, err := flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(jar.unary), grpc.WithChainStreamInterceptor(jar.stream))
	require.NoError(t, err)
	t.Cleanup(func() { cl.Close() })
	return cl
}

// cookieJar keeps the cookies a server sets and sends them back.
type cookieJar struct {
	mu      sync.Mutex
	cookies map[string]string
}

func (j *cookieJar) outgoing(ctx context.Context) context.Context {
	j.mu.Lock()
	defer j.mu.Unlock()
	for k, v := range j.cookies {
		ctx = metadata.AppendToOutgoingContext(ctx, "cookie", k+"="+v)
	}
	return ctx
}

func (j *cookieJar) received(md metadata.MD) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, line := range md.Get("set-cookie") {
		c, err := http.ParseSetCookie(line)
		if err != nil {
			continue
		}
		if j.cookies == nil {
			j.cookies = map[string]string{}
		}
		if c.MaxAge < 0 {
			delete(j.cookies, c.Name)
		} else {
			j.cookies[c.Name] = c.Value
		}
	}
}

func (j *cookieJar) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	var md metadata.MD
	err := invoker(j.outgoing(ctx), method, req, reply, cc, append(opts, grpc.Header(&md))...)
	j.received(md)
	return err
}

func (j *cookieJar) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	cs, err := streamer(j.outgoing(ctx), desc, cc, method, opts...)
	if err != nil {
		return nil, err
	}
	return &jarStream{ClientStream: cs, jar: j}, nil
}

// jarStream takes the server's cookies from the headers when the first
// message or the end arrives.
type jarStream struct {
	grpc.ClientStream
	jar  *cookieJar
	once sync.Once
}

func (s *jarStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	s.once.Do(func() {
		if md, herr := s.ClientStream.Header(); herr == nil {
			s.jar.received(md)
		}
	})
	return err
}

func sessionOptions(t *testing.T, cl *flightsql.Client) map[string]string {
	t.Helper()
	res, err := cl.GetSessionOptions(context.Background(), &flight.GetSessionOptionsRequest{})
	require.NoError(t, err)
	out := map[string]string{}
	for k, v := range res.GetSessionOptions() {
		if b, ok := v.GetOptionValue().(*pb.SessionOptionValue_BoolValue); ok {
			out[k] = fmt.Sprint(b.BoolValue)
			continue
		}
		out[k] = v.GetStringValue()
	}
	return out
}

func setOption(t *testing.T, cl *flightsql.Client, name string, v any) map[string]pb.SetSessionOptionsResult_ErrorValue {
	t.Helper()
	opts, err := flight.NewSessionOptionValues(map[string]any{name: v})
	require.NoError(t, err)
	res, err := cl.SetSessionOptions(context.Background(), &flight.SetSessionOptionsRequest{SessionOptions: opts})
	require.NoError(t, err)
	out := map[string]pb.SetSessionOptionsResult_ErrorValue{}
	for k, e := range res.GetErrors() {
		out[k] = e.GetValue()
	}
	return out
}

func runQuery(t *testing.T, cl *flightsql.Client, sql string) {
	t.Helper()
	info, err := cl.Execute(context.Background(), sql)
	require.NoError(t, err)
	readAll(t, cl, info)
}

func TestSessionChoosesTheDatabaseOfUnqualifiedNames(t *testing.T) {
	eng := &sessionEngine{}
	addr := serve(t, eng, Options{})
	cl := cookieClient(t, addr)

	require.Equal(t, map[string]string{"catalog": "", "schema": "default", "streaming": "false"}, sessionOptions(t, cl))
	runQuery(t, cl, "SELECT 1")
	require.Equal(t, "default", eng.db("SELECT 1"))

	// The schema option takes the catalog's spelling; statements, their
	// tickets and their prepared statements follow it.
	require.Empty(t, setOption(t, cl, "schema", "SHOP"))
	require.Equal(t, map[string]string{"catalog": "", "schema": "shop", "streaming": "false"}, sessionOptions(t, cl))
	info, err := cl.Execute(context.Background(), "SELECT 22")
	require.NoError(t, err)
	require.Equal(t, "shop", eng.db("prepare SELECT 22"))
	// The ticket is self-contained: a client without the session's cookie
	// fetches it in the session's database.
	other := cookieClient(t, addr)
	readAll(t, other, info)
	require.Equal(t, "shop", eng.db("SELECT 22"))
	ps, err := cl.Prepare(context.Background(), "SELECT 333")
	require.NoError(t, err)
	defer ps.Close(context.Background())

	// USE moves the session. (Run as an update it works the same, but
	// arrow-go's ExecuteUpdate reads one message of the DoPut and never its
	// headers, so its cookie middleware misses the new session; JDBC's
	// driver reads them: integration/jdbc.)
	runQuery(t, cl, "USE default")
	require.Equal(t, "default", sessionOptions(t, cl)["schema"])
	runQuery(t, cl, "SELECT 4444")
	require.Equal(t, "default", eng.db("SELECT 4444"))
	runQuery(t, cl, "USE shop")
	require.Equal(t, "shop", sessionOptions(t, cl)["schema"])
	_, err = cl.Execute(context.Background(), "USE nowhere")
	require.Error(t, err)
	require.Equal(t, "shop", sessionOptions(t, cl)["schema"], "a failed USE leaves the session")

	// A prepared statement keeps the database it was prepared in.
	runQuery(t, cl, "USE default")
	info, err = ps.Execute(context.Background())
	require.NoError(t, err)
	readAll(t, cl, info)
	require.Equal(t, "shop", eng.db("SELECT 333"))

	// A prepared USE answers a result, so clients run it with GetFlightInfo,
	// whose headers carry the session back (not a DoPut, whose headers Go's
	// client never reads).
	use, err := cl.Prepare(context.Background(), "USE shop")
	require.NoError(t, err)
	require.NotNil(t, use.DatasetSchema())
	info, err = use.Execute(context.Background())
	require.NoError(t, err)
	readAll(t, cl, info)
	require.NoError(t, use.Close(context.Background()))
	require.Equal(t, "shop", sessionOptions(t, cl)["schema"])

	// Another client's session is its own.
	require.Equal(t, "default", sessionOptions(t, other)["schema"])

	// CloseSession returns to the default database.
	require.Empty(t, setOption(t, cl, "schema", "shop"))
	res, err := cl.CloseSession(context.Background(), &flight.CloseSessionRequest{})
	require.NoError(t, err)
	require.Equal(t, flight.CloseSessionResultClosed, res.GetStatus())
	require.Equal(t, "default", sessionOptions(t, cl)["schema"])
}

func TestSessionOptionsRefuseWhatFlightdHasNot(t *testing.T) {
	eng := &sessionEngine{}
	cl := cookieClient(t, serve(t, eng, Options{}))
	require.Empty(t, setOption(t, cl, "schema", "shop"))
	require.Equal(t, map[string]pb.SetSessionOptionsResult_ErrorValue{"schema": flight.SetSessionOptionsResultErrorInvalidValue},
		setOption(t, cl, "schema", "nowhere"))
	require.Equal(t, map[string]pb.SetSessionOptionsResult_ErrorValue{"schema": flight.SetSessionOptionsResultErrorInvalidValue},
		setOption(t, cl, "schema", int64(3)))
	require.Equal(t, map[string]pb.SetSessionOptionsResult_ErrorValue{"catalog": flight.SetSessionOptionsResultErrorInvalidValue},
		setOption(t, cl, "catalog", "spark_catalog"), "flightd has no catalogs")
	require.Empty(t, setOption(t, cl, "catalog", ""))
	require.Equal(t, map[string]pb.SetSessionOptionsResult_ErrorValue{"sql_dialect": flight.SetSessionOptionsResultErrorInvalidName},
		setOption(t, cl, "sql_dialect", "mysql"))
	require.Equal(t, "shop", sessionOptions(t, cl)["schema"], "refused options leave the session")
}

// A cookie the client made up is either a session SetSessionOptions could
// have made or the default session: it never fails a call.
func TestForgedSessionCookiesAreTheDefaultSession(t *testing.T) {
	eng := &sessionEngine{}
	plain, _ := startWith(t, eng, Options{})
	good := session{db: "shop"}.cookie()
	for _, c := range []string{
		"flightd_session=!!!",
		"flightd_session=" + strings.Repeat("A", maxSessionCookie+1),
		"flightd_session=AAAA",
		"flightd_session=" + strings.TrimPrefix(session{db: "a\x01b"}.cookie(), sessionCookie+"="),
		"other=1; flightd_session",
		"=;;;",
	} {
		ctx := metadata.AppendToOutgoingContext(context.Background(), "cookie", c)
		res, err := plain.GetSessionOptions(ctx, &flight.GetSessionOptionsRequest{})
		require.NoError(t, err, c)
		require.Equal(t, "default", res.GetSessionOptions()["schema"].GetStringValue(), c)
	}
	ctx := metadata.AppendToOutgoingContext(context.Background(), "cookie", "a=b; "+good)
	res, err := plain.GetSessionOptions(ctx, &flight.GetSessionOptionsRequest{})
	require.NoError(t, err)
	require.Equal(t, "shop", res.GetSessionOptions()["schema"].GetStringValue())
}

// TestStreamingSessionOption: the option streaming (a bool, or a string as
// ADBC sends it) and SET streaming move the session; the session's
// statements, their tickets (fetched by another client) and its prepared
// statements stream, and the database stays what it was.
func TestStreamingSessionOption(t *testing.T) {
	eng := &sessionEngine{}
	addr := serve(t, eng, Options{})
	cl := cookieClient(t, addr)
	require.Empty(t, setOption(t, cl, "schema", "shop"))
	require.Empty(t, setOption(t, cl, "streaming", "true"))
	require.Equal(t, map[string]string{"catalog": "", "schema": "shop", "streaming": "true"}, sessionOptions(t, cl))
	info, err := cl.Execute(context.Background(), "SELECT 5")
	require.NoError(t, err)
	require.Equal(t, "shop streaming", eng.db("prepare SELECT 5"))
	readAll(t, cookieClient(t, addr), info)
	require.Equal(t, "shop streaming", eng.db("SELECT 5"))
	ps, err := cl.Prepare(context.Background(), "SELECT 6")
	require.NoError(t, err)
	defer ps.Close(context.Background())

	require.Empty(t, setOption(t, cl, "streaming", false))
	require.Equal(t, map[string]string{"catalog": "", "schema": "shop", "streaming": "false"}, sessionOptions(t, cl))
	runQuery(t, cl, "SELECT 7")
	require.Equal(t, "shop", eng.db("SELECT 7"))
	info, err = ps.Execute(context.Background())
	require.NoError(t, err)
	readAll(t, cl, info)
	require.Equal(t, "shop streaming", eng.db("SELECT 6"), "a prepared statement keeps its session")

	runQuery(t, cl, "SET streaming = true")
	require.Equal(t, map[string]string{"catalog": "", "schema": "shop", "streaming": "true"}, sessionOptions(t, cl))
	require.Equal(t, map[string]pb.SetSessionOptionsResult_ErrorValue{"streaming": flight.SetSessionOptionsResultErrorInvalidValue}, setOption(t, cl, "streaming", "maybe"))
	runQuery(t, cl, "SET streaming = false")
	require.Equal(t, map[string]string{"catalog": "", "schema": "shop", "streaming": "false"}, sessionOptions(t, cl))
}
