package lakestream

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/internal/arrowutil"
	"github.com/flightd/flightd/internal/logcodec"
	"github.com/flightd/flightd/logstore"
)

// Write appends rec to the log of db.name and returns once it is durable.
// Columns are matched by name (exactly, else case-insensitively); missing
// nullable columns become nulls; values are cast to the column types. An
// optional ChangeKindColumn gives each row's kind (primary-key tables only).
// A table whose log is off gets the batch as one lake commit instead.
func (s *Service) Write(ctx context.Context, db, name string, rec arrow.RecordBatch) (int64, error) {
	wait, err := s.WriteAsync(ctx, db, name, rec)
	if err != nil {
		return 0, err
	}
	return wait()
}

// WriteAsync is Write in two steps, so that a stream of batches can be
// prepared while earlier ones are committed: it checks and converts rec and
// queues it in the log (batches queued later come after it), and returns a
// function that waits until it is durable and returns its row count. Call
// wait exactly once; the rows are acknowledged only when it returns nil. An
// error from WriteAsync means nothing was queued. A table whose log is off
// commits to the lake before WriteAsync returns.
func (s *Service) WriteAsync(ctx context.Context, db, name string, rec arrow.RecordBatch) (wait func() (int64, error), err error) {
	// Under the gate, the log cannot be switched on or off mid-write; the
	// gate is held until the batch is durable.
	g := s.gate(db, name)
	g.RLock()
	unlock := true
	defer func() {
		if unlock {
			g.RUnlock()
		}
	}()
	m, err := s.table(ctx, db, name)
	if err != nil {
		return nil, err
	}
	n := rec.NumRows()
	done := func() (int64, error) { return n, nil }
	if n == 0 {
		return done, nil
	}
	// A client's batch arrives as Arrow IPC, whose reader checks buffer
	// sizes but not what they hold (see arrowutil.ValidateRecord).
	if err := arrowutil.ValidateRecord(rec); err != nil {
		return nil, fmt.Errorf("%w: %s.%s: the batch's buffers are inconsistent: %v", ErrInvalidBatch, db, name, err)
	}
	data, kinds, err := splitKinds(m.schema, rec, db+"."+name)
	if err != nil {
		return nil, err
	}
	defer data.Release()
	if kinds != nil && len(m.pk) == 0 {
		return nil, fmt.Errorf("%w: %s.%s is an append table: it accepts inserts only, but %s holds updates or deletes", ErrInvalidBatch, db, name, ChangeKindColumn)
	}
	conformed, err := conform(ctx, s.mem, m.schema, data, db+"."+name)
	if err != nil {
		return nil, err
	}
	defer conformed.Release()
	if err := m.table.CheckPartitionNames(conformed); err != nil {
		return nil, fmt.Errorf("%w: %s.%s: %w", ErrInvalidBatch, db, name, err)
	}
	buckets, err := m.table.Buckets(conformed)
	if err != nil {
		return nil, fmt.Errorf("lakestream: bucket rows of %s.%s: %w", db, name, err)
	}
	if !Realtime(m.table) {
		if err := s.writeDirect(ctx, m, conformed, buckets, kinds); err != nil {
			return nil, fmt.Errorf("lakestream: commit to %s.%s: %w", db, name, err)
		}
		return done, nil
	}
	if err := s.otherLog(m); err != nil {
		return nil, err
	}
	if err := s.log.Ready(); err != nil {
		return nil, fmt.Errorf("lakestream: append to the log of %s.%s: %w", db, name, err)
	}
	if err := s.checkLogOnce(ctx, m); err != nil {
		return nil, err
	}
	parts, err := splitByBucket(ctx, s.mem, conformed, buckets, kinds)
	if err != nil {
		return nil, err
	}
	releaseParts := func() {
		for _, p := range parts {
			p.rec.Release()
		}
	}
	entries := make([]logstore.Entry, 0, len(parts))
	for _, p := range parts {
		payload, err := logcodec.Encode(p.rec, p.kinds, m.ts.ID)
		if err != nil {
			releaseParts()
			return nil, err
		}
		entries = append(entries, logstore.Entry{
			Bucket:  logstore.Bucket{Table: m.id, Bucket: p.bucket},
			Rows:    p.rows,
			Payload: payload,
		})
	}
	appended, err := s.log.AppendAsync(ctx, entries)
	if err != nil {
		releaseParts()
		return nil, fmt.Errorf("lakestream: append to the log of %s.%s: %w", db, name, err)
	}
	unlock = false
	return func() (int64, error) {
		defer g.RUnlock()
		defer releaseParts()
		bases, err := appended()
		if err != nil {
			return 0, fmt.Errorf("lakestream: append to the log of %s.%s: %w", db, name, err)
		}
		now := time.Now()
		for i, p := range parts {
			s.cache.put(entries[i].Bucket, bases[i], p.rec, m.ts.ID, p.kinds, now)
		}
		return n, nil
	}, nil
}

// conform returns rec rearranged, cast and checked to carry exactly schema.
func conform(ctx context.Context, mem memory.Allocator, schema *arrow.Schema, rec arrow.RecordBatch, table string) (arrow.RecordBatch, error) {
	in := rec.Schema()
	used := make([]bool, in.NumFields())
	cols := make([]arrow.Array, schema.NumFields())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	ectx := compute.WithAllocator(ctx, mem)
	for i, f := range schema.Fields() {
		j := findField(in, f.Name, used)
		if j < 0 {
			if !f.Nullable {
				return nil, fmt.Errorf("%w: %s: column %q is missing and is NOT NULL", ErrInvalidBatch, table, f.Name)
			}
			cols[i] = array.MakeArrayOfNull(mem, f.Type, int(rec.NumRows()))
			continue
		}
		used[j] = true
		col := rec.Column(j)
		if arrow.TypeEqual(col.DataType(), f.Type) {
			col.Retain()
			cols[i] = col
		} else {
			cast, err := compute.CastArray(ectx, col, compute.SafeCastOptions(f.Type))
			if err != nil {
				return nil, fmt.Errorf("%w: %s: column %q: cannot convert %s to %s: %v", ErrInvalidBatch, table, f.Name, col.DataType(), f.Type, err)
			}
			cols[i] = cast
		}
		if !f.Nullable && cols[i].NullN() > 0 {
			return nil, fmt.Errorf("%w: %s: column %q is NOT NULL (primary-key columns always are) but the batch has %d null value(s)", ErrInvalidBatch, table, f.Name, cols[i].NullN())
		}
	}
	var extra []string
	for j, u := range used {
		if !u {
			extra = append(extra, in.Field(j).Name)
		}
	}
	if len(extra) > 0 {
		return nil, fmt.Errorf("%w: %s has no column(s) %s", ErrInvalidBatch, table, strings.Join(quoteAll(extra), ", "))
	}
	return array.NewRecordBatch(schema, cols, rec.NumRows()), nil
}

func findField(s *arrow.Schema, name string, used []bool) int {
	for j, f := range s.Fields() {
		if !used[j] && f.Name == name {
			return j
		}
	}
	for j, f := range s.Fields() {
		if !used[j] && strings.EqualFold(f.Name, name) {
			return j
		}
	}
	return -1
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

type bucketPart struct {
	bucket int32
	rows   int64
	rec    arrow.RecordBatch
	kinds  []byte // nil: all upserts
}

// splitByBucket returns one batch per bucket, rows (and their kinds) in
// their original order.
func splitByBucket(ctx context.Context, mem memory.Allocator, rec arrow.RecordBatch, buckets []int32, kinds []byte) ([]bucketPart, error) {
	if len(buckets) == 0 {
		return nil, nil
	}
	lo, hi := buckets[0], buckets[0]
	for _, b := range buckets {
		lo, hi = min(lo, b), max(hi, b)
	}
	if lo == hi { // one bucket (an append table's, or a small batch): no copy
		rec.Retain()
		return []bucketPart{{bucket: lo, rows: rec.NumRows(), rec: rec, kinds: kinds}}, nil
	}
	// Group row indexes by bucket, buckets in order of first appearance. Bucket
	// numbers are usually few and dense (0 to the table's bucket count), so a
	// slice indexes them; a map if the span is wide.
	var dense []int32 // 1 + the bucket's index in order; 0 = not seen
	var sparse map[int32]int32
	if span := int64(hi) - int64(lo) + 1; span <= 1<<16 {
		dense = make([]int32, span)
	} else {
		sparse = map[int32]int32{}
	}
	var order []int32
	var rows [][]int32
	for i, b := range buckets {
		var j int32
		if dense != nil {
			j = dense[b-lo]
		} else {
			j = sparse[b]
		}
		if j == 0 {
			order = append(order, b)
			rows = append(rows, nil)
			j = int32(len(order))
			if dense != nil {
				dense[b-lo] = j
			} else {
				sparse[b] = j
			}
		}
		rows[j-1] = append(rows[j-1], int32(i))
	}
	parts := make([]bucketPart, 0, len(order))
	for j, b := range order {
		taken, pk, err := takeRows(ctx, mem, rec, kinds, rows[j])
		if err != nil {
			for _, p := range parts {
				p.rec.Release()
			}
			return nil, fmt.Errorf("lakestream: split batch by bucket: %w", err)
		}
		parts = append(parts, bucketPart{bucket: b, rows: taken.NumRows(), rec: taken, kinds: pk})
	}
	return parts, nil
}

// takeRows returns the rows of rec at the indexes rows, in that order, with
// their change kinds (none when kinds is nil).
func takeRows(ctx context.Context, mem memory.Allocator, rec arrow.RecordBatch, kinds []byte, rows []int32) (arrow.RecordBatch, []byte, error) {
	out, err := arrowutil.TakeRecord(ctx, mem, rec, rows)
	if err != nil {
		return nil, nil, err
	}
	var taken []byte
	if kinds != nil {
		taken = make([]byte, len(rows))
		for i, r := range rows {
			taken[i] = kinds[r]
		}
	}
	return out, taken, nil
}
