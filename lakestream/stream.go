package lakestream

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/internal/arrowutil"
	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lake/expr"
	"github.com/flightd/flightd/logstore"
	"github.com/flightd/flightd/union"
)

// ErrStreamBehind wraps the error of a stream whose position the log no
// longer holds: log retention truncated it while the reader lagged.
var ErrStreamBehind = errors.New("the stream fell behind the log")

// streamRoundRows bounds the new log rows one round of a stream turns into
// changes (shared by the buckets that have some): a reader far behind
// catches up in rounds of bounded memory.
var streamRoundRows int64 = 256 << 10 // a variable for tests

// streamCheck is how often a stream waiting for writes checks that its
// table still exists with the schema it started with.
const streamCheck = time.Second

// StreamOptions configure Stream.
type StreamOptions struct {
	// Changelog starts with the table's retained changelog (t$changelog)
	// instead of its current rows.
	Changelog bool
	// After is a resume position: each bucket named continues with the
	// changes after that log offset, and neither its current rows nor its
	// changelog are read.
	After map[int32]int64
	// AfterAll, when set, is the position of every bucket After does not
	// name.
	AfterAll *int64
	// Filter prunes the scan of the current rows (see ScanOptions.Filter);
	// rows are not filtered.
	Filter []expr.Predicate
}

// after returns the resume position of bucket b, if any.
func (o *StreamOptions) after(b int32) (int64, bool) {
	if n, ok := o.After[b]; ok {
		return n, true
	}
	if o.AfterAll != nil {
		return *o.AfterAll, true
	}
	return 0, false
}

// StreamSchema is the schema of Stream's rows: the changelog's.
func (s *Service) StreamSchema(ctx context.Context, db, name string) (*arrow.Schema, error) {
	return s.ChangelogSchema(ctx, db, name)
}

// Stream reads db.name unbounded: its current rows (t$rt, read at one cut
// of lake snapshot and log), each as +I, then every change written after
// that cut, as the changelog spells them (Changelog), until ctx ends. With
// opts.Changelog it starts with the retained changelog instead of the
// current rows. The rows have the changelog's schema; a current row's
// _log_offset is its bucket's high watermark at the cut minus one (the last
// write it reflects; -1 when its bucket had none) and its
// _commit_timestamp is null. The current rows (or the changelog) come
// first, bucket by bucket, and then an empty batch marks their end; the
// changes follow per bucket in offset order.
//
// A resume position (opts.After, opts.AfterAll) makes the buckets it names
// continue after their offsets: no current rows, no changelog. A position
// is that of the last row a reader saw of the bucket, taken after the
// empty batch; a bucket the position does not name starts again with its
// current rows.
//
// Changes come from the log: as soon as a write is acknowledged, the
// reader wakes (logstore.Store.Advanced) and turns the new entries into
// changes. For a primary-key table, their before-images come from the
// newest lake snapshot at or below the reader's position (the anchor),
// brought up to date by the un-tiered rows below the position, and from
// one pruned lookup of the new rows' keys in that snapshot, as Changelog
// does. The state of every key the rounds since the anchor touched is
// carried from round to round (streamCarry, union.KeyStates), so the
// un-tiered rows are read again only once per anchor and bucket: after
// that a round costs O(its new rows). BenchmarkStreamRound delivers a
// write in 0.57 ms over 1M un-tiered rows (36 ms when every round read
// them again); the one round that does read them again costs about 0.1 s
// per million. A round takes at most streamRoundRows new rows; the carry
// holds a row per key touched since the anchor, up to streamCarryMaxBytes
// (64 MiB), past which rounds replay again until the anchor moves. The
// reader never blocks writers or tiering; a reader that lags until log
// retention truncates its position fails with an error wrapping
// ErrStreamBehind. A table dropped, or whose schema changes, ends the
// stream with an error; the reader resumes from its position.
func (s *Service) Stream(ctx context.Context, db, name string, opts StreamOptions) (array.RecordReader, error) {
	m, err := s.table(ctx, db, name)
	if err != nil {
		return nil, err
	}
	if !Realtime(m.table) {
		return nil, fmt.Errorf("%w: %s.%s cannot be streamed: it is read from the log, which needs %s=true", ErrNotRealtime, db, name, OptionEnabled)
	}
	if _, err := s.optionTravel(ctx, m, db, name, !opts.Changelog); err != nil {
		return nil, err
	}
	r := &streamReader{ctx: ctx, s: s, db: db, name: name, m: m, schema: union.ChangelogSchema(m.schema), pos: map[int32]int64{}}
	r.refs.Store(1)
	resumed := func(b int32) bool { _, ok := opts.after(b); return ok }
	all := opts.AfterAll != nil
	if opts.Changelog {
		var hws map[int32]int64
		if !all {
			from := map[int32]int64{}
			for b, n := range opts.After {
				from[b] = n + 1
			}
			r.first, hws, err = s.changelogFrom(ctx, m, from)
			if err != nil {
				return nil, fmt.Errorf("lakestream: stream %s.%s: %w", db, name, err)
			}
		}
		for b, hw := range hws {
			r.pos[b] = hw
		}
	} else if !all {
		// The cut's snapshot stays pinned until the scan has pinned it.
		cut, unpin, err := s.cut(ctx, db, name, true)
		if err != nil {
			return nil, err
		}
		sc, err := s.ScanWith(ctx, db, name, ScanOptions{Realtime: true, At: &cut, Filter: opts.Filter, Expect: m.schema})
		unpin()
		if err != nil {
			return nil, err
		}
		r.first = &currentRows{ctx: ctx, r: sc, m: m, cut: cut, skip: resumed, mem: s.mem, schema: r.schema}
		for b, hw := range cut.Log {
			r.pos[b] = hw
		}
	}
	// A bucket the position names continues after it: past the changelog's
	// end when the changelog read it from there, else right after it (its
	// current rows were left out).
	for b, n := range opts.After {
		if opts.Changelog {
			r.pos[b] = max(r.pos[b], n+1)
		} else {
			r.pos[b] = n + 1
		}
	}
	if all {
		r.allFrom = *opts.AfterAll + 1
		r.hasAll = true
		for b := range r.pos {
			if _, named := opts.After[b]; !named {
				r.pos[b] = r.allFrom
			}
		}
	}
	if r.first == nil {
		r.marked = true // nothing comes first: no marker
	}
	return r, nil
}

// streamReader is Stream's reader.
type streamReader struct {
	refs   atomic.Int64
	ctx    context.Context
	s      *Service
	db     string
	name   string
	m      *tableMeta
	schema *arrow.Schema

	first  array.RecordReader // the current rows or the changelog; nil once read
	marked bool               // the empty batch after first was sent
	// pos is the next offset to emit of each bucket; a bucket not in it
	// starts at 0, or at allFrom with hasAll.
	pos     map[int32]int64
	allFrom int64
	hasAll  bool
	round   []arrow.RecordBatch // the changes of the current round not yet returned
	carry   *streamCarry        // primary-key tables: the key states the rounds since their anchor left

	cur arrow.RecordBatch
	err error
}

func (r *streamReader) Retain() { r.refs.Add(1) }

func (r *streamReader) Release() {
	if r.refs.Add(-1) != 0 {
		return
	}
	r.releaseCur()
	if r.first != nil {
		r.first.Release()
		r.first = nil
	}
	for _, b := range r.round {
		b.Release()
	}
	r.round = nil
	r.carry.release()
	r.carry = nil
}

func (r *streamReader) releaseCur() {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
}

func (r *streamReader) Schema() *arrow.Schema          { return r.schema }
func (r *streamReader) RecordBatch() arrow.RecordBatch { return r.cur }

// Record is the deprecated spelling of RecordBatch.
func (r *streamReader) Record() arrow.RecordBatch { return r.cur }
func (r *streamReader) Err() error                { return r.err }

func (r *streamReader) Next() bool {
	r.releaseCur()
	if r.err != nil {
		return false
	}
	for {
		if err := r.ctx.Err(); err != nil {
			r.err = context.Cause(r.ctx)
			return false
		}
		if r.first != nil {
			if r.first.Next() {
				r.cur = r.first.RecordBatch()
				r.cur.Retain()
				return true
			}
			err := r.first.Err()
			r.first.Release()
			r.first = nil
			if err != nil {
				r.err = fmt.Errorf("lakestream: stream %s.%s: %w", r.db, r.name, err)
				return false
			}
		}
		if !r.marked {
			r.marked = true
			r.cur = arrowutil.EmptyBatch(r.s.mem, r.schema)
			return true
		}
		if len(r.round) > 0 {
			r.cur = r.round[0]
			r.round = r.round[1:]
			return true
		}
		if err := r.nextRound(); err != nil {
			r.err = fmt.Errorf("lakestream: stream %s.%s: %w", r.db, r.name, err)
			return false
		}
	}
}

func (r *streamReader) posOf(b int32) int64 {
	if p, ok := r.pos[b]; ok {
		return p
	}
	if r.hasAll {
		return r.allFrom
	}
	return 0
}

// nextRound waits for log entries past the position and turns them into
// the next round of changes.
func (r *streamReader) nextRound() error {
	check := time.NewTimer(streamCheck)
	defer check.Stop()
	for {
		woken := r.s.log.Advanced()
		if found, err := r.poll(); err != nil || found {
			return err
		}
		select {
		case <-r.ctx.Done():
			return context.Cause(r.ctx)
		case <-woken:
		case <-check.C:
			if err := r.checkTable(); err != nil {
				return err
			}
			check.Reset(streamCheck)
		}
	}
}

// poll turns the log entries past the position, if there are any, into a
// round of changes (which may hold no rows: a delete of an absent key
// changes nothing). found says whether there were entries.
func (r *streamReader) poll() (found bool, err error) {
	if err := r.s.log.Ready(); err != nil {
		return false, err
	}
	hws := r.s.log.HighWatermarks(r.m.id)
	to := map[int32]int64{}
	for b, hw := range hws {
		if p := r.posOf(b); hw > p {
			to[b] = hw
		}
	}
	if len(to) == 0 {
		return false, nil
	}
	// A round takes at most streamRoundRows rows, shared by the buckets
	// that have new ones.
	share := max(streamRoundRows/int64(len(to)), min(streamRoundRows, 1024))
	for b, hw := range to {
		to[b] = min(hw, r.posOf(b)+share)
	}
	from := make(map[int32]int64, len(to))
	for b := range to {
		from[b] = r.posOf(b)
	}
	rr, carry, err := r.s.changesBetween(r.ctx, r.m, from, to, r.carry)
	if err != nil {
		return true, err
	}
	if carry != r.carry {
		r.carry.release()
		r.carry = carry
	}
	batches, err := drain(rr, func(rr array.RecordReader) error {
		if carry == nil {
			return nil
		}
		st, err := union.FinalState(r.ctx, rr)
		if err != nil {
			return err
		}
		if err := carry.states.Update(r.ctx, st); err != nil {
			return err
		}
		maps.Copy(carry.upto, to)
		if carry.states.Bytes() > streamCarryMaxBytes {
			// A busy table with tiering behind: replay rather than hold
			// more (the next round starts a new carry).
			carry.release()
			r.carry = nil
		}
		return nil
	})
	if err != nil {
		r.carry.release()
		r.carry = nil
		return true, err
	}
	maps.Copy(r.pos, to)
	r.round = batches
	return true, nil
}

// streamCarryMaxBytes bounds what a stream's carry holds: past it the
// carry is dropped and the next round replays the un-tiered rows, as if
// the anchor had moved. A variable for tests.
var streamCarryMaxBytes int64 = 64 << 20

// streamCarryOff makes every round of a primary-key stream replay the
// un-tiered rows below its position (a test hook, to compare).
var streamCarryOff = false

// streamCarry is what the rounds of a primary-key stream since their
// anchor snapshot left: the state of every key they touched
// (union.KeyStates). A round with the same anchor starts each bucket the
// states reach from them instead of reading the log again from the
// anchor's offsets, so it costs O(its new rows), not O(the un-tiered log);
// a bucket they do not reach yet is replayed once. A new anchor (tiering
// committed, compaction) starts a new carry.
type streamCarry struct {
	anchor int64           // the anchor snapshot's id (0: none), which fixes where each bucket's replay starts
	upto   map[int32]int64 // the states hold bucket b's log rows from that start up to upto[b]
	states *union.KeyStates
}

func (c *streamCarry) release() {
	if c != nil {
		c.states.Release()
	}
}

// reaches reports whether c holds the state at from of bucket b: its
// states reach from, or b has none and from is where the anchor's range
// starts. The second result is false when c holds states of b that stop
// elsewhere: c cannot be used.
func (c *streamCarry) reaches(b int32, start, from int64) (reached, usable bool) {
	u, ok := c.upto[b]
	if !ok {
		return from == start, true
	}
	return u == from, u == from
}

// drain reads r whole, leaving out empty batches, calls final (when not
// nil) and releases r. A round is bounded (streamRoundRows), and reading
// it whole lets the reader know when it has nothing left to return.
func drain(r array.RecordReader, final func(array.RecordReader) error) ([]arrow.RecordBatch, error) {
	defer r.Release()
	var out []arrow.RecordBatch
	for r.Next() {
		if b := r.RecordBatch(); b.NumRows() > 0 {
			b.Retain()
			out = append(out, b)
		}
	}
	err := r.Err()
	if err == nil && final != nil {
		err = final(r)
	}
	if err != nil {
		for _, b := range out {
			b.Release()
		}
		return nil, err
	}
	return out, nil
}

// checkTable fails when the table was dropped or its schema changed.
func (r *streamReader) checkTable() error {
	m, err := r.s.table(r.ctx, r.db, r.name)
	if err != nil {
		return err
	}
	if m.id != r.m.id {
		return fmt.Errorf("%w: the table was dropped and created again", lake.ErrTableNotFound)
	}
	if m.ts.ID != r.m.ts.ID {
		return fmt.Errorf("%w: the table's schema changed (schema %d to %d); read again from the position reached", ErrSchemaChanged, r.m.ts.ID, m.ts.ID)
	}
	return nil
}

// changelogFrom is Changelog whose rows of a bucket named in from start at
// that offset; it returns the high watermarks the changelog ends at.
func (s *Service) changelogFrom(ctx context.Context, m *tableMeta, from map[int32]int64) (array.RecordReader, map[int32]int64, error) {
	var last error
	for attempt := 0; attempt < maxChangelogAttempts; attempt++ {
		r, hws, err := s.changelog(ctx, m, from)
		var moved *rangeMovedError
		if err == nil || !errors.As(err, &moved) {
			return r, hws, err
		}
		last = err
	}
	return nil, nil, fmt.Errorf("the start of the retained log moved %d times during the read (log retention truncated it); try again: %w", maxChangelogAttempts, last)
}

// changesBetween returns the changes of the log rows [from[b], to[b]) of
// each bucket named. For a primary-key table it also returns the carry the
// round continues (carry itself when it covers from, else a new one for
// this round's anchor; nil for an append table): the caller adds the
// round's final key states to it (union.FinalState, KeyStates.Update).
func (s *Service) changesBetween(ctx context.Context, m *tableMeta, from, to map[int32]int64, carry *streamCarry) (array.RecordReader, *streamCarry, error) {
	// The latest snapshot is pinned as it is chosen (see pins): it is
	// the anchor unless the reader is behind the lake.
	latest, unpinLatest, err := s.pins.choose(m.id, false, func() (*lake.Snapshot, error) { return m.table.LatestSnapshot(ctx) })
	if err != nil {
		return nil, nil, err
	}
	defer unpinLatest()
	tiered, err := LakeOffsets(ctx, m.table, latest)
	if err != nil {
		return nil, nil, err
	}
	order := slices.Sorted(maps.Keys(to))
	pk := len(m.pk) > 0
	start := from // where each bucket's log range starts
	var anchor *lake.Snapshot
	if pk {
		anchor, start, err = s.streamAnchor(ctx, m, latest, tiered, from)
		if err != nil {
			return nil, nil, err
		}
		if anchor != nil && anchor != latest {
			// Found by a search: pinned, then checked (see pins.pin).
			unpin, err := s.pins.pin(m.id, anchor.ID)
			if err == nil {
				defer unpin()
				_, err = m.table.Snapshot(ctx, anchor.ID)
			}
			if err != nil {
				return nil, nil, fmt.Errorf("snapshot %d, where the changes' keys are looked up, expired: %w", anchor.ID, err)
			}
		}
	}
	var anchorID int64
	if anchor != nil {
		anchorID = anchor.ID
	}
	// Where each bucket's log range starts: at from where the carry holds
	// the state there, else at the anchor's offsets (replayed).
	readFrom := start
	replayed := map[int32]bool{}
	if pk && !streamCarryOff {
		usable := carry != nil && carry.anchor == anchorID
		for b, f := range from {
			if usable {
				_, usable = carry.reaches(b, start[b], f)
			}
		}
		if !usable {
			carry = &streamCarry{anchor: anchorID, upto: map[int32]int64{}, states: union.NewKeyStates(s.mem, m.schema, m.key)}
		}
		readFrom = make(map[int32]int64, len(from))
		for b, f := range from {
			readFrom[b] = start[b]
			if reached, _ := carry.reaches(b, start[b], f); reached {
				readFrom[b] = f
			} else {
				replayed[b] = true
			}
		}
	} else {
		carry = nil
		for b := range from {
			replayed[b] = true
		}
	}
	var entries []union.ChangelogEntry
	for _, b := range order {
		bk := logstore.Bucket{Table: m.id, Bucket: b}
		if err := s.readChangelogRange(ctx, m, bk, readFrom[b], to[b], tiered.Of(b), &entries); err != nil {
			for _, e := range entries {
				e.Rec.Release()
			}
			if errors.Is(err, logstore.ErrTruncated) {
				return nil, nil, fmt.Errorf("%w: bucket %d at offset %d (log retention truncated it; read again without a position): %w", ErrStreamBehind, b, readFrom[b], err)
			}
			return nil, nil, fmt.Errorf("read log bucket %d: %w", b, err)
		}
	}
	var filter []expr.Predicate
	if anchor != nil {
		// Only the new rows' keys need before-images, unless the carry
		// keeps the states of a replayed bucket's keys and the table has
		// sequence fields: then every key's state depends on its lake
		// version (which may beat its log rows), not only on its last log
		// row.
		var fresh []union.ChangelogEntry
		for _, e := range entries {
			if e.Offset+e.Rec.NumRows() > from[e.Bucket] || (carry != nil && m.seq != nil && replayed[e.Bucket]) {
				fresh = append(fresh, e)
			}
		}
		filter = keyFilter(m, fresh)
	}
	var states union.LogBatch
	if carry != nil {
		if states, err = carry.states.For(ctx, entries); err != nil {
			union.ReleaseEntries(entries)
			return nil, nil, err
		}
		if states.Rec != nil {
			defer states.Rec.Release()
		}
	}
	cl, err := newChangelog(s.mem, m, entries)
	if err != nil {
		return nil, nil, err
	}
	cl.EmitFrom(from)
	if anchor != nil && cl.Keys() > 0 {
		if err := s.lookupBefore(ctx, m, anchor, filter, cl); err != nil {
			cl.Release()
			return nil, nil, err
		}
	}
	if err := cl.AddState(ctx, states); err != nil { // after the lake's rows: they override them
		cl.Release()
		return nil, nil, err
	}
	r, err := cl.Reader(ctx)
	return r, carry, err
}

// streamAnchor returns the lake snapshot whose state a primary-key
// stream's round starts from, and where each bucket's log range then
// starts: the latest snapshot when its offsets are at or below from in
// every bucket (the usual case: the reader keeps up with tiering), else the
// newest snapshot recording this log's offsets that is; nil with offset 0
// when the log began with the table and nothing older qualifies.
func (s *Service) streamAnchor(ctx context.Context, m *tableMeta, latest *lake.Snapshot, tiered *Offsets, from map[int32]int64) (*lake.Snapshot, map[int32]int64, error) {
	below := func(o *Offsets) bool {
		if o == nil || o.TableID != m.id {
			return false
		}
		for b, f := range from {
			if o.Of(b) > f {
				return false
			}
		}
		return true
	}
	starts := func(o *Offsets) map[int32]int64 {
		out := make(map[int32]int64, len(from))
		for b := range from {
			if o != nil {
				out[b] = o.Of(b)
			}
		}
		return out
	}
	if latest == nil || tiered == nil {
		return nil, starts(nil), nil // nothing tiered: the log holds everything from 0
	}
	if below(tiered) {
		return latest, starts(tiered), nil
	}
	// The reader is behind the lake: search the snapshots that record
	// offsets for the newest one at or below it. Offsets only grow with the
	// id, so "at or below" holds for a prefix of them.
	_, newestID, err := OffsetsSnapshot(ctx, m.table, latest)
	if err != nil {
		return nil, nil, err
	}
	lo, hi := int64(0), newestID // lo: usable or 0; hi: not usable
	var best *lake.Snapshot
	var bestOffs *Offsets
	for lo+1 < hi {
		mid := lo + (hi-lo)/2
		sn, err := m.table.Snapshot(ctx, mid)
		if err != nil {
			lo = mid // expired: older than anything usable we could find
			continue
		}
		o, ok, err := snapshotOffsets(sn)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			o, err = LakeOffsets(ctx, m.table, sn)
			if err != nil {
				return nil, nil, err
			}
		}
		if o == nil || below(o) {
			lo, best, bestOffs = mid, sn, o
		} else {
			hi = mid
		}
	}
	if best != nil && bestOffs != nil {
		return best, starts(bestOffs), nil
	}
	// No snapshot is old enough: only a log that began with the table,
	// still whole, holds the state.
	for b := range from {
		if st := s.log.Start(logstore.Bucket{Table: m.id, Bucket: b}); st > 0 {
			return nil, nil, fmt.Errorf("%w: no lake snapshot is at or below the position (bucket %d at %d) and the log starts at %d", ErrStreamBehind, b, from[b], st)
		}
	}
	if first, err := m.table.Snapshot(ctx, 1); err == nil {
		if o, ok, err := snapshotOffsets(first); err != nil {
			return nil, nil, err
		} else if !ok || o.TableID != m.id {
			return nil, nil, fmt.Errorf("%w: the table has lake rows from before its log, and no snapshot at or below the position is left", ErrStreamBehind)
		}
	}
	return nil, starts(nil), nil
}

// currentRows turns a t$rt scan at cut into changelog rows: +I, the
// bucket's high watermark at the cut minus one, the bucket, no time. Rows
// of buckets skip names are left out.
type currentRows struct {
	refs   atomic.Int64
	ctx    context.Context
	r      array.RecordReader
	m      *tableMeta
	cut    Cut
	skip   func(int32) bool
	mem    memory.Allocator
	schema *arrow.Schema
	cur    arrow.RecordBatch
	err    error
}

func (c *currentRows) Retain() { c.refs.Add(1) }
func (c *currentRows) Release() {
	if c.refs.Add(-1) > 0 {
		return
	}
	if c.cur != nil {
		c.cur.Release()
		c.cur = nil
	}
	c.r.Release()
}
func (c *currentRows) Schema() *arrow.Schema          { return c.schema }
func (c *currentRows) RecordBatch() arrow.RecordBatch { return c.cur }
func (c *currentRows) Record() arrow.RecordBatch      { return c.cur }
func (c *currentRows) Err() error                     { return c.err }

func (c *currentRows) Next() bool {
	if c.cur != nil {
		c.cur.Release()
		c.cur = nil
	}
	for c.err == nil && c.r.Next() {
		rec := c.r.RecordBatch()
		out, err := c.convert(rec)
		if err != nil {
			c.err = err
			return false
		}
		if out != nil {
			c.cur = out
			return true
		}
	}
	if c.err == nil {
		c.err = c.r.Err()
	}
	return false
}

func (c *currentRows) convert(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	n := int(rec.NumRows())
	if n == 0 {
		return nil, nil
	}
	buckets, err := c.m.table.Buckets(rec)
	if err != nil {
		return nil, fmt.Errorf("bucket of current rows: %w", err)
	}
	var keep []int32
	all := true
	for i, b := range buckets {
		if c.skip(b) {
			all = false
			continue
		}
		keep = append(keep, int32(i))
	}
	if len(keep) == 0 {
		return nil, nil
	}
	data := rec
	if !all {
		data, _, err = takeRows(c.ctx, c.mem, rec, nil, keep)
		if err != nil {
			return nil, err
		}
		defer data.Release()
		kept := make([]int32, len(keep))
		for i, k := range keep {
			kept[i] = buckets[k]
		}
		buckets = kept
	}
	m := len(buckets)
	kinds := make([]byte, m) // all union.KindInsert
	offsets := make([]int64, m)
	for i, b := range buckets {
		offsets[i] = c.cut.Log[b] - 1
	}
	meta := union.ChangeColumns(c.mem, kinds, offsets, buckets, make([]int64, m), make([]bool, m))
	defer func() {
		for _, a := range meta {
			a.Release()
		}
	}()
	return array.NewRecordBatch(c.schema, append(meta, data.Columns()...), int64(m)), nil
}
