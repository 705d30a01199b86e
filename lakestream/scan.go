package lakestream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/internal/arrowutil"
	"github.com/flightd/flightd/internal/logcodec"
	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lake/expr"
	"github.com/flightd/flightd/logstore"
	"github.com/flightd/flightd/union"
)

// ScanOptions narrow a scan.
type ScanOptions struct {
	// Realtime adds the log records not yet tiered into the snapshot (t$rt).
	Realtime bool
	// Columns is the projection, in output order; nil reads every column.
	Columns []string
	// Filter skips lake files, and log buckets, that cannot hold a row
	// matching it (see lake.ScanOptions), and log rows of primary-key
	// tables whose key cannot match it (lake.Table.KeyRows); other rows are
	// not filtered.
	Filter []expr.Predicate
	// Expect, when set, is the Arrow schema the caller planned with (from
	// ArrowSchema); if the table's schema is another by now (changed by
	// another engine in between), the scan fails with ErrSchemaChanged
	// instead of returning columns the caller does not expect.
	Expect *arrow.Schema
	// Unordered lets the lake's batches come out in the order the scan's
	// workers finish them instead of bucket by bucket (lake.ScanTuning):
	// for a reader that does not need the rows in order (SQL without ORDER
	// BY), it keeps both cores decoding. Each batch of a primary-key table
	// is still in key order, and the log's rows of t$rt still come last.
	Unordered bool
	// At, when set, reads that cut of the table (from Cut) instead of the
	// table as it is now: the parts of one result read the same rows.
	At *Cut
	// ReadOptimized reads the table as Paimon's t$ro does: a primary-key
	// table's top-level files only (lake.ScanOptions.TopLevel); not with
	// Realtime.
	ReadOptimized bool
	// KeepKinds reads a primary-key lake table with each key's newest
	// version and its row kind, retractions included, in a last column
	// _VALUE_KIND (lake.ScanOptions.KeepKinds); not with Realtime.
	KeepKinds bool
	// Split reads one part of the scan: the lake's (lake.Split) and, for
	// t$rt, the log buckets b with b % Count == Index. A primary-key
	// table's log bucket is its lake bucket, so a key's versions are all
	// in one part.
	Split lake.Split
}

// Cut is a point in a table's history that a scan can read again: a lake
// snapshot and, for t$rt, how far each log bucket went. Reading it later
// reads the same rows, as long as the snapshot is not expired and the log
// still holds the records (they stay --log-retention after tiering).
type Cut struct {
	Snapshot int64           // 0: the table had no snapshot
	Tag      string          // a Paimon tag, whose snapshot may have expired (TravelCut)
	Log      map[int32]int64 // t$rt: the high watermark of each log bucket; nil for t
	// Rows is how many rows a scan of the whole cut returns, -1 when
	// unknown (a primary-key table's versions merge). Size is the rows its
	// files and log range hold before any merge.
	Rows, Size int64
	// Buckets is a primary-key table's fixed bucket count (0 for an append
	// table): a part of a split holds whole buckets (lake.Split).
	Buckets int
}

// Cut returns db.name's cut as of now, for t or (realtime) t$rt. The cut's
// snapshot is not pinned: once it has expired, a scan of the cut fails
// with an error matching fs.ErrNotExist.
func (s *Service) Cut(ctx context.Context, db, name string, realtime bool) (Cut, error) {
	c, unpin, err := s.cut(ctx, db, name, realtime)
	if err != nil {
		return Cut{}, err
	}
	unpin()
	return c, nil
}

// cut is Cut with the cut's snapshot pinned until unpin is called.
func (s *Service) cut(ctx context.Context, db, name string, realtime bool) (c Cut, unpin func(), err error) {
	m, err := s.readTable(ctx, db, name)
	if err != nil {
		return Cut{}, nil, err
	}
	if realtime && !Realtime(m.table) {
		return Cut{}, nil, fmt.Errorf("%w: %s.%s%s needs %s=true", ErrNotRealtime, db, name, RealtimeSuffix, OptionEnabled)
	}
	if travel, err := s.optionTravel(ctx, m, db, name, realtime); err != nil {
		return Cut{}, nil, err
	} else if travel != nil {
		if len(m.pk) > 0 {
			travel.Rows, travel.Buckets = -1, m.table.Schema().NumBuckets()
		}
		return *travel, func() {}, nil
	}
	// The snapshot first, then the high watermarks, as a scan pins them.
	snap, unpin, err := s.pinSnapshotAt(ctx, m, db, name, nil)
	if err != nil {
		return Cut{}, nil, err
	}
	if snap != nil {
		c.Snapshot, c.Size = snap.ID, snap.TotalRecordCount
	}
	if realtime {
		offsets, err := LakeOffsets(ctx, m.table, snap)
		if err != nil {
			unpin()
			return Cut{}, nil, err
		}
		if err := s.logReady(ctx, m); err != nil {
			unpin()
			return Cut{}, nil, fmt.Errorf("lakestream: the un-tiered rows of %s.%s: %w", db, name, err)
		}
		c.Log = s.log.HighWatermarks(m.id)
		if err := s.logBehind(m, offsets, c.Log); err != nil {
			unpin()
			return Cut{}, nil, err
		}
		// Rows another node tiered leave the cache here (Tiered is
		// called on the node that tiered them).
		s.Tiered(m.id, offsets)
		for b, hw := range c.Log {
			if from := offsets.Of(b); hw > from {
				c.Size += hw - from
			}
		}
	}
	c.Rows = c.Size
	if len(m.pk) > 0 {
		c.Rows, c.Buckets = -1, m.table.Schema().NumBuckets()
	}
	return c, unpin, nil
}

// Scan reads db.name: the newest lake snapshot, and with realtime also the
// log records not yet tiered into it (t$rt). The reader carries the table's
// Arrow schema; the caller releases it.
func (s *Service) Scan(ctx context.Context, db, name string, realtime bool) (array.RecordReader, error) {
	return s.ScanWith(ctx, db, name, ScanOptions{Realtime: realtime})
}

// ScanWith is Scan with a projection and a filter for pruning.
func (s *Service) ScanWith(ctx context.Context, db, name string, opts ScanOptions) (array.RecordReader, error) {
	m, err := s.readTable(ctx, db, name)
	if err != nil {
		return nil, err
	}
	if travel, err := s.optionTravel(ctx, m, db, name, opts.Realtime); err != nil {
		return nil, err
	} else if travel != nil && opts.At == nil {
		opts.At = travel
	}
	if opts.Realtime && !Realtime(m.table) {
		return nil, fmt.Errorf("%w: %s.%s%s needs %s=true", ErrNotRealtime, db, name, RealtimeSuffix, OptionEnabled)
	}
	// Pin the snapshot first, then the high watermarks (see package union).
	snap, unpin, err := s.pinSnapshotAt(ctx, m, db, name, opts.At)
	if err != nil {
		return nil, err
	}
	if opts.At != nil && !opts.Realtime {
		if m, err = s.travelMeta(ctx, m, snap); err != nil {
			unpin()
			return nil, err
		}
	}
	if opts.Expect != nil && opts.Expect != m.schema && !opts.Expect.Equal(m.schema) {
		unpin()
		return nil, fmt.Errorf("%w (%s.%s is at schema %d)", ErrSchemaChanged, db, name, m.ts.ID)
	}
	r, err := s.scan(ctx, m, snap, opts, db, name)
	if err != nil {
		unpin()
		return nil, err
	}
	return newPinnedReader(r, unpin), nil
}

// pinSnapshotAt chooses the lake snapshot of cut at (snapshotAt) and pins
// it in the same step (see pins); call unpin once the read is done.
func (s *Service) pinSnapshotAt(ctx context.Context, m *tableMeta, db, name string, at *Cut) (snap *lake.Snapshot, unpin func(), err error) {
	tagged := at != nil && at.Tag != ""
	snap, unpin, err = s.pins.choose(m.id, tagged, func() (*lake.Snapshot, error) {
		return s.snapshotAt(ctx, m, db, name, at)
	})
	if errors.Is(err, errExpiring) {
		err = fmt.Errorf("lakestream: %s.%s: the snapshot this read was planned at is gone (expired); run the query again: %w", db, name, err)
	}
	return snap, unpin, err
}

// snapshotAt reads the lake snapshot of cut at: its tag's, its id's, or
// the latest one when at is nil (nil when the table has none).
func (s *Service) snapshotAt(ctx context.Context, m *tableMeta, db, name string, at *Cut) (*lake.Snapshot, error) {
	switch {
	case at == nil:
		return m.table.RecentSnapshot(ctx)
	case at.Tag != "":
		snap, err := m.table.Tag(ctx, at.Tag)
		if err != nil {
			return nil, fmt.Errorf("lakestream: %s.%s: the tag %q this read was planned at is gone; run the query again: %w", db, name, at.Tag, err)
		}
		return snap, nil
	case at.Snapshot > 0:
		snap, err := m.table.Snapshot(ctx, at.Snapshot)
		if err != nil {
			return nil, fmt.Errorf("lakestream: %s.%s: the snapshot %d this read was planned at is gone (expired); run the query again: %w", db, name, at.Snapshot, err)
		}
		return snap, nil
	}
	return nil, nil
}

// scanColumns returns the columns the scan reads (the projection, plus the
// primary key for a merge, in table order) and the positions of the
// projection among them; idx is nil when they are the same.
func scanColumns(m *tableMeta, opts ScanOptions) (read []string, idx []int, err error) {
	if opts.Columns == nil {
		return nil, nil, nil
	}
	want := map[string]bool{}
	for _, c := range opts.Columns {
		if len(m.schema.FieldIndices(c)) == 0 {
			return nil, nil, fmt.Errorf("%w: %s has no column %q", ErrInvalidBatch, m.table.FullName(), c)
		}
		want[c] = true
	}
	if opts.Realtime { // the merge reads the key (tableMeta.key) and the sequence fields
		for _, i := range m.key {
			want[m.schema.Field(i).Name] = true
		}
		if m.seq != nil {
			for _, f := range m.seq.Fields {
				want[f] = true
			}
		}
	}
	pos := map[string]int{}
	for _, f := range m.schema.Fields() {
		if want[f.Name] {
			pos[f.Name] = len(read)
			read = append(read, f.Name)
		}
	}
	same := len(read) == len(opts.Columns)
	for i, c := range opts.Columns {
		idx = append(idx, pos[c])
		same = same && pos[c] == i
	}
	if same {
		idx = nil
	}
	return read, idx, nil
}

func (s *Service) scan(ctx context.Context, m *tableMeta, snap *lake.Snapshot, opts ScanOptions, db, name string) (array.RecordReader, error) {
	read, idx, err := scanColumns(m, opts)
	if err != nil {
		return nil, err
	}
	lakeOpts := lake.ScanOptions{Columns: read, Filter: opts.Filter, Split: opts.Split, TopLevel: opts.ReadOptimized && !opts.Realtime, KeepKinds: opts.KeepKinds && !opts.Realtime}
	if !opts.Realtime {
		lakeReader, err := m.table.ScanWith(ctx, snap, lakeOpts, lake.ScanTuning{Unordered: opts.Unordered, Allocator: s.scanMem})
		if err != nil {
			return nil, err
		}
		if idx != nil {
			return arrowutil.NewProjectReader(lakeReader, idx), nil
		}
		return lakeReader, nil
	}
	// The log is read first: for a primary-key table its newest rows decide
	// which lake rows the lake scan's workers drop (union.LogMerge).
	offsets, err := LakeOffsets(ctx, m.table, snap)
	if err != nil {
		return nil, err
	}
	schema, key, logIdx := m.schema, m.key, []int(nil)
	if read != nil {
		fields := make([]arrow.Field, len(read))
		for i, c := range read {
			j := m.schema.FieldIndices(c)[0]
			fields[i] = m.schema.Field(j)
			logIdx = append(logIdx, j)
		}
		schema = arrow.NewSchema(fields, nil)
		key = nil
		for _, i := range m.key {
			key = append(key, schema.FieldIndices(m.schema.Field(i).Name)[0])
		}
	}
	buckets, pruned := m.table.AllowedBuckets(opts.Filter)
	var log []union.LogBatch
	var logBucket []int32 // the bucket of each of log
	if opts.At == nil {
		if err := s.logReady(ctx, m); err != nil {
			return nil, fmt.Errorf("lakestream: the un-tiered rows of %s.%s: %w", m.table.Database(), m.table.Name(), err)
		}
	} else if err := s.log.Ready(); err != nil {
		return nil, fmt.Errorf("lakestream: the un-tiered rows of %s.%s: %w", m.table.Database(), m.table.Name(), err)
	}
	hws := s.log.HighWatermarks(m.id)
	if opts.At != nil {
		hws = opts.At.Log
	}
	if err := s.logBehind(m, offsets, hws); err != nil {
		return nil, err
	}
	for b, hw := range hws {
		from := offsets.Of(b)
		s.cache.dropBelow(logstore.Bucket{Table: m.id, Bucket: b}, from)
		if from >= hw || (pruned && !buckets[b]) || !opts.Split.In(int(b)) {
			continue
		}
		err := s.readLog(ctx, m, logstore.Bucket{Table: m.id, Bucket: b}, from, hw, false, func(lb union.LogBatch, _ int64, _ time.Time) error {
			log = append(log, lb)
			logBucket = append(logBucket, b)
			return nil
		})
		if err != nil {
			releaseLog(log)
			return nil, fmt.Errorf("lakestream: read log of %s.%s bucket %d: %w", db, name, b, err)
		}
	}
	if logIdx != nil {
		for i, lb := range log {
			log[i].Rec = arrowutil.ProjectRecord(lb.Rec, schema, logIdx)
			lb.Rec.Release()
		}
	}
	var out array.RecordReader
	if len(m.pk) == 0 {
		lakeReader, err := m.table.ScanWith(ctx, snap, lakeOpts, lake.ScanTuning{Unordered: opts.Unordered, Allocator: s.scanMem})
		if err != nil {
			releaseLog(log)
			return nil, err
		}
		if out, err = union.Append(schema, lakeReader, log); err != nil {
			return nil, fmt.Errorf("lakestream: %s.%s: %w", db, name, err)
		}
	} else {
		if log, err = keepKeyRows(ctx, s.mem, m.table.KeyRows(opts.Filter), log); err != nil {
			return nil, fmt.Errorf("lakestream: filter log of %s.%s: %w", db, name, err)
		}
		// A table with sequence fields merges by them: the lake side keeps
		// its retractions, which beat older log versions (union.Versions).
		if m.seqErr != nil {
			releaseLog(log)
			return nil, fmt.Errorf("lakestream: %s.%s: %w", db, name, m.seqErr)
		}
		var versions *union.Versions
		if m.seq != nil {
			versions = &union.Versions{Order: m.seq, LakeKinds: true}
			lakeOpts.KeepKinds = true
		}
		// Without a filter, an integer key and versions by arrival, the lake
		// finds the rows the log replaces by position, from each file's
		// cached keys, and reads the key column only when the projection
		// wants it (lake.ScanTuning.Exclude).
		byPosition := len(opts.Filter) == 0 && versions == nil && len(key) == 1 && m.table.IntKey()
		var exclude *lake.KeySet
		if byPosition && m.table.Schema().NumBuckets() > 0 && len(logBucket) == len(log) {
			// A log bucket is its lake bucket: each file is searched for
			// its own bucket's keys only.
			if exclude, err = keysByBucket(log, logBucket, key[0]); err != nil {
				releaseLog(log)
				return nil, fmt.Errorf("lakestream: %s.%s: %w", db, name, err)
			}
		}
		merged, err := union.MergeLogVersions(ctx, s.mem, schema, key, log, versions)
		if err != nil {
			return nil, fmt.Errorf("lakestream: %s.%s: %w", db, name, err)
		}
		tuning := lake.ScanTuning{Unordered: opts.Unordered, Allocator: s.scanMem, Transform: merged.LakeFilter()}
		if keys, ok := merged.Keys(); ok && byPosition {
			if exclude == nil {
				exclude = &lake.KeySet{All: keys}
			}
			tuning.Transform, tuning.Exclude = nil, exclude
			if cols, idx2, dropped := withoutKey(read, idx, opts.Columns, m); dropped {
				fields := make([]arrow.Field, len(cols))
				proj := make([]int, len(cols))
				for i, c := range cols {
					proj[i] = schema.FieldIndices(c)[0]
					fields[i] = schema.Field(proj[i])
				}
				schema = arrow.NewSchema(fields, nil)
				merged.Project(schema, proj)
				lakeOpts.Columns, idx = cols, idx2
			}
		}
		lakeReader, err := m.table.ScanWith(ctx, snap, lakeOpts, tuning)
		if err != nil {
			merged.Release()
			return nil, err
		}
		lakeSchema := lakeReader.Schema()
		if versions != nil { // the kinds column, which the lake filter drops
			lakeSchema = arrow.NewSchema(lakeSchema.Fields()[:lakeSchema.NumFields()-1], nil)
		}
		if !arrowutil.SameColumns(lakeSchema, schema) {
			lakeReader.Release()
			merged.Release()
			return nil, fmt.Errorf("lakestream: %s.%s: the lake scan's columns %v are not the log's %v", db, name, lakeReader.Schema(), schema)
		}
		out = merged.Reader(lakeReader)
	}
	if idx != nil {
		return arrowutil.NewProjectReader(out, idx), nil
	}
	return out, nil
}

// keysByBucket returns the distinct keys of the log batches (the key column
// col, integer-like) by the bucket each batch is of.
func keysByBucket(log []union.LogBatch, bucket []int32, col int) (*lake.KeySet, error) {
	by := map[int32][]int64{}
	for i, lb := range log {
		keys, err := arrowutil.Int64Values(lb.Rec.Column(col))
		if err != nil {
			return nil, fmt.Errorf("the key of the log's rows: %w", err)
		}
		by[bucket[i]] = append(by[bucket[i]], keys...)
	}
	for b, keys := range by {
		slices.Sort(keys)
		by[b] = slices.Compact(keys)
	}
	return &lake.KeySet{ByBucket: by}, nil
}

// withoutKey returns the columns read (read, in table order) without the
// key column that the merge added when the projection (columns) does not
// want it, the projection's positions among them, and whether it was
// dropped. A projection of no column keeps the key: a lake scan must read
// some column to count rows.
func withoutKey(read []string, idx []int, columns []string, m *tableMeta) ([]string, []int, bool) {
	if read == nil || len(m.key) != 1 {
		return read, idx, false
	}
	key := m.schema.Field(m.key[0]).Name
	if slices.Contains(columns, key) || len(read) < 2 {
		return read, idx, false
	}
	cols := slices.DeleteFunc(slices.Clone(read), func(c string) bool { return c == key })
	pos := map[string]int{}
	for i, c := range cols {
		pos[c] = i
	}
	out := make([]int, len(columns))
	same := len(cols) == len(columns)
	for i, c := range columns {
		out[i] = pos[c]
		same = same && out[i] == i
	}
	if same {
		out = nil
	}
	return cols, out, true
}

// keepKeyRows drops the log rows whose primary key cannot match the scan's
// filter (keys, see lake.Table.KeyRows), so that the merge handles only the
// keys asked for: a point query of a busy table merges its key's versions,
// not every un-tiered row of the bucket. It releases the batches it
// replaces, and all of them on error.
func keepKeyRows(ctx context.Context, mem memory.Allocator, keys func(arrow.RecordBatch) []bool, log []union.LogBatch) ([]union.LogBatch, error) {
	if keys == nil {
		return log, nil
	}
	out := log[:0]
	for i, lb := range log {
		keep := keys(lb.Rec)
		if keep == nil {
			out = append(out, lb)
			continue
		}
		var rows []int32
		for r, k := range keep {
			if k {
				rows = append(rows, int32(r))
			}
		}
		if len(rows) == 0 {
			lb.Rec.Release()
			continue
		}
		if n := len(rows); int(rows[n-1]-rows[0]) == n-1 { // one range (a point query's key): a slice
			out = append(out, sliceBatch(lb, int64(rows[0]), int64(rows[n-1])+1))
			continue
		}
		rec, kinds, err := takeRows(ctx, mem, lb.Rec, lb.Kinds, rows)
		lb.Rec.Release()
		if err != nil {
			releaseLog(out)
			releaseLog(log[i+1:])
			return nil, err
		}
		out = append(out, union.LogBatch{Rec: rec, Kinds: kinds})
	}
	return out, nil
}

// ReadLog passes the log records of bucket b of table t in [from, to) to
// fn, in log order, with the offset of each batch's first row; fn owns the
// batch. Rows come with the columns of t's schema, whatever schema they
// were written under (see evolve.go). A batch is one log entry, or several
// consecutive small ones joined (coalesceBelow), sliced to the range.
// Entries come from the log cache when it has them, else from the log (and
// are then cached).
func (s *Service) ReadLog(ctx context.Context, t *lake.Table, b logstore.Bucket, from, to int64, fn func(lb union.LogBatch, base int64) error) error {
	return s.readLog(ctx, s.metaFor(t), b, from, to, false, func(lb union.LogBatch, base int64, _ time.Time) error { return fn(lb, base) })
}

// asSchema returns rec, the rows of the entry at base of b written under
// schema id, as rows of m's schema, taking over rec's reference; when the
// entry is cached (as rec) and had to be evolved, the cache keeps the
// evolved rows.
func (s *Service) asSchema(ctx context.Context, m *tableMeta, b logstore.Bucket, base int64, rec arrow.RecordBatch, id int64, cached bool) (arrow.RecordBatch, error) {
	if id == m.ts.ID {
		return rec, nil
	}
	out, err := s.evolve(ctx, m, rec, id)
	if err != nil {
		rec.Release()
		return nil, fmt.Errorf("log entry at offset %d: %w", base, err)
	}
	if cached && out != rec {
		s.cache.evolved(b, base, rec, out, m.ts.ID)
	}
	rec.Release()
	return out, nil
}

// readLog is ReadLog (as rows of m's schema) that also passes each batch's
// write time (a joined batch: its first entry's). With split, every batch
// is exactly one log entry (joined entries are cut back apart, and none are
// joined).
func (s *Service) readLog(ctx context.Context, m *tableMeta, b logstore.Bucket, from, to int64, split bool, fn func(lb union.LogBatch, base int64, at time.Time) error) error {
	cursor := from
	for cursor < to {
		if !split {
			if lb, n, id, at, ok := s.readRun(b, cursor, to); ok {
				rec, err := s.asSchema(ctx, m, b, cursor, lb.Rec, id, true)
				if err != nil {
					return err
				}
				lb.Rec = rec
				if err := fn(lb, cursor, at); err != nil {
					return err
				}
				cursor += n
				continue
			}
		}
		if rec, id, kinds, parts, ok := s.cache.get(b, cursor); ok {
			rec, err := s.asSchema(ctx, m, b, cursor, rec, id, true)
			if err != nil {
				return err
			}
			n := rec.NumRows()
			lb := union.LogBatch{Rec: rec, Kinds: kinds}
			if !split {
				if cursor+n > to {
					lb = sliceBatch(lb, 0, to-cursor)
				}
				if err := fn(lb, cursor, parts[0].at); err != nil {
					return err
				}
				cursor += n
				continue
			}
			err = eachPart(lb, parts, cursor, to, fn)
			lb.Rec.Release()
			if err != nil {
				return err
			}
			cursor += n
			continue
		}
		// A miss: read from the log until the next cached entry.
		start := cursor
		err := s.log.Read(ctx, b, start, to, func(base, rows int64, payload []byte) error {
			if base > start && s.cache.has(b, base) {
				return errCacheHit
			}
			rec, kinds, err := s.decodeEntry(ctx, m, base, rows, payload)
			if err != nil {
				return err
			}
			at, _ := logcodec.WriteTime(payload)
			if base >= from {
				s.cache.put(b, base, rec, m.ts.ID, kinds, at)
			}
			lo, hi := int64(0), rows
			if base < start {
				lo = start - base
			}
			if base+rows > to {
				hi = to - base
			}
			cursor = base + rows
			return fn(sliceBatch(union.LogBatch{Rec: rec, Kinds: kinds}, lo, hi), base+lo, at)
		})
		if err != nil && !errors.Is(err, errCacheHit) {
			return err
		}
		if cursor == start {
			return fmt.Errorf("lakestream: log of %v has no entry at offset %d", b, start)
		}
	}
	return nil
}

// decodeEntry decodes the log entry at base holding rows rows, as rows of
// m's schema.
func (s *Service) decodeEntry(ctx context.Context, m *tableMeta, base, rows int64, payload []byte) (arrow.RecordBatch, []byte, error) {
	rec, kinds, err := logcodec.Decode(payload, rows, s.mem)
	if err != nil {
		return nil, nil, fmt.Errorf("log entry at offset %d: %w", base, err)
	}
	id, err := m.entrySchema(ctx, payload, rec)
	if err != nil {
		rec.Release()
		return nil, nil, fmt.Errorf("log entry at offset %d: %w", base, err)
	}
	rec, err = s.asSchema(ctx, m, logstore.Bucket{}, base, rec, id, false)
	if err != nil {
		return nil, nil, err
	}
	return rec, kinds, nil
}

// eachPart passes the log entries of lb (at base, holding parts) that start
// before to, each as its own slice of lb, to fn.
func eachPart(lb union.LogBatch, parts []entryPart, base, to int64, fn func(lb union.LogBatch, base int64, at time.Time) error) error {
	var lo int64
	for _, p := range parts {
		if base+lo >= to {
			break
		}
		hi := min(lo+p.rows, to-base)
		lb.Rec.Retain()
		if err := fn(sliceBatch(lb, lo, hi), base+lo, p.at); err != nil {
			return err
		}
		lo += p.rows
	}
	return nil
}

var errCacheHit = errors.New("cached from here on")

// Cached log entries below coalesceBelow rows are joined with their cached
// neighbours into entries of up to coalesceRows rows by the first read that
// meets them (readRun): a log of many small writes (one entry each) was
// merged, projected and filtered one entry at a time, ~5 us each, so a point
// query of t$rt over 500 single-row writes took 2.5 ms longer than over one
// batch (BenchmarkPointQuery).
const (
	coalesceBelow = 4096
	coalesceRows  = 64 << 10
)

// readRun returns, as one batch, the run of small cached entries of b that
// starts at from (see coalesceBelow), and caches it in their place; ok is
// false when there is no such run.
func (s *Service) readRun(b logstore.Bucket, from, to int64) (lb union.LogBatch, rows, schema int64, at time.Time, ok bool) {
	r := s.cache.smallRun(b, from, to, coalesceBelow, coalesceRows)
	if r == nil {
		return union.LogBatch{}, 0, 0, time.Time{}, false
	}
	defer r.release()
	batches := make([]union.LogBatch, len(r.entries))
	for i, e := range r.entries {
		batches[i] = union.LogBatch{Rec: e.rec, Kinds: e.kinds}
	}
	joined, err := joinLog(batches, r.rows, s.mem)
	if err != nil {
		return union.LogBatch{}, 0, 0, time.Time{}, false // read them one by one
	}
	s.cache.replaceRun(b, r, joined.Rec, joined.Kinds)
	return joined, r.rows, r.schema, r.entries[0].at, true
}

// joinLog concatenates batches holding rows rows in all; kinds stay nil
// when every batch's are (all upserts).
func joinLog(run []union.LogBatch, rows int64, mem memory.Allocator) (union.LogBatch, error) {
	recs := make([]arrow.RecordBatch, len(run))
	var kinds []byte
	if slices.ContainsFunc(run, func(lb union.LogBatch) bool { return lb.Kinds != nil }) {
		kinds = make([]byte, 0, rows)
	}
	for i, lb := range run {
		recs[i] = lb.Rec
		switch {
		case kinds == nil:
		case lb.Kinds != nil:
			kinds = append(kinds, lb.Kinds...)
		default:
			kinds = append(kinds, make([]byte, lb.Rec.NumRows())...) // upserts
		}
	}
	rec, err := arrowutil.ConcatRecords(recs, mem)
	if err != nil {
		return union.LogBatch{}, err
	}
	return union.LogBatch{Rec: rec, Kinds: kinds}, nil
}

func releaseLog(log []union.LogBatch) {
	for _, lb := range log {
		lb.Rec.Release()
	}
}

// sliceBatch returns rows [lo, hi) of lb, taking over lb's reference.
func sliceBatch(lb union.LogBatch, lo, hi int64) union.LogBatch {
	n := lb.Rec.NumRows()
	if lo == 0 && hi == n {
		return lb
	}
	sliced := lb.Rec.NewSlice(lo, hi)
	lb.Rec.Release()
	out := union.LogBatch{Rec: sliced}
	if lb.Kinds != nil {
		out.Kinds = lb.Kinds[lo:hi]
	}
	return out
}

// Tiered tells the service that the lake now holds the table's log below
// offs, so cached entries there can go.
func (s *Service) Tiered(tableID string, offs *Offsets) {
	for b, off := range offs.BucketOffsetsOrEmpty() {
		s.cache.dropBelow(logstore.Bucket{Table: tableID, Bucket: int32(b)}, off)
	}
}

// entryTime returns when the log entry holding offset off of b was written.
func (s *Service) entryTime(ctx context.Context, b logstore.Bucket, off int64) (time.Time, bool) {
	if at, ok := s.cache.writeTime(b, off); ok {
		return at, true
	}
	var at time.Time
	var ok bool
	_ = s.log.Read(ctx, b, off, off+1, func(_, _ int64, payload []byte) error {
		at, ok = logcodec.WriteTime(payload)
		return errCacheHit // one entry is enough
	})
	return at, ok
}
