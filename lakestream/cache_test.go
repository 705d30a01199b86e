package lakestream

import (
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/arrowutil"
	"github.com/flightd/flightd/logstore"
)

func TestLogCacheKeepsDropsAndBounds(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	mk := func(n int) arrow.RecordBatch { return int64Batch(mem, n) }
	b0 := logstore.Bucket{Table: "t", Bucket: 0}
	r1, r2 := mk(10), mk(5)
	size := arrowutil.RecordBytes(r1) + arrowutil.RecordBytes(r2)
	c := newLogCache(size + 5) // room for exactly these two and their kinds
	c.put(b0, 0, r1, 0, nil, time.Now())
	c.put(b0, 10, r2, 0, []byte{0, 0, 0, 0, 3}, time.Now())
	r3 := mk(1)
	c.put(b0, 15, r3, 0, nil, time.Now()) // over the limit: not kept
	require.False(t, c.has(b0, 15))
	r1.Release()
	r2.Release()
	r3.Release()

	got, _, kinds, _, ok := c.get(b0, 10)
	require.True(t, ok)
	require.EqualValues(t, 5, got.NumRows())
	require.Equal(t, byte(3), kinds[4])
	got.Release()

	c.dropBelow(b0, 12) // entry [10,15) still holds offsets >= 12
	require.False(t, c.has(b0, 0))
	require.True(t, c.has(b0, 10))
	c.dropTable("t")
	require.False(t, c.has(b0, 10))
	require.Zero(t, c.bytes)
	require.Zero(t, c.small)
}

// A busy table's large entries filling the cache leave small entries (a
// table of single-row writes) their own budget, which bounds them too.
func TestLogCacheKeepsRoomForSmallEntries(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	mk := func(n int) arrow.RecordBatch { return int64Batch(mem, n) }
	big, small := mk(smallEntryBytes/8), mk(1)
	defer big.Release()
	defer small.Release()
	busy, quiet := logstore.Bucket{Table: "busy"}, logstore.Bucket{Table: "quiet"}
	c := newLogCache(2 * arrowutil.RecordBytes(big))
	for i := int64(0); i < 3; i++ {
		c.put(busy, i*big.NumRows(), big, 0, nil, time.Now())
	}
	require.True(t, c.has(busy, big.NumRows()))
	require.False(t, c.has(busy, 2*big.NumRows()), "the main budget holds two large entries")
	c.put(quiet, 0, small, 0, nil, time.Now())
	require.True(t, c.has(quiet, 0), "a small entry is kept although large ones filled the main budget")

	n := int64(smallCacheBytes / arrowutil.RecordBytes(small))
	for i := int64(1); i <= n; i++ {
		c.put(quiet, i, small, 0, nil, time.Now())
	}
	require.False(t, c.has(quiet, n), "small entries have a bound of their own")
	require.LessOrEqual(t, c.small, int64(smallCacheBytes))
	c.dropTable("quiet")
	c.dropTable("busy")
	require.Zero(t, c.bytes)
	require.Zero(t, c.small)
}

// int64Batch is a batch of one BIGINT column holding 0..n-1.
func int64Batch(mem memory.Allocator, n int) arrow.RecordBatch {
	vals := make([]int64, n)
	for i := range vals {
		vals[i] = int64(i)
	}
	return int64Rows(mem, vals...)
}

// int64Rows is a batch of one BIGINT column holding vals.
func int64Rows(mem memory.Allocator, vals ...int64) arrow.RecordBatch {
	sc := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues(vals, nil)
	return b.NewRecordBatch()
}

// Reading a bucket after every small write, as a client that writes and
// reads back does, joins its small entries like the digits of a binary
// counter: each read returns every row in order, sees few batches, and the
// rows copied by joins stay O(n log n) (joining the whole run at every
// read copied O(n^2)). A random model: entries of 1-6 rows, now and then
// (rarely) one too large to join, and reads from a random entry on.
func TestSmallEntriesJoinLikeABinaryCounter(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rng := rand.New(rand.NewPCG(5, 6))
	s := &Service{cache: newLogCache(1 << 30), mem: mem}
	b := logstore.Bucket{Table: "t", Bucket: 0}
	var end, joined, small int64
	for step := 0; step < 400; step++ {
		n := int64(1 + rng.IntN(6))
		if rng.IntN(200) == 0 {
			n = coalesceBelow
		} else {
			small += n
		}
		vals := make([]int64, n)
		for i := range vals {
			vals[i] = end + int64(i)
		}
		rec := int64Rows(mem, vals...)
		s.cache.put(b, end, rec, 0, nil, time.Now())
		rec.Release()
		end += n

		from := int64(0)
		if rng.IntN(4) == 0 { // from a random entry on
			var bases []int64
			for base := range s.cache.buckets[b] {
				bases = append(bases, base)
			}
			slices.Sort(bases)
			from = bases[rng.IntN(len(bases))]
		}
		// read [from, end) as readLog does from the cache: runs first
		var got []int64
		batches := 0
		for cursor := from; cursor < end; {
			rec, rows, ok := arrow.RecordBatch(nil), int64(0), false
			if lb, k, _, _, hit := s.readRun(b, cursor, end); hit {
				rec, rows, ok = lb.Rec, k, true
				joined += k
			} else if r, _, _, _, hit := s.cache.get(b, cursor); hit {
				rec, rows, ok = r, r.NumRows(), true
			}
			require.True(t, ok, "offset %d is cached", cursor)
			col := rec.Column(0).(*array.Int64)
			for i := 0; i < int(rows) && cursor+int64(i) < end; i++ {
				got = append(got, col.Value(i))
			}
			rec.Release()
			cursor += rows
			batches++
		}
		want := make([]int64, 0, end-from)
		for v := from; v < end; v++ {
			want = append(want, v)
		}
		require.Equal(t, want, got[:len(want)], "step %d: rows [%d, %d)", step, from, end)
		require.LessOrEqual(t, batches, 2*bits.Len64(uint64(end))+step/20+4, "step %d: too many batches", step)
	}
	require.Less(t, joined, 2*small*int64(bits.Len64(uint64(small))), "rows copied by joins: %d for %d small rows", joined, small)
	s.cache.dropTable("t")
}
