package lakestream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/internal/arrowutil"
	"github.com/flightd/flightd/internal/logcodec"
	"github.com/flightd/flightd/lake"
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
	// matching it (see lake.ScanOptions); rows are not filtered.
	Filter []lake.Predicate
}

// Scan reads db.name: the newest lake snapshot, and with realtime also the
// log records not yet tiered into it (t$rt). The reader carries the table's
// Arrow schema; the caller releases it.
func (s *Service) Scan(ctx context.Context, db, name string, realtime bool) (array.RecordReader, error) {
	return s.ScanWith(ctx, db, name, ScanOptions{Realtime: realtime})
}

// ScanWith is Scan with a projection and a filter for pruning.
func (s *Service) ScanWith(ctx context.Context, db, name string, opts ScanOptions) (array.RecordReader, error) {
	m, err := s.table(db, name)
	if err != nil {
		return nil, err
	}
	if opts.Realtime && !Realtime(m.table) {
		return nil, fmt.Errorf("%w: %s.%s%s needs %s=true", ErrNotRealtime, db, name, RealtimeSuffix, OptionEnabled)
	}
	// Pin the snapshot first, then the high watermarks (see package union).
	snap, err := m.table.LatestSnapshot(ctx)
	if err != nil {
		return nil, err
	}
	unpin := func() {}
	if snap != nil {
		unpin = s.pins.pin(m.id, snap.ID)
	}
	r, err := s.scan(ctx, m, snap, opts, db, name)
	if err != nil {
		unpin()
		return nil, err
	}
	return newPinnedReader(r, unpin), nil
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
	if opts.Realtime {
		for _, i := range m.pk {
			want[m.schema.Field(i).Name] = true
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
	lakeReader, err := m.table.Scan(ctx, snap, lake.ScanOptions{Columns: read, Filter: opts.Filter})
	if err != nil {
		return nil, err
	}
	if !opts.Realtime {
		if idx != nil {
			return arrowutil.NewProjectReader(lakeReader, idx), nil
		}
		return lakeReader, nil
	}
	offsets, err := LakeOffsets(ctx, m.table, snap)
	if err != nil {
		lakeReader.Release()
		return nil, err
	}
	schema, pk, logIdx := m.schema, m.pk, []int(nil)
	if read != nil {
		schema = lakeReader.Schema()
		pk = nil
		for _, i := range m.pk {
			pk = append(pk, schema.FieldIndices(m.schema.Field(i).Name)[0])
		}
		for _, f := range schema.Fields() {
			logIdx = append(logIdx, m.schema.FieldIndices(f.Name)[0])
		}
	}
	buckets, pruned := m.table.AllowedBuckets(opts.Filter)
	var log []union.LogBatch
	for b, hw := range s.log.HighWatermarks(m.id) {
		from := offsets.Of(b)
		s.cache.dropBelow(logstore.Bucket{Table: m.id, Bucket: b}, from)
		if from >= hw || (pruned && !buckets[b]) {
			continue
		}
		err := s.ReadLog(ctx, logstore.Bucket{Table: m.id, Bucket: b}, from, hw, func(lb union.LogBatch, _ int64) error {
			if logIdx != nil {
				p := arrowutil.ProjectRecord(lb.Rec, schema, logIdx)
				lb.Rec.Release()
				lb.Rec = p
			}
			log = append(log, lb)
			return nil
		})
		if err != nil {
			lakeReader.Release()
			for _, lb := range log {
				lb.Rec.Release()
			}
			return nil, fmt.Errorf("lakestream: read log of %s.%s bucket %d: %w", db, name, b, err)
		}
	}
	var out array.RecordReader
	if len(m.pk) == 0 {
		out = union.Append(schema, lakeReader, log)
	} else if out, err = union.PrimaryKey(ctx, s.mem, schema, pk, lakeReader, log); err != nil {
		return nil, err
	}
	if idx != nil {
		return arrowutil.NewProjectReader(out, idx), nil
	}
	return out, nil
}

// ReadLog passes the log records of bucket b in [from, to) to fn, one
// batch per log entry (sliced to the range), with the offset of its first
// row; fn owns the batch. Entries come from the log cache when it has them,
// else from the log (and are then cached).
func (s *Service) ReadLog(ctx context.Context, b logstore.Bucket, from, to int64, fn func(lb union.LogBatch, base int64) error) error {
	cursor := from
	for cursor < to {
		if rec, kinds, ok := s.cache.get(b, cursor); ok {
			n := rec.NumRows()
			lb := union.LogBatch{Rec: rec, Kinds: kinds}
			if cursor+n > to {
				lb = sliceBatch(lb, 0, to-cursor)
			}
			if err := fn(lb, cursor); err != nil {
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
			rec, kinds, err := logcodec.Decode(payload, rows, s.mem)
			if err != nil {
				return fmt.Errorf("log entry at offset %d: %w", base, err)
			}
			if base >= from {
				at, _ := logcodec.WriteTime(payload)
				s.cache.put(b, base, rec, kinds, at)
			}
			lo, hi := int64(0), rows
			if base < start {
				lo = start - base
			}
			if base+rows > to {
				hi = to - base
			}
			cursor = base + rows
			return fn(sliceBatch(union.LogBatch{Rec: rec, Kinds: kinds}, lo, hi), base+lo)
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

var errCacheHit = errors.New("cached from here on")

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
