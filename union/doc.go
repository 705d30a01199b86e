// Package union implements the bounded read behind t$rt: the rows of a pinned
// lake snapshot merged with the log records that the tiering service had not
// committed when the read started.
//
// # The cut
//
// A read pins a lake snapshot S and then, per bucket b, the log's high
// watermark HW_b. S records, in its properties, the exclusive end offset O_b
// of every bucket range it holds. The log part of the read is [O_b, HW_b).
// There is no gap: every acknowledged record below HW_b is either below O_b
// (and so in S) or in the range. There is no duplicate: S holds exactly the
// records below O_b, and the range starts there. Pinning S before the
// high watermarks keeps this true while tiering commits concurrently: a later
// snapshot only moves O_b forward, and the log keeps every record at or
// above the newest committed offsets.
//
// # Semantics
//
// Append tables: lake rows, then log rows, concatenated.
//
// Primary-key tables: within the log, the newest record per key wins (log
// order is offset order; keys never span buckets). The key is the columns
// the caller names: lakestream passes the primary key plus any partition
// column it leaves out, because Paimon's files key on the primary key
// within a partition. A winning -U or -D record
// deletes the key. Lake rows whose key has any record in the log are replaced
// by the log's verdict. The newest version therefore comes from the log when
// the log has the key, and from the lake otherwise.
//
// Memory is bounded by the un-tiered delta (its key index), not by the table:
// lake batches stream through a key filter.
//
// # Changelog
//
// Changelog turns a range of log entries into the changes they made: per
// bucket in offset order, for each row given its key's state before it, an
// upsert (+I/+U) of an absent key gives +I(new), of a present key -U(old)
// and +U(new), both with the row's offset and next to each other; a delete
// (-U/-D) of a present key gives -D(old), the stored row; a delete of an
// absent key gives nothing. The state of a key before the range is its row
// in the lake snapshot the range starts at, offered by the caller through
// AddBefore (absent when not offered). Append tables: every row is +I.
// Memory: the range and the before-images (copied into one batch), and the
// per-key state (a slot per distinct key, 4 bytes a row).
//
// # Schemas
//
// Every batch, of the lake and of the log, must carry the read's schema
// (its column count and types): the caller evolves rows written under older
// schemas first (package lakestream). A batch that does not is an error
// naming the column, never a panic.
//
// # Ownership
//
// The readers returned here follow arrow's RecordReader rules: the current
// batch is valid until the next call to Next; a consumer that keeps it must
// Retain it. Constructors take ownership of the lake reader and the log
// batches passed to them and release them when the returned reader is
// released.
package union
