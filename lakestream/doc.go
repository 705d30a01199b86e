// Package lakestream is the table service that flightd's SQL engine and
// Flight SQL server talk to. It joins the lake catalog (package lake) and the
// streaming log (package logstore):
//
//   - DDL creates and drops Paimon tables and their logs together. Tables
//     created here carry the options lakestream.enabled=true and
//     lakestream.table-id=<uuid>; the id names the table's log, so a dropped
//     and re-created table never sees its predecessor's records.
//   - Write validates an Arrow batch against the table (names, types castable
//     to the column types, primary-key columns not null, partition values
//     whose directory names fit a file system), splits it by
//     Paimon's bucket function and appends it to the log; it returns once the
//     records are durable. Every bucket's part of one batch commits atomically.
//   - Scan reads t (the newest lake snapshot) or t$rt (that snapshot plus the
//     un-tiered log, see package union). ScanWith's filter prunes lake files
//     and log buckets, and drops log rows whose primary key cannot match it
//     before the merge (every version of a key shares the key); other rows
//     are not filtered.
//   - Changelog reads the changes every retained write made to the table
//     (+I, -U/+U, -D, with the log offset, bucket and write time), from a
//     lake snapshot whose state is known (normally the log retention's
//     anchor) to the high watermarks. The before-images of keys the range
//     finds already in the lake come from one batched, pruned lookup in
//     that snapshot; nothing per key is kept on the write path.
//   - Stream reads t$rt (or t$changelog) unbounded: the current rows at one
//     cut, then every change as its write is acknowledged, per bucket in
//     log order, resumable from a _log_offset per bucket (stream.go).
//   - TravelCut resolves a time travel (snapshot id, tag, time) to the cut a
//     scan of t reads; the table options scan.snapshot-id, scan.tag-name
//     and scan.timestamp-millis make every read of t travel, as in Java.
//   - Meta serves Paimon's system tables: $snapshots, $schemas, $options,
//     $files, $manifests, $partitions, $buckets, $audit_log; t$ro is a scan
//     (ScanOptions.ReadOptimized).
//   - SetRealtime switches a table's log off (drain, then writes commit to
//     the lake directly) or on (a fresh log anchored at the current snapshot).
//   - sys.tiering rows come from Status: per bucket, how far the lake is
//     behind the log, and per table what the tiering service reported of
//     its rounds (SetRoundStatus: consecutive failures, the newest error,
//     the next attempt); StatusIn adds the node that tiers each table
//     (the column owner) as a Cluster says.
//   - sys.nodes rows come from Nodes: the nodes a Cluster lists (a
//     node's cluster membership, adapted; Alone for a node by itself),
//     with the lake-stream tables each owns (TablesOwned).
//
// Changes by other processes (other flightd nodes serving the warehouse,
// Java Paimon): a table's metadata is cached, and every statement and
// tiering round first checks that it is still the table of that name at its
// latest schema (lake.Table.CheckSchema: a read of its schema file and an
// existence test of the next one, at once; one round trip on S3). So an
// ALTER (columns; options: the log switched off or on, which gives the
// table a new lakestream.table-id), a DROP, a RENAME, or a DROP and CREATE
// of the same name committed elsewhere is used by the next statement, with
// the table's current id and so its current log; a name that is gone is
// ErrTableNotFound. A statement's planning checks a table once (Planning),
// its scans and writes once more; snapshots are checked by every scan.
// On a warehouse whose catalog refreshes in the background
// (lake.Catalog.RefreshEvery; flightd on S3, every second) reads (scans of
// t and t$rt, metadata tables, time travel, planning) take the latest
// snapshot from what the catalog knows: this node's own commits at once,
// another process's within two intervals. A node alone (not
// Options.OtherNodes) takes the schema so too; in a cluster reads check it at
// every statement, so DDL on one node is used by the next statement on
// any other. A warm read then makes no request to the store to learn a
// table's latest snapshot (nor, alone, its schema). Writes, DDL, tiering,
// changelogs and streams check at once, so a write never goes to the log
// of a table another process dropped. A t$rt read on a snapshot up to two
// seconds old is still a consistent cut: the log keeps the rows above its
// offsets for the log retention after they are tiered. Log
// entries cached under a table id this process no longer reads under the
// name are dropped. Log entries record
// the schema they were written under (logcodec version 3), and rows of an
// older schema are read, tiered and listed in the changelog under the
// current one, matched by field id: added columns null, renamed columns
// keeping their values, widened types cast, dropped columns dropped
// (evolve.go). A mismatch that cannot be evolved (a value that does not fit
// a changed type) is an error wrapping ErrSchemaMismatch; a scan planned
// against a schema that changed before it started (ScanOptions.Expect)
// fails with ErrSchemaChanged.
//
// The log offsets that a lake snapshot holds are recorded in the snapshot's
// properties under OffsetsProperty (see offsets.go for the format).
//
// Decoded log entries of the un-tiered delta are cached (filled on write,
// dropped once tiered, bounded by Options.LogCacheBytes, small entries by a
// budget of their own), so t$rt reads and tiering rounds do not read and
// decode the log again. A read joins consecutive small cached entries into
// one and caches that in their place, so a table of single-row writes is
// merged as a few batches, not one per write; an entry holding more rows
// than the ones after it is not joined again, so a read after every write
// copies O(log n) rows per write on average, not the whole log.
//
// Every read pins the lake snapshot it uses (a scan until its reader is
// released), and expiration in this process (BeginExpire, from package
// tiering) keeps the oldest pinned snapshot and everything newer. A read
// chooses its snapshot and pins it in one step that an expiration's
// decision never straddles (see pins.go): a read either pinned before the
// decision or chose at least the latest snapshot the expiration had read,
// which it keeps. A read of an older snapshot that a running expiration may
// delete is refused as a read of an expired one is (fs.ErrNotExist).
package lakestream
