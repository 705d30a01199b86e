package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flightd/flightd/logstore"
)

// index maps row offsets to the Kafka offsets where entries begin (their
// first record), sorted by row offset. The committer adds every entry it
// writes; Open knows only the first and the last entry of a partition, and a
// read between far apart points bisects the partition (see locate) and adds
// what it finds. Past maxIndexPoints a bucket keeps every other point.
type index struct {
	pts []point
}

type point struct{ base, at int64 }

const maxIndexPoints = 1 << 16

func (x *index) add(base, at int64) {
	i := sort.Search(len(x.pts), func(i int) bool { return x.pts[i].base >= base })
	if i < len(x.pts) && x.pts[i].base == base {
		x.pts[i].at = at
		return
	}
	x.pts = append(x.pts, point{})
	copy(x.pts[i+1:], x.pts[i:])
	x.pts[i] = point{base, at}
	if len(x.pts) > maxIndexPoints {
		kept := x.pts[:0]
		for j, p := range x.pts {
			if j%2 == 0 || j == len(x.pts)-1 {
				kept = append(kept, p)
			}
		}
		x.pts = kept
	}
}

// around returns the last point at or below row and the first above it (ok
// false when there is none).
func (x *index) around(row int64) (lo point, loOK bool, hi point, hiOK bool) {
	i := sort.Search(len(x.pts), func(i int) bool { return x.pts[i].base > row })
	if i > 0 {
		lo, loOK = x.pts[i-1], true
	}
	if i < len(x.pts) {
		hi, hiOK = x.pts[i], true
	}
	return
}

// dropBelow forgets the points below row.
func (x *index) dropBelow(row int64) {
	i := sort.Search(len(x.pts), func(i int) bool { return x.pts[i].base >= row })
	x.pts = append(x.pts[:0], x.pts[i:]...)
}

// reader takes an idle consumer, or makes one while fewer than
// Options.Readers exist, or waits for one.
func (l *Log) reader(ctx context.Context) (*kgo.Client, error) {
	select {
	case cl := <-l.readers:
		return cl, nil
	default:
	}
	l.mu.Lock()
	if l.nReader < l.opts.Readers {
		l.nReader++
		l.mu.Unlock()
		opts := append(append([]kgo.Opt(nil), l.common...),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.KeepControlRecords(),
			kgo.FetchMaxBytes(64<<20),
			kgo.FetchMaxPartitionBytes(16<<20),
		)
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			l.mu.Lock()
			l.nReader--
			l.mu.Unlock()
			return nil, fmt.Errorf("kafkalog: %w", err)
		}
		return cl, nil
	}
	l.mu.Unlock()
	select {
	case cl := <-l.readers:
		return cl, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (l *Log) putReader(cl *kgo.Client) { l.readers <- cl }

// errStop ends a scan early.
var errStop = errors.New("stop")

// scan calls fn for every record of the partition (control records
// included, aborted ones not: the consumer reads committed records only)
// from Kafka offset from until one at or past until-1 was seen or fn
// returns errStop. It waits for committed records that are not yet stable
// (the markers of a just committed transaction), within ctx and
// Options.Timeout without progress.
func (l *Log) scan(ctx context.Context, topic string, p int32, from, until int64, fn func(*kgo.Record) error) error {
	if from >= until {
		return nil
	}
	cl, err := l.reader(ctx)
	if err != nil {
		return err
	}
	cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().At(from)}})
	defer func() {
		cl.RemoveConsumePartitions(map[string][]int32{topic: {p}})
		l.putReader(cl)
	}()
	for {
		pctx, cancel := context.WithTimeout(ctx, l.opts.Timeout)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return err
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if ferr == nil {
				ferr = err
			}
		})
		if ferr != nil {
			switch {
			case errors.Is(ferr, context.DeadlineExceeded):
				return l.unavailable(fmt.Sprintf("read %s/%d from %d", topic, p, from), ferr)
			case errors.Is(ferr, kerr.OffsetOutOfRange):
				return fmt.Errorf("%w: %s/%d at %d: %v", logstore.ErrTruncated, topic, p, from, ferr)
			default:
				return l.unavailable(fmt.Sprintf("read %s/%d", topic, p), ferr)
			}
		}
		var stop error
		fs.EachRecord(func(r *kgo.Record) {
			if stop != nil || r.Topic != topic || r.Partition != p {
				return
			}
			if err := fn(r); err != nil {
				stop = err
				return
			}
			if r.Offset >= until-1 {
				stop = errStop
			}
		})
		if errors.Is(stop, errStop) {
			return nil
		}
		if stop != nil {
			return stop
		}
	}
}

// entryReader joins the parts of entries from a scan.
type entryReader struct {
	h     entryHeader
	at    int64 // Kafka offset of the entry's first record
	buf   []byte
	valid bool // h describes a started entry
}

// add takes one record; whole is true when it completed an entry (payload
// is valid until the next add). A record that is not the next part of the
// entry being joined restarts the join (the scan began inside an entry).
func (e *entryReader) add(r *kgo.Record) (h entryHeader, at int64, payload []byte, whole bool, err error) {
	if r.Attrs.IsControl() {
		return h, 0, nil, false, nil
	}
	rh, err := decodeHeader(r)
	if err != nil {
		return h, 0, nil, false, err
	}
	switch {
	case rh.part == 0:
		e.h, e.at, e.valid = rh, r.Offset, true
		e.buf = e.buf[:0]
	case !e.valid || rh.base != e.h.base || rh.part != e.h.part+1 || rh.parts != e.h.parts:
		e.valid = false // a part without its beginning: skip to the next entry
		return h, 0, nil, false, nil
	default:
		e.h.part = rh.part
	}
	if rh.parts == 1 {
		e.valid = false
		return rh, r.Offset, r.Value, true, nil
	}
	e.buf = append(e.buf, r.Value...)
	if rh.part == rh.parts-1 {
		e.valid = false
		return e.h, e.at, e.buf, true, nil
	}
	return h, 0, nil, false, nil
}

// bounds reads a partition's committed entries' end and log start (row
// offsets) and where its first and last entries are.
// kstart and lso are the partition's Kafka log start and last stable
// offset (see offsets).
func (l *Log) bounds(ctx context.Context, topic string, p int32, kstart, lso int64) (bd partBounds, err error) {
	bd.lastAt, bd.startAt = -1, -1
	// The last entry: read the partition's tail, a window that doubles
	// until it holds a whole entry (a window may begin inside one).
	for w := int64(16); ; w *= 2 {
		from := max(kstart, lso-w)
		var er entryReader
		found := false
		err := l.scan(ctx, topic, p, from, lso, func(r *kgo.Record) error {
			h, at, _, whole, err := er.add(r)
			if whole {
				if !found && from == kstart {
					// The window holds the whole partition: its first
					// entry is the log's first.
					bd.start, bd.startAt = h.base, at
				}
				bd.end, bd.lastBase, bd.lastAt, found = h.base+h.rows, h.base, at, true
			}
			return err
		})
		if err != nil {
			return bd, err
		}
		if found || from == kstart {
			break
		}
	}
	if bd.lastAt < 0 || bd.startAt >= 0 {
		return bd, nil // no committed entry, or the first one found too
	}
	// The first entry.
	var er entryReader
	err = l.scan(ctx, topic, p, kstart, lso, func(r *kgo.Record) error {
		h, at, _, whole, err := er.add(r)
		if err != nil {
			return err
		}
		if whole {
			bd.start, bd.startAt = h.base, at
			return errStop
		}
		return nil
	})
	if errors.Is(err, errStop) {
		err = nil
	}
	return bd, err
}

// partBounds is what bounds finds in a partition: row offsets, and Kafka
// offsets (-1: none).
type partBounds struct {
	end, start, lastBase int64
	lastAt, startAt      int64
}

// offsets returns the Kafka log start and last stable offset of every
// partition of the topics.
//
// It waits until every partition's last stable offset has reached its end
// offset: the log's writers are initialized before it is called, so every
// transaction on its topics has ended, but a commit's markers are written
// after the commit returns, and until then the last stable offset stands
// before the transaction's records. Recovery that read the partitions then
// would miss the last committed entries (the randomized conformance test
// saw a high watermark two rows short after a reopen, once in a few dozen
// runs).
func (l *Log) offsets(ctx context.Context, topics ...string) (start, lso kadm.ListedOffsets, err error) {
	ctx, cancel := context.WithTimeout(ctx, l.opts.Timeout)
	defer cancel()
	start, err = l.admin.ListStartOffsets(ctx, topics...)
	if err == nil {
		err = start.Error()
	}
	if err != nil {
		return nil, nil, l.unavailable("list the start offsets of the log's topics", err)
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		lso, err = l.admin.ListCommittedOffsets(ctx, topics...)
		if err == nil {
			err = lso.Error()
		}
		var end kadm.ListedOffsets
		if err == nil {
			if end, err = l.admin.ListEndOffsets(ctx, topics...); err == nil {
				err = end.Error()
			}
		}
		if err != nil {
			return nil, nil, l.unavailable("list the stable offsets of the log's topics", err)
		}
		settled := true
		end.Each(func(e kadm.ListedOffset) {
			if s, ok := lso.Lookup(e.Topic, e.Partition); !ok || s.Offset < e.Offset {
				settled = false
			}
		})
		if settled {
			return start, lso, nil
		}
		select {
		case <-ctx.Done():
			return nil, nil, l.unavailable("wait for the log's last transaction to complete its commit", ctx.Err())
		case <-tick.C:
		}
	}
}

// locate returns the Kafka offset of an entry at or below row in the
// bucket, near it: it bisects the partition between the index points around
// row while they are more than bisectSpan records apart, adding the entries
// it finds to the index.
func (l *Log) locate(ctx context.Context, b logstore.Bucket, topic string, row int64) (int64, error) {
	const bisectSpan = 64
	for {
		l.mu.RLock()
		st := l.stateLocked(b)
		var lo, hi point
		var loOK, hiOK bool
		if st != nil {
			lo, loOK, hi, hiOK = st.idx.around(row)
		}
		l.mu.RUnlock()
		if !loOK {
			return 0, fmt.Errorf("%w: read %v from %d: no entry there", logstore.ErrTruncated, b, row)
		}
		if !hiOK || hi.at-lo.at <= bisectSpan {
			return lo.at, nil
		}
		mid := lo.at + (hi.at-lo.at)/2
		var er entryReader
		var fb, fa int64 = -1, -1
		err := l.scan(ctx, topic, b.Bucket, mid, hi.at, func(r *kgo.Record) error {
			h, at, _, whole, err := er.add(r)
			if err != nil {
				return err
			}
			if whole {
				fb, fa = h.base, at
				return errStop
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStop) {
			return 0, err
		}
		l.mu.Lock()
		if st := l.stateLocked(b); st != nil {
			if fb < 0 {
				// No entry begins in [mid, hi.at): lo's entry runs past mid.
				st.idx.add(lo.base, lo.at)
				l.mu.Unlock()
				return lo.at, nil
			}
			st.idx.add(fb, fa)
		}
		l.mu.Unlock()
	}
}

// Read calls fn for each committed entry of the bucket overlapping
// [from, to), in offset order, as logstore.Store.Read does. It reads the
// bucket's partition with a read_committed consumer from the entry at or
// below from.
func (l *Log) Read(ctx context.Context, b logstore.Bucket, from, to int64, fn func(base int64, rows int64, payload []byte) error) error {
	if err := l.enter(); err != nil {
		return err
	}
	defer l.leave()
	if err := ctx.Err(); err != nil {
		return err
	}
	from = max(from, 0)
	l.mu.RLock()
	st := l.stateLocked(b)
	var hw, start int64
	var topic string
	if st != nil {
		hw, start, topic = st.hw, st.start, l.tables[b.Table].topic
	}
	l.mu.RUnlock()
	to = min(to, hw)
	if from >= to {
		return nil
	}
	if from < start {
		return fmt.Errorf("%w: read %v from %d, log starts at %d", logstore.ErrTruncated, b, from, start)
	}
	at, err := l.locate(ctx, b, topic, from)
	if err != nil {
		return err
	}
	var er entryReader
	next := int64(-1)
	err = l.scan(ctx, topic, b.Bucket, at, 1<<62, func(r *kgo.Record) error {
		h, _, payload, whole, err := er.add(r)
		if err != nil || !whole {
			return err
		}
		if next >= 0 && h.base != next {
			return corruptf(r, "entry at %d follows one that ends at %d", h.base, next)
		}
		next = h.base + h.rows
		if next <= from {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(h.base, h.rows, payload); err != nil {
			return err
		}
		if next >= to {
			return errStop
		}
		return nil
	})
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}
