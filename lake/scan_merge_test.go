package lake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/manifest"
	"github.com/flightd/flightd/lake/paimontype"
)

// mergeKeyKinds are the key layouts the merge model test draws from: typed comparisons
// (integers, strings, timestamps, composite) and boxed ones (decimals).
var mergeKeyKinds = []struct {
	name string
	cols []string // "name TYPE"
}{
	{"bigint", []string{"k BIGINT NOT NULL"}},
	{"string", []string{"k STRING NOT NULL"}},
	{"composite", []string{"k1 INT NOT NULL", "k2 STRING NOT NULL"}},
	{"decimal", []string{"k DECIMAL(20, 2) NOT NULL"}},
	{"timestamp", []string{"k TIMESTAMP(6) NOT NULL"}},
}

// mergeModelTable is a primary-key table with keys of one of mergeKeyKinds and two value
// columns (v BIGINT, s STRING, nullable), plus the model of its rows: per key the newest
// value, or nothing when deleted.
type mergeModelTable struct {
	tb    *Table
	nkeys int
	model map[int]mergeModelRow
	seq   int64
	// stored is per key the newest version written with its kind (a
	// retraction included), until a full compaction drops retractions.
	stored map[int]storedVersion
}

type storedVersion struct {
	row  mergeModelRow
	kind RowKind
}

type mergeModelRow struct {
	v int64
	s *string
}

func newMergeModelTable(t *testing.T, c *Catalog, name string, kind int, buckets int) *mergeModelTable {
	return newMergeModelTableWith(t, c, name, kind, buckets, nil)
}

// newMergeModelTableWith is newMergeModelTable with more table options.
func newMergeModelTableWith(t *testing.T, c *Catalog, name string, kind int, buckets int, opts map[string]string) *mergeModelTable {
	var cols []paimontype.Column
	var pk []string
	for _, spec := range mergeKeyKinds[kind].cols {
		n, typ, _ := strings.Cut(spec, " ")
		dt, err := paimontype.ParseType(typ)
		require.NoError(t, err)
		cols = append(cols, paimontype.Column{Name: n, Type: dt})
		pk = append(pk, n)
	}
	for _, spec := range []string{"v BIGINT", "s STRING"} {
		n, typ, _ := strings.Cut(spec, " ")
		dt, err := paimontype.ParseType(typ)
		require.NoError(t, err)
		cols = append(cols, paimontype.Column{Name: n, Type: dt})
	}
	options := map[string]string{"bucket": fmt.Sprint(buckets)}
	for k, v := range opts {
		options[k] = v
	}
	tb, err := c.CreateTable(t.Context(), "db", name, paimontype.Schema{Columns: cols, PrimaryKeys: pk, Options: options}, false)
	require.NoError(t, err)
	return &mergeModelTable{tb: tb, nkeys: len(pk), model: map[int]mergeModelRow{}, stored: map[int]storedVersion{}}
}

// record builds rows of keys ks (key k is encoded in every key type so that the order of k is
// not the order of the encoded key: strings, composites and decimals reorder them).
func (m *mergeModelTable) record(ks []int, rows []mergeModelRow) arrow.RecordBatch {
	sc := m.tb.Schema().ArrowSchema()
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i, k := range ks {
		for c, f := range sc.Fields() {
			fb := b.Field(c)
			switch f.Name {
			case "v":
				fb.(*array.Int64Builder).Append(rows[i].v)
			case "s":
				if rows[i].s == nil {
					fb.AppendNull()
				} else {
					fb.(*array.StringBuilder).Append(*rows[i].s)
				}
			case "k1":
				fb.(*array.Int32Builder).Append(int32(k % 7))
			case "k2":
				fb.(*array.StringBuilder).Append(fmt.Sprint(k))
			default:
				switch fb := fb.(type) {
				case *array.Int64Builder:
					fb.Append(int64(k*7919%100003) - 50000)
				case *array.StringBuilder:
					fb.Append(fmt.Sprintf("key-%d", k))
				case *array.Decimal128Builder:
					fb.Append(decimal128.FromI64(int64(k%13)*1_000_000_007 - int64(k)))
				case *array.TimestampBuilder:
					fb.Append(arrow.Timestamp(int64(k)*86_400_000_001 - 1e12))
				default:
					panic(fmt.Sprintf("key builder %T", fb))
				}
			}
		}
	}
	return b.NewRecordBatch()
}

// write writes one commit of distinct keys with random kinds and applies it to the model.
func (m *mergeModelTable) write(t *testing.T, rng *rand.Rand, keySpace int) *Snapshot {
	m.seq++
	n := 1 + rng.IntN(keySpace/2)
	ks := rng.Perm(keySpace)[:n]
	rows := make([]mergeModelRow, n)
	kinds := make([]RowKind, n)
	for i, k := range ks {
		rows[i] = mergeModelRow{v: rng.Int64N(1000)}
		if rng.IntN(4) > 0 {
			s := fmt.Sprintf("s%d", rng.IntN(100))
			rows[i].s = &s
		}
		kinds[i] = []RowKind{Insert, UpdateAfter, Insert, UpdateAfter, Delete, UpdateBefore}[rng.IntN(6)]
		m.stored[k] = storedVersion{rows[i], kinds[i]}
		if kinds[i].isRetract() {
			delete(m.model, k)
		} else {
			m.model[k] = rows[i]
		}
	}
	return m.commit(t, ks, rows, kinds, func(i int64) int64 { return m.seq*100_000 + i }, m.seq)
}

// commit writes rows (of keys ks, with kinds; row i with sequence number
// seqOf(i)), each to its bucket, as one commit with identifier ident.
func (m *mergeModelTable) commit(t *testing.T, ks []int, rows []mergeModelRow, kinds []RowKind, seqOf func(i int64) int64, ident int64) *Snapshot {
	ctx := context.Background()
	rec := m.record(ks, rows)
	defer rec.Release()
	buckets, err := m.tb.Buckets(rec)
	require.NoError(t, err)
	byBucket := map[int32][]int64{}
	for i, b := range buckets {
		byBucket[b] = append(byBucket[b], int64(i))
	}
	w := m.tb.NewWrite(ctx)
	for b, idx := range byBucket {
		sub, err := takeRecord(ctx, rec, idx, memory.DefaultAllocator)
		require.NoError(t, err)
		var ks []RowKind
		var seqs []int64
		for _, i := range idx {
			ks = append(ks, kinds[i])
			seqs = append(seqs, seqOf(i))
		}
		require.NoError(t, w.Write(ctx, b, sub, ks, seqs))
		sub.Release()
	}
	prev := mustLatest(t, m.tb)
	var prevID int64
	if prev != nil {
		prevID = prev.ID
	}
	snap, err := w.Commit(ctx, CommitOptions{CommitUser: "model", Identifier: ident, ExpectedLatest: prevID})
	require.NoError(t, err)
	return snap
}

// step takes one random step of a model test: a write (always the
// first), files moved up levels, or a compaction of the buckets with at
// least minFiles files; compacted says a compaction committed.
func (m *mergeModelTable) step(t *testing.T, rng *rand.Rand, keySpace int, snap *Snapshot, minFiles int) (next *Snapshot, compacted bool) {
	switch op := rng.IntN(10); {
	case op < 6 || snap == nil:
		return m.write(t, rng, keySpace), false
	case op < 9:
		return m.relevel(t, rng), false
	}
	s, err := m.tb.Compact(context.Background(), CompactOptions{CommitUser: "model", ExpectedLatest: snap.ID, MinFiles: minFiles})
	require.NoError(t, err)
	if s == nil {
		return snap, false
	}
	return s, true
}

// relevel moves level-0 files of a bucket to level (1..4) as Paimon's leveled compaction would
// (the files are copied under new names; contents, sequence numbers and keys unchanged): the
// files chosen, with those already at level, do not overlap. Rows are unchanged.
func (m *mergeModelTable) relevel(t *testing.T, rng *rand.Rand) *Snapshot {
	ctx := context.Background()
	prev := mustLatest(t, m.tb)
	live, metas, err := m.tb.dataFiles(ctx, prev)
	require.NoError(t, err)
	level := int32(1 + rng.IntN(4))
	ts := m.tb.schema
	var keyTypes []paimontype.DataType
	for _, k := range ts.TrimmedPrimaryKeys() {
		keyTypes = append(keyTypes, ts.Fields[ts.FieldIndex(k)].Type)
	}
	decode := func(b []byte) []any {
		_, row, err := manifest.DeserializeBinaryRow(b)
		require.NoError(t, err)
		v, err := manifest.DecodeBinaryRow(keyTypes, row)
		require.NoError(t, err)
		return v
	}
	type rng2 struct{ lo, hi []any }
	taken := map[int32][]rng2{} // bucket -> key ranges at level
	for _, e := range live {
		if e.File.Level == level && e.File.RowCount > 0 {
			taken[e.Bucket] = append(taken[e.Bucket], rng2{decode(e.File.MinKey), decode(e.File.MaxKey)})
		}
	}
	var entries []manifest.Entry
	for _, i := range rng.Perm(len(live)) {
		e := live[i]
		if e.File.Level != 0 || e.File.RowCount == 0 || rng.IntN(3) == 0 {
			continue
		}
		r := rng2{decode(e.File.MinKey), decode(e.File.MaxKey)}
		if slices.ContainsFunc(taken[e.Bucket], func(o rng2) bool {
			return compareRows(r.lo, o.hi) <= 0 && compareRows(o.lo, r.hi) <= 0
		}) {
			continue
		}
		taken[e.Bucket] = append(taken[e.Bucket], r)
		from := m.tb.dataFilePath(nil, nil, e.Bucket, e.File.FileName)
		f, err := m.tb.fio.Open(ctx, from)
		require.NoError(t, err)
		data, err := io.ReadAll(f)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		moved := e
		moved.File.FileName = "data-" + uuid.NewString() + "-0.parquet"
		moved.File.Level = level
		require.NoError(t, m.tb.fio.CreateExclusive(ctx, m.tb.dataFilePath(nil, nil, e.Bucket, moved.File.FileName), data))
		del := e
		del.Kind = manifest.FileKindDelete
		entries = append(entries, del, moved)
	}
	if len(entries) == 0 {
		return prev
	}
	var written []string
	snap, err := m.tb.commitSnapshot(ctx, commitRequest{prev: prev, prevMetas: metas, entries: entries,
		kind: CommitKindCompact, user: "model", ident: math.MaxInt64}, &pathFactory{uuid: uuid.NewString()}, &written)
	require.NoError(t, err)
	return snap
}

// expected renders the model's rows as scanned (columns cols), sorted.
func (m *mergeModelTable) expected(t *testing.T, cols []string) []string {
	var ks []int
	var rows []mergeModelRow
	for k, r := range m.model {
		ks = append(ks, k)
		rows = append(rows, r)
	}
	rec := m.record(ks, rows)
	defer rec.Release()
	var idx []int
	for _, c := range cols {
		idx = append(idx, rec.Schema().FieldIndices(c)[0])
	}
	out := renderRows(rec, idx)
	sort.Strings(out)
	return out
}

func renderRows(rec arrow.RecordBatch, idx []int) []string {
	var out []string
	for r := 0; r < int(rec.NumRows()); r++ {
		var parts []string
		for _, c := range idx {
			col := rec.Column(c)
			if col.IsNull(r) {
				parts = append(parts, "null")
			} else {
				parts = append(parts, col.ValueStr(r))
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	return out
}

// scanRows scans snap with tune and returns the rows in scan order.
func scanTunedRows(t *testing.T, tb *Table, snap *Snapshot, cols []string, tune ScanTuning) []string {
	rr, err := tb.ScanWith(context.Background(), snap, ScanOptions{Columns: cols}, tune)
	require.NoError(t, err)
	defer rr.Release()
	var out []string
	for rr.Next() {
		rec := rr.RecordBatch()
		require.LessOrEqual(t, rec.NumRows(), int64(maxRowGroupRows))
		idx := make([]int, rec.NumCols())
		for i := range idx {
			idx[i] = i
		}
		out = append(out, renderRows(rec, idx)...)
	}
	require.NoError(t, rr.Err())
	return out
}

// wholeBucketScan is the scan as it was before merges streamed: each bucket that is not read
// raw is merged whole by mergePK, in key order; the order the streaming scan must keep.
func wholeBucketScan(t *testing.T, tb *Table, snap *Snapshot, cols []string) []string {
	ctx := context.Background()
	rr, err := tb.Scan(ctx, snap, ScanOptions{Columns: cols})
	require.NoError(t, err)
	defer rr.Release()
	r := rr.(*scanReader)
	var out []string
	render := func(rec arrow.RecordBatch, names []string) {
		var idx []int
		for _, n := range names {
			idx = append(idx, rec.Schema().FieldIndices(n)[0])
		}
		out = append(out, renderRows(rec, idx)...)
	}
	names := cols
	if names == nil {
		for _, f := range tb.Schema().ArrowSchema().Fields() {
			names = append(names, f.Name)
		}
	}
	for _, g := range r.groups {
		if rawConvertible(g.files) {
			require.NoError(t, r.loadDeletions(g))
			for i := range g.files {
				require.NoError(t, r.readFile(g, &g.files[i], r.schema.Fields(), func(rec arrow.RecordBatch) {
					render(rec, names)
					rec.Release()
				}))
			}
			continue
		}
		all, _, kept, err := r.mergePK(g)
		require.NoError(t, err)
		if all == nil {
			continue
		}
		taken, err := takeRecord(ctx, all, kept, memory.DefaultAllocator)
		all.Release()
		require.NoError(t, err)
		render(taken, names)
		taken.Release()
	}
	return out
}

// TestScanMergeModel writes primary-key tables of random key types through random upserts,
// deletes, compactions and files moved to levels 1..4 (one sorted run per level, several files
// each), and checks after every step that the streaming merge scan returns the model's rows,
// in exactly the order of the whole-bucket merge with one worker and with several, and the
// same rows unordered.
func TestScanMergeModel(t *testing.T) {
	t.Parallel()
	seeds := 6
	steps := 14
	if testing.Short() {
		seeds, steps = 3, 8
	}
	for seed := 0; seed < seeds; seed++ {
		rng := rand.New(rand.NewPCG(uint64(seed), 18))
		kind := seed % len(mergeKeyKinds)
		t.Run(fmt.Sprintf("seed=%d/key=%s", seed, mergeKeyKinds[kind].name), func(t *testing.T) {
			c := newTestCatalog(t)
			m := newMergeModelTable(t, c, "t", kind, 1+rng.IntN(3))
			keySpace := 20 + rng.IntN(300)
			var snap *Snapshot
			for step := 0; step < steps; step++ {
				snap, _ = m.step(t, rng, keySpace, snap, 2)
				cols := []string{"v", "s"}
				for _, f := range m.tb.Schema().ArrowSchema().Fields()[:m.nkeys] {
					cols = append(cols, f.Name)
				}
				if rng.IntN(2) == 0 {
					cols = nil
					for _, f := range m.tb.Schema().ArrowSchema().Fields() {
						cols = append(cols, f.Name)
					}
				}
				want := m.expected(t, cols)
				ref := wholeBucketScan(t, m.tb, snap, cols)
				refSorted := slices.Clone(ref)
				sort.Strings(refSorted)
				require.Equal(t, want, refSorted, "step %d: the whole-bucket merge differs from the model", step)
				for _, workers := range []int{1, 2, 3} {
					got := scanTunedRows(t, m.tb, snap, cols, ScanTuning{Workers: workers})
					require.Equal(t, ref, got, "step %d, %d workers", step, workers)
				}
				got := scanTunedRows(t, m.tb, snap, cols, ScanTuning{Workers: 3, Unordered: true})
				sort.Strings(got)
				require.Equal(t, want, got, "step %d unordered", step)
			}
		})
	}
}

// peakAllocator counts the bytes allocated through it, now and at most, over a checked
// allocator (which also reports leaks).
type peakAllocator struct {
	*memory.CheckedAllocator
	cur, peak atomic.Int64
}

func newPeakAllocator() *peakAllocator {
	return &peakAllocator{CheckedAllocator: memory.NewCheckedAllocator(memory.NewGoAllocator())}
}

func (p *peakAllocator) add(n int64) {
	c := p.cur.Add(n)
	for {
		pk := p.peak.Load()
		if c <= pk || p.peak.CompareAndSwap(pk, c) {
			return
		}
	}
}

func (p *peakAllocator) Allocate(n int) []byte {
	p.add(int64(n))
	return p.CheckedAllocator.Allocate(n)
}

func (p *peakAllocator) Reallocate(n int, b []byte) []byte {
	p.add(int64(n - len(b)))
	return p.CheckedAllocator.Reallocate(n, b)
}

func (p *peakAllocator) Free(b []byte) {
	p.add(-int64(len(b)))
	p.CheckedAllocator.Free(b)
}

// bigMergeTable writes one bucket of files level-0 files with rows keys each (key k in file
// k mod files, and every tenth key again in the last file, newer): every row group of a file
// overlaps every other file's.
func bigMergeTable(t *testing.T, files, rows int) (*Table, *Snapshot, int) {
	ctx := context.Background()
	c := newTestCatalog(t)
	var cols []paimontype.Column
	for _, spec := range []string{"k BIGINT NOT NULL", "v BIGINT"} {
		n, typ, _ := strings.Cut(spec, " ")
		dt, err := paimontype.ParseType(typ)
		require.NoError(t, err)
		cols = append(cols, paimontype.Column{Name: n, Type: dt})
	}
	tb, err := c.CreateTable(ctx, "db", "big", paimontype.Schema{Columns: cols, PrimaryKeys: []string{"k"}, Options: map[string]string{"bucket": "1"}}, false)
	require.NoError(t, err)
	sc := tb.Schema().ArrowSchema()
	var snap *Snapshot
	for f := 0; f < files; f++ {
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		for k := 0; k < rows*files; k++ {
			if k%files == f || (f == files-1 && k%10 == 0) {
				b.Field(0).(*array.Int64Builder).Append(int64(k))
				b.Field(1).(*array.Int64Builder).Append(int64(f))
			}
		}
		rec := b.NewRecordBatch()
		b.Release()
		n := int(rec.NumRows())
		kinds := make([]RowKind, n)
		seqs := make([]int64, n)
		for i := range seqs {
			seqs[i] = int64(f*rows*files + i)
		}
		w := tb.NewWrite(ctx)
		require.NoError(t, w.Write(ctx, 0, rec, kinds, seqs))
		rec.Release()
		var prev int64
		if snap != nil {
			prev = snap.ID
		}
		snap, err = w.Commit(ctx, CommitOptions{CommitUser: "big", Identifier: int64(f + 1), ExpectedLatest: prev})
		require.NoError(t, err)
	}
	return tb, snap, rows * files
}

// A merged bucket is read a row group per run at a time: the most the scan holds is a small
// multiple of a row group per run, far below the bucket decoded whole (which the merge held,
// twice, before it streamed).
func TestScanMergeBoundedMemory(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("writes 1.6M rows")
	}
	tb, snap, total := bigMergeTable(t, 2, 800_000)
	// k, v, _SEQUENCE_NUMBER: 8 bytes, _VALUE_KIND 1, a validity bit for v
	const rowBytes = 8 + 8 + 8 + 1
	decoded := int64(total+total/10) * rowBytes
	for _, workers := range []int{1, 2} {
		mem := newPeakAllocator()
		rr, err := tb.ScanWith(context.Background(), snap, ScanOptions{}, ScanTuning{Workers: workers, Allocator: mem})
		require.NoError(t, err)
		var n int64
		next := int64(0)
		for rr.Next() {
			rec := rr.RecordBatch()
			ks := rec.Column(0).(*array.Int64).Int64Values()
			vs := rec.Column(1).(*array.Int64)
			for i, k := range ks { // plain compares: a require per row cost seconds under -race
				want := k % 2
				if k%10 == 0 {
					want = 1
				}
				if k != next || vs.Value(i) != want {
					require.Failf(t, "wrong row", "key %d (want key %d) has value %d, want %d", k, next, vs.Value(i), want)
				}
				next++
			}
			n += rec.NumRows()
		}
		require.NoError(t, rr.Err())
		rr.Release()
		require.Equal(t, int64(total), n)
		mem.AssertSize(t, 0)
		t.Logf("workers %d: peak %d bytes, bucket decoded %d bytes, a row group %d bytes", workers, mem.peak.Load(), decoded, maxRowGroupRows*rowBytes)
		// two runs: their row groups, a window of at most one row group each, its output
		require.Less(t, mem.peak.Load(), int64(3*2*maxRowGroupRows*rowBytes), "workers %d", workers)
		require.Less(t, mem.peak.Load(), decoded/2, "workers %d", workers)
	}
}

// waitGoroutines waits (yielding, not sleeping) until at most n goroutines run; false if they
// do not get there.
func waitGoroutines(n int) bool {
	for i := 0; i < 100_000; i++ {
		if runtime.NumGoroutine() <= n {
			return true
		}
		runtime.Gosched()
	}
	return false
}

// manyFileTable writes an append table and a primary-key table (merged buckets) of several
// files per bucket, so that a scan has more tasks than workers.
func manyFileTables(t *testing.T) (c *Catalog, tables []*Table, snaps []*Snapshot) {
	ctx := context.Background()
	c = newTestCatalog(t)
	for _, pk := range []bool{false, true} {
		sch := paimontype.Schema{Columns: testCols, Options: map[string]string{"bucket": "3", "bucket-key": "id"}}
		name := "ap"
		if pk {
			sch = paimontype.Schema{Columns: testCols, PrimaryKeys: []string{"id"}, Options: map[string]string{"bucket": "3"}}
			name = "pk"
		}
		tb, err := c.CreateTable(ctx, "db", name, sch, false)
		require.NoError(t, err)
		var snap *Snapshot
		for i := 0; i < 4; i++ {
			rows := make([]row, 3000)
			for j := range rows {
				rows[j] = row{id: int64(j*4 + i), name: sp(fmt.Sprint("n", j)), dt: "x"}
			}
			w := tb.NewWrite(ctx)
			var kinds []RowKind
			var seqs []int64
			if pk {
				kinds = make([]RowKind, len(rows))
				for j := range rows {
					seqs = append(seqs, int64(i*10_000+j))
				}
			}
			writeRows(t, w, tb, rows, kinds, seqs)
			var prev int64
			if snap != nil {
				prev = snap.ID
			}
			snap, err = w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: int64(i + 1), ExpectedLatest: prev})
			require.NoError(t, err)
		}
		tables, snaps = append(tables, tb), append(snaps, snap)
	}
	return c, tables, snaps
}

// Releasing a scan after its first batch, or cancelling its context, stops its workers and
// frees every batch they decoded; no goroutine is left.
func TestScanCancelReleasesWorkers(t *testing.T) {
	_, tables, snaps := manyFileTables(t)
	for i, tb := range tables {
		for _, unordered := range []bool{false, true} {
			for _, cancel := range []bool{false, true} {
				name := fmt.Sprintf("%s/unordered=%v/cancel=%v", tb.Name(), unordered, cancel)
				before := runtime.NumGoroutine()
				mem := newPeakAllocator()
				ctx, stop := context.WithCancel(context.Background())
				rr, err := tb.ScanWith(ctx, snaps[i], ScanOptions{}, ScanTuning{Workers: 3, Unordered: unordered, Allocator: mem})
				require.NoError(t, err)
				require.True(t, rr.Next(), name)
				require.Greater(t, rr.RecordBatch().NumRows(), int64(0))
				if cancel {
					stop()
					for rr.Next() { // batches already decoded may still come, then the error
					}
					require.ErrorIs(t, rr.Err(), context.Canceled, name)
				}
				rr.Release()
				stop()
				mem.AssertSize(t, 0)
				require.True(t, waitGoroutines(before), "%s: %d goroutines left, %d before", name, runtime.NumGoroutine(), before)
			}
		}
	}
}

// An error in a worker (a data file gone) ends the scan with an error naming the file, and
// the scan frees what the other workers decoded.
func TestScanWorkerErrorNamesFile(t *testing.T) {
	ctx := context.Background()
	_, tables, snaps := manyFileTables(t)
	for i, tb := range tables {
		entries, _, err := tb.dataFiles(ctx, snaps[i])
		require.NoError(t, err)
		gone := entries[len(entries)-1]
		require.NoError(t, tb.fio.Remove(ctx, tb.dataFilePath(nil, nil, gone.Bucket, gone.File.FileName)))
		for _, tune := range []ScanTuning{{Workers: 1}, {Workers: 3}, {Workers: 3, Unordered: true}} {
			before := runtime.NumGoroutine()
			mem := newPeakAllocator()
			tune.Allocator = mem
			rr, err := tb.ScanWith(ctx, snaps[i], ScanOptions{}, tune)
			require.NoError(t, err)
			for rr.Next() {
			}
			require.ErrorContains(t, rr.Err(), gone.File.FileName, "%s %+v", tb.Name(), tune)
			rr.Release()
			mem.AssertSize(t, 0)
			require.True(t, waitGoroutines(before))
		}
	}
}

// The heap merge of a window's sorted pieces orders rows exactly as orderByKeySeqPos sorts
// them, equal keys with equal sequence numbers included (the later position last).
func TestMergeSortedPiecesMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 18))
	for iter := 0; iter < 500; iter++ {
		npieces := 1 + rng.IntN(6)
		var keys, seqs []int64
		var ends []int
		for p := 0; p < npieces; p++ {
			k := int64(rng.IntN(5))
			for n := rng.IntN(20); n > 0; n-- {
				keys = append(keys, k)
				seqs = append(seqs, int64(rng.IntN(3)))
				k += 1 + int64(rng.IntN(3))
			}
			ends = append(ends, len(keys))
		}
		if len(keys) == 0 {
			continue
		}
		b := array.NewInt64Builder(memory.DefaultAllocator)
		b.AppendValues(keys, nil)
		col := b.NewArray()
		b.Release()
		rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{col}, int64(len(keys)))
		col.Release()
		cmpKey := rowCompare(rec, []int{0}, []paimontype.DataType{{Root: paimontype.TypeBigInt}})
		require.Equal(t, orderByKeySeqPos(rec, []int{0}, cmpKey, nil, seqs), mergeSortedPieces(ends, cmpKey, nil, seqs), "pieces %v keys %v seqs %v", ends, keys, seqs)
		rec.Release()
	}
}

// A Transform runs on every decoded batch (on the workers), drops the batches it returns nil
// for, and its error ends the scan; nothing is leaked either way.
func TestScanTransformFiltersOnWorkers(t *testing.T) {
	ctx := context.Background()
	_, tables, snaps := manyFileTables(t)
	for i, tb := range tables {
		evenOnly := func(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
			ids := rec.Column(0).(*array.Int64)
			var keep []int64
			for r := 0; r < ids.Len(); r++ {
				if ids.Value(r)%2 == 0 {
					keep = append(keep, int64(r))
				}
			}
			if len(keep) == 0 {
				return nil, nil
			}
			return takeRecord(ctx, rec, keep, memory.DefaultAllocator)
		}
		want := scanTunedRows(t, tb, snaps[i], nil, ScanTuning{Workers: 1})
		var even []string
		for _, r := range want {
			var id int64
			_, err := fmt.Sscanf(r, "%d", &id)
			require.NoError(t, err, r)
			if id%2 == 0 {
				even = append(even, r)
			}
		}
		require.NotEmpty(t, even)
		require.Less(t, len(even), len(want))
		for _, tune := range []ScanTuning{{Workers: 1}, {Workers: 3}, {Workers: 3, Unordered: true}} {
			mem := newPeakAllocator()
			tune.Allocator = mem
			tune.Transform = evenOnly
			got := scanTunedRows(t, tb, snaps[i], nil, tune)
			if tune.Unordered {
				sort.Strings(got)
				sorted := append([]string(nil), even...)
				sort.Strings(sorted)
				require.Equal(t, sorted, got, "%s %+v", tb.Name(), tune)
			} else {
				require.Equal(t, even, got, "%s %+v", tb.Name(), tune)
			}
			mem.AssertSize(t, 0)

			before := runtime.NumGoroutine()
			tune.Transform = func(arrow.RecordBatch) (arrow.RecordBatch, error) { return nil, errors.New("transform refused") }
			rr, err := tb.ScanWith(ctx, snaps[i], ScanOptions{}, tune)
			require.NoError(t, err)
			for rr.Next() {
			}
			require.ErrorContains(t, rr.Err(), "transform refused")
			rr.Release()
			mem.AssertSize(t, 0)
			require.True(t, waitGoroutines(before))
		}
	}
}

// TestScanReadsDisjointFilesRaw: a primary-key bucket whose files hold
// disjoint key ranges (keys that grow, tiered round by round) is read file
// by file, in key order, instead of merged, and its retractions (deletes
// of keys no other file holds) are dropped as a merge drops them; a bucket
// is merged as soon as two of its files' key ranges overlap. The plan is
// checked against key ranges computed here with Go's own order of the key
// type (strings order "10" before "9"), and the rows against a model, in
// key order, with 1-3 workers and unordered.
func TestScanReadsDisjointFilesRaw(t *testing.T) {
	ctx := context.Background()
	for _, keyType := range []string{"BIGINT", "STRING"} {
		for seed := uint64(0); seed < 4; seed++ {
			t.Run(fmt.Sprintf("key=%s/seed=%d", keyType, seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 31))
				c := newTestCatalog(t)
				kt, err := paimontype.ParseType(keyType + " NOT NULL")
				require.NoError(t, err)
				tb, err := c.CreateTable(ctx, "db", "t", paimontype.Schema{Columns: []paimontype.Column{{Name: "k", Type: kt}, {Name: "v", Type: paimontype.DataType{Root: paimontype.TypeBigInt}}},
					PrimaryKeys: []string{"k"}, Options: map[string]string{"bucket": "1"}}, false)
				require.NoError(t, err)
				// less is Go's order of the key as the table stores it.
				less := func(a, b int) bool {
					if keyType == "STRING" {
						return strconv.Itoa(a) < strconv.Itoa(b)
					}
					return a < b
				}
				model := map[int]int64{}
				var spans [][2]int // each commit's smallest and largest key
				var snap *Snapshot
				for step := int64(1); step <= 8; step++ {
					var keys []int
					kinds := []RowKind{}
					switch op := rng.IntN(10); {
					case op == 6: // a window of deletes of keys no file holds (a file of -D only)
						lo, n := rng.IntN(2000), 1+rng.IntN(40)
						for k := lo; k < lo+n; k++ {
							if _, there := model[k]; !there {
								keys = append(keys, k)
								kinds = append(kinds, Delete)
							}
						}
						if len(keys) == 0 {
							keys, kinds = []int{-1}, []RowKind{Delete}
						}
					case op < 7 || len(model) == 0: // a window of new keys, inserted or deleted
						lo, n := rng.IntN(2000), 1+rng.IntN(40)
						for k := lo; k < lo+n; k++ {
							keys = append(keys, k)
							kind := Insert
							if _, there := model[k]; !there && rng.IntN(5) == 0 {
								kind = Delete // a delete of a key no file holds
							}
							kinds = append(kinds, kind)
						}
					case op < 9: // upserts of keys already there
						for k := range model {
							if len(keys) < 5 {
								keys = append(keys, k)
								kinds = append(kinds, UpdateAfter)
							}
						}
					default: // a delete of a key an older file holds
						for k := range model {
							keys = []int{k}
							kinds = []RowKind{Delete}
							break
						}
					}
					rb := array.NewRecordBuilder(memory.DefaultAllocator, tb.Schema().ArrowSchema())
					seqs := make([]int64, len(keys))
					span := [2]int{keys[0], keys[0]}
					for i, k := range keys {
						if keyType == "STRING" {
							rb.Field(0).(*array.StringBuilder).Append(strconv.Itoa(k))
						} else {
							rb.Field(0).(*array.Int64Builder).Append(int64(k))
						}
						v := step*10_000 + int64(i)
						rb.Field(1).(*array.Int64Builder).Append(v)
						seqs[i] = step*1000 + int64(i)
						if kinds[i] == Delete {
							delete(model, k)
						} else {
							model[k] = v
						}
						if less(k, span[0]) {
							span[0] = k
						}
						if less(span[1], k) {
							span[1] = k
						}
					}
					rec := rb.NewRecordBatch()
					rb.Release()
					w := tb.NewWrite(ctx)
					require.NoError(t, w.Write(ctx, 0, rec, kinds, seqs))
					rec.Release()
					snap, err = w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: step, ExpectedLatest: step - 1})
					require.NoError(t, err)
					spans = append(spans, span)
					mustMerge := false
					for i := range spans {
						for j := i + 1; j < len(spans); j++ {
							if !less(spans[i][1], spans[j][0]) && !less(spans[j][1], spans[i][0]) {
								mustMerge = true
							}
						}
					}

					rr, err := tb.Scan(ctx, snap, ScanOptions{})
					require.NoError(t, err)
					merges, files := 0, 0
					for _, task := range rr.(*scanReader).tasks() {
						switch task.(type) {
						case *mergeTask:
							merges++
						case *fileTask:
							files++
						}
					}
					rr.Release()
					if mustMerge {
						require.Equal(t, 1, merges, "step %d: files that can share keys must be merged (spans %v)", step, spans)
					} else {
						require.Equal(t, [2]int{0, int(step)}, [2]int{merges, files}, "step %d: disjoint files are read raw (spans %v)", step, spans)
					}

					var want []string
					var ks []int
					for k := range model {
						ks = append(ks, k)
					}
					sort.Slice(ks, func(i, j int) bool { return less(ks[i], ks[j]) })
					for _, k := range ks {
						want = append(want, fmt.Sprintf("%d|%d", k, model[k]))
					}
					for _, workers := range []int{1, 2, 3} {
						require.Equal(t, want, scanTunedRows(t, tb, snap, nil, ScanTuning{Workers: workers}), "step %d, %d workers", step, workers)
					}
					got := scanTunedRows(t, tb, snap, nil, ScanTuning{Workers: 2, Unordered: true})
					sort.Strings(got)
					sorted := slices.Clone(want)
					sort.Strings(sorted)
					require.Equal(t, sorted, got, "step %d unordered", step)
				}
			})
		}
	}
}

// TestKeepKindsScanModel: a scan that keeps the row kinds (t$audit_log, and
// t$rt of a table with sequence fields) returns per key the newest version
// with the kind it was stored with, retractions included, whether its
// bucket is merged or read raw (disjoint files), until a full compaction
// drops the retractions.
func TestKeepKindsScanModel(t *testing.T) {
	for seed := 0; seed < 6; seed++ {
		rng := rand.New(rand.NewPCG(uint64(seed), 23))
		kind := seed % len(mergeKeyKinds)
		t.Run(fmt.Sprintf("seed=%d/key=%s", seed, mergeKeyKinds[kind].name), func(t *testing.T) {
			c := newTestCatalog(t)
			m := newMergeModelTable(t, c, "t", kind, 1+rng.IntN(3))
			keySpace := 20 + rng.IntN(200)
			var snap *Snapshot
			var cols []string
			for _, f := range m.tb.Schema().ArrowSchema().Fields() {
				cols = append(cols, f.Name)
			}
			for step := 0; step < 12; step++ {
				var compacted bool
				if snap, compacted = m.step(t, rng, keySpace, snap, 1); compacted {
					for k, v := range m.stored { // every bucket is one top-level file now
						if v.kind.isRetract() {
							delete(m.stored, k)
						}
					}
				}
				var ks []int
				var rows []mergeModelRow
				var kinds []string
				for k, v := range m.stored {
					ks, rows = append(ks, k), append(rows, v.row)
					kinds = append(kinds, fmt.Sprint(int8(v.kind)))
				}
				rec := m.record(ks, rows)
				idx := make([]int, len(cols))
				for i := range idx {
					idx[i] = i
				}
				var want []string
				for i, r := range renderRows(rec, idx) {
					want = append(want, r+"|"+kinds[i])
				}
				rec.Release()
				sort.Strings(want)
				rr, err := m.tb.ScanWith(context.Background(), snap, ScanOptions{Columns: cols, KeepKinds: true}, ScanTuning{Workers: 2})
				require.NoError(t, err)
				var got []string
				for rr.Next() {
					b := rr.RecordBatch()
					all := make([]int, b.NumCols())
					for i := range all {
						all[i] = i
					}
					got = append(got, renderRows(b, all)...)
				}
				require.NoError(t, rr.Err())
				rr.Release()
				sort.Strings(got)
				require.Equal(t, want, got, "step %d", step)
			}
		})
	}
}
