package lakestream

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/flightd/flightd/lake"
)

// OptionLog records which log holds a table's un-tiered rows: the
// logstore.Description.ID of the log it was created on or moved to
// ("badger", or "kafka:<topic prefix>"). A table without it (made before
// there was a choice) is on the Badger log. Only MoveLog changes it.
const OptionLog = "lakestream.log"

// ErrOtherLog: a table's un-tiered rows live in another log than the one
// this server runs with.
var ErrOtherLog = errors.New("lakestream: the table's log is another")

// ErrLogBehind: a table's log ends below what the lake already holds of it:
// the log lost records (its topic or directory was deleted or replaced).
// New writes would get offsets the lake has passed and never show.
var ErrLogBehind = errors.New("lakestream: the table's log ends below what the lake holds")

// logBehind returns ErrLogBehind, naming the bucket and the fix, when a
// bucket's high watermark in hws is below its offset in the lake.
func (s *Service) logBehind(m *tableMeta, offsets *Offsets, hws map[int32]int64) error {
	for b, o := range offsets.BucketOffsetsOrEmpty() {
		if hw := hws[int32(b)]; o > hw {
			return fmt.Errorf("%w: %s.%s: its log (%s) ends at offset %d in bucket %d, but the lake already holds that bucket's rows up to %d: the log's records were deleted, or it is not this table's log. Restore it, or start the table on a new log: ALTER TABLE ... SET ('%s' = 'false'), then 'true'",
				ErrLogBehind, m.table.Database(), m.table.Name(), s.log.Describe(), hw, b, o, OptionEnabled)
		}
	}
	return nil
}

// checkLogOnce runs logBehind once per loaded table, before its first
// write: a write to a log behind the lake would be acknowledged and never
// show.
func (s *Service) checkLogOnce(ctx context.Context, m *tableMeta) error {
	if m.logChecked.Load() {
		return nil
	}
	latest, err := m.table.LatestSnapshot(ctx)
	if err != nil {
		return err
	}
	offsets, err := LakeOffsets(ctx, m.table, latest)
	if err != nil {
		return err
	}
	if err := s.log.Sync(ctx, m.id); err != nil {
		return err
	}
	if err := s.logBehind(m, offsets, s.log.HighWatermarks(m.id)); err != nil {
		return err
	}
	m.logChecked.Store(true)
	return nil
}

// LogOf returns the log a table's un-tiered rows live in (OptionLog).
func LogOf(t *lake.Table) string {
	if v := t.Schema().Options[OptionLog]; v != "" {
		return v
	}
	return "badger"
}

// otherLog returns ErrOtherLog, naming the fix, when m's rows live in
// another log than s's.
func (s *Service) otherLog(m *tableMeta) error {
	if have, want := LogOf(m.table), s.log.Describe().ID; have != want {
		return fmt.Errorf("%w: %s.%s keeps its un-tiered rows in the %s log, this server runs with %s; see `flightd log migrate`",
			ErrOtherLog, m.table.Database(), m.table.Name(), have, s.log.Describe())
	}
	return nil
}

// CheckLog returns ErrOtherLog, naming the tables and the fix, when a
// lake-stream enabled table keeps its un-tiered rows in another log than
// the one s runs with: serving it would hide those rows from t$rt and
// tiering. A server checks this before it serves.
func (s *Service) CheckLog(ctx context.Context, fix string) error {
	want := s.log.Describe().ID
	var other []string
	from := map[string]bool{}
	dbs, err := s.cat.ListDatabases(ctx)
	if err != nil {
		return err
	}
	for _, db := range dbs {
		names, err := s.cat.ListTables(ctx, db)
		if err != nil {
			return err
		}
		for _, name := range names {
			t, err := s.cat.GetTable(ctx, db, name)
			if errors.Is(err, lake.ErrTableNotFound) {
				continue // dropped meanwhile
			}
			if err != nil {
				return err
			}
			if Realtime(t) && LogOf(t) != want {
				other = append(other, db+"."+name)
				from[LogOf(t)] = true
			}
		}
	}
	if len(other) == 0 {
		return nil
	}
	logs := make([]string, 0, len(from))
	for l := range from {
		logs = append(logs, l)
	}
	more := ""
	if len(other) > 5 {
		more = fmt.Sprintf(" and %d more", len(other)-5)
		other = other[:5]
	}
	return fmt.Errorf("%w: %s%s keep their un-tiered rows in the %s log, and this server was started with %s: %s",
		ErrOtherLog, strings.Join(other, ", "), more, strings.Join(logs, " and "), s.log.Describe(), fix)
}

// MoveLog moves db.name to the log named to (a logstore.Description.ID):
// it drains the table's log into the lake, gives the table a new log (a new
// lakestream.table-id, recorded with to in OptionLog and anchored at the
// current snapshot with zero offsets, as switching the log on does) and
// drops the old log's records of it. Writes to the table wait meanwhile. s
// runs on the table's current log; a table already on to is left alone.
func (s *Service) MoveLog(ctx context.Context, db, name, to string, drain DrainFunc) error {
	g := s.gate(db, name)
	g.Lock()
	defer g.Unlock()
	m, err := s.table(ctx, db, name)
	if err != nil {
		return err
	}
	if !Realtime(m.table) || LogOf(m.table) == to {
		return nil
	}
	if err := s.otherLog(m); err != nil {
		return err
	}
	if err := drain(ctx, db, name); err != nil {
		return fmt.Errorf("lakestream: drain %s.%s before moving its log: %w", db, name, err)
	}
	oldID := m.id
	id := uuid.NewString()
	t, err := s.cat.AlterTableOptions(ctx, db, name, map[string]string{OptionTableID: id, OptionLog: to})
	if err != nil {
		return err
	}
	s.forget(db, name)
	s.cache.dropTable(oldID)
	n := t.Schema().NumBuckets()
	if n <= 0 {
		n = 1
	}
	offs := &Offsets{Version: 1, TableID: id, BucketOffsets: make([]int64, n)}
	if err := s.commitDirect(ctx, t, nil, map[string]string{OffsetsProperty: offs.Encode()}); err != nil {
		return err
	}
	return s.log.DropTable(ctx, oldID)
}

// logReady says whether the log can serve m's un-tiered rows and, on a log
// that other nodes write too, waits until it holds what they acknowledged
// before the call (logstore.Log.Sync): read after the lake snapshot, the
// high watermarks are then at or past the snapshot's offsets.
func (s *Service) logReady(ctx context.Context, m *tableMeta) error {
	if err := s.log.Ready(); err != nil {
		return err
	}
	return s.log.Sync(ctx, m.id)
}
