package metrics

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lake/paimontype"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/logstore"
	"github.com/flightd/flightd/tiering"
)

// value returns the value of the series name{database="db", table=table}
// (table "" for a series without labels), and whether it exists.
func value(t *testing.T, m *Metrics, name, table string) (float64, bool) {
	t.Helper()
	mfs, err := m.Registry().Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, s := range mf.GetMetric() {
			if table != "" && !hasLabels(s, "db", table) {
				continue
			}
			switch {
			case s.Counter != nil:
				return s.Counter.GetValue(), true
			case s.Gauge != nil:
				return s.Gauge.GetValue(), true
			case s.Histogram != nil:
				return float64(s.Histogram.GetSampleCount()), true
			}
		}
	}
	return 0, false
}

func hasLabels(s *dto.Metric, db, table string) bool {
	got := labels(s)
	return got["database"] == db && got["table"] == table
}

func labels(s *dto.Metric) map[string]string {
	got := map[string]string{}
	for _, l := range s.GetLabel() {
		got[l.GetName()] = l.GetValue()
	}
	return got
}

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

func TestMetricsFollowWritesAndRounds(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	ls := newService(t, dir)
	require.NoError(t, ls.CreateDatabase(ctx, "db", false))
	bigint, err := paimontype.ParseType("BIGINT")
	require.NoError(t, err)
	require.NoError(t, ls.CreateTable(ctx, "db", "t", paimontype.Schema{
		Columns:     []paimontype.Column{{Name: "id", Type: bigint}},
		PrimaryKeys: []string{"id"},
		Options:     map[string]string{"bucket": "2", lakestream.OptionFreshness: "5 s"},
	}, false))

	var m *Metrics
	tr := tiering.New(ls, tiering.Options{Interval: time.Minute, Observe: func(r tiering.Round) { m.ObserveRound(r) }})
	m = New(ls, Options{LogDir: filepath.Join(dir, "log"), DiskBudget: 1 << 30, Freshness: tr.Freshness, Version: "test"})

	b := array.NewInt64Builder(memory.DefaultAllocator)
	for i := int64(0); i < 10; i++ {
		b.Append(i)
	}
	col := b.NewArray()
	b.Release()
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{col}, 10)
	col.Release()
	_, err = ls.Write(ctx, "db", "t", rec)
	rec.Release()
	require.NoError(t, err)
	time.Sleep(20 * time.Millisecond)

	must := func(name, table string) float64 {
		t.Helper()
		v, ok := value(t, m, name, table)
		require.True(t, ok, "%s{table=%q} is missing", name, table)
		return v
	}
	require.Equal(t, 10.0, must("flightd_tiering_lag_rows", "t"))
	require.Equal(t, 10.0, must("flightd_log_rows_appended_total", "t"))
	require.Greater(t, must("flightd_tiering_lag_seconds", "t"), 0.01)
	require.Equal(t, 5.0, must("flightd_tiering_freshness_seconds", "t"))
	require.Positive(t, must("flightd_log_disk_used_bytes", ""))
	require.Equal(t, float64(1<<30), must("flightd_log_disk_budget_bytes", ""))
	require.Equal(t, 1.0, must("flightd_build_info", ""))
	require.Equal(t, 1.0, must("flightd_log_ready", ""))
	_, ok := value(t, m, "flightd_tiering_rounds_committed_total", "t")
	require.False(t, ok, "no round yet")

	_, err = tr.TierTable(ctx, "db", "t")
	require.NoError(t, err)
	require.Equal(t, 1.0, must("flightd_tiering_rounds_committed_total", "t"))
	require.Equal(t, 0.0, must("flightd_tiering_rounds_failed_total", "t"))
	require.Equal(t, 10.0, must("flightd_tiering_rows_total", "t"))
	require.Equal(t, 1.0, must("flightd_tiering_round_duration_seconds", "t"), "one observation")
	require.Equal(t, 0.0, must("flightd_tiering_lag_rows", "t"))
	require.Equal(t, 0.0, must("flightd_tiering_lag_seconds", "t"))
	require.Equal(t, 10.0, must("flightd_log_rows_appended_total", "t"), "tiering does not change what was appended")

	_, err = tr.TierTable(ctx, "db", "gone")
	require.Error(t, err)
	require.Equal(t, 1.0, must("flightd_tiering_rounds_failed_total", "gone"))

	// The HTTP handler serves the text format, Go and process metrics included.
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode)
	text := string(body)
	for _, want := range []string{`flightd_tiering_rounds_committed_total{database="db",table="t"} 1`, "go_goroutines ", "process_resident_memory_bytes "} {
		require.True(t, strings.Contains(text, want), "missing %q in\n%s", want, text)
	}
}

func TestBudgetAbsentWhenUnlimited(t *testing.T) {
	dir := t.TempDir()
	m := New(newService(t, dir), Options{LogDir: filepath.Join(dir, "log")})
	_, ok := value(t, m, "flightd_log_disk_budget_bytes", "")
	require.False(t, ok)
	_, ok = value(t, m, "flightd_log_disk_used_bytes", "")
	require.True(t, ok)
}

// Flight calls are timed by method and status code, unary and streaming,
// failed ones included.
func TestRPCDurationByMethodAndCode(t *testing.T) {
	m := New(newService(t, t.TempDir()), Options{})
	opts := m.ServerOptions()
	require.Len(t, opts, 2)

	// Run the interceptors as a server would, through a real server on loopback.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(srv, failingHealth{})
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer cc.Close()
	hc := healthpb.NewHealthClient(cc)
	for range 3 {
		_, err = hc.Check(context.Background(), &healthpb.HealthCheckRequest{})
		require.NoError(t, err)
	}
	w, err := hc.Watch(context.Background(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	_, err = w.Recv()
	require.Equal(t, codes.NotFound, status.Code(err))

	count := func(method, code string) uint64 {
		mfs, err := m.Registry().Gather()
		require.NoError(t, err)
		for _, mf := range mfs {
			if mf.GetName() != "flightd_rpc_duration_seconds" {
				continue
			}
			for _, s := range mf.GetMetric() {
				if got := labels(s); got["method"] == method && got["code"] == code {
					return s.Histogram.GetSampleCount()
				}
			}
		}
		return 0
	}
	require.Equal(t, uint64(3), count("Check", "OK"))
	require.Eventually(t, func() bool { return count("Watch", "NotFound") == 1 }, 5*time.Second, 10*time.Millisecond,
		"the stream is counted when its handler returns")
}

// failingHealth answers Check and fails Watch.
type failingHealth struct {
	healthpb.UnimplementedHealthServer
}

func (failingHealth) Check(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

func (failingHealth) Watch(*healthpb.HealthCheckRequest, grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	return status.Error(codes.NotFound, "no such service")
}

// TestFailingTableIsCounted: failed rounds count in
// flightd_tiering_rounds_failed_total, and
// flightd_tiering_consecutive_failed_rounds says how many failed in a row,
// back to 0 once a round succeeds.
func TestFailingTableIsCounted(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	ls := newService(t, dir)
	require.NoError(t, ls.CreateDatabase(ctx, "db", false))
	bigint, err := paimontype.ParseType("BIGINT")
	require.NoError(t, err)
	require.NoError(t, ls.CreateTable(ctx, "db", "t", paimontype.Schema{
		Columns: []paimontype.Column{{Name: "id", Type: bigint}}, PrimaryKeys: []string{"id"}, Options: map[string]string{"bucket": "1"},
	}, false))
	var m *Metrics
	tr := tiering.New(ls, tiering.Options{Observe: func(r tiering.Round) { m.ObserveRound(r) }})
	m = New(ls, Options{})

	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.Append(1)
	col := b.NewArray()
	b.Release()
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{col}, 1)
	col.Release()
	_, err = ls.Write(ctx, "db", "t", rec)
	rec.Release()
	require.NoError(t, err)

	// A plain file where the bucket's directory goes: the round cannot write.
	block := filepath.Join(dir, "warehouse", "db.db", "t", "bucket-0")
	require.NoError(t, os.WriteFile(block, nil, 0o644))
	for i := 1; i <= 3; i++ {
		_, err := tr.TierTable(ctx, "db", "t")
		require.Error(t, err)
		v, _ := value(t, m, "flightd_tiering_rounds_failed_total", "t")
		require.Equal(t, float64(i), v)
		v, _ = value(t, m, "flightd_tiering_consecutive_failed_rounds", "t")
		require.Equal(t, float64(i), v)
	}
	require.NoError(t, os.Remove(block))
	_, err = tr.TierTable(ctx, "db", "t")
	require.NoError(t, err)
	v, _ := value(t, m, "flightd_tiering_rounds_failed_total", "t")
	require.Equal(t, 3.0, v, "a total")
	v, ok := value(t, m, "flightd_tiering_consecutive_failed_rounds", "t")
	require.True(t, ok)
	require.Zero(t, v, "healthy again")
}

// notReady is a log that cannot serve (a Kafka log whose brokers were not
// reached since start).
type notReady struct{ *logstore.Store }

func (notReady) Ready() error { return logstore.ErrUnavailable }

func TestLogReadyIsZeroWhileTheLogCannotServe(t *testing.T) {
	dir := t.TempDir()
	cat, err := lake.OpenCatalog(filepath.Join(dir, "warehouse"))
	require.NoError(t, err)
	log, err := logstore.Open(filepath.Join(dir, "log"), logstore.DefaultOptions())
	require.NoError(t, err)
	defer log.Close()
	m := New(lakestream.New(cat, notReady{log}, lakestream.Options{}), Options{Version: "test"})
	v, ok := value(t, m, "flightd_log_ready", "")
	require.True(t, ok)
	require.Zero(t, v)
}

// ownerCluster is a lakestream.Cluster whose node self owns the tables
// mine lists (by table id).
type ownerCluster struct {
	self  string
	mine  map[string]bool
	ready error
}

func (c ownerCluster) Self() string                 { return c.self }
func (c ownerCluster) Nodes() []lakestream.NodeInfo { return []lakestream.NodeInfo{{ID: c.self}} }
func (c ownerCluster) Ready() error                 { return c.ready }
func (c ownerCluster) Owner(id string) (string, bool) {
	if c.mine[id] {
		return c.self, true
	}
	return "other", true
}

// TestNodeLabelAndClusterGauges: with Options.Node every series, Go's and
// the process's included, carries the label node; WatchCluster adds
// flightd_cluster_ready and flightd_cluster_tables_owned (the tables whose
// owner in sys.tiering is this node), which a node alone does not report.
func TestNodeLabelAndClusterGauges(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	ls := newService(t, dir)
	require.NoError(t, ls.CreateDatabase(ctx, "db", false))
	bigint, err := paimontype.ParseType("BIGINT")
	require.NoError(t, err)
	mine := map[string]bool{}
	for i, name := range []string{"a", "b", "c"} {
		require.NoError(t, ls.CreateTable(ctx, "db", name, paimontype.Schema{Columns: []paimontype.Column{{Name: "id", Type: bigint}}}, false))
		tb, err := ls.Table(ctx, "db", name)
		require.NoError(t, err)
		mine[lakestream.TableID(tb)] = i != 1
	}

	alone := New(ls, Options{Version: "test"})
	_, ok := value(t, alone, "flightd_cluster_ready", "")
	require.False(t, ok, "not on a node alone")
	mfs, err := alone.Registry().Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		for _, s := range mf.GetMetric() {
			require.NotContains(t, labels(s), "node", mf.GetName())
		}
	}

	m := New(ls, Options{Version: "test", Node: "n2"})
	m.WatchStatements(func() int { return 0 })
	c := ownerCluster{self: "n2", mine: mine}
	m.WatchCluster(c)
	require.Equal(t, 1.0, mustValue(t, m, "flightd_cluster_ready"))
	require.Equal(t, 2.0, mustValue(t, m, "flightd_cluster_tables_owned"))
	m.ObserveRound(tiering.Round{Database: "db", Table: "a"})
	mfs, err = m.Registry().Gather()
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, mf := range mfs {
		for _, s := range mf.GetMetric() {
			require.Equal(t, "n2", labels(s)["node"], "%s has no node label", mf.GetName())
			seen[mf.GetName()] = true
		}
	}
	for _, name := range []string{"flightd_build_info", "flightd_tiering_lag_rows", "flightd_tiering_rounds_failed_total", "flightd_statements_running", "go_goroutines", "process_resident_memory_bytes"} {
		require.True(t, seen[name], "%s is missing", name)
	}

	c.ready = errors.New("cut off")
	m.WatchCluster(c)
	require.Equal(t, 0.0, mustValue(t, m, "flightd_cluster_ready"))

	// The text format, through both handlers (--metrics-addr and --debug-addr).
	for range 2 {
		srv := httptest.NewServer(m.Handler())
		resp, err := srv.Client().Get(srv.URL)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		srv.Close()
		require.NoError(t, err)
		text := string(body)
		for _, want := range []string{`flightd_tiering_lag_rows{database="db",node="n2",table="a"} 0`, `flightd_cluster_tables_owned{node="n2"} 2`, `go_goroutines{node="n2"} `} {
			require.Contains(t, text, want)
		}
	}
}

func mustValue(t *testing.T, m *Metrics, name string) float64 {
	t.Helper()
	v, ok := value(t, m, name, "")
	require.True(t, ok, "%s is missing", name)
	return v
}
