package lakestream

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/internal/logcodec"
	"github.com/flightd/flightd/logstore"
	"github.com/flightd/flightd/union"
)

// Scan reads db.name: the newest lake snapshot, and with realtime also the
// log records not yet tiered into it (t$rt). The reader carries the table's
// Arrow schema; the caller releases it.
func (s *Service) Scan(ctx context.Context, db, name string, realtime bool) (array.RecordReader, error) {
	m, err := s.table(db, name)
	if err != nil {
		return nil, err
	}
	if realtime && !Realtime(m.table) {
		return nil, fmt.Errorf("%w: %s.%s%s needs %s=true", ErrNotRealtime, db, name, RealtimeSuffix, OptionEnabled)
	}
	// Pin the snapshot first, then the high watermarks (see package union).
	snap, err := m.table.LatestSnapshot(ctx)
	if err != nil {
		return nil, err
	}
	lakeReader, err := m.table.Scan(ctx, snap, nil)
	if err != nil {
		return nil, err
	}
	if !realtime {
		return lakeReader, nil
	}
	offsets, err := LakeOffsets(ctx, m.table, snap)
	if err != nil {
		lakeReader.Release()
		return nil, err
	}
	var log []union.LogBatch
	for b, hw := range s.log.HighWatermarks(m.id) {
		from := offsets.Of(b)
		if from >= hw {
			continue
		}
		err := s.ReadLog(ctx, logstore.Bucket{Table: m.id, Bucket: b}, from, hw, func(lb union.LogBatch, _ int64) error {
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
	if len(m.pk) == 0 {
		return union.Append(m.schema, lakeReader, log), nil
	}
	return union.PrimaryKey(ctx, s.mem, m.schema, m.pk, lakeReader, log)
}

// ReadLog decodes the log records of bucket b in [from, to) and passes each
// batch (sliced to the range) with the offset of its first row to fn, which
// owns the batch.
func (s *Service) ReadLog(ctx context.Context, b logstore.Bucket, from, to int64, fn func(lb union.LogBatch, base int64) error) error {
	return s.log.Read(ctx, b, from, to, func(base, rows int64, payload []byte) error {
		rec, kinds, err := logcodec.Decode(payload, rows, s.mem)
		if err != nil {
			return fmt.Errorf("log entry at offset %d: %w", base, err)
		}
		lo, hi := int64(0), rows
		if base < from {
			lo = from - base
		}
		if base+rows > to {
			hi = to - base
		}
		if lo != 0 || hi != rows {
			sliced := rec.NewSlice(lo, hi)
			rec.Release()
			rec = sliced
			if kinds != nil {
				kinds = kinds[lo:hi]
			}
		}
		return fn(union.LogBatch{Rec: rec, Kinds: kinds}, base+lo)
	})
}
