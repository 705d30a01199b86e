package tiering

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/flightd/flightd/internal/background"
	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/logstore"
	"github.com/flightd/flightd/union"
)

// staged is a round in the making: the lake write its log rows go into,
// the snapshot it is planned on and how far it has read. Between rounds,
// an append table's round is staged: the scheduler reads what the log has
// acknowledged into it and encodes every MaxRowsPerRound rows into data
// files (lake.Write.Flush), so that a round only encodes the rows of its
// last second and commits, instead of encoding a whole interval's rows at
// once (two cores busy for seconds every interval, then idle; at 1 M rows/s
// the oldest row waited for the interval plus that burst).
type staged struct {
	w        *lake.Write
	table    *lake.Table // as planned: its id and schema
	snapshot int64       // the snapshot planned on (0: none)
	pk       bool
	next     *lakestream.Offsets // the offsets after the rows read so far
	read     map[int32]int64     // rows read per bucket
	rows     int64               // rows read
	flushes  int                 // flushes of this round (primary-key tables: sorted runs spilled)
}

// appendRoundFlushes bounds a round: at most this many times
// MaxRowsPerRound rows per bucket (encoded or spilled as they are read, so
// memory stays at MaxRowsPerRound), so that a long backlog is committed in
// steps.
const appendRoundFlushes = 64

// maxRoundRuns bounds the sorted runs a primary-key round spills: its
// commit merges a bucket's runs holding a batch of each (lake.Write), so
// the round ends after this many flushes and the next one, due at once,
// goes on.
const maxRoundRuns = 48

// minTurnRows is the fewest rows a primary-key round reads of a bucket in
// its turn.
const minTurnRows = 4096

// errTurn ends a bucket's turn in a primary-key round (see readLog).
var errTurn = errors.New("turn")

// plan starts a round on snap (nil: the table has none).
func (s *Service) plan(ctx context.Context, t *lake.Table, snap *lake.Snapshot) (*staged, error) {
	offs, err := lakestream.LakeOffsets(ctx, t, snap)
	if err != nil {
		return nil, err
	}
	if offs == nil {
		offs = &lakestream.Offsets{Version: 1}
	}
	offs.TableID = lakestream.TableID(t)
	st := &staged{w: t.NewWrite(ctx), table: t, pk: t.Schema().HasPrimaryKey(), next: offs, read: map[int32]int64{}}
	st.w.SetSpillDir(s.opts.SpillDir)
	if snap != nil {
		st.snapshot = snap.ID
	}
	return st, nil
}

// plannedOn reports whether st can go on as a round of t on snap: the same
// table and schema (sameTable), and no snapshot since it was planned.
func (st *staged) plannedOn(t *lake.Table, snap *lake.Snapshot) bool {
	var id int64
	if snap != nil {
		id = snap.ID
	}
	return st.snapshot == id && st.sameTable(t)
}

// sameTable reports whether st was planned on t as it is: the same table
// (not one dropped and created again) with the same schema.
func (st *staged) sameTable(t *lake.Table) bool {
	return lakestream.TableID(st.table) == lakestream.TableID(t) && st.table.Schema().ID == t.Schema().ID
}

// readLog reads every bucket's log from st.next up to its high watermark
// now into st.w, at most the round's cap per bucket (appendRoundFlushes
// times MaxRowsPerRound), flushed whenever the write holds MaxRowsPerRound
// rows or Options.RoundMemory bytes: an append table's rows into data
// files; a primary-key table's, every share of those (a share per
// background worker, and one for the rows being read), into sorted runs,
// sorted and spilled in the background while the round reads on, that the
// commit merges into a file per bucket (at most maxRoundRuns of them: then
// the round stops and more is reported). A round of an append table reads at most
// MaxRowsPerRound rows per bucket past what was staged: when staging has
// fallen behind the log, the round commits what is encoded instead of
// encoding the backlog first, and the rounds that follow at once (more)
// commit the backlog a flush at a time, so that the lake keeps advancing.
// more reports a bucket that had more. A round flushes on every core;
// staging on one, unless the log is a flush ahead of it (see flushWorkers).
func (s *Service) readLog(ctx context.Context, st *staged, round bool) (more bool, err error) {
	id := lakestream.TableID(st.table)
	limit := s.opts.MaxRowsPerRound * appendRoundFlushes
	flushRows, flushBytes := s.opts.MaxRowsPerRound, s.opts.RoundMemory
	if st.pk {
		// A primary-key write's flushes are sorted and spilled in the
		// background, up to a job per worker, while the round reads on: a
		// flush of each share of the memory.
		parts := int64(1 + background.Workers())
		flushRows, flushBytes = max(flushRows/parts, 1), max(flushBytes/parts, 1)
	}
	hws := s.ls.Log().HighWatermarks(id)
	buckets := slices.Sorted(maps.Keys(hws))
	// A primary-key round reads the buckets in turns of a share of a flush
	// each, so that every flush holds rows of every bucket and its buckets
	// are sorted and encoded in parallel (an append round reads each
	// bucket at once: its flushes are cut into files per core anyway).
	turn := int64(math.MaxInt64)
	if st.pk && len(buckets) > 1 {
		turn = max(flushRows/int64(len(buckets)), minTurnRows)
	}
	capped := map[int32]bool{}
	for {
		progressed := false
		for _, b := range buckets {
			hw := hws[b]
			from := st.next.Of(b)
			if from >= hw || capped[b] {
				continue
			}
			end := from
			bucketLimit := limit
			if round && !st.pk {
				bucketLimit = min(limit, st.read[b]+s.opts.MaxRowsPerRound)
			}
			if !round && hw-from+st.w.Buffered() < s.opts.MaxRowsPerRound {
				continue // staging reads whole flushes only (see stage)
			}
			var turnRows int64
			err := s.ls.ReadLog(ctx, st.table, logstore.Bucket{Table: id, Bucket: b}, from, hw, func(lb union.LogBatch, base int64) error {
				defer lb.Rec.Release()
				if st.read[b] >= bucketLimit || (st.pk && st.flushes >= maxRoundRuns) {
					return errStop
				}
				if turnRows >= turn {
					return errTurn
				}
				k := int(lb.Rec.NumRows())
				var kinds []lake.RowKind
				var seqs []int64
				if st.pk {
					kinds = make([]lake.RowKind, k)
					for i := range kinds {
						if lb.Kinds != nil {
							kinds[i] = lake.RowKind(lb.Kinds[i])
						}
					}
					seqs = make([]int64, k)
					for i := range seqs {
						seqs[i] = base + int64(i)
					}
				}
				if err := st.w.Write(ctx, b, lb.Rec, kinds, seqs); err != nil {
					return err
				}
				end = base + int64(k)
				st.read[b] += int64(k)
				st.rows += int64(k)
				turnRows += int64(k)
				if st.w.Buffered() >= flushRows || st.w.BufferedBytes() >= flushBytes {
					// behind: what the log holds past these rows now (hw is
					// where this pass stops, not where the log is)
					behind := s.ls.Log().HighWatermark(logstore.Bucket{Table: id, Bucket: b}) - end
					if err := st.w.Flush(ctx, s.flushWorkers(round, behind)); err != nil {
						return err
					}
					st.flushes++
					if !round && hw-end < s.opts.MaxRowsPerRound {
						return errStop // less than a flush left: the round reads it
					}
				}
				return nil
			})
			if end > from {
				st.next = st.next.With(b, end)
				progressed = true
			}
			switch {
			case errors.Is(err, errStop):
				more, capped[b] = true, true
			case errors.Is(err, errTurn):
			case err != nil:
				return more, fmt.Errorf("bucket %d: %w", b, err)
			}
		}
		if !progressed || turn == math.MaxInt64 {
			break
		}
	}
	return more, nil
}

// flushWorkers is how many background workers a flush may use: all of them
// in a round (its commit waits for them), one while staging, which leaves a
// core to ingest and queries, unless the log already holds another flush's
// rows past the ones flushed (behind): then staging is falling behind the
// log, and the round would have to encode that backlog.
func (s *Service) flushWorkers(round bool, behind int64) int {
	if round || behind >= s.opts.MaxRowsPerRound {
		return background.Workers()
	}
	return 1
}

// burstRate is the rate of log growth, in rows a second, above which a
// table is not staged: Options.BurstRate, by default 1M rows a second per
// background worker, about what the workers can encode (a core encodes
// ~1 M rows a second). A log growing faster is taking a burst (a bulk load)
// that staging cannot keep up with anyway; encoding beside it only takes
// the cores the burst's acknowledgements need (one ADBC client into an
// append table, 10 M rows: median 2.6 M rows/s staged against 3.0 not). The
// pass after the burst stages it.
func (s *Service) burstRate() float64 {
	if s.opts.BurstRate > 0 {
		return s.opts.BurstRate
	}
	return float64(background.Workers()) * 1e6
}

// stage reads what the log of append table db.name has acknowledged into
// its staged round, in whole flushes: a bucket is read only while the log
// holds MaxRowsPerRound rows past what was flushed, so that no rows wait in
// memory between passes (a server with many slow tables would hold up to a
// flush of each) and a table that gets fewer rows per interval than a flush
// is not staged at all. Errors are logged; the round starts over then.
func (s *Service) stage(ctx context.Context, db, name string) {
	l := s.tableLock(db, name)
	l.Lock()
	defer l.Unlock()
	t, err := s.ls.Table(ctx, db, name)
	if err != nil && ctx.Err() != nil {
		return // cancelled: what is staged stays for the round
	}
	if err != nil || !lakestream.Realtime(t) || t.Schema().HasPrimaryKey() {
		s.dropStaged(db, name)
		return
	}
	st := s.takeStaged(db, name)
	if st != nil && !st.sameTable(t) {
		st.w.Abort()
		st = nil
	}
	if st == nil {
		snap, err := t.LatestSnapshot(ctx)
		if err == nil {
			st, err = s.plan(ctx, t, snap)
		}
		if err != nil {
			s.lg.Warn("tiering: staging", "table", db+"."+name, "err", err)
			return
		}
	}
	start, before := time.Now(), st.rows
	if _, err := s.readLog(ctx, st, false); err != nil {
		st.w.Abort()
		s.lg.Warn("tiering: staging", "table", db+"."+name, "err", err)
		return
	}
	if st.rows > before {
		s.lg.Debug("staged", "table", db+"."+name, "rows", st.rows-before, "round_rows", st.rows, "buffered", st.w.Buffered(), "took", time.Since(start))
	}
	s.mu.Lock()
	s.staged[tableKey{db, name}] = st
	s.mu.Unlock()
}

// tableKey names a table.
type tableKey struct{ db, name string }

// takeStaged removes and returns the staged round of db.name (nil: none).
func (s *Service) takeStaged(db, name string) *staged {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := tableKey{db, name}
	st := s.staged[k]
	delete(s.staged, k)
	return st
}

// dropStaged aborts the staged round of db.name, removing its files.
func (s *Service) dropStaged(db, name string) {
	if st := s.takeStaged(db, name); st != nil {
		st.w.Abort()
	}
}

// dropAllStaged aborts every staged round: when Run ends, and before files
// no snapshot references are removed (a staged round's are such files).
func (s *Service) dropAllStaged() {
	s.mu.Lock()
	var keys []tableKey
	for k := range s.staged {
		keys = append(keys, k)
	}
	s.mu.Unlock()
	for _, k := range keys {
		l := s.tableLock(k.db, k.name)
		l.Lock()
		s.dropStaged(k.db, k.name)
		l.Unlock()
	}
}
