// Package tiering moves log records into Paimon snapshots, exactly once.
//
// A round for one table:
//
//  1. reads the newest snapshot S and the log offsets O it holds
//     (lakestream.LakeOffsets: the newest snapshot of ours at or before S);
//  2. freezes every bucket's high watermark HW;
//  3. reads [O_b, HW_b) per bucket (at most 64 times MaxRowsPerRound rows
//     per bucket, ending on an entry boundary), writes the rows as level-0
//     Parquet files with sequence number = log offset and row kind from the
//     log;
//  4. commits one snapshot whose lakestream.log-offsets property holds the new
//     end offsets, fenced on S: if another snapshot appeared since step 1 the
//     commit fails with nothing visible and the next round re-plans from the
//     new newest snapshot.
//
// Data files and offsets become visible in the same atomic snapshot
// creation, so a crash at any point either leaves the round invisible (its
// files are orphans, the range is tiered again) or fully committed (the
// next round starts after it). There is no gap because each round starts at
// the offsets of the newest committed snapshot, and no duplicate because a
// round commits only if that snapshot is still the newest.
//
// # Staging
//
// Between two rounds of an append table, every scheduler pass (about once
// a second) stages the next round: while the log holds MaxRowsPerRound rows
// past what was staged, it reads them into the round's lake write and
// encodes them into data files (lake.Write.Flush) on one background worker
// (on all of them while the log is another flush ahead). No rows wait in
// memory between passes, and a table that gets fewer rows per interval than
// that is not staged. Nor is a table whose log grew faster than
// Options.BurstRate (1M rows a second per background worker) since the
// pass before (a burst, such as a bulk load: staging could not keep up with it
// and would only take the cores its acknowledgements need); the first pass
// after the burst stages its rows. The round then
// reads and encodes only the rows of its last second, and commits the
// staged files with them in one snapshot. When staging has fallen behind
// the log (the machine cannot encode as fast as rows arrive), a round reads
// at most MaxRowsPerRound rows per bucket past what is staged and the
// table is due again at once, so the lake advances a flush at a time until
// the round has caught up: while the machine encodes slower than rows
// arrive, that is a snapshot per flush (about one a second at 1 M rows/s),
// each as fresh as encoding allows. So an interval's encoding is spread
// over the interval instead of being one burst on every core at its end, a
// round's memory stays at MaxRowsPerRound rows, and when staging keeps up
// the lake gets one snapshot per interval.
// Staged files are in no snapshot: they are removed when the round cannot
// use them (the table's schema changed, or a snapshot the staging did not
// plan on appeared, e.g. another committer's: the round then starts over
// from the log), before the daily orphan-file sweep and when Run ends; a
// crash leaves them to that sweep. Primary-key tables are not staged: each
// round's file per bucket is sorted by key over the whole round.
//
// # Memory of a primary-key round
//
// A primary-key round streams through bounded memory, whatever the size
// of the backlog: it reads the buckets in turns (a share of a flush of
// each), and every third of MaxRowsPerRound rows or of RoundMemory bytes
// it hands what it holds to a background job that sorts each bucket's
// rows into a sorted run (lake.Write.Flush) while the round reads on, at
// most a job per background worker. A run whose keys follow the bucket's
// previous runs (rows loaded in key order, such as a bulk load) is encoded
// into the bucket's data file at once, a row group at a time; a run that
// overlaps them is spilled to a scratch file under SpillDir, and the
// commit merges those runs, a batch of each at a time, into a second
// level-0 file of the bucket. A round spills at most maxRoundRuns runs,
// then commits and the next round, due at once, goes on. Sequence numbers
// stay the log offsets, so the newest version of a key wins across the
// files as within one. Measured on 2 cores (BenchmarkTierBurst, a 10 M-row
// burst into a 4-bucket primary-key table): peak RssAnon of the server
// ~1.0 GiB instead of ~2.0 GiB, in one round at the speed of the three
// rounds it took before.
//
// # Scheduling
//
// Run tiers each lake-stream table at its own interval: the table option
// lakestream.freshness (see lakestream.ParseFreshness), else
// Options.Interval. A round is due once that interval has passed since the
// table's last successful round; options changed by ALTER TABLE apply at
// the next pass (at most a second later). The first pass after start tiers
// every table; a table that appears later gets its first round one interval
// after it appeared. A capped round makes its table due again at once.
//
// A failed round (nothing was committed) backs its table off: the next
// attempt comes 100 ms later, each next one after twice the wait before,
// at most the table's interval; the first round that succeeds ends the
// backoff and the table is due one interval later again. Backoff is per
// table: another table's rounds come at their own times. A warning is
// logged once per backoff step (the wait grew), then, with the wait at the
// interval, on the 2^k-th consecutive failure only; sys.tiering shows the
// consecutive failed rounds (failed_rounds), the newest error
// (last_error) and the next attempt (retry_at) of every table, whoever
// ran the round (TierTable and Drain count too), and the metric
// flightd_tiering_rounds_failed_total counts them all. Rounds of different
// tables run one after the other, so one slow round delays the others.
// A failing append table is not staged between attempts (its next round
// reads the log again anyway). Options.Observe hears about every round
// (package metrics counts them). The scheduler runs on Options.Clock,
// which tests replace.
//
// # Maintenance
//
// After a round, primary-key buckets with CompactMinFiles or more files are
// compacted into one top-level file, and append-table buckets with that many
// small files into files of about 32 MiB (Paimon's append compaction with
// that target-file-size: it bounds the memory a compaction takes), a run of
// small files only once it fills such a file or the bucket holds twice
// CompactMinFiles small files, so a busy table's rows are rewritten once; either is
// a COMPACT snapshot that carries the round's offsets forward. Every CollectEvery, each table's log is
// truncated below the offsets of the newest snapshot older than Retention
// (the retention anchor), and snapshots expire as Paimon's rules say, except
// the anchor, the snapshot that records the offsets, the snapshots running
// reads of this process use (lakestream pins them), and everything newer.
// Files no snapshot references are removed daily once a day old.
//
// A round's Parquet encoding and the compaction after it run as background
// tasks (package internal/background): at most one per core, at lower
// priority, so that queries and ingest keep their latency while a round
// encodes.
package tiering
