// Package metrics exposes flightd's Prometheus metrics on a private
// registry (plus the Go runtime and process collectors), served by Handler
// in the text exposition format.
//
// What it promises:
//
//   - Lag is computed on every scrape from the same source as the system
//     table sys.tiering (lakestream.Service.Status), so it is never stale:
//     flightd_tiering_lag_seconds is the age of the oldest log record of a
//     table that is not in the lake (the largest over its buckets; 0 when
//     the lake holds everything), flightd_tiering_lag_rows the rows not yet
//     in the lake, summed over buckets. flightd_log_rows_appended_total is
//     the rows ever appended to a table's log (the sum of its buckets' high
//     watermarks: it survives restarts, and starts again when the log is
//     switched off and on or the table re-created).
//     flightd_tiering_freshness_seconds is the table's tiering interval.
//     flightd_tiering_consecutive_failed_rounds is sys.tiering's
//     failed_rounds: the table's rounds that failed since the last one that
//     succeeded (0: healthy; it falls back to 0 by itself when the cause
//     goes away and a round succeeds).
//   - flightd_log_disk_used_bytes measures the log's directory on every
//     scrape (allocated blocks, as the disk budget counts them);
//     flightd_log_disk_budget_bytes is the budget, absent when unlimited.
//   - Rounds are counted as the tiering service reports them (ObserveRound,
//     wired to tiering.Options.Observe): flightd_tiering_rounds_committed_total
//     and flightd_tiering_rounds_failed_total (a round with nothing to tier
//     is neither), flightd_tiering_rows_total (rows moved into the lake),
//     flightd_tiering_round_duration_seconds (committed rounds, their
//     compaction included), flightd_tiering_compactions_total and
//     flightd_tiering_compactions_failed_total. These counters start at zero
//     with the process.
//   - flightd_statements_running is the statements preparing, running or
//     streaming to a DoGet at the scrape (WatchStatements): it falls back
//     when a client cancels or goes away. Streaming reads hold no statement
//     slot: flightd_streams_open counts them (WatchStreams).
//   - flightd_rpc_duration_seconds times every Flight call on the server,
//     from its arrival to the handler's return, labelled method (the Flight
//     method: GetFlightInfo, DoGet, DoPut, DoAction, ...) and code (the gRPC
//     status it ended with, Internal for a call that panicked). It excludes
//     the network and the client: comparing it with what a client measures
//     tells the two apart. Wired by ServerOptions.
//   - On a node that is one of several (Options.Node, --node-id), every
//     series carries the label node, the node id: Go's and the process's
//     too, so that the series of the nodes stay apart wherever they are
//     aggregated (federation, remote write, a relabelled instance), and
//     sum by (node) works on any of them without a join; the node id is
//     also what sys.nodes and sys.tiering's owner name, and it stays the
//     same across restarts and moves, where the scrape address may not.
//     WatchCluster adds flightd_cluster_ready (1 while the node is a
//     member and owns its tables, 0 while not) and
//     flightd_cluster_tables_owned (the lake-stream tables whose owner in
//     sys.tiering is this node). A node alone reports neither, and no
//     node label.
//
// Every per-table metric carries the labels database and table. A scrape
// that cannot read the tiering status (a snapshot unreadable within
// Options.ScrapeTimeout) serves the other metrics, leaves the per-table
// gauges out and logs the error.
package metrics
