// Package logstore is flightd's durable log: one append-only log per table bucket, kept
// in an embedded Badger database. Writes land here first and are readable as soon as
// Append returns; the tiering service later moves log ranges into lake snapshots and
// truncates what it moved. The package knows nothing of Arrow or Paimon: a value is an
// opaque payload carrying a row count.
//
// # Offsets and the high watermark
//
// Offsets count rows. An entry of n rows appended to a bucket whose next offset is h
// occupies [h, h+n), and the bucket's next offset becomes h+n. Entries of a bucket are
// contiguous: each starts where the previous ends. The high watermark (HW) of a bucket
// is the exclusive end of what is durable and visible.
//
// What the package promises:
//
//   - Atomic appends. Append writes all its entries, possibly to several buckets, in one
//     Badger transaction: after a crash all are there or none.
//   - Acknowledged means durable. With Options.SyncWrites, Append returns only after
//     Badger's value log and memtable WAL are synced (msync), and only then are the
//     entries visible.
//   - HWs advance in offset order. Offsets are assigned under a lock when an Append is
//     queued; one committer goroutine commits the queue in FIFO order and advances the
//     HWs after each commit. So the HW never exposes an entry before every earlier
//     entry of its bucket is durable, and never a part of an Append.
//   - Consistent cuts. HighWatermarks returns every bucket of a table under the lock the
//     committer uses to advance HWs: a multi-bucket Append is in all buckets or none.
//   - Reads see only durable entries: Read clamps its range to the HW and reads one
//     Badger snapshot; it checks that entries are contiguous and reports a gap below the
//     HW as corruption.
//   - Truncate(below) deletes whole entries that end at or below below, never one that
//     holds an offset >= below, and records the new log start so that the HW survives
//     even when every entry is deleted.
//   - Recovery. Open rebuilds each bucket's HW from its log start record and its last
//     entry (one reverse seek per bucket; it never scans a log).
//
// # Group commit
//
// Concurrent Append calls queue requests; the committer takes every queued request (up
// to Options.MaxGroupBytes) and writes them as one Badger transaction, so they share
// one value-log write and one fsync. If the group exceeds Badger's per-transaction
// limit (about 15% of MemTableSize, counting keys and values below ValueThreshold in
// full and larger values as 12-byte pointers) it is split between Append calls, never
// inside one, and the transactions are sent together. One Append that alone exceeds the
// limit fails with ErrAppendTooLarge. A failed commit makes the store refuse appends
// until reopened (see Append).
//
// # Badger layout
//
// Keys:
//
//	format key := 0x00 "logstore.format"                      value: 0x01
//	entry key  := 0x01 | uvarint(len(table)) | table | bucket (uint32 BE) | base offset (uint64 BE)
//	meta key   := 0x02 | uvarint(len(table)) | table | bucket (uint32 BE)
//
// The keys of one bucket share a prefix and sort by base offset. The length prefix
// keeps one table's key range apart from every other table's. (A negative bucket
// number sorts after the positive ones; nothing depends on bucket order.)
//
// Values (record.go; decoders reject an unknown version, short input and bytes left
// over with a *CorruptionError naming the key):
//
//	entry value := 0x01 (version) | rows (uvarint) | len(payload) (uvarint) | payload
//	meta value  := 0x01 (version) | log start offset (uvarint)
//
// Entry values of at least Options.ValueThreshold bytes (default 64 KiB) live in
// Badger's value log, smaller ones in the LSM tree.
//
// # Space
//
// Truncate and DropTable delete entries; CollectGarbage then lets Badger
// rewrite value-log files that are mostly garbage. Options.DiskBudget bounds
// the directory: appends past it fail with ErrDiskBudget. What to truncate is
// the caller's policy (package tiering applies the log retention).
//
// # Not done yet
//
// Metrics.
package logstore
