package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flightd/flightd/logstore"
)

type reqKind uint8

const (
	reqAppend reqKind = iota
	reqDrop
)

// request is one Append (or a DropTable barrier) waiting for the committer.
type request struct {
	kind    reqKind
	entries []logstore.Entry
	bases   []int64
	bytes   int64
	table   string // drop
	done    chan error
}

// writer is a transactional producer. It is replaced after a failure
// whose outcome it cannot confirm: a new one with the same transactional id
// fences the old one and aborts what it left open.
//
// The committer takes turns with two writers (transactional ids
// <TransactionalID>.0 and .1), one transaction each: a transaction's first
// produce is refused with CONCURRENT_TRANSACTIONS, and retried by the
// partition leader after add.partitions.to.txn.retry.backoff.ms (20 ms),
// while the previous transaction of the same id is still completing its
// commit (writing its markers), which it does after EndTxn returns.
// Measured with one writer: 32 ms for every transaction of a 64 KiB
// append; with two, the id used next finished long ago.
type writer struct {
	cl *kgo.Client
}

const writers = 2

func newWriter(l *Log, k int) (*writer, error) {
	opts := append(append([]kgo.Opt(nil), l.common...),
		kgo.TransactionalID(fmt.Sprintf("%s.%d", l.opts.TransactionalID, k)),
		// A writer killed in a transaction holds back every other
		// writer's acknowledgements on its partitions (their last stable
		// offset) until it restarts or the transaction times out.
		kgo.TransactionTimeout(l.opts.Timeout),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(int32(2*l.opts.MaxRecordBytes)),
		kgo.ProducerLinger(0),
		kgo.MaxBufferedBytes(int(2*l.opts.MaxGroupBytes)),
		kgo.MaxBufferedRecords(1<<20),
		kgo.RecordDeliveryTimeout(l.opts.Timeout),
		kgo.ConcurrentTransactionsBackoff(2*time.Millisecond),
		kgo.MetadataMinAge(100*time.Millisecond),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafkalog: %w", err)
	}
	return &writer{cl: cl}, nil
}

// Append writes all entries atomically, in one Kafka transaction: either all
// become committed and visible, or none. It returns each entry's base
// offset, once Kafka acknowledged every record of it (acks=all) and the
// transaction committed. See logstore.Store.Append for the offsets.
//
// Errors before the call is queued (ctx, ErrClosed, ErrInvalidEntry) mean
// nothing was written. ErrUnavailable after it was queued: the brokers did
// not take the transaction within Options.Timeout. Its outcome is settled
// before Append returns when the brokers answer again in time (the log reads
// the partitions' committed ends); when they do not, the error says the
// outcome is unknown, and the next append settles it first.
func (l *Log) Append(ctx context.Context, entries []logstore.Entry) ([]int64, error) {
	wait, err := l.AppendAsync(ctx, entries)
	if err != nil {
		return nil, err
	}
	return wait()
}

// AppendAsync is Append in two steps; see logstore.Store.AppendAsync. The
// payloads are not copied: they are the records' values until wait returns,
// and must not change before.
func (l *Log) AppendAsync(ctx context.Context, entries []logstore.Entry) (func() ([]int64, error), error) {
	if len(entries) == 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return func() ([]int64, error) { return nil, nil }, nil
	}
	req := &request{
		kind:    reqAppend,
		entries: make([]logstore.Entry, len(entries)),
		bases:   make([]int64, len(entries)),
		done:    make(chan error, 1),
	}
	for i, e := range entries {
		if e.Rows < 1 || e.Rows > 1<<40 {
			return nil, fmt.Errorf("%w: entry %d of bucket %v has %d rows", logstore.ErrInvalidEntry, i, e.Bucket, e.Rows)
		}
		if e.Bucket.Table == "" {
			return nil, fmt.Errorf("%w: entry %d has no table id", logstore.ErrInvalidEntry, i)
		}
		if _, err := partitionOf(e.Bucket); err != nil {
			return nil, err
		}
		req.entries[i] = e
		req.bytes += int64(len(e.Payload))
	}
	// Name new tables' topics before taking l.mu: TableInfo calls out.
	var infos map[string]tableInfo
	if l.opts.TableInfo != nil {
		l.mu.RLock()
		for _, e := range req.entries {
			if _, ok := l.tables[e.Bucket.Table]; !ok {
				if infos == nil {
					infos = map[string]tableInfo{}
				}
				infos[e.Bucket.Table] = tableInfo{}
			}
		}
		l.mu.RUnlock()
		for id := range infos {
			db, name, n := l.opts.TableInfo(id)
			infos[id] = tableInfo{db, name, n}
		}
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, logstore.ErrClosed
	}
	if l.notReady != nil {
		err := l.notReady
		l.mu.Unlock()
		return nil, fmt.Errorf("the log is not recovered yet: %w", err)
	}
	if l.fenced != nil {
		err := l.fenced
		l.mu.Unlock()
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		l.mu.Unlock()
		return nil, err
	}
	for _, e := range req.entries {
		l.bucketLocked(e.Bucket, infos[e.Bucket.Table])
	}
	l.queue = append(l.queue, req)
	l.mu.Unlock()
	l.signal()
	return func() ([]int64, error) {
		if err := <-req.done; err != nil {
			return nil, err
		}
		return req.bases, nil
	}, nil
}

// tableInfo is what Options.TableInfo said of a table.
type tableInfo struct {
	database, name string
	buckets        int
}

// bucketLocked returns the bucket's state, making it (and its table, named
// by info) when new. l.mu must be held for writing.
func (l *Log) bucketLocked(b logstore.Bucket, info tableInfo) *bucket {
	t := l.tables[b.Table]
	if t == nil {
		t = &table{topic: topicName(l.opts.TopicPrefix, info.database, info.name, b.Table), want: int32(max(0, min(info.buckets, 1<<16))), buckets: map[int32]*bucket{}, txns: map[uint64]*txnHold{}}
		l.tables[b.Table] = t
		l.byTopic[t.topic] = t
	}
	st := t.buckets[b.Bucket]
	if st == nil {
		st = &bucket{}
		t.buckets[b.Bucket] = st
	}
	return st
}

func (l *Log) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// commitLoop is the committer: it takes the queued requests, writes the
// appends among them as one transaction (group commit), and advances the
// high watermarks in queue order.
func (l *Log) commitLoop(ws [writers]*writer) {
	defer close(l.done)
	defer func() {
		for _, w := range ws {
			if w != nil {
				w.cl.Close()
			}
		}
	}()
	turn := 0
	for {
		l.mu.Lock()
		for len(l.queue) == 0 && !l.closed {
			l.mu.Unlock()
			<-l.wake
			l.mu.Lock()
		}
		if len(l.queue) == 0 && l.closed {
			l.mu.Unlock()
			return
		}
		group := l.takeGroupLocked()
		l.mu.Unlock()

		if group[0].kind == reqDrop {
			group[0].done <- l.execDrop(group[0].table)
			continue
		}
		var wait func() error
		ws[turn], wait = l.commit(ws[turn], turn, group)
		turn = (turn + 1) % writers
		l.acks.Add(1)
		go func() {
			defer l.acks.Done()
			err := wait()
			for _, r := range group {
				r.done <- err
			}
		}()
	}
}

// takeGroupLocked takes a drop alone, or the appends at the head of the
// queue up to MaxGroupBytes (at least one).
func (l *Log) takeGroupLocked() []*request {
	if l.queue[0].kind == reqDrop {
		g := l.queue[:1]
		l.queue = l.queue[1:]
		return g
	}
	n, bytes := 0, int64(0)
	for n < len(l.queue) && l.queue[n].kind == reqAppend && (n == 0 || bytes+l.queue[n].bytes <= l.opts.MaxGroupBytes) {
		bytes += l.queue[n].bytes
		n++
	}
	g := append([]*request(nil), l.queue[:n]...)
	l.queue = append(l.queue[:0], l.queue[n:]...)
	return g
}

// commit writes one group as one transaction and returns the writer to use
// next, and a function that waits until the group's entries are numbered
// and visible (the tailer saw them) and says how the group ended. The
// committer goes on with the next group meanwhile.
func (l *Log) commit(w *writer, k int, group []*request) (*writer, func() error) {
	failed := func(err error) func() error { return func() error { return err } }
	ctx, cancel := context.WithTimeout(context.Background(), l.opts.Timeout)
	defer cancel()

	if err := l.fencedErr(); err != nil {
		return w, failed(err)
	}
	if w == nil {
		var err error
		if w, err = newWriter(l, k); err != nil {
			return nil, failed(err)
		}
	}
	if err := l.ensureTopics(ctx, w, group); err != nil {
		return w, failed(err)
	}
	if !l.opts.Shared {
		// Settle what an earlier failure left unknown before numbering
		// on top of it.
		if dirty := l.dirtyTables(group); len(dirty) > 0 {
			if err := l.follow(ctx, dirty); err != nil {
				return w, failed(fmt.Errorf("%w (an earlier append's outcome is still unknown)", err))
			}
			l.clearDirty(dirty)
		}
	}

	// The transaction's entries per table, for the readers' cut (txnHold).
	txn := rand.Uint64()
	perTable := map[string]uint32{}
	for _, r := range group {
		for _, e := range r.entries {
			perTable[e.Bucket.Table]++
		}
	}
	ats := make([][]int64, len(group)) // Kafka offset of each entry's first record
	ends := map[*bucket]int64{}        // one past each partition's last record
	var perr error
	var pmu sync.Mutex
	if err := w.cl.BeginTransaction(); err != nil {
		w.cl.Close()
		if ferr := l.fence(err); ferr != nil {
			return nil, failed(ferr)
		}
		return nil, failed(l.unavailable("begin a transaction", err))
	}
	for gi, r := range group {
		ats[gi] = make([]int64, len(r.entries))
		for i, e := range r.entries {
			l.mu.RLock()
			topic := l.tables[e.Bucket.Table].topic
			l.mu.RUnlock()
			parts := max(1, (len(e.Payload)+l.opts.MaxRecordBytes-1)/l.opts.MaxRecordBytes)
			for part := 0; part < parts; part++ {
				lo := part * l.opts.MaxRecordBytes
				hi := min(len(e.Payload), lo+l.opts.MaxRecordBytes)
				h := entryHeader{rows: e.Rows, part: uint32(part), parts: uint32(parts), txn: txn, txnEntries: perTable[e.Bucket.Table], ckAt: -1}
				if part == 0 {
					h.ckAt, h.ckRow = l.checkpoint(e.Bucket)
				}
				rec := &kgo.Record{Topic: topic, Partition: e.Bucket.Bucket, Value: e.Payload[lo:hi],
					Headers: []kgo.RecordHeader{{Key: headerKey, Value: h.encode()}}}
				gi, i, first := gi, i, part == 0
				l.mu.RLock()
				st := l.tables[e.Bucket.Table].buckets[e.Bucket.Bucket]
				l.mu.RUnlock()
				w.cl.Produce(ctx, rec, func(rec *kgo.Record, err error) {
					pmu.Lock()
					defer pmu.Unlock()
					if err != nil && perr == nil {
						perr = err
					}
					if err == nil && first {
						ats[gi][i] = rec.Offset
					}
					if err == nil && st != nil {
						ends[st] = max(ends[st], rec.Offset+1)
					}
				})
			}
		}
	}
	ferr := w.cl.Flush(ctx)
	pmu.Lock()
	if ferr == nil {
		ferr = perr
	}
	pmu.Unlock()
	if ferr != nil {
		// Nothing of it can commit: abort, and give up the writer if
		// even that fails.
		actx, acancel := context.WithTimeout(context.Background(), l.opts.Timeout)
		aerr := w.cl.AbortBufferedRecords(actx)
		if aerr == nil {
			aerr = w.cl.EndTransaction(actx, kgo.TryAbort)
		}
		acancel()
		if aerr != nil {
			w.cl.Close()
			w = nil
		}
		if err := l.fence(ferr); err != nil {
			return w, failed(err)
		}
		return w, failed(l.unavailable("write to the log", ferr))
	}
	// Wait for the entries before they can be seen, so that the tailer
	// cannot pass them unnoticed (a log with one writer numbers its own).
	var waits [][]*waiter
	if l.opts.Shared {
		waits = l.await(group, ats)
	}
	cerr := w.cl.EndTransaction(ctx, kgo.TryCommit)
	if cerr == nil {
		if !l.opts.Shared {
			l.selfNumber(group, ats, ends)
			return w, func() error { return nil }
		}
		return w, func() error { return l.settled(group, waits, nil) }
	}
	// The commit's outcome may be unknown: abort (a commit the coordinator
	// already decided completes instead); the tailer then sees the
	// entries numbered, or passes them (aborted).
	actx, acancel := context.WithTimeout(context.Background(), l.opts.Timeout)
	aerr := w.cl.EndTransaction(actx, kgo.TryAbort)
	acancel()
	if aerr != nil || errors.Is(cerr, kerr.ProducerFenced) || errors.Is(cerr, kerr.InvalidProducerEpoch) {
		w.cl.Close()
		w = nil
	}
	commitErr := l.unavailable("commit", cerr)
	if err := l.fence(cerr); err != nil {
		commitErr = err
	}
	if !l.opts.Shared {
		// Learn the outcome from the partitions: the tailer follows them
		// from where the numbering stands and numbers the entries if they
		// were committed.
		waits = l.await(group, ats)
		tables := l.groupTables(group)
		fctx, fcancel := context.WithTimeout(context.Background(), l.opts.Timeout)
		err := l.follow(fctx, tables)
		fcancel()
		if err != nil {
			l.markDirty(tables)
			return w, failed(fmt.Errorf("%w (the append's outcome is unknown until the brokers answer: it may be in the log)", commitErr))
		}
	}
	return w, func() error { return l.settled(group, waits, commitErr) }
}

// groupTables returns the tables the group writes.
func (l *Log) groupTables(group []*request) []*table {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out []*table
	for _, r := range group {
		for _, e := range r.entries {
			if t := l.tables[e.Bucket.Table]; t != nil && !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

// markDirty records that the tables' numbering may miss a committed
// append (its outcome is unknown): the next append follows them first.
func (l *Log) markDirty(ts []*table) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range ts {
		for _, st := range t.buckets {
			st.t.dirty = true
		}
	}
}

func (l *Log) clearDirty(ts []*table) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range ts {
		for _, st := range t.buckets {
			st.t.dirty = false
		}
	}
}

// dirtyTables returns the group's tables with a bucket marked dirty.
func (l *Log) dirtyTables(group []*request) []*table {
	var out []*table
	for _, t := range l.groupTables(group) {
		l.mu.RLock()
		for _, st := range t.buckets {
			if st.t.dirty {
				out = append(out, t)
				break
			}
		}
		l.mu.RUnlock()
	}
	return out
}

// await registers a waiter for every entry of the group (ats: the Kafka
// offset of its first record).
func (l *Log) await(group []*request, ats [][]int64) [][]*waiter {
	out := make([][]*waiter, len(group))
	l.mu.Lock()
	defer l.mu.Unlock()
	for gi, r := range group {
		out[gi] = make([]*waiter, len(r.entries))
		for i, e := range r.entries {
			w := &waiter{base: -1, done: make(chan struct{})}
			out[gi][i] = w
			t := l.tables[e.Bucket.Table]
			var st *bucket
			if t != nil {
				st = t.buckets[e.Bucket.Bucket]
			}
			if st == nil {
				w.aborted = true
				close(w.done)
				continue
			}
			if st.t.waits == nil {
				st.t.waits = map[int64]*waiter{}
			}
			st.t.waits[ats[gi][i]] = w
		}
	}
	return out
}

// settled waits until the tailer numbered the group's entries (and they
// are visible) or passed them aborted, within Options.Timeout, and sets
// the requests' bases. commitErr is the commit's error, if it failed:
// entries found numbered after all were committed.
func (l *Log) settled(group []*request, waits [][]*waiter, commitErr error) error {
	// Another node's transaction, left open when it died, keeps committed
	// records from readers until the brokers abort it: the transaction
	// timeout (Options.Timeout) and up to
	// transaction.abort.timed.out.transaction.cleanup.interval.ms (10 s by
	// default).
	timer := time.NewTimer(2*l.opts.Timeout + 10*time.Second)
	defer timer.Stop()
	aborted := false
	for gi, ws := range waits {
		for i, w := range ws {
			select {
			case <-w.done:
			case <-timer.C:
				if commitErr != nil {
					return fmt.Errorf("%w (the append's outcome is unknown: it may be in the log)", commitErr)
				}
				return l.unavailable("see the committed append in the log", errors.New("the log's reader did not reach it in time"))
			}
			if w.aborted {
				aborted = true
				continue
			}
			group[gi].bases[i] = w.base
		}
	}
	if aborted {
		if commitErr != nil {
			return commitErr
		}
		return fmt.Errorf("%w: the committed append is not in the log (its table was dropped)", logstore.ErrUnavailable)
	}
	return nil
}

// fence records that another writer with the same transactional ids took
// over the log (its initialization fenced this one), when err says so, and
// returns the error every append gets from now on. The log then never
// initializes a writer again: doing so would fence the other writer in
// turn, and both would write the same row offsets.
//
// Kafka says so with PRODUCER_FENCED (transactional requests) or
// INVALID_PRODUCER_EPOCH (a produce with the epoch the other's
// initialization bumped). Neither happens otherwise: the log's own
// writers have ids of their own, and one it replaces is closed first.
func (l *Log) fence(err error) error {
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fenced == nil {
		l.fenced = fmt.Errorf("%w: another flightd started on this log (transactional id %s, topics %s*) and took it over; this server no longer writes to it: stop one of the two, then restart this one (%v)",
			logstore.ErrFenced, l.opts.TransactionalID, l.opts.TopicPrefix, err)
		l.log.Error("fenced by another writer of the same log", "err", l.fenced)
	}
	return l.fenced
}

func (l *Log) fencedErr() error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.fenced
}

// checkpoint returns what this log knows of the bucket's numbering now:
// the entries that begin before Kafka offset at hold row rows (at -1:
// nothing known). Written into the records' headers, it lets a reader start
// numbering near any record (see recoverPoint, locate).
func (l *Log) checkpoint(b logstore.Bucket) (at, row int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	st := l.stateLocked(b)
	if st == nil || !st.t.known || !st.t.num.anchored {
		return -1, 0
	}
	return st.t.kpos, st.t.num.next
}
