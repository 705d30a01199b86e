package metrics

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/logstore"
	"github.com/flightd/flightd/tiering"
)

// Options say where the metrics come from.
type Options struct {
	// LogDir is the log's directory, measured on every scrape ("" = not reported).
	LogDir string
	// DiskBudget is the log's disk budget in bytes; 0 = unlimited (not reported).
	DiskBudget int64
	// Freshness returns a table's tiering interval (tiering.Service.Freshness);
	// nil = flightd_tiering_freshness_seconds is not reported.
	Freshness func(*lake.Table) time.Duration
	// Version is reported as flightd_build_info{version}.
	Version string
	// Node is the node id (--node-id) of a node that is one of several:
	// every series then carries the label node="<Node>", so that series
	// scraped from several nodes stay apart. "": no such label.
	Node string
	// ScrapeTimeout bounds reading the tiering status, and the tables' freshness, in one
	// scrape (default 10s).
	ScrapeTimeout time.Duration
	Logger        *slog.Logger
}

// Metrics holds flightd's registry. ObserveRound is safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry
	// regr registers into reg, adding the label node when Options.Node
	// is set: every collector is registered through it.
	regr          prometheus.Registerer
	status        *statusCollector
	lg            *slog.Logger
	committed     *prometheus.CounterVec
	failed        *prometheus.CounterVec
	rows          *prometheus.CounterVec
	compactions   *prometheus.CounterVec
	compactFailed *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	rpc           *prometheus.HistogramVec
}

var tableLabels = []string{"database", "table"}

// RoundDurationBuckets are the buckets of flightd_tiering_round_duration_seconds.
var RoundDurationBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}

// New returns the metrics of a server over ls.
func New(ls *lakestream.Service, opts Options) *Metrics {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ScrapeTimeout <= 0 {
		opts.ScrapeTimeout = 10 * time.Second
	}
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, tableLabels)
	}
	reg := prometheus.NewRegistry()
	var regr prometheus.Registerer = reg
	if opts.Node != "" {
		regr = prometheus.WrapRegistererWith(prometheus.Labels{"node": opts.Node}, reg)
	}
	m := &Metrics{
		reg:           reg,
		regr:          regr,
		status:        &statusCollector{ls: ls, opts: opts, lg: opts.Logger},
		lg:            opts.Logger,
		committed:     counter("flightd_tiering_rounds_committed_total", "Tiering rounds that committed a snapshot."),
		failed:        counter("flightd_tiering_rounds_failed_total", "Tiering rounds that failed (nothing was committed)."),
		rows:          counter("flightd_tiering_rows_total", "Log rows moved into the lake."),
		compactions:   counter("flightd_tiering_compactions_total", "COMPACT snapshots committed after tiering rounds."),
		compactFailed: counter("flightd_tiering_compactions_failed_total", "Compactions after tiering rounds that failed."),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "flightd_tiering_round_duration_seconds",
			Help:    "Duration of committed tiering rounds, compaction included.",
			Buckets: RoundDurationBuckets,
		}, tableLabels),
		rpc: newRPCDuration(),
	}
	m.regr.MustRegister(m.committed, m.failed, m.rows, m.compactions, m.compactFailed, m.duration, m.rpc,
		m.status,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "flightd_build_info", Help: "Always 1; the label says which flightd this is.",
			ConstLabels: prometheus.Labels{"version": opts.Version},
		}, func() float64 { return 1 }),
	)
	return m
}

// Registry returns the registry, to gather from (tests). A collector
// registered into it directly does not get the label node.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// WatchCluster reports, on every scrape, flightd_cluster_ready (1 while
// c.Ready() is nil: the node is a member of the cluster and owns its
// tables; 0 while not) and flightd_cluster_tables_owned (the lake-stream
// tables whose owner in sys.tiering is this node). Call it on a node that
// is one of several; neither is reported otherwise.
func (m *Metrics) WatchCluster(c lakestream.Cluster) {
	m.status.cluster.Store(&c)
}

// ObserveRound counts one tiering round; pass it as tiering.Options.Observe.
func (m *Metrics) ObserveRound(r tiering.Round) {
	l := []string{r.Database, r.Table}
	// Touch every counter of the table, so they are 0 (not absent) before
	// the first committed or failed round and increase() sees the first one.
	committed, failed, rows := m.committed.WithLabelValues(l...), m.failed.WithLabelValues(l...), m.rows.WithLabelValues(l...)
	compactions, compactFailed := m.compactions.WithLabelValues(l...), m.compactFailed.WithLabelValues(l...)
	switch {
	case r.Err != nil:
		failed.Inc()
	case r.Result.Snapshot > 0:
		committed.Inc()
		rows.Add(float64(r.Result.Rows))
		m.duration.WithLabelValues(l...).Observe(r.Duration.Seconds())
	}
	if r.Result.Compacted > 0 {
		compactions.Inc()
	}
	if r.CompactErr != nil {
		compactFailed.Inc()
	}
}

// WatchStatements reports running() as flightd_statements_running on every
// scrape: the statements preparing, running or streaming to a DoGet
// (flightsql.Server.Running).
func (m *Metrics) WatchStatements(running func() int) {
	m.regr.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "flightd_statements_running",
		Help: "Statements preparing, running or streaming to a DoGet (at most --max-concurrent-queries in each of the short and long lanes).",
	}, func() float64 { return float64(running()) }))
}

// WatchQueued reports queued() as flightd_statements_queued on every
// scrape: the statements waiting for a slot (flightsql.Server.Queued).
func (m *Metrics) WatchQueued(queued func() int) {
	m.regr.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "flightd_statements_queued",
		Help: "Statements waiting for a slot of their lane (at most --max-queued, plus DoGets of planned statements).",
	}, func() float64 { return float64(queued()) }))
}

// WatchStreams reports open() as flightd_streams_open on every scrape: the
// streaming reads open (flightsql.Server.Streams), which hold no statement
// slot and so are not in flightd_statements_running.
func (m *Metrics) WatchStreams(open func() int) {
	m.regr.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "flightd_streams_open",
		Help: "Streaming reads open (at most --max-streams); they run until their client cancels.",
	}, func() float64 { return float64(open()) }))
}

// Handler serves the registry in Prometheus' exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog:            errorLog{m.lg},
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 4,
		Registry:            m.regr, // promhttp_metric_handler_errors_total
	})
}

type errorLog struct{ lg *slog.Logger }

func (e errorLog) Println(v ...any) { e.lg.Warn("metrics", "err", fmt.Sprint(v...)) }

var (
	descLagSeconds = prometheus.NewDesc("flightd_tiering_lag_seconds",
		"Age of the oldest log record of the table that is not in the lake (largest over buckets; 0: none).", tableLabels, nil)
	descLagRows = prometheus.NewDesc("flightd_tiering_lag_rows",
		"Log rows of the table not yet in the lake.", tableLabels, nil)
	descAppended = prometheus.NewDesc("flightd_log_rows_appended_total",
		"Rows ever appended to the table's log (the sum of its buckets' high watermarks).", tableLabels, nil)
	descFailing = prometheus.NewDesc("flightd_tiering_consecutive_failed_rounds",
		"Tiering rounds of the table that failed since the last one that succeeded (sys.tiering failed_rounds; 0: healthy).", tableLabels, nil)
	descFreshness = prometheus.NewDesc("flightd_tiering_freshness_seconds",
		"The table's tiering interval (option lakestream.freshness, else --tiering-interval).", tableLabels, nil)
	descDiskUsed = prometheus.NewDesc("flightd_log_disk_used_bytes",
		"Disk space the log's directory occupies (allocated blocks).", nil, nil)
	descDiskBudget = prometheus.NewDesc("flightd_log_disk_budget_bytes",
		"The log's disk budget (--log-disk-budget); absent when unlimited.", nil, nil)
	descClusterReady = prometheus.NewDesc("flightd_cluster_ready",
		"1 while this node is a member of the cluster and owns its tables (sys.nodes ready); 0 while it is not (joining, cut off from Kafka, fenced). Only on a node started with --node-id.", nil, nil)
	descTablesOwned = prometheus.NewDesc("flightd_cluster_tables_owned",
		"Lake-stream tables this node tiers: those whose owner in sys.tiering is this node (sys.nodes tables_owned). Only on a node started with --node-id.", nil, nil)
	descLogReady = prometheus.NewDesc("flightd_log_ready",
		"1 when the log serves reads and writes; 0 while it cannot (the Kafka log: brokers not reached since start, or another server took it over). The label names the log.", []string{"log"}, nil)
)

// statusCollector computes the lag metrics on every scrape from
// lakestream.Service.Status, the rows of sys.tiering.
type statusCollector struct {
	ls   *lakestream.Service
	opts Options
	lg   *slog.Logger
	// cluster is set by WatchCluster: sys.tiering is then read with its
	// owners, and the cluster gauges reported.
	cluster atomic.Pointer[lakestream.Cluster]
}

func (c *statusCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLagSeconds, descLagRows, descAppended, descFailing, descFreshness, descDiskUsed, descDiskBudget, descLogReady, descClusterReady, descTablesOwned} {
		ch <- d
	}
}

// tableStatus is sys.tiering summed up over one table's buckets.
type tableStatus struct {
	db, name        string
	lagRows, logEnd int64
	lagSeconds      float64 // the largest known over the buckets
	lagSecondsKnown bool
	failedRounds    int64 // the table's, on each of its rows
	owner           string
}

func (c *statusCollector) Collect(ch chan<- prometheus.Metric) {
	if c.opts.LogDir != "" {
		ch <- prometheus.MustNewConstMetric(descDiskUsed, prometheus.GaugeValue, float64(logstore.DirSize(c.opts.LogDir)))
	}
	if c.opts.DiskBudget > 0 {
		ch <- prometheus.MustNewConstMetric(descDiskBudget, prometheus.GaugeValue, float64(c.opts.DiskBudget))
	}
	ready := 1.0
	if c.ls.Log().Ready() != nil {
		ready = 0
	}
	ch <- prometheus.MustNewConstMetric(descLogReady, prometheus.GaugeValue, ready, c.ls.Log().Describe().ID)
	var cl lakestream.Cluster
	if p := c.cluster.Load(); p != nil {
		cl = *p
		ready := 1.0
		if cl.Ready() != nil {
			ready = 0
		}
		ch <- prometheus.MustNewConstMetric(descClusterReady, prometheus.GaugeValue, ready)
	}
	// A Collector is given no context: the scrape's I/O is bounded here.
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.ScrapeTimeout)
	defer cancel()
	tables, err := c.status(ctx, cl)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(descLagRows, fmt.Errorf("read the tiering status (sys.tiering): %w", err))
		return
	}
	if cl != nil {
		owned := 0
		for _, ts := range tables {
			if ts.owner != "" && ts.owner == cl.Self() {
				owned++
			}
		}
		ch <- prometheus.MustNewConstMetric(descTablesOwned, prometheus.GaugeValue, float64(owned))
	}
	for _, ts := range tables {
		ch <- prometheus.MustNewConstMetric(descLagRows, prometheus.GaugeValue, float64(ts.lagRows), ts.db, ts.name)
		ch <- prometheus.MustNewConstMetric(descAppended, prometheus.CounterValue, float64(ts.logEnd), ts.db, ts.name)
		ch <- prometheus.MustNewConstMetric(descFailing, prometheus.GaugeValue, float64(ts.failedRounds), ts.db, ts.name)
		if ts.lagSecondsKnown {
			ch <- prometheus.MustNewConstMetric(descLagSeconds, prometheus.GaugeValue, ts.lagSeconds, ts.db, ts.name)
		}
		if c.opts.Freshness != nil {
			if t, err := c.ls.Table(ctx, ts.db, ts.name); err == nil {
				ch <- prometheus.MustNewConstMetric(descFreshness, prometheus.GaugeValue, c.opts.Freshness(t).Seconds(), ts.db, ts.name)
			}
		}
	}
}

// status reads sys.tiering (with the owners cl says; nil: none) and sums
// it up per table, in its order.
func (c *statusCollector) status(ctx context.Context, cl lakestream.Cluster) ([]*tableStatus, error) {
	r, err := c.ls.StatusIn(ctx, cl)
	if err != nil {
		return nil, err
	}
	defer r.Release()
	sc := r.Schema()
	idx := map[string]int{}
	for _, name := range []string{"database", "table", "lag_rows", "log_end", "lag_seconds", "failed_rounds", "owner"} {
		is := sc.FieldIndices(name)
		if len(is) != 1 {
			return nil, fmt.Errorf("sys.tiering has no column %q", name)
		}
		idx[name] = is[0]
	}
	var out []*tableStatus
	byName := map[[2]string]*tableStatus{}
	for r.Next() {
		rec := r.RecordBatch()
		dbs, ok1 := rec.Column(idx["database"]).(*array.String)
		names, ok2 := rec.Column(idx["table"]).(*array.String)
		lagRows, ok3 := rec.Column(idx["lag_rows"]).(*array.Int64)
		logEnd, ok4 := rec.Column(idx["log_end"]).(*array.Int64)
		lagSecs, ok5 := rec.Column(idx["lag_seconds"]).(*array.Float64)
		failed, ok6 := rec.Column(idx["failed_rounds"]).(*array.Int64)
		owners, ok7 := rec.Column(idx["owner"]).(*array.String)
		if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 || !ok7 {
			return nil, fmt.Errorf("sys.tiering columns have unexpected types: %s", sc)
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			k := [2]string{dbs.Value(i), names.Value(i)}
			ts := byName[k]
			if ts == nil {
				ts = &tableStatus{db: k[0], name: k[1]}
				if owners.IsValid(i) {
					ts.owner = owners.Value(i)
				}
				byName[k] = ts
				out = append(out, ts)
			}
			ts.lagRows += lagRows.Value(i)
			ts.failedRounds = max(ts.failedRounds, failed.Value(i))
			ts.logEnd += logEnd.Value(i)
			if lagSecs.IsValid(i) {
				ts.lagSeconds = max(ts.lagSeconds, lagSecs.Value(i))
				ts.lagSecondsKnown = true
			}
		}
	}
	return out, r.Err()
}
