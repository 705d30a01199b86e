// Package lake reads and writes Apache Paimon tables on a filesystem warehouse, byte-compatibly with
// Java Paimon (see /work/shared/reference/paimon-format.md for the format and its sources).
//
// What the package promises:
//
//   - Catalog layout is Paimon's filesystem catalog: <warehouse>/<db>.db/<table>/ with schema/schema-N
//     (version 3 JSON, Jackson pretty-printed, key order as Java), snapshot/snapshot-N (+ LATEST hint),
//     manifest/ (Avro OCF, zstandard codec, _VERSION 2, Java's inlined record names) and
//     [k=v/]bucket-N/data-<uuid>-<n>.parquet data files.
//   - Schema and snapshot files are published atomically; schema-N and snapshot-N are created
//     exclusively (temp file + fsync + link(2)), so a snapshot is either fully visible or absent.
//     A commit fences on CommitOptions.ExpectedLatest and fails with ErrCommitConflict otherwise.
//   - Buckets, partition BinaryRows, keys and stats use Java's BinaryRow bytes and Murmur3 hash.
//   - Primary-key writes produce level-0 files: rows sorted by the trimmed key (nulls first, strings as
//     unsigned bytes), one row per key (highest sequence number), _KEY_ columns, _SEQUENCE_NUMBER,
//     _VALUE_KIND, exact _MIN_KEY/_MAX_KEY and _DELETE_ROW_COUNT. Sequence numbers given by the caller
//     are kept when they are above the bucket's current maximum, else shifted above it.
//   - Scans merge primary-key buckets (highest sequence wins, -U/-D dropped) and concatenate append
//     files.
//
// Limitations (current): deduplicate merge engine only, no compaction, no deletion vectors, no
// dynamic-bucket HASH index (a PK table with bucket = -1 writes everything to bucket 0), Parquet only,
// TIMESTAMP(7..9) cannot be written, rows of a Write are buffered in memory until Commit, and File
// access is local (FileIO allows other stores). All file access goes through FileIO.
package lake
