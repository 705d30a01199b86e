package lakestream

import (
	"context"
	"sync"
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
	// The table's rounds, as the tiering service reports them (SetRoundStatus):
	{Name: "failed_rounds", Type: arrow.PrimitiveTypes.Int64}, // consecutive failed rounds; 0 once one succeeds
	{Name: "last_error", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "retry_at", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, Nullable: true},
	// The node that tiers the table (Cluster.Owner), the same on each of
	// its bucket rows; NULL on a node that runs alone, or when no node is
	// known to own it. Last, so that readers by position keep working.
	{Name: "owner", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// RoundStatus is what sys.tiering shows of a table's tiering rounds (the
// same on each of its bucket rows): failed_rounds, last_error, retry_at.
type RoundStatus struct {
	// FailedRounds counts the rounds that failed since the last one that
	// succeeded (the total is the metric flightd_tiering_rounds_failed_total).
	FailedRounds int64
	// LastError is the newest failed round's error while FailedRounds > 0.
	LastError string
	// RetryAt is when the scheduler tries a failing table again (zero: not
	// scheduled, or not failing).
	RetryAt time.Time
}

// roundStatuses holds the RoundStatus of tables by table id.
type roundStatuses struct {
	mu sync.Mutex
	m  map[string]RoundStatus
}

// SetRoundStatus records the state of the table's tiering rounds, for
// sys.tiering; the tiering service calls it after every round.
func (s *Service) SetRoundStatus(tableID string, st RoundStatus) {
	s.rounds.mu.Lock()
	defer s.rounds.mu.Unlock()
	if st == (RoundStatus{}) {
		delete(s.rounds.m, tableID)
		return
	}
	if s.rounds.m == nil {
		s.rounds.m = map[string]RoundStatus{}
	}
	s.rounds.m[tableID] = st
}

func (s *Service) roundStatus(tableID string) RoundStatus {
	s.rounds.mu.Lock()
	defer s.rounds.mu.Unlock()
	return s.rounds.m[tableID]
}

// Status returns the rows of sys.tiering on a node that runs alone: the
// column owner is NULL. The caller releases the reader.
func (s *Service) Status(ctx context.Context) (array.RecordReader, error) {
	return s.StatusIn(ctx, nil)
}

// StatusIn returns the rows of sys.tiering, the column owner as c says
// (nil, or a Cluster of a node that runs alone: NULL). The caller releases
// the reader.
func (s *Service) StatusIn(ctx context.Context, c Cluster) (array.RecordReader, error) {
	b := array.NewRecordBuilder(s.mem, StatusSchema)
	defer b.Release()
	now := time.Now()
	clustered := c != nil && c.Self() != ""
	err := s.eachRealtime(ctx, func(db, name string, m *tableMeta) error {
		snap, err := m.table.LatestSnapshot(ctx)
		if err != nil {
			return err
		}
		offs, err := LakeOffsets(ctx, m.table, snap)
		if err != nil {
			return err
		}
		hws := s.log.HighWatermarks(m.id)
		rs := s.roundStatus(m.id)
		owner, owned := "", false
		if clustered {
			owner, owned = c.Owner(m.id)
		}
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
			b.Field(10).(*array.Int64Builder).Append(rs.FailedRounds)
			if rs.FailedRounds > 0 {
				b.Field(11).(*array.StringBuilder).Append(rs.LastError)
			} else {
				b.Field(11).AppendNull()
			}
			if rs.RetryAt.IsZero() {
				b.Field(12).AppendNull()
			} else {
				b.Field(12).(*array.TimestampBuilder).Append(arrow.Timestamp(rs.RetryAt.UnixMilli()))
			}
			if owned {
				b.Field(13).(*array.StringBuilder).Append(owner)
			} else {
				b.Field(13).AppendNull()
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewRecordReader(StatusSchema, []arrow.RecordBatch{rec})
}

// eachRealtime calls f for every lake-stream table, by database and name
// as listed; a database that cannot be listed, or a table that cannot be
// loaded (dropped meanwhile), is skipped. An error of f ends it.
func (s *Service) eachRealtime(ctx context.Context, f func(db, name string, m *tableMeta) error) error {
	dbs, err := s.Databases(ctx)
	if err != nil {
		return err
	}
	for _, db := range dbs {
		names, err := s.Tables(ctx, db)
		if err != nil {
			continue
		}
		for _, name := range names {
			m, err := s.table(ctx, db, name)
			if err != nil || !Realtime(m.table) {
				continue
			}
			if err := f(db, name, m); err != nil {
				return err
			}
		}
	}
	return nil
}
