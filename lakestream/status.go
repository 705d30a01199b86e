package lakestream

import (
	"context"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/logstore"
)

// StatusSchema is the schema of the system table sys.tiering: one row per
// bucket of every lake-stream table, saying how far the lake is behind the
// log.
var StatusSchema = arrow.NewSchema([]arrow.Field{
	{Name: "database", Type: arrow.BinaryTypes.String},
	{Name: "table", Type: arrow.BinaryTypes.String},
	{Name: "bucket", Type: arrow.PrimitiveTypes.Int32},
	{Name: "log_start", Type: arrow.PrimitiveTypes.Int64},   // first offset still in the log
	{Name: "lake_offset", Type: arrow.PrimitiveTypes.Int64}, // first offset not in the lake
	{Name: "log_end", Type: arrow.PrimitiveTypes.Int64},     // high watermark: first offset not yet written
	{Name: "lag_rows", Type: arrow.PrimitiveTypes.Int64},    // log_end - lake_offset
	{Name: "snapshot_id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "snapshot_time", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "lag_seconds", Type: arrow.PrimitiveTypes.Float64, Nullable: true}, // age of the oldest record not in the lake (0: none)
}, nil)

// Status returns the rows of sys.tiering. The caller releases the reader.
func (s *Service) Status(ctx context.Context) (array.RecordReader, error) {
	b := array.NewRecordBuilder(s.mem, StatusSchema)
	defer b.Release()
	now := time.Now()
	dbs, err := s.Databases()
	if err != nil {
		return nil, err
	}
	for _, db := range dbs {
		names, err := s.Tables(db)
		if err != nil {
			continue
		}
		for _, name := range names {
			m, err := s.table(db, name)
			if err != nil || !Realtime(m.table) {
				continue
			}
			snap, err := m.table.LatestSnapshot(ctx)
			if err != nil {
				return nil, err
			}
			offs, err := LakeOffsets(ctx, m.table, snap)
			if err != nil {
				return nil, err
			}
			hws := s.log.HighWatermarks(m.id)
			n := int32(max(len(offs.BucketOffsetsOrEmpty()), m.table.Schema().NumBuckets(), 1))
			for bk := range hws {
				if bk+1 > n {
					n = bk + 1
				}
			}
			for bk := int32(0); bk < n; bk++ {
				hw := hws[bk]
				lake := offs.Of(bk)
				b.Field(0).(*array.StringBuilder).Append(db)
				b.Field(1).(*array.StringBuilder).Append(name)
				b.Field(2).(*array.Int32Builder).Append(bk)
				b.Field(3).(*array.Int64Builder).Append(s.log.Start(logstore.Bucket{Table: m.id, Bucket: bk}))
				b.Field(4).(*array.Int64Builder).Append(lake)
				b.Field(5).(*array.Int64Builder).Append(hw)
				b.Field(6).(*array.Int64Builder).Append(max(hw-lake, 0))
				if snap == nil {
					b.Field(7).AppendNull()
					b.Field(8).AppendNull()
				} else {
					b.Field(7).(*array.Int64Builder).Append(snap.ID)
					b.Field(8).(*array.TimestampBuilder).Append(arrow.Timestamp(snap.TimeMillis))
				}
				switch at, ok := s.entryTime(ctx, logstore.Bucket{Table: m.id, Bucket: bk}, lake); {
				case hw <= lake:
					b.Field(9).(*array.Float64Builder).Append(0)
				case ok:
					b.Field(9).(*array.Float64Builder).Append(now.Sub(at).Seconds())
				default:
					b.Field(9).AppendNull()
				}
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewRecordReader(StatusSchema, []arrow.RecordBatch{rec})
}
