// Package lake reads and writes Apache Paimon tables on a filesystem warehouse, byte-compatibly with
// Java Paimon (docs/format/paimon.md lists the format rules it follows, with their upstream sources).
//
// What the package promises:
//
//   - Catalog layout is Paimon's filesystem catalog: <warehouse>/<db>.db/<table>/ with schema/schema-N
//     (version 3 JSON, Jackson pretty-printed, key order as Java), snapshot/snapshot-N (+ LATEST hint),
//     manifest/ (Avro OCF, zstandard codec, _VERSION 2, Java's inlined record names; the byte
//     formats are package lake/manifest's) and
//     [k=v/]bucket-N/data-<uuid>-<n>.parquet data files.
//   - Schema and snapshot files are published atomically; schema-N and snapshot-N are created
//     exclusively (temp file + fsync + link(2)), so a snapshot is either fully visible or absent.
//     A commit fences on CommitOptions.ExpectedLatest and fails with ErrCommitConflict otherwise.
//   - Several processes may serve one warehouse (flightd nodes, Java Paimon): the catalog
//     caches nothing, and a Table, one schema of one table as read, can tell what another
//     process did to its table since: Table.CheckSchema reads schema-N (compared with the
//     bytes the Table was opened from) and tests whether schema-(N+1) exists, at once (one
//     round trip on S3), and says SchemaCurrent, SchemaNewer (ALTER) or SchemaReplaced
//     (dropped, renamed, or dropped and created again, also when the new table reached the
//     same schema id). LatestSnapshot checks its remembered snapshot at every call (see S3
//     below), so another process's commit is read by the next call. For reads,
//     RecentSnapshot and CheckSchemaRecent may answer from what the catalog knows: the
//     snapshots this process committed, and, with Catalog.RefreshEvery(d) (flightd: 1 s on
//     S3), what a background check found less than 2d ago; another process's commit or
//     schema is then used within 2d, and a read makes no request to learn them (fresh.go).
//     Decoded manifests and Parquet footers are cached by path: their names are unique and
//     the files never change; so are blocks of data files in an object store
//     (DataCacheBytes), so a repeated point lookup on S3 reads nothing.
//   - Power loss loses no acknowledged commit and corrupts none (local warehouse): data files are
//     fsynced when closed, manifests, lists, schema and snapshot files before they are linked;
//     a new directory is synced into its parent when it is created; before snapshot-N is linked
//     the bucket directories of its new data files and the manifest directory are synced (once
//     each), and the snapshot directory right after, before the commit returns. CreateTable and
//     AlterTable sync the schema directory, DropTable/DropDatabase the parent, RenameTable both
//     parents (it renames the table directory in one step, never over an existing name, and is
//     refused on S3, which cannot); expiration syncs
//     the snapshot directory after deleting snapshots and before deleting the files only they
//     named. LATEST and EARLIEST are hints and are not synced. On S3 a completed PUT is durable.
//   - Buckets, partition BinaryRows, keys and stats use Java's BinaryRow bytes and Murmur3 hash
//     (package lake/manifest).
//   - Primary-key writes produce level-0 files: rows sorted by the trimmed key (nulls first, strings as
//     unsigned bytes), one row per key (highest sequence number), _KEY_ columns, _SEQUENCE_NUMBER,
//     _VALUE_KIND, exact _MIN_KEY/_MAX_KEY and _DELETE_ROW_COUNT. Sequence numbers given by the caller
//     are kept when they are above the bucket's current maximum, else shifted above it.
//     A write larger than memory is an external sort (Write.Flush, sortedrun.go): each flush sorts
//     every bucket's rows into a run in the background; runs whose keys follow the previous ones are
//     written straight into the bucket's data file (rows loaded in key order are encoded once, as
//     they arrive), the others are spilled to scratch files (Arrow IPC, outside the warehouse) that
//     Commit merges, a batch per run at a time, into a second level-0 file of the bucket (one commit
//     may add several sorted runs to a bucket's level 0, as Java's writer does when its buffer
//     fills; readers order versions by sequence number). Files are written a row group at a time.
//   - Scans merge primary-key buckets (highest sequence wins, -U/-D dropped) and concatenate append
//     files. A bucket is merged as a stream: its sorted runs (each level-0 file, each level above
//     0) are read a row group at a time, so a scan holds about a row group per run, not the
//     bucket. A bucket whose files hold disjoint key ranges is not merged: its files are read
//     one by one in key order, dropping -U/-D rows. Files and merged buckets are decoded by a
//     pool of workers (ScanTuning.Workers, default GOMAXPROCS capped at the CPU count) with a
//     bounded number of batches waiting; output order is deterministic (buckets in partition
//     then bucket order, key order within a merged or disjoint bucket, other files in manifest
//     order) unless ScanTuning.Unordered. Decoded Parquet footers of data files are cached by
//     path (FooterCacheBytes). ScanOptions project columns (only those are read from Parquet)
//     and prune with a conjunctive filter (evaluated by package lake/expr): partitions by their values, buckets when every bucket-key column is
//     fixed by = or IN, and files by key statistics (primary-key tables: every version of a key
//     shares its key, so skipping by key never resurrects an older version) or value statistics
//     (append tables), and row groups by their Parquet statistics alike. Value statistics of
//     primary-key files are never used: skipping the file with a key's newest version would
//     expose an older one. Statistics of a file written under an older schema prune through
//     field ids: a column prunes only when it has the same id, name and type (nullability
//     aside) in the file's schema; a renamed, added, re-added or retyped column keeps the file.
//     A primary-key scan with predicates on key columns decodes a row group's key columns
//     first and returns only the rows whose key can match (lookup.go): a row group without
//     such a key costs its key columns only (not with deletion vectors, which need positions).
//     Primary-key files are written with 64 KiB data pages and Parquet's page index (column
//     and offset index), so that such a scan decodes only the key column's candidate pages
//     (integer keys) and, for up to 8 runs of matching rows, only the pages that hold them.
//   - Statistics follow Paimon's modes (statsmode.go): metadata.stats-mode (default truncate(16)) and
//     fields.<name>.stats-mode for value statistics, truncate(128) (or fields._KEY_<name>.stats-mode)
//     for key statistics, full partition statistics in manifest lists; none columns are left out of
//     _VALUE_STATS_COLS; BINARY/VARBINARY keep null counts only. A truncated max is rounded up to stay
//     an upper bound (or both bounds are dropped), so pruning never skips a matching row. Manifests
//     decode whatever lengths Java writes, bounded by the file and block that hold them (package
//     lake/manifest); a file that does not decode is reported with manifest.ErrCorrupt.
//   - Schema evolution: a data file written under an older schema (its _SCHEMA_ID, schema/schema-N)
//     is read with the table's schema by field id, as Java does: a renamed column keeps its data, a
//     column added later (or dropped and re-added under the same name, a new id) reads as null for
//     older files, a changed type is cast (INT to BIGINT, FLOAT to DOUBLE, ...; a value that does not
//     fit is an error), and fields of nested ROWs are matched by id too.
//   - ARRAY, MAP, MULTISET and ROW columns read at any depth, with null values, null elements and
//     null fields (Parquet LIST/MAP/group as Java writes them).
//   - Deletion vectors ('deletion-vectors.enabled' = 'true') are read: a scan reads the snapshot's
//     index manifest and drops the row positions each data file's vector deletes (32-bit
//     BitmapDeletionVector and 64-bit Bitmap64DeletionVector; checksums, cardinalities and
//     positions are checked). Primary-key tables read as Java's batch scan: level-0 files are not
//     visible (Java compacts them into deletion vectors), a bucket without delete rows is read
//     without merging, any other bucket is merged with the vectors applied; append tables apply
//     the vectors to every file. Such tables are read-only for flightd: Write and Compact fail
//     with ErrUnsupported, and AlterTableOptions refuses to switch deletion vectors on or off
//     unless deletion-vectors.modifiable = true (as Java).
//
// Maintenance (flightd commits a snapshot per table every ~30 s; without these, reads slow down
// without bound):
//
//   - Manifest merging happens in every commit (Write.Commit and Compact), as Java's
//     ManifestFileMerger: the new base list is the previous snapshot's manifests with runs of
//     small manifests merged once they reach manifest.target-file-size (8 MiB) or, at the end of
//     the list, manifest.merge-min-count (30) manifests; ADD and DELETE of the same file cancel.
//     When the manifests after the leading large, DELETE-free ones reach
//     manifest.full-compaction-threshold-size (16 MiB) they are all rewritten to live ADDs only.
//     A snapshot's data files are never changed by merging; the base list stays below
//     merge-min-count manifests while they are small.
//   - Table.Compact fully compacts primary-key buckets that hold at least MinFiles (5) files: one
//     sorted unique-key file per bucket at level num-levels-1 (5), _FILE_SOURCE COMPACT,
//     _DELETE_ROW_COUNT 0, -U/-D rows dropped, sequence-number range of the inputs kept (later
//     writes still win), committed as one COMPACT snapshot (DELETE entries identical to the ADDs,
//     deltaRecordCount = added - deleted rows) fenced on ExpectedLatest. It carries the latest
//     snapshot's properties forward unless given others. A bucket is merged in memory, one at a
//     time, into a single output file (no rolling at target-file-size). Not promised: append
//     tables (Compact returns nil, nil), merge engines other than deduplicate (error), deletion
//     vectors (ErrUnsupported), changelog files, partial (leveled/universal) compaction.
//   - Table.CompactAppend compacts append tables as Paimon's append compaction: per (partition,
//     bucket), the files below 70% of target-file-size (256 MiB) are rewritten in sequence order
//     into files of about target-file-size once there are compaction.min.file-num (5) of them
//     (or MinFiles); outputs are level 0, _FILE_SOURCE COMPACT, current schema, the inputs'
//     sequence-number range, committed as one COMPACT snapshot (deltaRecordCount 0) fenced on
//     ExpectedLatest with the latest snapshot's properties carried forward. Files of the
//     current schema written alike, of 16K rows or more in row groups of 16K or more (but
//     the last), are joined byte for byte (row groups copied, page indexes and bloom filters
//     dropped, statistics merged); the others are decoded, the inputs of one output file in
//     memory together, and re-encoded. Tables with deletion vectors or row tracking are
//     refused.
//   - Table.ExpireSnapshots removes a prefix of the history by Paimon's rules
//     (snapshot.num-retained.min/max, snapshot.time-retained; Java consumers' nextSnapshot and
//     ExpireOptions.Protect stop it), deletes snapshot files oldest first, writes EARLIEST, then
//     deletes the data files, manifests and lists that no retained snapshot or tag needs (computed
//     from the retained snapshots' merged manifests). A crash part way leaves only orphans.
//     Table.Snapshot of an expired id returns an error matching fs.ErrNotExist, and a Scan of an
//     expired *Snapshot fails the same way: pin snapshots in use with Protect. With Java branches
//     no data file is deleted.
//   - Table.RemoveOrphanFiles deletes unreferenced data, manifest, index and temporary files
//     older than a threshold (default one day, longer than any commit); FileInfo.ModTime comes
//     from the listing (mtime locally, LastModified on S3). Tables with branches are refused.
//   - None of these take a lock: Compact is fenced like a commit; ExpireSnapshots and
//     RemoveOrphanFiles may run concurrently with commits, reads and each other. Protect only
//     knows the caller's pins, so expiration must run from the one place (per table) that knows
//     every snapshot in use; a reader elsewhere must tolerate fs.ErrNotExist and re-plan on the
//     latest snapshot.
//
// Types (typematrix_test.go writes every type and precision with edge values, scans, compacts and
// has pypaimon read them): the Arrow type of each Paimon type is paimontype.DataType.ArrowType, and Parquet
// columns are laid out as Java's ParquetSchemaConverter: TIMESTAMP/TIMESTAMP_LTZ(0..3) INT64 millis,
// (4..6) INT64 micros, (7..9) INT96; DECIMAL p<=9 INT32, p<=18 INT64, else FIXED_LEN_BYTE_ARRAY of
// Java's minimum length; TIME(p) INT32 milliseconds of the day for every p, so TIME(p>3) holds
// milliseconds only (Arrow time32[ms]; a writer must drop sub-millisecond digits, as Paimon does).
// Differences that Paimon readers ignore: INT/BIGINT carry an INT(32/64) annotation and TIME
// isAdjustedToUTC=false (pqarrow's). TIMESTAMP(7..9) values are Arrow nanoseconds, so only
// 1677-09-21..2262-04-11 can be read or written; top-level INT96 columns are decoded here, so
// Java's encoding of times before 1970 (negative nanoseconds of the day) reads as Java reads it.
// Partition directories match Java's for every atomic type (TestPartitionPathsAsJava).
//
// Limitations (current): deduplicate merge engine only, deletion-vector tables read-only, no
// dynamic-bucket HASH index (a PK table with bucket = -1 writes everything to bucket 0), Parquet only,
// and rows of a Write are buffered in memory until Commit or Flush. All file access goes through a
// fileio.FileIO (package fileio states what one promises): fileio.Local (a directory) or the
// S3 FileIO of package fileio/s3 (an S3 bucket).
//
// Paths stay inside the warehouse:
//
//   - The catalog confines its FileIO to the warehouse (fileio.Rooted, Catalog.FileIO) so that
//     every read, create and delete is checked in one place: the lake's paths are
//     warehouse-relative ("db.db/t/..."), and a path that after cleaning (filepath.Clean
//     locally, key normalisation on S3, s3:// URLs included) is not the warehouse or below it,
//     or that holds a NUL byte, fails with fileio.ErrInvalidPath before the FileIO sees it. So
//     do Java external paths (_EXTERNAL_PATH) outside the warehouse. RemoveAll of the
//     warehouse itself is refused.
//   - On a local warehouse that check of the text is not the only one: the catalog's
//     fileio.Local opens, creates, links, renames, lists, syncs and removes through an os.Root
//     of the warehouse directory, so every path is resolved on the file system component by
//     component from the directory's descriptor. A symbolic link inside the warehouse that
//     points outside (relative or absolute), "..", or a directory swapped for such a link
//     while in use cannot lead outside: the access fails with fileio.ErrInvalidPath, naming
//     the warehouse-relative path. Relative links that stay inside the warehouse are followed
//     (an absolute link is refused, wherever it points); removing or replacing a link
//     removes or replaces the link, never what it points to. The warehouse directory itself
//     is found by its path at every access. (A fileio.Local carrying a file system of its
//     own, as in the power-cut tests, and other FileIO implementations passed to
//     OpenCatalogFileIO get the check of the text only.)
//   - Database and table names are one path element: CreateDatabase and CreateTable refuse
//     (ErrInvalidName) empty names, '.', '..', names starting with '.', holding '/', '\', a
//     control character (NUL included) or invalid UTF-8, longer than 252 bytes, and, as Java
//     Paimon, the database "sys" and table names with '$'. Partition values are escaped as Java's
//     PartitionPathUtils.escapePathName does (control characters, NUL included, DEL and
//     "#%'*/:=?\{}[]^ as %XX), so a value is always one path element.
//   - Table options that name files (CheckPathOptions, at CreateTable and AlterTableOptions;
//     data-file.prefix again at every write) fail with ErrInvalidOption: data-file.prefix and
//     changelog-file.prefix must be plain file-name prefixes, branch and scan.fallback-branch
//     plain names, and path, data-file.path-directory, data-file.external-paths and
//     global-index.external-path cannot be set.
//   - Errors name paths relative to the warehouse ("db.db/t/snapshot/snapshot-3"), never the
//     server's directory or the s3://bucket/prefix: the FileIO wrapper rewrites the errors of
//     the underlying FileIO, of opened files and of files being written.
//
// S3 (OpenCatalogFileIO with the S3 FileIO of package fileio/s3 and "/prefix"; flightd opens
// s3://bucket/prefix so):
//
//   - Same layout as on disk: object keys are <prefix>/<db>.db/<table>/..., so Java Paimon, pypaimon
//     or paimon-rust read the warehouse at s3://bucket/prefix. Directories are key prefixes;
//     CreateDatabase writes a zero-byte "<prefix>/<db>.db/" marker object (as Hadoop S3A does) so
//     that an empty database exists. Table.Path is a FileIO path ("/<prefix>/..."); the lake's
//     internal paths are relative to the warehouse; Catalog.Warehouse returns the s3:// URL;
//     the S3 FileIO's errors name s3://bucket/key (the catalog's FileIO shows the key relative to
//     the warehouse), and a missing object matches fs.ErrNotExist.
//   - snapshot-N, schema-N and manifests are created with a conditional PutObject
//     (If-None-Match: *): the server publishes the object only if the key does not exist, so of
//     two committers racing for snapshot-N exactly one wins and the other gets ErrCommitConflict.
//     This fences every writer that uses conditional writes (all flightd processes, whatever
//     machine they run on); it does not fence a writer that checks-then-writes (Java Paimon's
//     S3 FileIO without a catalog lock), so such writers must not commit to the same table
//     concurrently. Servers: AWS S3 (conditional writes since 2024-08) and Versity S3 Gateway
//     (v1.8.0 tested, PutObject and CompleteMultipartUpload). A server that answers 501 fails the
//     commit with an error naming s3.Options.DisableConditionalWrites, which switches to
//     HEAD-then-PUT: safe only with one writer per table.
//   - LATEST is replaced with one PutObject (readers see the old or the new hint; it is only a
//     hint). Data files are streamed: one PutObject below s3.Options.PartSize (8 MiB), else a
//     multipart upload that becomes visible only on Close and is aborted on error; a process
//     killed mid-upload leaves an incomplete multipart upload (add a bucket lifecycle rule
//     AbortIncompleteMultipartUpload). Parquet is read with one HEAD plus ranged GETs.
//   - Consistency assumed: strong read-after-write for PUT, DELETE, HEAD and LIST (AWS S3 since
//     2020-12, Versity's posix backend). The latest snapshot is LATEST if HEAD finds no
//     snapshot-(LATEST+1), else the max of a LIST of snapshot/. A Table remembers the latest
//     snapshot it found with its file's version (ETag and size; locally size, mtime and inode) and
//     keeps it while a HEAD finds the same version and no snapshot-(id+1): two HEADs at once
//     per LatestSnapshot, and a replaced, rolled back or expired snapshot file is noticed.
//     A snapshot this process commits is remembered by the commit, and with RefreshEvery the
//     checks of the tables being read run in the background, once a second, not per query.
//   - Credentials, endpoint and region come from s3.Options, then $AWS_ENDPOINT_URL(_S3),
//     $AWS_REGION, $AWS_ACCESS_KEY_ID/$AWS_SECRET_ACCESS_KEY, then the SDK's default chain.
//     Path-style addressing is the default when an endpoint is set.
package lake
