package lakestream

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/internal/logcodec"
	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lake/expr"
	"github.com/flightd/flightd/logstore"
	"github.com/flightd/flightd/union"
)

// ChangelogSuffix names the changelog view of a table: t$changelog.
const ChangelogSuffix = "$changelog"

// maxChangelogAttempts bounds how often Changelog starts over when log
// retention moves the start of the read away under it.
const maxChangelogAttempts = 3

// maxKeyInValues: up to this many distinct values of a key column, the
// before-image lookup filters the lake with IN (which also prunes buckets);
// beyond, with the values' range.
const maxKeyInValues = 256

// ChangelogSchema returns the schema of db.name's changelog: _change_type,
// _log_offset, _bucket, _commit_timestamp, then the table's columns.
func (s *Service) ChangelogSchema(ctx context.Context, db, name string) (*arrow.Schema, error) {
	m, err := s.lookup(ctx, db, name)
	if err != nil {
		return nil, err
	}
	return union.ChangelogSchema(m.schema), nil
}

// Changelog returns the changelog of db.name: every write that the
// retained log holds, as the changes it made to the table.
//
// Columns: _change_type ("+I", "-U", "+U", "-D"), _log_offset (the offset of
// the write that produced the row; the -U and +U of one update share it, so
// no cut by offset separates them), _bucket, _commit_timestamp (when the
// write was acknowledged, milliseconds, UTC), then the table's columns. Rows
// come per bucket in offset order (-U before +U), buckets in order.
//
// Append tables: every log row is +I, from every bucket's log start.
//
// Primary-key tables: log rows are upserts (+I/+U) or deletes (-U/-D) of
// their key. Given the key's state before the row, an upsert of an absent
// key gives +I(new), of a present key -U(old) and +U(new); a delete of a
// present key gives -D(old), where old is the stored row and not the
// delete's payload; a delete of an absent key gives nothing.
//
// The range starts where the table's state is known: at the oldest
// retained lake snapshot of the current log whose offsets are at or above
// every bucket's log start (normally the retention anchor, or the snapshot
// that anchored a re-enabled log), or at offset 0 with an empty table when
// the logs start at 0 and the log began with the table (snapshot 1 is this
// log's, or no snapshot records this log's offsets). Log records below that
// snapshot's offsets are not covered. The range ends at the high watermarks
// taken when the read starts. Before-images of keys not yet seen in the
// range come from that snapshot, by one batched lookup of the keys the
// range touches: one scan of the snapshot, pruned with a filter on the key
// columns (IN for a few distinct values, else their range) so that only
// files whose key range overlaps the range's keys are read, rows of other
// keys skipped. The snapshot is pinned against expiry during the lookup.
// Should retention truncate the log, or expire the snapshot, under the
// read, it starts over (up to 3 times) and then fails with an error that
// says so (wrapping logstore.ErrTruncated when the log was truncated).
//
// Cost: the log range is read (decoded from the log below the newest lake
// snapshot's offsets, from the log cache above them), plus the lookup,
// which reads the snapshot's files that the key filter cannot rule out
// (with keys spread over the whole key space: the whole snapshot).
// Memory, until the reader is released: the decoded log range and the
// before-images found in the lake (copied into one batch), plus the
// per-key state for the range: a slot per distinct key (its current image,
// 8 bytes; the key itself in a hash map while the lookup runs) and 4 bytes
// a log row. Output is built in batches of about 64K rows.
//
// A table whose log is off has no changelog: the error wraps ErrNotRealtime.
// Writes that other engines commit to the lake directly are not in the log
// and so not in the changelog.
func (s *Service) Changelog(ctx context.Context, db, name string) (array.RecordReader, error) {
	m, err := s.table(ctx, db, name)
	if err != nil {
		return nil, err
	}
	if !Realtime(m.table) {
		return nil, fmt.Errorf("%w: %s.%s has no changelog: it is read from the log, which needs %s=true", ErrNotRealtime, db, name, OptionEnabled)
	}
	var last error
	for attempt := 0; attempt < maxChangelogAttempts; attempt++ {
		r, _, err := s.changelog(ctx, m, nil)
		var moved *rangeMovedError
		if err == nil || !errors.As(err, &moved) {
			if err != nil {
				return nil, fmt.Errorf("lakestream: changelog of %s.%s: %w", db, name, err)
			}
			return r, nil
		}
		last = err
	}
	return nil, fmt.Errorf("lakestream: changelog of %s.%s: the start of the retained log moved %d times during the read (log retention truncated it); try again: %w", db, name, maxChangelogAttempts, last)
}

// rangeMovedError says that the start chosen for a changelog read went away
// (log truncated, snapshot expired) before it was read: start over.
type rangeMovedError struct{ err error }

func (e *rangeMovedError) Error() string { return e.err.Error() }
func (e *rangeMovedError) Unwrap() error { return e.err }

// changelogHook, when set (by tests), runs after the start of a changelog
// read is chosen and pinned, before the log is read.
var changelogHook func(snapshotID int64)

// changelog reads the changelog once; rows of a bucket named in emitFrom start
// at that offset (Changelog.EmitFrom). It returns the high watermarks the
// read ends at.
func (s *Service) changelog(ctx context.Context, m *tableMeta, emitFrom map[int32]int64) (array.RecordReader, map[int32]int64, error) {
	if err := s.log.Ready(); err != nil {
		return nil, nil, fmt.Errorf("lakestream: the changelog of %s.%s: %w", m.table.Database(), m.table.Name(), err)
	}
	// Log starts first, then the lake snapshot, then the high watermarks.
	buckets := s.log.Buckets(m.id)
	starts := make(map[int32]int64, len(buckets))
	for _, b := range buckets {
		starts[b] = s.log.Start(logstore.Bucket{Table: m.id, Bucket: b})
	}
	latest, err := m.table.LatestSnapshot(ctx)
	if err != nil {
		return nil, nil, err
	}
	tiered, err := LakeOffsets(ctx, m.table, latest)
	if err != nil {
		return nil, nil, err
	}
	pk := len(m.pk) > 0
	var snap *lake.Snapshot
	var from *Offsets // primary-key tables: the offsets snap holds (nil: 0)
	if pk {
		snap, from, err = s.changelogStart(ctx, m, latest, starts)
		if err != nil {
			return nil, nil, err
		}
	}
	if snap != nil {
		// Found by a search: pinned, then checked (see pins.pin).
		unpin, err := s.pins.pin(m.id, snap.ID)
		if err == nil {
			defer unpin()
			_, err = m.table.Snapshot(ctx, snap.ID)
		}
		if err != nil {
			return nil, nil, &rangeMovedError{fmt.Errorf("snapshot %d, where the read starts, expired before it was pinned: %w", snap.ID, err)}
		}
	}
	if changelogHook != nil {
		var id int64
		if snap != nil {
			id = snap.ID
		}
		changelogHook(id)
	}
	if err := s.log.Sync(ctx, m.id); err != nil {
		return nil, nil, fmt.Errorf("lakestream: the changelog of %s.%s: %w", m.table.Database(), m.table.Name(), err)
	}
	hws := s.log.HighWatermarks(m.id)
	order := make([]int32, 0, len(hws))
	for b := range hws {
		order = append(order, b)
	}
	slices.Sort(order)
	var entries []union.ChangelogEntry
	release := func() {
		for _, e := range entries {
			e.Rec.Release()
		}
	}
	for _, b := range order {
		lo := starts[b]
		if pk {
			lo = from.Of(b)
		}
		if lo >= hws[b] {
			continue
		}
		bk := logstore.Bucket{Table: m.id, Bucket: b}
		if err := s.readChangelogRange(ctx, m, bk, lo, hws[b], tiered.Of(b), &entries); err != nil {
			release()
			if errors.Is(err, logstore.ErrTruncated) {
				return nil, nil, &rangeMovedError{err}
			}
			return nil, nil, fmt.Errorf("read log bucket %d: %w", b, err)
		}
	}
	var filter []expr.Predicate
	if snap != nil {
		filter = keyFilter(m, entries)
	}
	cl, err := newChangelog(s.mem, m, entries)
	if err != nil {
		return nil, nil, err
	}
	if snap != nil && cl.Keys() > 0 {
		if err := s.lookupBefore(ctx, m, snap, filter, cl); err != nil {
			cl.Release()
			if _, gone := m.table.Snapshot(ctx, snap.ID); gone != nil {
				return nil, nil, &rangeMovedError{fmt.Errorf("snapshot %d expired during the read: %w", snap.ID, err)}
			}
			return nil, nil, err
		}
	}
	cl.EmitFrom(emitFrom)
	r, err := cl.Reader(ctx)
	return r, hws, err
}

// newChangelog is union.NewChangelog for m, with versions ordered by the
// table's sequence fields when it has them.
func newChangelog(mem memory.Allocator, m *tableMeta, entries []union.ChangelogEntry) (*union.Changelog, error) {
	if m.seqErr != nil {
		union.ReleaseEntries(entries)
		return nil, m.seqErr
	}
	cl, err := union.NewChangelog(mem, m.schema, m.key, entries)
	if err != nil {
		return nil, err
	}
	if m.seq != nil {
		cl.OrderVersions(m.seq)
	}
	return cl, nil
}

// lookupBefore passes the rows of snap that may hold the range's keys to cl.
// A table with sequence fields passes its lake retractions too, with their
// kinds (union.Changelog.AddBefore): they beat older log versions.
func (s *Service) lookupBefore(ctx context.Context, m *tableMeta, snap *lake.Snapshot, filter []expr.Predicate, cl *union.Changelog) error {
	if m.seqErr != nil {
		return m.seqErr
	}
	r, err := m.table.Scan(ctx, snap, lake.ScanOptions{Filter: filter, KeepKinds: m.seq != nil})
	if err != nil {
		return err
	}
	defer r.Release()
	for r.Next() {
		if err := cl.AddBefore(ctx, r.RecordBatch()); err != nil {
			return err
		}
	}
	return r.Err()
}

// changelogStart returns the lake snapshot a primary-key changelog starts
// at and the offsets it holds (see Changelog); nil, nil for offset 0 with
// an empty table.
func (s *Service) changelogStart(ctx context.Context, m *tableMeta, latest *lake.Snapshot, starts map[int32]int64) (*lake.Snapshot, *Offsets, error) {
	atZero := true
	for _, st := range starts {
		atZero = atZero && st == 0
	}
	if latest == nil {
		if atZero {
			return nil, nil, nil
		}
		return nil, nil, fmt.Errorf("the log was truncated (starts %v) but the table has no snapshot", starts)
	}
	newest, newestID, err := OffsetsSnapshot(ctx, m.table, latest)
	if err != nil {
		return nil, nil, err
	}
	if newest == nil {
		if atZero {
			return nil, nil, nil // nothing tiered yet: the log began with the table
		}
		return nil, nil, fmt.Errorf("the log was truncated (starts %v) but no snapshot records its offsets", starts)
	}
	if atZero {
		// Snapshot 1 being this log's means the log began with the table,
		// empty: offset 0 is a known start, older than any snapshot.
		if first, err := m.table.Snapshot(ctx, 1); err == nil {
			if o, ok, err := snapshotOffsets(first); err != nil {
				return nil, nil, err
			} else if ok && o.TableID == m.id {
				return nil, nil, nil
			}
		}
	}
	usable := func(o *Offsets) bool {
		if o.TableID != m.id {
			return false
		}
		for b, st := range starts {
			if o.Of(b) < st {
				return false
			}
		}
		return true
	}
	if !usable(newest) {
		return nil, nil, fmt.Errorf("the log starts (%v) above the offsets of the newest snapshot %d (%v): no lake state to start from", starts, newestID, newest.BucketOffsets)
	}
	loaded := map[int64]*lake.Snapshot{latest.ID: latest}
	get := func(id int64) *lake.Snapshot {
		if sn, ok := loaded[id]; ok {
			return sn
		}
		sn, err := m.table.Snapshot(ctx, id)
		if err != nil {
			sn = nil // expired (or unreadable): treated as older than any start
		}
		loaded[id] = sn
		return sn
	}
	best, bestOffs := get(newestID), newest
	if best == nil {
		return nil, nil, &rangeMovedError{fmt.Errorf("snapshot %d expired during the read", newestID)}
	}
	// probe: the first snapshot at or after id that records offsets, and
	// whether the read can start there. Usability only grows with the id
	// (offsets only grow; an older log's snapshots come first), so a binary
	// search finds the oldest usable one.
	probe := func(id int64) (*lake.Snapshot, *Offsets, bool, error) {
		for ; id < newestID; id++ {
			sn := get(id)
			if sn == nil {
				return nil, nil, false, nil
			}
			o, ok, err := snapshotOffsets(sn)
			if err != nil {
				return nil, nil, false, err
			}
			if ok {
				return sn, o, usable(o), nil
			}
		}
		return best, newest, true, nil
	}
	lo, hi := int64(0), newestID // f(lo) false, f(hi) true
	for lo+1 < hi {
		mid := lo + (hi-lo)/2
		sn, o, ok, err := probe(mid)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			hi, best, bestOffs = mid, sn, o
		} else {
			lo = mid
		}
	}
	return best, bestOffs, nil
}

// snapshotOffsets returns the offsets snap itself records, if any.
func snapshotOffsets(snap *lake.Snapshot) (*Offsets, bool, error) {
	v, ok := snap.Properties[OffsetsProperty]
	if !ok {
		return nil, false, nil
	}
	o, err := decodeOffsets(v)
	if err != nil {
		return nil, false, fmt.Errorf("snapshot %d: %w", snap.ID, err)
	}
	return o, true, nil
}

// readChangelogRange appends the log entries of b in [from, to) to out.
// Below tiered (the newest lake offsets) entries are decoded from the log
// without touching the log cache, which holds the un-tiered delta only.
func (s *Service) readChangelogRange(ctx context.Context, m *tableMeta, b logstore.Bucket, from, to, tiered int64, out *[]union.ChangelogEntry) error {
	if direct := min(to, tiered); from < direct {
		cursor := from
		err := s.log.Read(ctx, b, from, direct, func(base, rows int64, payload []byte) error {
			rec, kinds, err := s.decodeEntry(ctx, m, base, rows, payload)
			if err != nil {
				return err
			}
			at, _ := logcodec.WriteTime(payload)
			lo, hi := max(from-base, 0), min(rows, direct-base)
			lb := sliceBatch(union.LogBatch{Rec: rec, Kinds: kinds}, lo, hi)
			*out = append(*out, union.ChangelogEntry{LogBatch: lb, Bucket: b.Bucket, Offset: base + lo, Time: at})
			cursor = base + hi
			return nil
		})
		if err != nil {
			return err
		}
		if cursor != direct {
			return fmt.Errorf("lakestream: log of %v ends at offset %d, below %d", b, cursor, direct)
		}
		from = direct
	}
	if from >= to {
		return nil
	}
	return s.readLog(ctx, m, b, from, to, true, func(lb union.LogBatch, base int64, at time.Time) error {
		*out = append(*out, union.ChangelogEntry{LogBatch: lb, Bucket: b.Bucket, Offset: base, Time: at})
		return nil
	})
}

// keyFilter returns predicates on the key columns (tableMeta.key: the
// primary key, and partition columns it leaves out) that every key of the
// entries satisfies: IN of the values when there are few, else their
// range. Columns of types the lake cannot prune on get none, and so do
// columns holding a NULL (a partition column may).
func keyFilter(m *tableMeta, entries []union.ChangelogEntry) []expr.Predicate {
	var out []expr.Predicate
	for _, ci := range m.key {
		name := m.schema.Field(ci).Name
		if slices.ContainsFunc(entries, func(e union.ChangelogEntry) bool { return e.Rec.Column(ci).NullN() > 0 }) {
			continue
		}
		ints, dates, strs := newValueSet[int64](), newValueSet[arrow.Date32](), newValueSet[string]()
		for _, e := range entries {
			switch a := e.Rec.Column(ci).(type) {
			case *array.Int8:
				for _, v := range a.Int8Values() {
					ints.add(int64(v))
				}
			case *array.Int16:
				for _, v := range a.Int16Values() {
					ints.add(int64(v))
				}
			case *array.Int32:
				for _, v := range a.Int32Values() {
					ints.add(int64(v))
				}
			case *array.Int64:
				for _, v := range a.Int64Values() {
					ints.add(v)
				}
			case *array.Date32:
				for _, v := range a.Date32Values() {
					dates.add(v)
				}
			case *array.String:
				for i := 0; i < a.Len(); i++ {
					strs.add(a.Value(i))
				}
			case *array.LargeString:
				for i := 0; i < a.Len(); i++ {
					strs.add(a.Value(i))
				}
			}
		}
		out = append(out, ints.predicates(name)...)
		out = append(out, dates.predicates(name)...)
		out = append(out, strs.predicates(name)...)
	}
	return out
}

// valueSet tracks the range of a key column's values and, while they are
// few, the values themselves.
type valueSet[T int64 | arrow.Date32 | string] struct {
	seen   bool
	lo, hi T
	vals   map[T]struct{} // nil once past maxKeyInValues
}

func newValueSet[T int64 | arrow.Date32 | string]() *valueSet[T] {
	return &valueSet[T]{vals: map[T]struct{}{}}
}

func (v *valueSet[T]) add(x T) {
	if !v.seen || x < v.lo {
		v.lo = x
	}
	if !v.seen || x > v.hi {
		v.hi = x
	}
	v.seen = true
	if v.vals != nil {
		v.vals[x] = struct{}{}
		if len(v.vals) > maxKeyInValues {
			v.vals = nil
		}
	}
}

func (v *valueSet[T]) predicates(col string) []expr.Predicate {
	if !v.seen {
		return nil
	}
	if v.vals != nil {
		xs := make([]T, 0, len(v.vals))
		for x := range v.vals {
			xs = append(xs, x)
		}
		slices.SortFunc(xs, cmp.Compare[T])
		vals := make([]any, len(xs))
		for i, x := range xs {
			vals[i] = x
		}
		return []expr.Predicate{{Column: col, Op: expr.OpIn, Values: vals}}
	}
	return []expr.Predicate{{Column: col, Op: expr.OpGe, Values: []any{v.lo}}, {Column: col, Op: expr.OpLe, Values: []any{v.hi}}}
}
