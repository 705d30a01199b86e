package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flightd/flightd/logstore"
)

// index maps row offsets to the Kafka offsets where entries begin (their
// first record), sorted by row offset. The tailer adds every entry it
// numbers; past maxIndexPoints a bucket keeps every other point, and a read
// numbers the entries from the point below where it begins.
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

// locate returns a point at or below row to begin numbering at: the index
// point below it, or, for rows below every point (entries older than the
// log's recovery point), one found by bisecting the partition between its
// start and that point on the checkpoints the records carry.
func (l *Log) locate(ctx context.Context, b logstore.Bucket, topic string, row int64) (point, error) {
	const bisectSpan = 64
	l.mu.RLock()
	st := l.stateLocked(b)
	var lo, hi point
	var loOK, hiOK bool
	if st != nil {
		lo, loOK, hi, hiOK = st.idx.around(row)
	}
	var start point
	if st != nil {
		start = point{base: st.start, at: st.startAt}
	}
	l.mu.RUnlock()
	if loOK {
		return lo, nil
	}
	if st == nil || !hiOK || row < start.base {
		return point{}, fmt.Errorf("%w: read %v from %d: no entry there", logstore.ErrTruncated, b, row)
	}
	lo = start
	for hi.at-lo.at > bisectSpan {
		mid := lo.at + (hi.at-lo.at)/2
		var c point
		found := false
		err := l.scan(ctx, topic, b.Bucket, mid, hi.at, func(r *kgo.Record) error {
			if pt, ok := recordCheckpoint(r, start.at); ok {
				c, found = pt, true
				return errStop
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStop) {
			return point{}, err
		}
		switch {
		case !found:
			hi.at = mid // nothing to learn in [mid, hi)
		case c.base > row:
			if c.at >= hi.at {
				hi.at = mid
			} else {
				hi = c
			}
		case c.at > lo.at:
			lo = c
		default:
			// The checkpoints past mid point before lo: number from lo.
			hi.at = lo.at
		}
	}
	l.mu.Lock()
	if st := l.stateLocked(b); st != nil && lo.at > start.at {
		st.idx.add(lo.base, lo.at)
	}
	l.mu.Unlock()
	return lo, nil
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
	pt, err := l.locate(ctx, b, topic, from)
	if err != nil {
		return err
	}
	n := numberer{anchored: true, next: pt.base, keep: true}
	// Whole entries waiting for one that began before them and is not
	// whole yet (another producer's parts came between its own).
	var pending []entry
	emit := func(e entry) error {
		end := e.base + e.h.rows
		if end <= from {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(e.base, e.h.rows, e.payload); err != nil {
			return err
		}
		if end >= to {
			return errStop
		}
		return nil
	}
	err = l.scan(ctx, topic, b.Bucket, pt.at, 1<<62, func(r *kgo.Record) error {
		if r.Attrs.IsControl() {
			return nil
		}
		e, ok, _, err := n.take(r)
		if err != nil || !ok {
			return err
		}
		lo, open := n.lowestOpen()
		if open && lo < e.base {
			i := sort.Search(len(pending), func(i int) bool { return pending[i].base > e.base })
			pending = slices.Insert(pending, i, e)
			return nil
		}
		if err := emit(e); err != nil {
			return err
		}
		for len(pending) > 0 && (!open || pending[0].base < lo) {
			e, pending = pending[0], pending[1:]
			if err := emit(e); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}
