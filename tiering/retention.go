package tiering

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/logstore"
)

// CollectTable deletes the log records of db.name that the lake has held for
// longer than the retention: every bucket's log is truncated below the
// offsets of the newest snapshot committed at or before now - retention.
// Records at or above the newest snapshot's offsets are never touched, and
// a t$rt read only needs those (see package union). It returns the number
// of buckets truncated.
func (s *Service) CollectTable(ctx context.Context, db, name string, now time.Time) (int, error) {
	t, err := s.ls.Table(ctx, db, name)
	if err != nil {
		return 0, err
	}
	_, old, err := s.retentionAnchor(ctx, t, now)
	if err != nil || old == nil {
		return 0, err
	}
	offs, err := lakestream.LakeOffsets(ctx, t, old)
	if err != nil || offs == nil {
		return 0, err
	}
	id := lakestream.TableID(t)
	n := 0
	for b := range offs.BucketOffsets {
		bk := logstore.Bucket{Table: id, Bucket: int32(b)}
		below := offs.Of(int32(b))
		if below <= s.ls.Log().Start(bk) {
			continue
		}
		if err := s.ls.Log().Truncate(ctx, bk, below); err != nil {
			return n, fmt.Errorf("tiering: truncate %s.%s bucket %d below %d: %w", db, name, b, below, err)
		}
		n++
	}
	return n, nil
}

// retentionAnchor returns the latest snapshot and the newest one committed
// at or before now - retention (nil when there is none): the log is
// truncated below the anchor's offsets, so the anchor must stay readable.
func (s *Service) retentionAnchor(ctx context.Context, t *lake.Table, now time.Time) (latest, anchor *lake.Snapshot, err error) {
	latest, err = t.LatestSnapshot(ctx)
	if err != nil || latest == nil {
		return nil, nil, err
	}
	anchor, err = newestAtOrBefore(ctx, t, latest, now.Add(-s.opts.Retention).UnixMilli())
	return latest, anchor, err
}

// newestAtOrBefore finds, by binary search over snapshot ids (their commit
// times never decrease), the newest snapshot committed at or before cutoff
// (epoch millis). A snapshot that cannot be read (expired) counts as older.
func newestAtOrBefore(ctx context.Context, t *lake.Table, latest *lake.Snapshot, cutoff int64) (*lake.Snapshot, error) {
	if latest.TimeMillis <= cutoff {
		return latest, nil
	}
	lo, hi := int64(0), latest.ID // the answer is in [lo, hi); 0 = none
	var found *lake.Snapshot
	for lo+1 < hi {
		mid := lo + (hi-lo)/2
		snap, err := t.Snapshot(ctx, mid)
		if err != nil || snap.TimeMillis <= cutoff {
			lo = mid
			if err == nil {
				found = snap
			}
			continue
		}
		hi = mid
	}
	if found != nil && found.ID == lo {
		return found, nil
	}
	if lo == 0 {
		return nil, nil
	}
	snap, err := t.Snapshot(ctx, lo)
	if err != nil {
		return nil, nil // expired: nothing readable to anchor on
	}
	return snap, nil
}

// ExpireTable expires old snapshots of db.name. It protects the snapshots
// that running reads of this process use and the snapshot the log
// retention anchors on (see CollectTable), and everything newer.
//
// The latest snapshot is read first and the reads' pins last, in one step
// with no read choosing its snapshot meanwhile (lakestream's BeginExpire):
// a read that chose its snapshot before has pinned it, and one that
// chooses after gets the latest snapshot read here or a newer one, which
// are kept.
func (s *Service) ExpireTable(ctx context.Context, db, name string, now time.Time) (int, error) {
	return s.ExpireTableWith(ctx, db, name, now, s.opts.Expire)
}

// ExpireTableWith is ExpireTable with other retention (CALL
// sys.expire_snapshots): the same snapshots stay protected whatever opts
// asks.
func (s *Service) ExpireTableWith(ctx context.Context, db, name string, now time.Time, opts lake.ExpireOptions) (int, error) {
	t, err := s.ls.Table(ctx, db, name)
	if err != nil {
		return 0, err
	}
	latest, anchor, err := s.retentionAnchor(ctx, t, now)
	if err != nil || latest == nil {
		return 0, err
	}
	keep := latest.ID
	if anchor != nil {
		keep = anchor.ID
	}
	// The snapshot that records the log offsets must stay, or the offsets
	// would be lost behind snapshots other engines commit.
	_, ours, err := lakestream.OffsetsSnapshot(ctx, t, latest)
	if err != nil {
		return 0, err
	}
	if ours > 0 && ours < keep {
		keep = ours
	}
	if s.opts.PinnedElsewhere != nil {
		if sid := s.opts.PinnedElsewhere(lakestream.TableID(t)); sid > 0 && sid < keep {
			keep = sid
		}
	}
	keep, done := s.ls.BeginExpire(lakestream.TableID(t), keep)
	defer done()
	opts.Now = now
	opts.Protect = func(id int64) bool { return id >= keep }
	return t.ExpireSnapshots(ctx, opts)
}

// collectAll applies the log retention and snapshot expiration to every
// enabled table, then lets the log reclaim space.
func (s *Service) collectAll(ctx context.Context, now time.Time) {
	truncated := 0
	s.forEachTable(ctx, func(db, name string, t *lake.Table) {
		n, err := s.CollectTable(ctx, db, name, now)
		if err != nil {
			s.lg.Warn("log retention failed", "table", db+"."+name, "err", err)
		}
		truncated += n
		if _, err := s.ExpireTable(ctx, db, name, now); err != nil {
			s.lg.Warn("snapshot expiration failed", "table", db+"."+name, "err", err)
		}
	})
	if truncated == 0 {
		return
	}
	if err := s.ls.Log().CollectGarbage(); err != nil {
		s.lg.Warn("log garbage collection failed", "err", err)
	}
}

// removeOrphans deletes, in every enabled table, files that no snapshot
// references and that are older than a day (never a commit in progress).
func (s *Service) removeOrphans(ctx context.Context, now time.Time) {
	s.forEachTable(ctx, func(db, name string, t *lake.Table) {
		if _, err := t.RemoveOrphanFiles(ctx, 24*time.Hour, now); err != nil {
			s.lg.Warn("orphan file cleanup failed", "table", db+"."+name, "err", err)
		}
	})
}

// CompactTable fully compacts db.name now (CALL sys.compact): every
// bucket of a primary-key table that is not one top-level file already
// into one top-level file, an append table's small files into files of
// its target size. It runs under the table's lock, so not beside a
// tiering round, and commits a COMPACT snapshot that carries the log
// offsets forward; it returns its id, 0 when there was nothing to
// compact. A commit that races another committer is tried again.
func (s *Service) CompactTable(ctx context.Context, db, name string) (int64, error) {
	l := s.tableLock(db, name)
	l.Lock()
	defer l.Unlock()
	for attempt := 0; ; attempt++ {
		t, err := s.ls.Table(ctx, db, name)
		if err != nil {
			return 0, err
		}
		latest, err := t.LatestSnapshot(ctx)
		if err != nil || latest == nil {
			return 0, err
		}
		opts := lake.CompactOptions{CommitUser: lakestream.CommitUser, ExpectedLatest: latest.ID, Full: true, MinFiles: 2}
		var snap *lake.Snapshot
		if t.Schema().HasPrimaryKey() {
			snap, err = t.Compact(ctx, opts)
		} else {
			snap, err = t.CompactAppend(ctx, opts)
		}
		if errors.Is(err, lake.ErrCommitConflict) && attempt < 10 {
			continue
		}
		if err != nil || snap == nil {
			return 0, err
		}
		return snap.ID, nil
	}
}
