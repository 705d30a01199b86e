package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flightd/flightd/logstore"
)

// Numbering.
//
// A record does not carry its row offsets: several writers (one per node)
// may append to a partition at once, and none knows what the others wrote
// before its records land. The rows are numbered in the partition's order
// instead, the same way by every reader: an entry's rows follow the rows
// of every entry whose first record comes earlier in the partition
// (aborted records are never seen, read_committed). Every node's tailer
// (see tailLoop) follows every partition of the log and numbers it from an
// anchor (see anchors): offset 0 of a partition is row 0, and Truncate
// records the row its cut begins at before it deletes anything.
type numberer struct {
	anchored bool
	next     int64 // the base of the next entry
	keep     bool  // join the payloads of entries in parts (Read), or only count
	open     map[int64]*joining
}

// joining is an entry in parts whose first part was seen, by producer id:
// one producer writes an entry's parts in order, in one transaction, and
// others' records may come between them.
type joining struct {
	h    entryHeader
	base int64
	at   int64
	buf  []byte
}

// entry is a whole entry: its header, rows [base, base+h.rows), the Kafka
// offset of its first record, and its payload (when joined).
type entry struct {
	h       entryHeader
	base    int64
	at      int64
	payload []byte
}

// errUnanchored: a first part was met before the numbering had an anchor.
var errUnanchored = errors.New("kafkalog: no anchor")

// take numbers one data record. ok reports a whole entry; first reports a
// record that began an entry (its base is e.base, e.at its offset), whole
// or not.
func (n *numberer) take(r *kgo.Record) (e entry, ok, first bool, err error) {
	h, err := decodeHeader(r)
	if err != nil {
		return e, false, false, err
	}
	if h.part == 0 {
		if !n.anchored {
			if h.base < 0 {
				return e, false, false, errUnanchored
			}
			// A version 1 record says where it begins.
			n.next, n.anchored = h.base, true
		}
		e = entry{h: h, base: n.next, at: r.Offset}
		n.next += h.rows
		if h.parts == 1 {
			e.payload = r.Value
			return e, true, true, nil
		}
		j := &joining{h: h, base: e.base, at: r.Offset}
		if n.keep {
			j.buf = append(j.buf, r.Value...)
		}
		if n.open == nil {
			n.open = map[int64]*joining{}
		}
		n.open[r.ProducerID] = j
		return e, false, true, nil
	}
	j := n.open[r.ProducerID]
	if j == nil || h.part != j.h.part+1 || h.parts != j.h.parts {
		// A later part of an entry that began before the numbering did
		// (below a truncation, or before a read's starting point): its
		// rows were numbered there.
		return e, false, false, nil
	}
	j.h.part = h.part
	if n.keep {
		j.buf = append(j.buf, r.Value...)
	}
	if h.part < h.parts-1 {
		return e, false, false, nil
	}
	delete(n.open, r.ProducerID)
	j.h.part = 0
	return entry{h: j.h, base: j.base, at: j.at, payload: j.buf}, true, false, nil
}

// lowestOpen returns the smallest base of an entry still being joined.
func (n *numberer) lowestOpen() (int64, bool) {
	lo, ok := int64(0), false
	for _, j := range n.open {
		if !ok || j.base < lo {
			lo, ok = j.base, true
		}
	}
	return lo, ok
}

// tailState is what the tailer knows of one partition.
type tailState struct {
	added bool // the tailer consumes the partition
	known bool // the numbering below is valid (kpos, num): resume there
	// dirty: an append's outcome is unknown (one writer only, see
	// selfNumber): follow the partition before numbering again.
	dirty bool
	kpos  int64 // every record below it was seen
	// catchTo is the last stable offset when the tailer began: the
	// transactions below it ended before, and their entries are not held
	// (another partition's part of one may have been truncated since).
	catchTo int64
	num     numberer
	// held are whole entries of a transaction the tailer has not seen
	// whole yet in every partition (see txnHold), ascending by base.
	held  []int64
	waits map[int64]*waiter // the committer's entries, by first record
	err   error             // the partition cannot be numbered
}

// waiter is an entry the committer wrote, waiting to be numbered (base >= 0)
// and visible (the high watermark past it), or found aborted.
type waiter struct {
	base, end int64
	aborted   bool
	done      chan struct{}
}

// txnHold gathers a transaction's entries in one table (header txn and n):
// they become visible together, when the last one was seen, so that a write
// across buckets is in all of them or none for readers of the high
// watermarks. Kafka writes a transaction's commit markers partition by
// partition, so a reader sees one partition's records a moment before
// another's. A transaction held longer than holdLimit is let go (its other
// entries were truncated, or a partition lags).
type txnHold struct {
	need, seen int
	since      time.Time
	entries    []heldRef
}

type heldRef struct {
	st   *bucket
	base int64
}

const holdLimit = 2 * time.Second

// newTailer makes the consumer that follows every partition of the log.
func (l *Log) newTailer() (*kgo.Client, error) {
	opts := append(append([]kgo.Opt(nil), l.common...),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxBytes(64<<20),
		kgo.FetchMaxPartitionBytes(16<<20),
		kgo.FetchMaxWait(500*time.Millisecond),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafkalog: %w", err)
	}
	return cl, nil
}

// tailLoop numbers the records the tailer fetches, advances the high
// watermarks and answers the committer's waiters, until the log closes.
func (l *Log) tailLoop() {
	defer close(l.tailDone)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		fs := l.tail.PollFetches(ctx)
		cancel()
		if fs.IsClientClosed() {
			return
		}
		var reset []topicPartition
		var gone []string
		l.mu.Lock()
		fs.EachError(func(topic string, p int32, err error) {
			switch {
			case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
			case errors.Is(err, kerr.OffsetOutOfRange):
				reset = append(reset, topicPartition{topic, p})
			case errors.Is(err, kerr.UnknownTopicOrPartition):
				gone = append(gone, topic)
			default:
				l.tailErr = err
			}
		})
		changed := false
		fs.EachPartition(func(ft kgo.FetchTopicPartition) {
			st := l.tailedLocked(ft.Topic, ft.Partition)
			if st == nil {
				return
			}
			t := l.byTopic[ft.Topic]
			for _, r := range ft.Records {
				if r.Offset < st.t.kpos {
					continue
				}
				l.numberLocked(t, st, r)
			}
			if l.settleLocked(st) {
				changed = true
			}
		})
		if l.releaseHeldLocked(time.Now()) {
			changed = true
		}
		if changed {
			l.notifyLocked()
		}
		close(l.tailed)
		l.tailed = make(chan struct{})
		l.mu.Unlock()
		for _, tp := range reset {
			l.restartPartition(tp)
		}
		if len(gone) > 0 {
			l.forgetDeleted(gone)
		}
	}
}

type topicPartition struct {
	topic string
	p     int32
}

// tailedLocked returns the state of a partition the tailer follows.
func (l *Log) tailedLocked(topic string, p int32) *bucket {
	t := l.byTopic[topic]
	if t == nil {
		return nil
	}
	st := t.buckets[p]
	if st == nil || !st.t.added {
		return nil
	}
	return st
}

// numberLocked takes one record of st's partition into the numbering.
func (l *Log) numberLocked(t *table, st *bucket, r *kgo.Record) {
	l.tailRecords++
	st.t.kpos = r.Offset + 1
	if r.Attrs.IsControl() || st.t.err != nil {
		return
	}
	if !st.t.num.anchored {
		if row, ok := l.anchorAt(t.topic, r.Partition, r.Offset); ok {
			st.t.num.next, st.t.num.anchored = row, true
		}
	}
	e, ok, first, err := st.t.num.take(r)
	switch {
	case errors.Is(err, errUnanchored):
		st.t.err = fmt.Errorf("%w: %s/%d begins at Kafka offset %d with no record of the row it begins at: the partition was truncated by something other than flightd", logstore.ErrUnavailable, t.topic, r.Partition, r.Offset)
		l.log.Error("cannot number a partition of the log", "err", st.t.err)
		return
	case err != nil:
		st.t.err = err
		l.log.Error("a record of the log does not decode", "err", err)
		return
	}
	if first {
		if w := st.t.waits[e.at]; w != nil {
			w.base, w.end = e.base, e.base+e.h.rows
		}
	}
	if !ok {
		return
	}
	st.idx.add(e.base, e.at)
	if e.h.txnEntries > 1 {
		h := t.txns[e.h.txn]
		if h == nil {
			h = &txnHold{need: int(e.h.txnEntries), since: time.Now()}
			t.txns[e.h.txn] = h
		}
		h.seen++
		// An entry below the partition's catchTo is not held (its
		// transaction ended before the tailer began), but it counts: the
		// stable offsets catchTo was read from may have shown the
		// transaction's end in this partition and not yet in another.
		if e.at >= st.t.catchTo {
			h.entries = append(h.entries, heldRef{st, e.base})
			st.t.held = append(st.t.held, e.base)
		}
		if h.seen >= h.need {
			delete(t.txns, e.h.txn)
			l.releaseLocked(h)
		}
	}
}

// releaseLocked makes a transaction's held entries visible.
func (l *Log) releaseLocked(h *txnHold) {
	for _, ref := range h.entries {
		held := ref.st.t.held
		for i, b := range held {
			if b == ref.base {
				ref.st.t.held = append(held[:i], held[i+1:]...)
				break
			}
		}
		l.settleLocked(ref.st)
	}
}

// releaseHeldLocked lets go of transactions held longer than holdLimit.
func (l *Log) releaseHeldLocked(now time.Time) bool {
	changed := false
	for _, t := range l.tables {
		for id, h := range t.txns {
			if now.Sub(h.since) > holdLimit {
				delete(t.txns, id)
				l.releaseLocked(h)
				changed = true
			}
		}
	}
	return changed
}

// settleLocked moves st's high watermark to what the tailer numbered (up to
// the first entry not whole or held) and answers the waiters it passed. It
// reports a move.
func (l *Log) settleLocked(st *bucket) bool {
	hw := st.t.num.next
	if lo, ok := st.t.num.lowestOpen(); ok {
		hw = min(hw, lo)
	}
	for _, b := range st.t.held {
		hw = min(hw, b)
	}
	moved := false
	if st.t.num.anchored && hw > st.hw {
		st.hw, moved = hw, true
	}
	for at, w := range st.t.waits {
		switch {
		case w.base >= 0 && st.hw >= w.end:
		case w.base < 0 && st.t.kpos > at:
			w.aborted = true
		default:
			continue
		}
		delete(st.t.waits, at)
		close(w.done)
	}
	return moved
}

// addPartitions has the tailer follow the partitions of t from 0 up to n
// that it does not follow yet, from their log start. The caller holds no
// lock.
func (l *Log) addPartitions(ctx context.Context, t *table, n int32) error {
	l.mu.RLock()
	var ps []int32
	for p := int32(0); p < n; p++ {
		if st := t.buckets[p]; st == nil || !st.t.added {
			ps = append(ps, p)
		}
	}
	topic := t.topic
	l.mu.RUnlock()
	if len(ps) == 0 {
		return nil
	}
	sctx, cancel := context.WithTimeout(ctx, l.opts.Timeout)
	defer cancel()
	starts, err := l.admin.ListStartOffsets(sctx, topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return l.unavailable("list the start offsets of "+topic, err)
	}
	lsos, err := l.admin.ListCommittedOffsets(sctx, topic)
	if err == nil {
		err = lsos.Error()
	}
	if err != nil {
		return l.unavailable("list the stable offsets of "+topic, err)
	}
	truncated := false
	for _, p := range ps {
		if o, ok := starts.Lookup(topic, p); ok && o.Offset > 0 {
			truncated = true
		}
	}
	if truncated {
		if err := l.loadAnchors(sctx); err != nil {
			return err
		}
	}
	// Where to begin numbering each partition the log does not know: near
	// its end, from the checkpoint a recent record carries, rather than
	// reading the whole retained log (see recoverPoint).
	points := map[int32]point{}
	for _, p := range ps {
		l.mu.RLock()
		st := t.buckets[p]
		known := st != nil && st.t.known
		l.mu.RUnlock()
		so, ok1 := starts.Lookup(topic, p)
		eo, ok2 := lsos.Lookup(topic, p)
		if known || !ok1 || !ok2 || eo.Offset <= so.Offset {
			continue
		}
		pt, ok, err := l.recoverPoint(sctx, topic, p, so.Offset, eo.Offset)
		if err != nil {
			return err
		}
		if ok {
			points[p] = pt
		}
	}
	add := map[int32]kgo.Offset{}
	l.mu.Lock()
	for _, p := range ps {
		o, ok := starts.Lookup(topic, p)
		if !ok {
			continue
		}
		st := t.buckets[p]
		if st == nil {
			st = &bucket{}
			t.buckets[p] = st
		}
		if st.t.added {
			continue
		}
		if st.t.known && st.t.kpos >= o.Offset {
			// Resume where the numbering stands.
			st.t.added = true
			if c, ok := lsos.Lookup(topic, p); ok {
				st.t.catchTo = c.Offset
			}
			add[p] = kgo.NewOffset().At(st.t.kpos)
			continue
		}
		st.t = tailState{added: true, known: true, kpos: o.Offset, waits: st.t.waits}
		if c, ok := lsos.Lookup(topic, p); ok {
			st.t.catchTo = c.Offset
		}
		st.startAt = o.Offset
		if o.Offset == 0 {
			st.t.num.anchored = true
		}
		if row, ok := l.anchorAt(topic, p, o.Offset); ok {
			st.start = row
		}
		if pt, ok := points[p]; ok && pt.at > o.Offset {
			// Begin at the checkpoint: rows below it are read, when
			// asked for, from a point locate finds.
			st.t.kpos = pt.at
			st.t.num = numberer{anchored: true, next: pt.base}
			st.idx.add(pt.base, pt.at)
			if o.Offset == 0 {
				st.start = 0
			} else if _, ok := l.anchorAt(topic, p, o.Offset); !ok {
				st.start = pt.base // unknown below: version 1 records truncated without an anchor
				st.startAt = pt.at
			}
		}
		add[p] = kgo.NewOffset().At(st.t.kpos)
	}
	t.partitions = max(t.partitions, n)
	l.mu.Unlock()
	l.tail.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: add})
	return nil
}

// restartPartition follows a partition again from its new log start, after
// a Truncate elsewhere deleted records the tailer had not read yet.
func (l *Log) restartPartition(tp topicPartition) {
	l.tail.RemoveConsumePartitions(map[string][]int32{tp.topic: {tp.p}})
	l.mu.Lock()
	t := l.byTopic[tp.topic]
	if t != nil {
		if st := t.buckets[tp.p]; st != nil {
			st.t.added, st.t.known = false, false
		}
	}
	l.mu.Unlock()
	if t == nil {
		return
	}
	if err := l.addPartitions(context.Background(), t, tp.p+1); err != nil {
		l.log.Warn("the log could not follow a partition again after its start moved", "topic", tp.topic, "partition", tp.p, "err", err)
	}
}

// catchUp waits until the tailer has seen every partition of the topics up
// to its last stable offset (read now): then every entry committed before
// the call is numbered.
func (l *Log) catchUp(ctx context.Context, topics []string) error {
	if len(topics) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, l.opts.Timeout)
	defer cancel()
	lso, err := l.admin.ListCommittedOffsets(ctx, topics...)
	if err == nil {
		err = lso.Error()
	}
	if err != nil {
		return l.unavailable("list the stable offsets of the log's topics", err)
	}
	// Partitions another node added.
	grow := map[string]int32{}
	lso.Each(func(o kadm.ListedOffset) { grow[o.Topic] = max(grow[o.Topic], o.Partition+1) })
	for topic, n := range grow {
		l.mu.RLock()
		t := l.byTopic[topic]
		short := t != nil && t.followed() < n
		l.mu.RUnlock()
		if short {
			if err := l.addPartitions(ctx, t, n); err != nil {
				return err
			}
		}
	}
	for {
		l.mu.RLock()
		behind := ""
		var perr error
		lso.Each(func(o kadm.ListedOffset) {
			t := l.byTopic[o.Topic]
			if t == nil || behind != "" {
				return
			}
			st := t.buckets[o.Partition]
			if st == nil || !st.t.added {
				return
			}
			if st.t.err != nil {
				perr = st.t.err
			}
			if st.t.kpos < o.Offset {
				behind = fmt.Sprintf("%s/%d at %d of %d", o.Topic, o.Partition, st.t.kpos, o.Offset)
			}
		})
		tailed := l.tailed
		tailErr := l.tailErr
		l.mu.RUnlock()
		if perr != nil {
			return perr
		}
		if behind == "" {
			return nil
		}
		select {
		case <-tailed:
		case <-ctx.Done():
			if tailErr != nil {
				return l.unavailable("read the log ("+behind+")", tailErr)
			}
			return l.unavailable("read the log ("+behind+")", ctx.Err())
		}
	}
}

// Sync waits until the log's view of the table holds every entry any
// writer committed before the call: a write another node acknowledged is
// then in HighWatermarks. It finds the table's topic (made by another node)
// and new partitions first. A log with Options.Shared false has one writer,
// whose appends return only once they are numbered: Sync does nothing.
func (l *Log) Sync(ctx context.Context, id string) error {
	if !l.opts.Shared {
		return nil
	}
	if err := l.enter(); err != nil {
		return err
	}
	defer l.leave()
	l.mu.RLock()
	t := l.tables[id]
	l.mu.RUnlock()
	if t == nil || t.partitions == 0 {
		if err := l.discover(ctx); err != nil {
			return err
		}
		l.mu.RLock()
		t = l.tables[id]
		l.mu.RUnlock()
		if t == nil {
			return nil // no writer made the table's topic yet
		}
	}
	return l.catchUp(ctx, []string{t.topic})
}

// follow numbers the partitions of the tables up to their last stable
// offsets: the tailer follows them (from where their numbering stands) and
// catches up. A log with one writer (Options.Shared false) then stops
// following them: its committer numbers its own entries (selfNumber).
func (l *Log) follow(ctx context.Context, ts []*table) error {
	var topics []string
	for _, t := range ts {
		l.mu.RLock()
		n := max(t.partitions, int32(len(t.buckets)))
		for p := range t.buckets {
			n = max(n, p+1)
		}
		l.mu.RUnlock()
		if err := l.addPartitions(ctx, t, n); err != nil {
			return err
		}
		topics = append(topics, t.topic)
	}
	err := l.catchUp(ctx, topics)
	if !l.opts.Shared {
		l.pause(ts)
	}
	return err
}

// pause stops following the tables' partitions, keeping their numbering.
func (l *Log) pause(ts []*table) {
	rm := map[string][]int32{}
	l.mu.Lock()
	for _, t := range ts {
		for p, st := range t.buckets {
			if st.t.added {
				st.t.added = false
				rm[t.topic] = append(rm[t.topic], p)
			}
		}
	}
	l.mu.Unlock()
	if len(rm) > 0 {
		l.tail.RemoveConsumePartitions(rm)
	}
}

// selfNumber numbers a committed group's entries where a log with one
// writer knows they are: right after the entries it numbered before, in
// the order it wrote them (aborted records are never seen, and no one else
// writes). ats are the Kafka offsets of the entries' first records, ends
// one past each partition's last record of the group. High watermarks move
// for the whole group at once.
func (l *Log) selfNumber(group []*request, ats [][]int64, ends map[*bucket]int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for gi, r := range group {
		for i, e := range r.entries {
			t := l.tables[e.Bucket.Table]
			if t == nil {
				continue // dropped meanwhile
			}
			st := t.buckets[e.Bucket.Bucket]
			if st == nil {
				continue
			}
			base := st.t.num.next
			st.t.num.next += e.Rows
			st.hw = st.t.num.next
			st.idx.add(base, ats[gi][i])
			r.bases[i] = base
		}
	}
	for st, end := range ends {
		st.t.kpos = max(st.t.kpos, end)
	}
	l.notifyLocked()
}

// recoverPoint finds where to begin numbering a partition near its end: the
// checkpoint that the last data record in [kstart, lso) carries (its
// writer's numbering when it wrote; a version 1 record's own base), read
// from a window at the end that doubles until one is found. ok is false
// when none is (the partition is numbered from its start).
func (l *Log) recoverPoint(ctx context.Context, topic string, p int32, kstart, lso int64) (pt point, ok bool, err error) {
	for w := int64(16); ; w *= 2 {
		from := max(kstart, lso-w)
		err := l.scan(ctx, topic, p, from, lso, func(r *kgo.Record) error {
			if c, found := recordCheckpoint(r, kstart); found {
				pt, ok = c, true
			}
			return nil
		})
		if err != nil {
			return point{}, false, err
		}
		if ok || from == kstart {
			return pt, ok, nil
		}
	}
}

// recordCheckpoint returns the checkpoint a data record carries, usable on
// a partition whose log starts at kstart: rows before Kafka offset pt.at
// are pt.base.
func recordCheckpoint(r *kgo.Record, kstart int64) (point, bool) {
	if r.Attrs.IsControl() {
		return point{}, false
	}
	h, err := decodeHeader(r)
	switch {
	case err != nil:
		return point{}, false
	case h.base >= 0 && h.part == 0: // version 1: the record begins at its base
		return point{base: h.base, at: r.Offset}, true
	case h.ckAt >= kstart:
		return point{base: h.ckRow, at: h.ckAt}, true
	}
	return point{}, false
}
