package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof" // registers on http.DefaultServeMux, served only with --debug-addr
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/flightd/flightd/cluster"
	"github.com/flightd/flightd/console"
	"github.com/flightd/flightd/flightsql"
	"github.com/flightd/flightd/internal/admit"
	"github.com/flightd/flightd/internal/background"
	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lake/fileio"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/metrics"
	"github.com/flightd/flightd/perf"
	"github.com/flightd/flightd/query"
	"github.com/flightd/flightd/tiering"
)

func serve(args []string) error {
	cfg, err := parseServe(args)
	if err != nil {
		return err
	}
	lg := newLogger(cfg.LogLevel)
	lg.Info("config", "effective", cfg.String())
	cores, procs := schedule()
	lg.Info("scheduling", "background_workers", cores, "gomaxprocs", procs)

	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	octx, cancel := context.WithTimeout(context.Background(), time.Minute)
	cat, err := openWarehouse(octx, cfg.Warehouse, cfg.S3Options())
	cancel()
	if err != nil {
		return fmt.Errorf("open warehouse %s: %w", cfg.Warehouse, err)
	}
	if !fileio.IsLocal(cat.FileIO()) {
		// Reads learn the latest snapshot and schema of a table from this
		// node's commits and a check every second in the background, not
		// from a round trip to the store each (lake.Catalog.RefreshEvery).
		defer cat.RefreshEvery(metadataRefresh)()
	}
	if cfg.NodeID != "" {
		octx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := checkConditionalWrites(octx, cat.FileIO(), cfg.Warehouse, cfg.NodeID)
		cancel()
		if err != nil {
			return err
		}
	}
	logDir := filepath.Join(cfg.DataDir, "log")
	var ls *lakestream.Service // set below; the Kafka log names new topics through it
	octx, cancel = context.WithTimeout(context.Background(), time.Minute)
	log, err := openLog(octx, cfg, lg, func(id string) (string, string, int) {
		if ls == nil {
			return "", "", 0
		}
		return ls.TableOfLog(id)
	}, true)
	cancel()
	if err != nil {
		return err
	}
	defer func() {
		if err := log.Close(); err != nil {
			lg.Error("close log", "err", err)
		}
	}()
	ls = lakestream.New(cat, log, lakestream.Options{Logger: lg.With("component", "lakestream"), OtherNodes: cfg.NodeID != ""})
	octx, cancel = context.WithTimeout(context.Background(), 5*time.Minute)
	err = ls.CheckLog(octx, migrateHint(cfg))
	cancel()
	if err != nil {
		return err
	}
	var diskBudget int64
	if cfg.Log != "badger" {
		logDir = "" // the log's disk is the brokers'
	} else {
		diskBudget, _ = parseSize(cfg.LogDiskBudget) // validated
	}
	met := metrics.New(ls, metrics.Options{
		LogDir: logDir, DiskBudget: diskBudget, Version: version, Logger: lg.With("component", "metrics"), Node: cfg.NodeID,
		Freshness: func(t *lake.Table) time.Duration { d, _ := lakestream.Freshness(t, cfg.TieringInterval); return d },
	})
	member, err := joinCluster(cfg, lg, ls.OldestPins)
	if err != nil {
		return err
	}
	memLimit, memFrom, _ := cfg.memoryLimit() // validated
	// Primary-key rounds spill sorted runs here; a crash leaves them behind.
	spillDir := filepath.Join(cfg.DataDir, "tiering-tmp")
	if err := os.RemoveAll(spillDir); err != nil {
		return err
	}
	if err := os.MkdirAll(spillDir, 0o755); err != nil {
		return err
	}
	topts := tiering.Options{Interval: cfg.TieringInterval, MaxRowsPerRound: cfg.TieringRows, RoundMemory: tieringMemory(memLimit), SpillDir: spillDir,
		Retention: cfg.LogRetention, Observe: met.ObserveRound, Logger: lg.With("component", "tiering")}
	if member != nil {
		defer func() {
			if err := member.Close(); err != nil {
				lg.Warn("leave the cluster", "err", err)
			}
		}()
		topts.Owns = member.Owns
		topts.PinnedElsewhere = member.PinnedElsewhere
		met.WatchCluster(clusterView(&cfg, member))
	}
	tier := tiering.New(ls, topts)
	ceiling, _ := cfg.memoryCeiling() // validated
	budget := splitMemory(memLimit)
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(budget.goHeap)
	}
	// The data files' keys that t$rt reads drop log-replaced rows by: an
	// eighth of the Go heap, at most the default (80 MiB serve 10M rows).
	lake.KeyIndexCacheBytes = min(lake.KeyIndexCacheBytes, budget.goHeap/8)
	adm := admit.New(admit.Options{ShortSlots: cfg.MaxConcurrentQueries, LongSlots: cfg.MaxConcurrentQueries, MaxQueued: cfg.MaxQueued, QueueTimeout: cfg.QueueTimeout})
	eng, err := query.New(ls, query.Options{Logger: lg.With("component", "query"), Drain: tier.Drain, Maintenance: tier, MemoryLimit: duckDBSize(budget.duckDB), MemoryCeiling: ceiling, TempDir: filepath.Join(cfg.DataDir, "duckdb-tmp"), MaxTempBytes: cfg.Limits.spillBytes(), PartRows: cfg.MinEndpointRows,
		Admission: adm, IngestMemory: budget.ingest, IngestReserve: int64(cfg.messageBytes()), IngestWait: cfg.QueueTimeout,
		Cluster: clusterView(&cfg, member)})
	if err != nil {
		return err
	}
	defer eng.Close()
	srv, err := flightsql.New(eng, flightsql.Options{
		Name: "flightd", Version: version, Logger: lg.With("component", "flightsql"),
		QueryTimeout: cfg.QueryTimeout, MaxConcurrent: cfg.MaxConcurrentQueries, Admission: adm,
		MaxPrepared: cfg.MaxPrepared, PreparedTTL: cfg.PreparedIdleTimeout, MaxEndpoints: cfg.MaxEndpoints, MaxStreams: cfg.MaxStreams,
		MaxBatchBytes:     cfg.resultBatchBytes(),
		MaxStatementBytes: cfg.statementBytes(), MaxParamBytes: int64(cfg.messageBytes()),
		Nodes: clusterNodes(member),
	})
	if err != nil {
		return err
	}
	defer srv.Close()
	met.WatchStatements(srv.Running)
	met.WatchQueued(srv.Queued)
	met.WatchStreams(srv.Streams)

	// The Flight port's authentication, which the operator's page shares.
	var auth *flightsql.PasswordAuth
	if cfg.AuthPassword != "" {
		secret, err := flightsql.LoadSecret(filepath.Join(cfg.DataDir, "auth.key"))
		if err != nil {
			return err
		}
		if auth, err = flightsql.NewPasswordAuth(cfg.AuthUser, cfg.AuthPassword, secret); err != nil {
			return err
		}
	}
	uiOpts := console.Options{
		Lake: ls, Admission: adm, Cluster: clusterView(&cfg, member), Streams: srv.Streams,
		Freshness: func(t *lake.Table) time.Duration { d, _ := lakestream.Freshness(t, cfg.TieringInterval); return d },
		Version:   version, Started: processStarted, MemoryLimit: memLimit, MemoryCeiling: ceiling,
		Logger: lg.With("component", "console"),
	}
	if auth != nil {
		uiOpts.Auth = auth
	}
	stopHTTP, err := serveHTTP(cfg, met, console.New(uiOpts).Handler(), lg)
	if err != nil {
		return err
	}
	defer stopHTTP()

	tcp, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	lis := newConnTracker(tcp)
	// Timing outermost, so a call that panicked (or was refused for its
	// credentials) is counted with the code it is answered with.
	gopts := append(met.ServerOptions(), flightsql.GRPCOptions(lg.With("component", "grpc"))...)
	// One message is one ingest batch: an ingest stream holds at most a
	// few of them, within the ingest memory budget, and gRPC's
	// flow-control window, at once. The windows are fixed (gRPC's default
	// grows them to 16 MiB a stream by estimating the bandwidth-delay
	// product), so that a stream waiting for ingest memory holds at most
	// its window: a message being read is let in whole whatever the window.
	gopts = append(gopts, grpc.MaxRecvMsgSize(cfg.messageBytes()),
		grpc.InitialWindowSize(streamWindow), grpc.InitialConnWindowSize(connWindow),
		flightsql.StallGuard(cfg.StallTimeout))
	scheme := "grpc"
	if cfg.TLSCert != "" {
		creds, err := credentials.NewServerTLSFromFile(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return fmt.Errorf("--tls-cert %s / --tls-key %s: %w", cfg.TLSCert, cfg.TLSKey, err)
		}
		gopts = append(gopts, grpc.Creds(creds))
		scheme = "grpc+tls"
	}
	var mw []flight.ServerMiddleware
	if auth != nil {
		mw = append(mw, auth.Middleware())
		if cfg.TLSCert == "" {
			lg.Warn("authentication without TLS: passwords and tokens cross the network in the clear; set --tls-cert and --tls-key unless clients are on this host")
		}
	}
	for _, f := range cfg.Obsolete {
		lg.Warn("flag no longer used, ignored", "flag", f)
	}
	fs := flight.NewServerWithMiddleware(mw, gopts...)
	// Arrow's Flight benchmark protocol beside Flight SQL (package perf).
	fs.RegisterFlightService(perf.Wrap(srv.FlightServer(), memory.DefaultAllocator))
	fs.InitListener(lis)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tier.Run(ctx)
	}()

	serveErr := make(chan error, 1)
	go func() { serveErr <- fs.Serve() }()
	// This line is printed whatever the log level: scripts and tests wait for it.
	slog.New(slog.NewTextHandler(os.Stderr, nil)).Info("flightd listening", "addr", lis.Addr().String(), "uri", scheme+"://"+lis.Addr().String(), "auth", cfg.AuthPassword != "", "data_dir", cfg.DataDir, "warehouse", cfg.Warehouse,
		"memory_limit", fmt.Sprintf("%dMiB", memLimit>>20), "memory_ceiling", fmt.Sprintf("%dMiB", ceiling>>20), "memory_limit_from", cmp.Or(memFrom, "--memory-limit"), "query_timeout", cfg.QueryTimeout, "max_concurrent_queries", cfg.MaxConcurrentQueries,
		"duckdb_memory", fmt.Sprintf("%dMiB", budget.duckDB>>20), "ingest_memory", fmt.Sprintf("%dMiB", budget.ingest>>20))

	select {
	case <-ctx.Done():
		lg.Info("shutting down", "grace", cfg.ShutdownGrace)
	case err := <-serveErr:
		stop()
		wg.Wait()
		if err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			return fmt.Errorf("serve: %w", err)
		}
		return nil
	}
	// The process exits within the grace period whatever is running:
	// running calls get most of it, then their connections are closed
	// (which cancels them: DuckDB is interrupted through their contexts),
	// and the rest is for closing the engine and the log. Whatever still
	// runs at the end of it is cut off by exiting; the log recovers from
	// that as from a crash.
	grace := cfg.ShutdownGrace
	time.AfterFunc(grace, func() {
		lg.Error("shutdown did not finish within its grace period; exiting", "grace", grace)
		os.Exit(1)
	})
	done := make(chan struct{})
	go func() { fs.Shutdown(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace - shutdownReserve(grace)):
		lg.Warn("calls still running near the end of the grace period; closing their connections", "grace", grace)
		lis.closeAll()
		select {
		case <-done:
		case <-time.After(shutdownReserve(grace) / 2):
		}
	}
	wg.Wait()
	lg.Info("stopped")
	return nil
}

// joinCluster makes the server a member of its cluster (--node-id), in
// the background if the brokers cannot be reached now (see clusterNode),
// or returns nil when it runs alone.
func joinCluster(cfg Config, lg *slog.Logger, pins func() map[string]int64) (*clusterNode, error) {
	if cfg.NodeID == "" {
		return nil, nil
	}
	o, err := cfg.kafkaOptions(lg)
	if err != nil {
		return nil, err
	}
	var kopts []kgo.Opt
	if o.TLS != nil {
		kopts = append(kopts, kgo.DialTLSConfig(o.TLS))
	}
	if o.SASL != nil {
		kopts = append(kopts, kgo.SASL(o.SASL))
	}
	clg := lg.With("component", "cluster")
	opts := cluster.Options{
		Brokers: o.Brokers, KafkaOpts: kopts, Prefix: cfg.KafkaTopicPrefix, NodeID: cfg.NodeID,
		Advertise: cfg.advertise(&cfg), SessionTimeout: cfg.SessionTimeout, Replication: int16(cfg.KafkaReplication),
		Pins: pins, Logf: func(format string, args ...any) { clg.Info(fmt.Sprintf(format, args...)) },
	}
	lg.Info("joining the cluster", "node", cfg.NodeID, "advertise", opts.Advertise, "session_timeout", cfg.SessionTimeout)
	return startClusterNode(cfg.NodeID, clg, func(ctx context.Context) (*cluster.Member, error) {
		// A join waits up to about a session timeout for a crashed node's
		// membership to expire.
		ctx, cancel := context.WithTimeout(ctx, max(cfg.KafkaTimeout, 2*cfg.SessionTimeout))
		defer cancel()
		m, err := cluster.Join(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("join the cluster as node %s: %w", cfg.NodeID, err)
		}
		return m, nil
	}), nil
}

// clusterNodes lists the cluster's nodes for the locations of a result's
// endpoints (flightsql.Options.Nodes); nil when the server runs alone.
func clusterNodes(m *clusterNode) func() []flightsql.Node {
	if m == nil {
		return nil
	}
	return func() []flightsql.Node {
		var out []flightsql.Node
		for _, n := range m.Nodes() {
			out = append(out, flightsql.Node{URI: n.Address, Self: n.ID == m.ID(), Heartbeat: n.LastHeartbeat})
		}
		return out
	}
}

// The receive flow-control windows of gRPC (see serve).
const (
	streamWindow = 4 << 20
	connWindow   = 8 << 20
)

// memorySplit is how --memory-limit is shared.
type memorySplit struct {
	duckDB int64 // DuckDB's memory_limit: its operators spill past it
	ingest int64 // ingest batches in flight across all streams (query.Options.IngestMemory)
	goHeap int64 // Go's soft memory limit (GOMEMLIMIT)
}

// splitMemory shares the server's memory budget: half for DuckDB's
// operators, a quarter for ingest batches in flight; Go's heap (ingest,
// scans, results on their way, gRPC) is held to the whole budget by its
// garbage collector, which returns freed memory to the system as it nears
// it. What DuckDB and Go hold together stays near the budget; the margin
// is DuckDB's results built whole and allocator slack, which the memory
// ceiling (--memory-ceiling) guards.
func splitMemory(limit int64) memorySplit {
	return memorySplit{duckDB: max(limit/2, minMemoryLimit), ingest: limit / 4, goHeap: limit}
}

// tieringMemory is the log rows a tiering round holds before it encodes
// or spills them: tiering's default, less under a small memory budget (an
// eighth of it).
func tieringMemory(limit int64) int64 { return min(tiering.DefaultRoundMemory, limit/8) }

// shutdownReserve is the part of the grace period kept for closing the
// engine and the log after running calls are cut off.
func shutdownReserve(grace time.Duration) time.Duration { return min(grace/4, 2*time.Second) }

// connTracker is a listener that can close every connection it accepted:
// the hard stop after a graceful one ran out of time.
type connTracker struct {
	net.Listener
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

func newConnTracker(l net.Listener) *connTracker {
	return &connTracker{Listener: l, conns: map[net.Conn]struct{}{}}
}

func (l *connTracker) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		_ = c.Close()
		return nil, net.ErrClosed
	}
	tc := &trackedConn{Conn: c, l: l}
	l.conns[tc] = struct{}{}
	return tc, nil
}

// closeAll closes every connection and refuses new ones.
func (l *connTracker) closeAll() {
	l.mu.Lock()
	l.closed = true
	conns := l.conns
	l.conns = map[net.Conn]struct{}{}
	l.mu.Unlock()
	_ = l.Listener.Close()
	for c := range conns {
		_ = c.(*trackedConn).Conn.Close()
	}
}

type trackedConn struct {
	net.Conn
	l *connTracker
}

func (c *trackedConn) Close() error {
	c.l.mu.Lock()
	delete(c.l.conns, c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// serveHTTP serves /metrics and the operator's page (/ui/, package
// console) on --metrics-addr, and Go's /debug/pprof plus the same on
// --debug-addr (one listener when both name the same address).
func serveHTTP(cfg Config, met *metrics.Metrics, ui http.Handler, lg *slog.Logger) (stop func(), err error) {
	var servers []*http.Server
	stop = func() {
		for _, s := range servers {
			_ = s.Close()
		}
	}
	listen := func(flag, addr string, mux *http.ServeMux, what string) error {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("listen on %s %s: %w", flag, addr, err)
		}
		s := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		servers = append(servers, s)
		go func() { _ = s.Serve(l) }()
		lg.Info(what, "addr", "http://"+l.Addr().String())
		lg.Info("operator's page", "addr", "http://"+l.Addr().String()+console.Prefix)
		return nil
	}
	common := func() *http.ServeMux {
		mux := http.NewServeMux()
		mux.Handle("/metrics", met.Handler())
		mux.Handle(console.Prefix, ui)
		mux.Handle("GET /{$}", http.RedirectHandler(console.Prefix, http.StatusFound))
		return mux
	}
	if cfg.DebugAddr != "" {
		mux := common()
		mux.Handle("/debug/pprof/", http.DefaultServeMux) // net/http/pprof registers there
		if err := listen("--debug-addr", cfg.DebugAddr, mux, "debug handlers (/debug/pprof/, /metrics)"); err != nil {
			return stop, err
		}
	}
	if cfg.MetricsAddr != "" && cfg.MetricsAddr != cfg.DebugAddr {
		if err := listen("--metrics-addr", cfg.MetricsAddr, common(), "metrics (/metrics)"); err != nil {
			stop()
			return func() {}, err
		}
	}
	return stop, nil
}

func newLogger(level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
}

// schedule sizes the Go scheduler for latency under load (see package
// internal/background): background work (Parquet encoding, compaction)
// runs on at most one thread per core, at lower priority, and there are
// twice as many Ps as cores, so that a query finds a free P at once while
// every core encodes. GOMAXPROCS set in the environment is left alone.
func schedule() (workers, procs int) {
	cores := runtime.GOMAXPROCS(0) // the cores this process may use (cgroup aware)
	background.SetWorkers(cores)
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(2 * cores)
	}
	return cores, runtime.GOMAXPROCS(0)
}
