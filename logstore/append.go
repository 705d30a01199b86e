package logstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/dgraph-io/badger/v4"
)

type reqKind uint8

const (
	reqAppend reqKind = iota
	reqDrop
)

// request is one Append (or a DropTable barrier) waiting for the committer.
type request struct {
	kind reqKind

	// append
	entries []Entry
	vals    []*[]byte      // encoded values, from valPool
	bases   []int64        // assigned under mu at enqueue
	states  []*bucketState // per entry, resolved at enqueue
	bytes   int64          // encoded value bytes
	size    int64          // Badger's transaction size estimate
	count   int64          // Badger entries

	// drop
	table    string
	oldTable *tableState

	done chan error // cap 1
}

// maxTableLen bounds table ids so keys stay far below Badger's 64 KB key limit.
const maxTableLen = 1024

var valPool = sync.Pool{New: func() any { return new([]byte) }}

// Append writes all entries atomically: either all become durable and visible, or
// none. It returns each entry's base offset. It returns only after the entries are
// durable (with SyncWrites) and the high watermarks cover them.
//
// Offsets are assigned when the call is queued; within a bucket, entries of one call
// get consecutive offsets in slice order. Concurrent calls share commits: one
// goroutine puts every queued call into one Badger transaction and one fsync (group
// commit). High watermarks advance in offset order, after durability.
//
// ctx is checked before the call is queued (a cancelled ctx returns ctx.Err() with
// nothing written); once queued, Append waits for the outcome, which is bounded by the
// disk. Errors returned before queueing (ctx, ErrClosed, ErrInvalidEntry,
// ErrAppendTooLarge) mean nothing was written.
//
// If a commit fails, the outcome of that group is unknown (as after any failed fsync:
// its entries may or may not be there after a restart), and the store refuses further
// appends, returning that failure, until it is reopened: offsets already handed to
// queued calls cannot be reused safely. Reads keep working up to the high watermark.
//
// Except when the disk is full: if writing a segment fails with ENOSPC or EDQUOT,
// before Badger has seen any of the group, the Append fails with ErrDiskFull (naming
// the log's directory) and nothing of it was written; so do the appends queued behind
// it, and their offsets are reused. The store stays open and later appends succeed once
// space is freed. Their segment writes go to a new segment file, never after bytes
// whose write or sync failed. A disk-full failure inside Badger's commit is ErrDiskFull
// too, but its outcome is unknown and the store refuses appends until reopened.
//
// Append does not keep entries[i].Payload after it returns.
func (s *Store) Append(ctx context.Context, entries []Entry) ([]int64, error) {
	wait, err := s.AppendAsync(ctx, entries)
	if err != nil {
		return nil, err
	}
	return wait()
}

// AppendAsync is Append in two steps, so that a writer can prepare its next
// entries while these are committed: it queues the entries (their offsets
// are assigned now, so entries queued later come after them) and returns a
// function that waits for the outcome and returns the base offsets, as
// Append does. Call wait exactly once. The entries are durable and visible
// only when wait has returned nil; an error from AppendAsync means nothing
// was queued. The payloads are copied before it returns.
func (s *Store) AppendAsync(ctx context.Context, entries []Entry) (wait func() ([]int64, error), err error) {
	if len(entries) == 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return func() ([]int64, error) { return nil, nil }, nil
	}
	req := &request{
		kind:    reqAppend,
		entries: entries,
		vals:    make([]*[]byte, len(entries)),
		bases:   make([]int64, len(entries)),
		states:  make([]*bucketState, len(entries)),
		done:    make(chan error, 1),
	}
	queued := false
	defer func() {
		if !queued {
			req.release()
		}
	}()
	for i, e := range entries {
		if e.Rows < 1 || e.Rows > 1<<40 {
			return nil, fmt.Errorf("%w: entry %d of bucket %v has %d rows", ErrInvalidEntry, i, e.Bucket, e.Rows)
		}
		if len(e.Bucket.Table) > maxTableLen {
			return nil, fmt.Errorf("%w: table id of %d bytes (max %d)", ErrInvalidEntry, len(e.Bucket.Table), maxTableLen)
		}
		buf := valPool.Get().(*[]byte)
		*buf = appendRecord((*buf)[:0], e.Rows, e.Payload)
		req.vals[i] = buf
		n := int64(len(*buf))
		req.bytes += n
		// Mirror badger's Txn.checkSize: key + 10 version bytes + 2 meta bytes + the value,
		// which for a large entry is a pointer into a segment (maxPointerLen).
		keyLen := int64(1 + binary.MaxVarintLen64 + len(e.Bucket.Table) + 4 + 8)
		if n < s.opts.ValueThreshold {
			req.size += keyLen + n + 12
		} else {
			req.size += keyLen + maxPointerLen + 12
		}
	}
	req.count = int64(len(entries))
	if err := s.budget.admit(req.bytes); err != nil {
		return nil, err
	}
	if req.size >= s.maxTxnSize || req.count >= s.maxTxnCount {
		return nil, fmt.Errorf("%w: %d entries, ~%d bytes in the LSM tree (limit %d)",
			ErrAppendTooLarge, req.count, req.size, s.maxTxnSize)
	}

	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return nil, ErrClosed
	case s.failErr != nil:
		err := s.failErr
		s.mu.Unlock()
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	for i, e := range entries {
		st := s.stateLocked(e.Bucket)
		req.bases[i] = st.next
		req.states[i] = st
		st.next += e.Rows
	}
	s.queue = append(s.queue, req)
	queued = true
	s.mu.Unlock()
	s.signal()

	return func() ([]int64, error) {
		defer req.release()
		if err := <-req.done; err != nil {
			return nil, err
		}
		return req.bases, nil
	}, nil
}

func (r *request) release() {
	for i, v := range r.vals {
		if v != nil && cap(*v) <= 8<<20 {
			valPool.Put(v)
		}
		r.vals[i] = nil
	}
}

func (s *Store) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// commitLoop is the single committer. It takes queued requests in FIFO order, commits
// a run of appends as one group (one Badger transaction unless Badger's size limit
// splits it), advances the high watermarks under mu and answers the callers. A drop
// request is a barrier: it runs alone, after every append queued before it.
func (s *Store) commitLoop() {
	defer close(s.done)
	for {
		s.mu.Lock()
		for len(s.queue) == 0 && !s.closed {
			s.mu.Unlock()
			<-s.wake
			s.mu.Lock()
		}
		if len(s.queue) == 0 { // closed and drained
			s.mu.Unlock()
			return
		}
		group := s.takeGroupLocked()
		failErr := s.failErr
		s.mu.Unlock()

		if failErr != nil {
			for _, r := range group {
				r.done <- failErr
			}
			continue
		}
		if group[0].kind == reqDrop {
			group[0].done <- s.execDrop(group[0])
			continue
		}

		clean, err := s.commitGroup(group)
		sticky := false
		s.mu.Lock()
		switch {
		case err != nil && clean && isNoSpace(err):
			// Nothing of the group reached Badger, so none of its entries can ever
			// appear. The appends queued behind it hold the offsets that follow, so
			// they fail too (nothing of them was written either), and every offset
			// they held is free again: the next append of a bucket starts at its
			// high watermark, and appends work again once there is space.
			err = s.diskFullError(err, true)
			group = append(group, s.takeAppendsLocked()...)
			for _, r := range group {
				for _, st := range r.states {
					st.next = st.hw
				}
			}
		case err != nil:
			if isNoSpace(err) {
				err = s.diskFullError(err, false)
			} else {
				err = fmt.Errorf("logstore: commit: %w", err)
			}
			s.failErr, sticky = err, true
		default:
			for _, r := range group {
				for i, e := range r.entries {
					r.states[i].hw = r.bases[i] + e.Rows
				}
			}
			s.stats.commits++
			s.stats.requests += int64(len(group))
			s.notifyLocked()
		}
		s.mu.Unlock()
		switch {
		case err != nil && !sticky:
			s.log.Error("logstore: out of disk space; appends refused until there is space", "err", err)
		case err != nil:
			s.log.Error("logstore: commit failed; appends refused until reopen", "err", err)
		}
		for _, r := range group {
			r.done <- err
		}
	}
}

// takeGroupLocked removes the next group from the queue: one drop request, or a run of
// append requests within MaxGroupBytes (at least one) and maxGroupRequests.
func (s *Store) takeGroupLocked() []*request {
	n := 1
	if s.queue[0].kind == reqAppend {
		bytes := s.queue[0].bytes
		for n < len(s.queue) {
			r := s.queue[n]
			if r.kind != reqAppend || bytes+r.bytes > s.opts.MaxGroupBytes ||
				(s.opts.maxGroupRequests > 0 && n >= s.opts.maxGroupRequests) {
				break
			}
			bytes += r.bytes
			n++
		}
	}
	group := make([]*request, n)
	copy(group, s.queue)
	if n == len(s.queue) {
		clear(s.queue)
		s.queue = s.queue[:0]
	} else {
		s.queue = append(s.queue[:0], s.queue[n:]...)
		clear(s.queue[len(s.queue):cap(s.queue)])
	}
	return group
}

// takeAppendsLocked removes the queued appends from the queue, keeping its drop
// requests in order, and returns them.
func (s *Store) takeAppendsLocked() []*request {
	var appends []*request
	keep := s.queue[:0]
	for _, r := range s.queue {
		if r.kind == reqAppend {
			appends = append(appends, r)
		} else {
			keep = append(keep, r)
		}
	}
	clear(s.queue[len(keep):])
	s.queue = keep
	return appends
}

// diskFullError names the log's directory in a write refused for lack of space.
// clean: the group failed before Badger saw any of it.
func (s *Store) diskFullError(err error, clean bool) error {
	what := "nothing of this append was written; appends resume when space is freed"
	if !clean {
		what = "whether this append was written is unknown; appends are refused until the log is reopened"
	}
	return fmt.Errorf("%w: the file system of the log at %s: %w (%s)", ErrDiskFull, s.dir, err, what)
}

// maxPointerLen bounds a V2 value (appendPointer): version, four uvarints, a crc.
const maxPointerLen = 1 + 4*binary.MaxVarintLen64 + 4

// commitGroup writes the group's entries. Large ones (encoded at least ValueThreshold
// bytes) are written to a segment file first and made durable there; their Badger values
// point at them. Normally that is one transaction; when the group exceeds Badger's
// per-transaction limit it is split between requests (never inside one), and the
// transactions are sent together so Badger still writes them with one fsync. The group
// succeeds only if every transaction does. clean reports a failure before any
// transaction was committed: then none of the group's entries was written.
func (s *Store) commitGroup(group []*request) (clean bool, err error) {
	var large [][]byte
	var ends map[Bucket]int64 // per bucket, the end of its last large entry
	for _, r := range group {
		for i, e := range r.entries {
			if v := *r.vals[i]; int64(len(v)) >= s.opts.ValueThreshold {
				if ends == nil {
					ends = map[Bucket]int64{}
				}
				large = append(large, v)
				ends[e.Bucket] = max(ends[e.Bucket], r.bases[i]+e.Rows)
			}
		}
	}
	var ptrs []segPtr
	if len(large) > 0 {
		if ptrs, err = s.segs.write(large); err != nil {
			return true, err
		}
	}

	var txns []*badger.Txn
	defer func() {
		for _, t := range txns {
			t.Discard()
		}
	}()
	txn := s.db.NewTransaction(true)
	txns = append(txns, txn)
	var size, count int64
	if len(ptrs) > 0 {
		// Segment records first, in the first transaction: a crash can keep them without
		// the entries (the segment lives longer), never the entries without them.
		for b, end := range ends {
			k := segKey(ptrs[0].seg, b)
			v := binary.AppendUvarint(nil, uint64(end))
			if err := txn.Set(k, v); err != nil {
				return true, fmt.Errorf("set %x: %w", k, err)
			}
			size += int64(len(k)+len(v)) + 12
			count++
		}
	}
	for _, r := range group {
		if size+r.size >= s.maxTxnSize || count+r.count >= s.maxTxnCount {
			txn = s.db.NewTransaction(true)
			txns = append(txns, txn)
			size, count = 0, 0
		}
		size += r.size
		count += r.count
		for i, e := range r.entries {
			key := entryKey(make([]byte, 0, 16+len(e.Bucket.Table)), e.Bucket, r.bases[i])
			val := *r.vals[i]
			if int64(len(val)) >= s.opts.ValueThreshold {
				val = appendPointer(make([]byte, 0, maxPointerLen), e.Rows, ptrs[0])
				ptrs = ptrs[1:]
			}
			if err := txn.SetEntry(badger.NewEntry(key, val)); err != nil {
				return true, fmt.Errorf("set %x: %w", key, err)
			}
		}
	}
	syncErrs := s.bl.syncErrors.Load()
	if len(txns) == 1 {
		err = txn.Commit()
	} else {
		errs := make(chan error, len(txns))
		for _, t := range txns {
			t.CommitWith(func(err error) { errs <- err })
		}
		for range txns {
			if e := <-errs; e != nil && err == nil {
				err = e
			}
		}
	}
	if err == nil && s.bl.syncErrors.Load() != syncErrs {
		err = fmt.Errorf("badger reported a value-log sync failure")
	}
	return false, err
}
