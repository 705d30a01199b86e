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
//     the segment file (fdatasync) and Badger's memtable WAL (msync) are synced, and
//     only then are the entries visible. The directories the store creates (its
//     directory and missing parents, before Badger opens it, and segments/) are synced
//     into their parents when created, a new segment file into segments/ before
//     anything is written to it; Badger syncs its directory after creating its own files
//     (memtable WAL, value log, tables, MANIFEST). Not covered by a power-cut test:
//     Badger's files cannot be put on an in-memory file system (they are memory-mapped),
//     so the store's tests check its own calls (every created name's directory and every
//     segment write synced before an Append is acknowledged) and SIGKILL recovery.
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
// to Options.MaxGroupBytes) and writes them as one segment write and one Badger
// transaction, so they share the syncs. If the group exceeds Badger's per-transaction
// limit (about 15% of MemTableSize, counting keys and values below ValueThreshold in
// full and larger values as pointers of at most 45 bytes) it is split between Append calls, never
// inside one, and the transactions are sent together. One Append that alone exceeds the
// limit fails with ErrAppendTooLarge. A failed commit makes the store refuse appends
// until reopened (see Append), unless the disk was full before Badger saw the group.
//
// # Badger layout
//
// Keys:
//
//	format key  := 0x00 "logstore.format"                      value: 0x02 (0x01 before segments)
//	entry key   := 0x01 | uvarint(len(table)) | table | bucket (uint32 BE) | base offset (uint64 BE)
//	meta key    := 0x02 | uvarint(len(table)) | table | bucket (uint32 BE)
//	segment key := 0x03 | segment id (uint64 BE) | uvarint(len(table)) | table | bucket (uint32 BE)
//
// The keys of one bucket share a prefix and sort by base offset. The length prefix
// keeps one table's key range apart from every other table's. (A negative bucket
// number sorts after the positive ones; nothing depends on bucket order.)
//
// Values (record.go; decoders reject an unknown version, short input and bytes left
// over with a *CorruptionError naming the key):
//
//	entry value   := 0x01 (version) | rows (uvarint) | len(payload) (uvarint) | payload
//	               | 0x02 (version) | rows (uvarint) | segment id (uvarint) | offset (uvarint)
//	                 | length (uvarint) | crc32c of the record (uint32 BE)
//	meta value    := 0x01 (version) | log start offset (uvarint)
//	segment value := end (uvarint): the exclusive end offset of the bucket's last entry in
//	                 the segment
//
// # Segment files
//
// An entry whose 0x01 value would be at least Options.ValueThreshold bytes (default
// 64 KiB) is written as that value (the record) to a segment file, segments/<id>.seg
// beside Badger's files, and Badger holds a 0x02 value pointing at it; smaller entries
// stay in Badger's LSM tree. The committer appends a group's records to the newest
// segment with write(2) and fdatasync, then commits the group's Badger transaction,
// whose first writes are the segment records of the buckets it touched: a crash can
// leave records or segment bytes nothing points at, never an entry without its
// segment record. A new segment starts at Options.SegmentSize (128 MiB) and on every
// Open; a new file's directory is synced before anything points into it. Reads use
// pread and check the crc32c.
//
// Why not Badger's value log: Badger writes it through a shared memory mapping of a new
// sparse file. On the virtual machines this was measured on, the page faults of such a
// mapping (the kernel zeroing each page before the copy) cost 0.9-3 s of kernel time per
// GiB against 0.3 s for write(2): a quarter of the server's CPU at 0.5 M rows/s of
// ingest, and the log's append p99 (1 MB entries, one writer: 25 ms with the value log,
// 1.8 ms with segments; BenchmarkAppend).
//
// Stores written before segment files (format 0x01, large values in Badger's value log)
// open as they are, keep their values readable, and are marked 0x02.
//
// # Space
//
// Truncate and DropTable delete entries; CollectGarbage then deletes the sealed
// segments whose buckets all have their log start at or above the segment's end (or
// no longer exist), and lets Badger rewrite value-log files that are mostly garbage.
// Open deletes segments without records (left by a crash). Options.DiskBudget bounds
// the directory: appends past it fail with ErrDiskBudget. What to truncate is
// the caller's policy (package tiering applies the log retention).
//
// A segment create, write or fdatasync that fails with ENOSPC or EDQUOT fails the
// group, and the appends queued behind it, with ErrDiskFull (which matches
// ErrDiskBudget): nothing of them was written, their offsets are reused, reads go on,
// and appends succeed again once space is freed, into a new segment file. Badger's own
// files are written through memory mappings: a full disk there can fault the process
// rather than fail a write. So appends that would leave the file system less than
// Options.MinFree (DefaultMinFree, more than a memtable) fail with ErrDiskFull before
// the disk is full, and succeed again once space returns; DiskBudget bounds the
// directory itself.
//
// # Not done yet
//
// Metrics.
package logstore
