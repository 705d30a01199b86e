package console

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/flightsql"
	"github.com/flightd/flightd/internal/admit"
	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lake/paimontype"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/logstore"
	"github.com/flightd/flightd/tiering"
)

// newService is a lakestream service over a warehouse and a log under dir.
func newService(t *testing.T, dir string) *lakestream.Service {
	t.Helper()
	cat, err := lake.OpenCatalog(filepath.Join(dir, "warehouse"))
	require.NoError(t, err)
	log, err := logstore.Open(filepath.Join(dir, "log"), logstore.DefaultOptions())
	require.NoError(t, err)
	t.Cleanup(func() { log.Close() })
	return lakestream.New(cat, log, lakestream.Options{})
}

// ids is a batch of one BIGINT column id with from..from+n-1.
func ids(from, n int64) arrow.RecordBatch {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	for i := from; i < from+n; i++ {
		b.Append(i)
	}
	col := b.NewArray()
	defer col.Release()
	return array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{col}, n)
}

// logBuffer collects what a logger writes.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type page struct {
	t   *testing.T
	srv *httptest.Server
}

func serve(t *testing.T, c *Console) *page {
	srv := httptest.NewServer(c.Handler())
	t.Cleanup(srv.Close)
	return &page{t: t, srv: srv}
}

// do sends a request and returns the status and the body.
func (p *page) do(method, path, body string, header map[string]string) (int, string, http.Header) {
	p.t.Helper()
	req, err := http.NewRequest(method, p.srv.URL+path, strings.NewReader(body))
	require.NoError(p.t, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := p.srv.Client().Do(req)
	require.NoError(p.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(p.t, err)
	return resp.StatusCode, string(b), resp.Header
}

func (p *page) state(header map[string]string) State {
	p.t.Helper()
	code, body, _ := p.do("GET", "/ui/api/state", "", header)
	require.Equal(p.t, http.StatusOK, code, body)
	var st State
	require.NoError(p.t, json.Unmarshal([]byte(body), &st))
	return st
}

// The page's files are served from the binary, and the state follows the
// tables: rows in the log first, in the lake after a tiering round, with
// the size of the data files and the snapshot; a failing table shows its
// rounds, error and retry time; statements show as admission lists them.
func TestStateFollowsTablesAndStatements(t *testing.T) {
	ctx := context.Background()
	ls := newService(t, t.TempDir())
	require.NoError(t, ls.CreateDatabase(ctx, "db", false))
	bigint, err := paimontype.ParseType("BIGINT")
	require.NoError(t, err)
	require.NoError(t, ls.CreateTable(ctx, "db", "pk", paimontype.Schema{
		Columns: []paimontype.Column{{Name: "id", Type: bigint}}, PrimaryKeys: []string{"id"},
		Options: map[string]string{"bucket": "2", lakestream.OptionFreshness: "5 s"},
	}, false))
	require.NoError(t, ls.CreateTable(ctx, "db", "app", paimontype.Schema{Columns: []paimontype.Column{{Name: "id", Type: bigint}}}, false))
	tr := tiering.New(ls, tiering.Options{Interval: time.Minute})
	adm := admit.New(admit.Options{ShortSlots: 1, LongSlots: 1})
	c := New(Options{Lake: ls, Admission: adm, Freshness: tr.Freshness, Version: "test", Started: time.Now().Add(-time.Minute),
		MemoryLimit: 1 << 30, Cluster: lakestream.Alone("grpc://127.0.0.1:1", time.Now())})
	p := serve(t, c)

	for path, want := range map[string]string{"/ui/": "<title>flightd</title>", "/ui/app.js": "api/state", "/ui/style.css": "font-variant-numeric"} {
		code, body, h := p.do("GET", path, "", nil)
		require.Equal(t, http.StatusOK, code, path)
		require.Contains(t, body, want, path)
		require.Contains(t, h.Get("Content-Security-Policy"), "default-src 'none'", path)
		require.Equal(t, "DENY", h.Get("X-Frame-Options"), path)
	}
	code, _, _ := p.do("POST", "/ui/", "", nil)
	require.Equal(t, http.StatusMethodNotAllowed, code)
	code, body, _ := p.do("GET", "/ui/api/nothing", "", nil)
	require.Equal(t, http.StatusNotFound, code)
	require.Contains(t, body, "api/state")

	st := p.state(nil)
	require.Equal(t, "test", st.Version)
	require.Empty(t, st.User, "an open page has no user")
	require.Positive(t, st.Memory.GoHeapBytes)
	require.Equal(t, int64(1<<30), st.Memory.LimitBytes)
	require.Len(t, st.Tables, 2)
	require.Equal(t, []string{"db.app", "db.pk"}, []string{st.Tables[0].Database + "." + st.Tables[0].Table, st.Tables[1].Database + "." + st.Tables[1].Table})
	require.Equal(t, 5.0, st.Tables[1].FreshnessSeconds)
	require.Equal(t, 60.0, st.Tables[0].FreshnessSeconds)
	require.Equal(t, []string{"id"}, st.Tables[1].PrimaryKey)
	require.Equal(t, 2, st.Tables[1].Buckets)
	require.Len(t, st.Nodes, 1)
	require.Equal(t, 2, st.Nodes[0].TablesOwned, "a server alone tiers every table with a log")

	rec := ids(0, 1000)
	_, err = ls.Write(ctx, "db", "app", rec)
	rec.Release()
	require.NoError(t, err)
	app := p.state(nil).Tables[0]
	require.Equal(t, int64(1000), app.Rows)
	require.Equal(t, int64(1000), app.LagRows)
	require.Zero(t, app.LakeRows)
	require.Zero(t, app.SnapshotID)
	require.GreaterOrEqual(t, app.LagSeconds, 0.0)

	_, err = tr.TierTable(ctx, "db", "app")
	require.NoError(t, err)
	app = p.state(nil).Tables[0]
	require.Equal(t, int64(1000), app.Rows, "the rows moved from the log into the lake")
	require.Equal(t, int64(1000), app.LakeRows)
	require.Zero(t, app.LagRows)
	require.Equal(t, int64(1), app.SnapshotID)
	require.Positive(t, app.SnapshotTime)
	require.Positive(t, app.SizeBytes)
	require.Positive(t, app.Files)
	require.Empty(t, app.Error)

	// A failing table, as the tiering service reports it.
	tbl, err := ls.Table(ctx, "db", "pk")
	require.NoError(t, err)
	retry := time.Now().Add(time.Minute).Truncate(time.Millisecond)
	ls.SetRoundStatus(lakestream.TableID(tbl), lakestream.RoundStatus{FailedRounds: 3, LastError: "the disk is on fire", RetryAt: retry})
	bad := p.state(nil).Tables[1]
	require.Equal(t, int64(3), bad.FailedRounds)
	require.Equal(t, "the disk is on fire", bad.LastError)
	require.Equal(t, retry.UnixMilli(), bad.RetryAt)

	// One statement runs, one waits for the lane's only slot.
	run, _, err := adm.Admit(ctx, admit.Request{Lane: admit.Long, User: "ann", Client: "10.0.0.1:5", SQL: "SELECT 1", Kind: "query"})
	require.NoError(t, err)
	defer run.Done()
	queued := make(chan struct{})
	go func() {
		defer close(queued)
		s, _, err := adm.Admit(ctx, admit.Request{Lane: admit.Long, SQL: "SELECT 2", Kind: "query"})
		if err == nil {
			s.Done()
		}
	}()
	require.Eventually(t, func() bool { _, waiting := adm.Load(admit.Long); return waiting == 1 }, 10*time.Second, time.Millisecond)
	got := p.state(nil)
	require.Equal(t, Load{Running: 1, Queued: 1}, got.Load)
	require.Len(t, got.Statements, 2)
	require.Equal(t, Statement{ID: run.ID(), User: "ann", Client: "10.0.0.1:5", Lane: "long", Kind: "query", State: "running",
		Queued: got.Statements[0].Queued, Started: got.Statements[0].Started, SQL: "SELECT 1"}, got.Statements[0])
	require.Equal(t, "queued", got.Statements[1].State)
	require.Zero(t, got.Statements[1].Started)
	run.Done()
	<-queued
}

// The page asks for the Flight port's user name and password (HTTP Basic),
// or takes its token, and refuses anything else before it reads anything.
func TestPageNeedsTheFlightPortsCredentials(t *testing.T) {
	auth, err := flightsql.NewPasswordAuth("alice", "pa:ss", bytes.Repeat([]byte{7}, 32))
	require.NoError(t, err)
	var logs logBuffer
	c := New(Options{Lake: newService(t, t.TempDir()), Auth: auth, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	p := serve(t, c)
	basic := func(u, pw string) map[string]string {
		r, _ := http.NewRequest("GET", "/", nil)
		r.SetBasicAuth(u, pw)
		return map[string]string{"Authorization": r.Header.Get("Authorization")}
	}
	token, err := auth.Validate("alice", "pa:ss")
	require.NoError(t, err)

	for _, tc := range []struct {
		name   string
		header map[string]string
		want   string
	}{
		{"none", nil, "needs the user name and password"},
		{"wrong password", basic("alice", "nope"), "wrong user name or password"},
		{"wrong user", basic("mallory", "pa:ss"), "wrong user name or password"},
		{"forged token", map[string]string{"Authorization": "Bearer YWxpY2U.AAAA"}, "invalid or revoked token"},
	} {
		for _, path := range []string{"/ui/", "/ui/app.js", "/ui/api/state"} {
			code, body, h := p.do("GET", path, "", tc.header)
			require.Equal(t, http.StatusUnauthorized, code, "%s %s", tc.name, path)
			require.Contains(t, body, tc.want, "%s %s", tc.name, path)
			require.Equal(t, `Basic realm="flightd", charset="UTF-8"`, h.Get("WWW-Authenticate"))
		}
		code, _, _ := p.do("POST", "/ui/api/cancel", `{"id":1}`, map[string]string{"Content-Type": "application/json", "Authorization": tc.header["Authorization"]})
		require.Equal(t, http.StatusUnauthorized, code, tc.name)
	}
	require.Contains(t, logs.String(), "user=mallory", "a wrong password is logged")

	require.Equal(t, "alice", p.state(basic("alice", "pa:ss")).User)
	require.Equal(t, "alice", p.state(map[string]string{"Authorization": "Bearer " + token}).User)
}

// A cancel ends the statement with admission's cause, as CALL sys.cancel
// does, and is logged with who asked; a cross-origin request, a form post,
// a bad body and an unknown id cancel nothing.
func TestCancelFromThePage(t *testing.T) {
	auth, err := flightsql.NewPasswordAuth("alice", "secret", bytes.Repeat([]byte{9}, 32))
	require.NoError(t, err)
	adm := admit.New(admit.Options{})
	var logs logBuffer
	p := serve(t, New(Options{Admission: adm, Auth: auth, Logger: slog.New(slog.NewTextHandler(&logs, nil))}))
	st, sctx, err := adm.Admit(context.Background(), admit.Request{Lane: admit.Long, User: "bob", Client: "10.1.1.1:7", SQL: "SELECT slow()", Kind: "query"})
	require.NoError(t, err)
	defer st.Done()
	r, _ := http.NewRequest("GET", "/", nil)
	r.SetBasicAuth("alice", "secret")
	creds := r.Header.Get("Authorization")
	post := func(body string, header map[string]string) (int, string) {
		h := map[string]string{"Content-Type": "application/json", "Authorization": creds}
		for k, v := range header {
			h[k] = v
		}
		code, b, _ := p.do("POST", "/ui/api/cancel", body, h)
		return code, b
	}
	id := `{"id":` + jsonInt(st.ID()) + `}`

	for _, tc := range []struct {
		name   string
		body   string
		header map[string]string
		code   int
	}{
		{"another site (Sec-Fetch-Site)", id, map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"another site (Origin)", id, map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"a form", "id=" + jsonInt(st.ID()), map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, http.StatusUnsupportedMediaType},
		{"text", id, map[string]string{"Content-Type": "text/plain"}, http.StatusUnsupportedMediaType},
		{"no id", `{}`, nil, http.StatusBadRequest},
		{"not JSON", `{"id":`, nil, http.StatusBadRequest},
		{"not a number", `{"id":"1"}`, nil, http.StatusBadRequest},
		{"unknown statement", `{"id":999}`, nil, http.StatusNotFound},
		{"too long", `{"id":1,"x":"` + strings.Repeat("x", maxCancelBody) + `"}`, nil, http.StatusBadRequest},
	} {
		code, body := post(tc.body, tc.header)
		require.Equal(t, tc.code, code, "%s: %s", tc.name, body)
		require.NoError(t, sctx.Err(), "%s cancelled the statement", tc.name)
	}
	require.Len(t, adm.Statements(), 1)

	code, body := post(id, map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": p.srv.URL})
	require.Equal(t, http.StatusOK, code, body)
	<-sctx.Done()
	require.ErrorIs(t, context.Cause(sctx), admit.ErrCancelled)
	line := logs.String()
	for _, want := range []string{"statement cancelled from the operator's page", "id=" + jsonInt(st.ID()), "by=alice", "statement_user=bob", "client=10.1.1.1:7", `sql="SELECT slow()"`} {
		require.Contains(t, line, want)
	}
}

func jsonInt(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// nodes is a cluster of fixed nodes, this one "b" (what lakestream.Cluster
// adapts package cluster's membership to).
type nodes struct{ ready error }

func (nodes) Self() string { return "b" }
func (nodes) Nodes() []lakestream.NodeInfo {
	t := time.UnixMilli(1_700_000_000_000)
	return []lakestream.NodeInfo{{ID: "a", Address: "grpc://a:1", Started: t, LastHeartbeat: t.Add(time.Second)}, {ID: "b", Address: "grpc://b:1", Started: t}}
}
func (nodes) Owner(string) (string, bool) { return "a", true }
func (n nodes) Ready() error              { return n.ready }

// A node of several lists the nodes, the tables each tiers, and its own
// readiness; a table shows its owner.
func TestNodesOfACluster(t *testing.T) {
	ctx := context.Background()
	ls := newService(t, t.TempDir())
	require.NoError(t, ls.CreateDatabase(ctx, "db", false))
	bigint, err := paimontype.ParseType("BIGINT")
	require.NoError(t, err)
	require.NoError(t, ls.CreateTable(ctx, "db", "t", paimontype.Schema{Columns: []paimontype.Column{{Name: "id", Type: bigint}}}, false))
	p := serve(t, New(Options{Lake: ls, Cluster: nodes{ready: context.DeadlineExceeded}}))
	st := p.state(nil)
	require.Equal(t, "b", st.Node)
	require.Equal(t, []Node{
		{ID: "a", Address: "grpc://a:1", Started: 1_700_000_000_000, LastHeartbeat: 1_700_000_001_000, TablesOwned: 1},
		{ID: "b", Address: "grpc://b:1", Started: 1_700_000_000_000, Self: true, LastError: context.DeadlineExceeded.Error()},
	}, st.Nodes)
	require.Equal(t, "a", st.Tables[0].Owner)
}
