package lake

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"

	"github.com/flightd/flightd/internal/arrowutil"
	"github.com/flightd/flightd/internal/background"
	"github.com/flightd/flightd/lake/manifest"
	"github.com/flightd/flightd/lake/paimontype"
)

// A primary-key write's file per bucket holds the commit's rows of the
// bucket sorted by key, one version per key. A write larger than memory is
// written as an external sort: Flush sorts each bucket's buffered rows
// into a sorted run (one version per key, sequence numbers as given) and
// spills it to a scratch file (Arrow IPC, uncompressed, under the write's
// spill directory, never in the warehouse); Commit merges a bucket's runs
// and its rows still in memory (the newest run) into the bucket's data
// file, streaming: a batch of runBatchRows per run, the rows up to the
// smallest of the runs' last keys at a time (as a scan merges files, see
// merge.go), written to Parquet a row group at a time. So a commit of any
// size holds what was buffered since the last Flush plus, per bucket being
// merged, a batch per run and a row group; the data file is the one the
// commit would have written from memory (same rows, same sequence
// numbers). Spill files are scratch: nothing refers to them, they are
// removed when the write commits or aborts, and a crash leaves them to be
// cleared by whoever owns the directory (tiering removes its directory at
// start).

// runBatchRows is the rows per batch of a spilled run: what a merge holds
// per run.
const runBatchRows = 16 * 1024

// runIOBuffer is the buffer of a run's file as it is written and read.
const runIOBuffer = 1 << 20

// sortedRun is a spilled run of one bucket's rows: rows of runSchema in key
// order, one per key.
type sortedRun struct {
	path   string
	rows   int64
	minSeq int64 // the smallest sequence number of the rows it was sorted from
	inFile bool  // written into the group's data file instead (placeRun)
}

// runSchema is the layout of a run's rows: the table's columns, then
// _SEQUENCE_NUMBER (as given to Write, not shifted) and _VALUE_KIND.
func runSchema(ts *paimontype.TableSchema) *arrow.Schema {
	fields := append(slices.Clone(ts.ArrowSchema().Fields()),
		arrow.Field{Name: seqNumberField, Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: valueKindField, Type: arrow.PrimitiveTypes.Int8})
	return arrow.NewSchema(fields, nil)
}

// SetSpillDir sets the directory a primary-key write spills its sorted runs
// to (see Flush); default os.TempDir(). It must be a local directory.
func (w *Write) SetSpillDir(dir string) { w.spillDir = dir }

// BufferedBytes returns the memory of the rows the write holds (the Arrow
// buffers it references, and per row of a primary-key table its kind and
// sequence number).
func (w *Write) BufferedBytes() int64 { return w.bufferedBytes }

// Runs returns how many sorted runs a primary-key write has spilled or is
// spilling.
func (w *Write) Runs() int {
	n := 0
	for _, g := range w.groups {
		n += len(g.runs)
	}
	return n
}

// sortedGroup is a group's buffered rows sorted by key with one version per
// key: rec holds the rows (concatenated), kept the rows kept in key order
// (the last version of each key: largest sequence fields, then sequence
// number, then the one written last).
type sortedGroup struct {
	rec  arrow.RecordBatch
	kept []int64
	g    *writeGroup
}

func (w *Write) sortGroup(g *writeGroup) (*sortedGroup, error) {
	ts := w.t.schema
	rec, err := arrowutil.ConcatRecords(g.recs, w.mem)
	if err != nil {
		return nil, err
	}
	keyIdx, keyTypes := trimmedKeyIndices(ts)
	cmpKey := rowCompare(rec, keyIdx, keyTypes)
	seq, err := SchemaSeqOrder(ts)
	if err != nil {
		rec.Release()
		return nil, err
	}
	bySeq, err := seq.versions(rec)
	if err != nil {
		rec.Release()
		return nil, err
	}
	order := orderByKeySeqPos(rec, keyIdx, cmpKey, bySeq, g.seqs)
	n := len(order)
	kept := make([]int64, 0, n)
	for i := 0; i < n; i++ {
		if i+1 < n && cmpKey(order[i], order[i+1]) == 0 {
			continue
		}
		kept = append(kept, int64(order[i]))
	}
	return &sortedGroup{rec: rec, kept: kept, g: g}, nil
}

// batch returns the kept rows [from, to) in runSchema's layout.
func (s *sortedGroup) batch(ctx context.Context, sc *arrow.Schema, from, to int, mem memory.Allocator) (arrow.RecordBatch, error) {
	rows := s.kept[from:to]
	taken, err := takeRecord(ctx, s.rec, rows, mem)
	if err != nil {
		return nil, err
	}
	defer taken.Release()
	seqB := array.NewInt64Builder(mem)
	defer seqB.Release()
	kindB := array.NewInt8Builder(mem)
	defer kindB.Release()
	seqB.Reserve(len(rows))
	kindB.Reserve(len(rows))
	for _, r := range rows {
		seqB.UnsafeAppend(s.g.seqs[r])
		kindB.UnsafeAppend(int8(s.g.kinds[r]))
	}
	seqArr, kindArr := seqB.NewArray(), kindB.NewArray()
	defer seqArr.Release()
	defer kindArr.Release()
	cols := append(slices.Clone(taken.Columns()), seqArr, kindArr)
	return array.NewRecordBatch(sc, cols, int64(len(rows))), nil
}

func (s *sortedGroup) release() { s.rec.Release() }

// minSeq is the smallest sequence number of the group's rows (kept or
// not: the shift of the bucket's sequence numbers is computed from it, as
// for a file written from memory).
func (s *sortedGroup) minSeq() int64 {
	m := int64(math.MaxInt64)
	for _, v := range s.g.seqs {
		m = min(m, v)
	}
	return m
}

// spillJob is a Flush of a primary-key write being sorted and written in
// the background.
type spillJob struct {
	done chan struct{}
	err  error
}

// writeBase is the snapshot a primary-key write that streams files (see
// placeRun) shifts its sequence numbers against: the newest when its first
// Flush ran, and per (partition, bucket) the highest sequence number in it.
// Commit fails with ErrCommitConflict when another snapshot is the newest
// by then.
type writeBase struct {
	id     int64
	maxSeq map[string]int64
}

// bucketMax is the highest sequence number of g's bucket in the base (-1:
// none).
func (b *writeBase) bucketMax(g *writeGroup) int64 {
	if v, ok := b.maxSeq[string(g.partition)+"/"+strconv.Itoa(int(g.bucket))]; ok {
		return v
	}
	return -1
}

func (t *Table) loadWriteBase(ctx context.Context) (*writeBase, error) {
	id, err := t.latestSnapshotID(ctx)
	if err != nil {
		return nil, fmt.Errorf("lake: %s: find latest snapshot: %w", t.FullName(), err)
	}
	b := &writeBase{id: id, maxSeq: map[string]int64{}}
	if id == 0 {
		return b, nil
	}
	snap, err := t.Snapshot(ctx, id)
	if err != nil {
		return nil, err
	}
	live, _, err := t.dataFiles(ctx, snap)
	if err != nil {
		return nil, err
	}
	for _, e := range live {
		k := string(e.Partition) + "/" + strconv.Itoa(int(e.Bucket))
		if s, ok := b.maxSeq[k]; !ok || e.File.MaxSequenceNumber > s {
			b.maxSeq[k] = e.File.MaxSequenceNumber
		}
	}
	return b, nil
}

// spill detaches the buffered rows of every primary-key group that has some
// and hands them to a background job (at most workers run at once: spill
// first waits for one to end), so that the caller reads the next rows
// meanwhile. The job sorts each group's rows into a run (in parallel with
// other jobs) and then places it (in flush order per group, see placeRun).
// A job's rows stay in memory until its runs are placed. A failed job
// fails the next Flush or Commit (its rows are gone: the write can only be
// aborted).
func (w *Write) spill(ctx context.Context, groups []*writeGroup, workers int) error {
	if err := w.waitSpills(max(workers, 1) - 1); err != nil {
		return err
	}
	if w.base == nil {
		b, err := w.t.loadWriteBase(ctx)
		if err != nil {
			return err
		}
		w.base = b
	}
	dir := w.spillDir
	if dir == "" {
		dir = os.TempDir()
	}
	type part struct {
		g          *writeGroup
		rows       *writeGroup // the detached rows
		run        *sortedRun
		prev, next chan struct{} // the group's previous placement done; this one
	}
	var parts []*part
	for _, g := range groups {
		if len(g.recs) == 0 {
			continue
		}
		p := &part{g: g, run: &sortedRun{}, prev: g.placed, next: make(chan struct{}),
			rows: &writeGroup{partition: g.partition, partVals: g.partVals, bucket: g.bucket, recs: g.recs, kinds: g.kinds, seqs: g.seqs}}
		g.placed = p.next
		g.runs = append(g.runs, p.run)
		g.recs, g.kinds, g.seqs = nil, nil, nil
		parts = append(parts, p)
	}
	w.buffered, w.bufferedBytes = 0, 0
	job := &spillJob{done: make(chan struct{})}
	w.spills = append(w.spills, job)
	go func() {
		defer close(job.done)
		errs := make([]error, len(parts))
		var wg sync.WaitGroup
		for i, p := range parts { // background.Do bounds how many run at once
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = w.spillPart(ctx, p.g, p.rows, p.run, p.prev, p.next, dir)
			}()
		}
		wg.Wait()
		job.err = errors.Join(errs...)
	}()
	return nil
}

// spillPart sorts rows (detached from g) into run and places it once g's
// previous run is placed (prev closed); it closes next when done, also on
// failure. The parts of a job (one per group) run at once.
func (w *Write) spillPart(ctx context.Context, g, rows *writeGroup, run *sortedRun, prev, next chan struct{}, dir string) (err error) {
	defer close(next)
	defer func() {
		if prev != nil {
			<-prev // the group's state is the previous placement's until then
		}
		if err != nil {
			g.failed = true
		}
	}()
	defer rows.releaseRows()
	var s *sortedGroup
	background.Do(func() {
		if err = ctx.Err(); err == nil {
			s, err = w.sortGroup(rows)
		}
	})
	if err != nil {
		return err
	}
	defer s.release()
	for _, r := range rows.recs { // sorted into s.rec; kinds and sequence numbers stay
		r.Release()
	}
	rows.recs = nil
	if prev != nil {
		<-prev
		prev = nil
	}
	if g.failed {
		return nil // the write failed already
	}
	background.Do(func() {
		if err = ctx.Err(); err == nil {
			err = w.placeRun(ctx, g, s, run, dir)
		}
	})
	return err
}

// placeRun places a group's sorted run (its runs are placed in flush
// order): while every run's keys follow the previous one's, the runs are
// written straight into the group's data file (g.sink, open until Commit),
// so rows loaded in key order are encoded once, as they arrive; a run that
// overlaps is spilled to a file under dir for Commit to merge into a
// second data file. The group's sequence numbers are shifted as its first
// run's say (see Commit), so a later run must not have smaller ones.
func (w *Write) placeRun(ctx context.Context, g *writeGroup, s *sortedGroup, run *sortedRun, dir string) error {
	minSeq := s.minSeq()
	if !g.shiftSet {
		g.shiftSet, g.firstSeq = true, minSeq
		if bm := w.base.bucketMax(g); minSeq <= bm {
			g.shift = bm + 1 - minSeq
		}
	} else if minSeq < g.firstSeq {
		return fmt.Errorf("lake: %s: a primary-key flush has sequence number %d, below the first flush's %d", w.t.FullName(), minSeq, g.firstSeq)
	}
	if len(s.kept) == 0 {
		return nil
	}
	if g.sink == nil || s.firstKeyAfter(g.sink) {
		if g.sink == nil {
			codec, err := w.fileCodec()
			if err != nil {
				return err
			}
			g.sink = w.t.newPKFileSink(g, g.shift, codec, w.dataPF, w.mem)
		}
		run.inFile = true
		sc := runSchema(w.t.schema)
		for from := 0; from < len(s.kept); from += runBatchRows {
			b, err := s.batch(ctx, sc, from, min(from+runBatchRows, len(s.kept)), w.mem)
			if err != nil {
				return err
			}
			err = g.sink.add(ctx, b)
			b.Release()
			if err != nil {
				return err
			}
		}
		return nil
	}
	r, err := w.spillSorted(ctx, s, dir)
	*run = r
	return err
}

// firstKeyAfter reports whether the run's first key is above the last key
// sink has written.
func (s *sortedGroup) firstKeyAfter(sink *pkFileSink) bool {
	if sink.rows == 0 {
		return true
	}
	keyIdx, keyTypes := trimmedKeyIndices(sink.t.schema)
	first := rowValues(s.rec, keyIdx, keyTypes, int(s.kept[0]))
	return compareRows(first, sink.lastKey) > 0
}

// waitSpills waits until at most n spill jobs run, and returns the first
// error of a finished one.
func (w *Write) waitSpills(n int) error {
	for len(w.spills) > max(n, 0) {
		job := w.spills[0]
		<-job.done
		w.spills = w.spills[1:]
		if job.err != nil && w.spillErr == nil {
			w.spillErr = job.err
		}
	}
	return w.spillErr
}

// spillSorted writes a sorted run as a file under dir. It returns the
// run's path also on failure (for cleanup).
func (w *Write) spillSorted(ctx context.Context, s *sortedGroup, dir string) (sortedRun, error) {
	f, err := os.CreateTemp(dir, "flightd-run-*.arrow")
	if err != nil {
		return sortedRun{}, fmt.Errorf("lake: %s: spill a sorted run: %w", w.t.FullName(), err)
	}
	run := sortedRun{path: f.Name(), rows: int64(len(s.kept)), minSeq: s.minSeq()}
	sc := runSchema(w.t.schema)
	bw := bufio.NewWriterSize(f, runIOBuffer) // the IPC writer writes buffer by buffer
	iw := ipc.NewWriter(bw, ipc.WithSchema(sc), ipc.WithAllocator(w.mem))
	for from := 0; from < len(s.kept); from += runBatchRows {
		b, err := s.batch(ctx, sc, from, min(from+runBatchRows, len(s.kept)), w.mem)
		if err == nil {
			err = iw.Write(b)
			b.Release()
		}
		if err != nil {
			iw.Close()
			f.Close()
			return run, fmt.Errorf("lake: %s: spill a sorted run: %w", w.t.FullName(), err)
		}
	}
	err = iw.Close()
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return run, fmt.Errorf("lake: %s: spill a sorted run: %w", w.t.FullName(), err)
	}
	return run, nil
}

// removeRuns deletes the group's spilled runs, and the data file its runs
// went into while it is not committed (the caller waited for the spill
// jobs).
func (g *writeGroup) removeRuns(fio interface {
	Remove(context.Context, string) error
}) {
	for _, r := range g.runs {
		if r.path != "" {
			_ = os.Remove(r.path)
		}
	}
	g.runs = nil
	if g.sink != nil {
		g.sink.abort()
		if g.sink.path != "" {
			_ = fio.Remove(context.Background(), g.sink.path)
		}
		g.sink = nil
	}
}

// runIter yields a sorted run's rows (runSchema) a batch at a time; nil at
// its end. The caller releases each batch.
type runIter interface {
	next() (arrow.RecordBatch, error)
	close()
}

// fileRun reads a spilled run.
type fileRun struct {
	f *os.File
	r *ipc.Reader
}

func openRun(path string, mem memory.Allocator) (*fileRun, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r, err := ipc.NewReader(bufio.NewReaderSize(f, runIOBuffer), ipc.WithAllocator(mem))
	if err != nil {
		f.Close()
		return nil, err
	}
	return &fileRun{f: f, r: r}, nil
}

func (fr *fileRun) next() (arrow.RecordBatch, error) {
	if !fr.r.Next() {
		return nil, fr.r.Err()
	}
	rec := fr.r.RecordBatch()
	rec.Retain()
	return rec, nil
}

func (fr *fileRun) close() {
	fr.r.Release()
	fr.f.Close()
}

// memRun yields a sorted group's kept rows.
type memRun struct {
	ctx context.Context
	s   *sortedGroup
	sc  *arrow.Schema
	mem memory.Allocator
	pos int
}

func (m *memRun) next() (arrow.RecordBatch, error) {
	if m.pos >= len(m.s.kept) {
		return nil, nil
	}
	to := min(m.pos+runBatchRows, len(m.s.kept))
	b, err := m.s.batch(m.ctx, m.sc, m.pos, to, m.mem)
	m.pos = to
	return b, err
}

func (m *memRun) close() {}

// spillCursor is a sorted run being merged: its current batch, rows from off on not
// merged yet.
type spillCursor struct {
	it  runIter
	cur arrow.RecordBatch
	off int
}

// mergeSortedRuns merges sorted runs (oldest first) of rows of runSchema
// into emit, in key order, one version per key: per key the last in the
// order of orderByKeySeqPos over the runs laid end to end, retractions
// kept (a level-0 file keeps them). emit does not keep the batch.
func mergeSortedRuns(ctx context.Context, its []runIter, ts *paimontype.TableSchema, mem memory.Allocator, emit func(arrow.RecordBatch) error) error {
	keyIdx, keyTypes := trimmedKeyIndices(ts)
	seq, err := SchemaSeqOrder(ts)
	if err != nil {
		return err
	}
	nt := len(ts.Fields)
	cursors := make([]*spillCursor, len(its))
	for i, it := range its {
		cursors[i] = &spillCursor{it: it}
	}
	defer func() {
		for _, c := range cursors {
			if c.cur != nil {
				c.cur.Release()
			}
		}
	}()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var live []*spillCursor
		for _, c := range cursors {
			if c.cur != nil && c.off >= int(c.cur.NumRows()) {
				c.cur.Release()
				c.cur = nil
			}
			for c.cur == nil && c.it != nil {
				rec, err := c.it.next()
				if err != nil {
					return err
				}
				if rec == nil {
					c.it = nil
					break
				}
				if rec.NumRows() == 0 {
					rec.Release()
					continue
				}
				c.cur, c.off = rec, 0
			}
			if c.cur != nil {
				live = append(live, c)
			}
		}
		if len(live) == 0 {
			return nil
		}
		last := func(c *spillCursor) int { return int(c.cur.NumRows()) - 1 }
		bound := live[0]
		for _, c := range live[1:] {
			if rowsCompare(c.cur, bound.cur, keyIdx, keyTypes)(last(c), last(bound)) < 0 {
				bound = c
			}
		}
		var pieces []arrow.RecordBatch
		for _, c := range live { // oldest run first
			n := int(c.cur.NumRows()) - c.off
			if c != bound {
				cmp := rowsCompare(c.cur, bound.cur, keyIdx, keyTypes)
				b := last(bound)
				n = sort.Search(n, func(i int) bool { return cmp(c.off+i, b) > 0 })
			}
			if n == 0 {
				continue
			}
			pieces = append(pieces, c.cur.NewSlice(int64(c.off), int64(c.off+n)))
			c.off += n
		}
		err := mergeWindow(ctx, pieces, keyIdx, keyTypes, seq, nt, mem, emit)
		for _, p := range pieces {
			p.Release()
		}
		if err != nil {
			return err
		}
	}
}

// mergeWindow merges pieces of runs (each in key order, one version per
// key, oldest run first) that hold every version of their keys, and emits
// the last version of each key.
func mergeWindow(ctx context.Context, pieces []arrow.RecordBatch, keyIdx []int, keyTypes []paimontype.DataType, seq *SeqOrder, nt int, mem memory.Allocator, emit func(arrow.RecordBatch) error) error {
	if len(pieces) == 1 {
		return emit(pieces[0])
	}
	win, err := arrowutil.ConcatRecords(pieces, mem)
	if err != nil {
		return err
	}
	defer win.Release()
	n := int(win.NumRows())
	cmpKey := rowCompare(win, keyIdx, keyTypes)
	bySeq, err := seq.versions(win)
	if err != nil {
		return err
	}
	ends := make([]int, len(pieces))
	end := 0
	for i, p := range pieces {
		end += int(p.NumRows())
		ends[i] = end
	}
	order := mergeSortedPieces(ends, cmpKey, bySeq, win.Column(nt).(*array.Int64).Int64Values())
	kept := make([]int64, 0, n)
	for i := 0; i < n; i++ {
		if i+1 < n && cmpKey(order[i], order[i+1]) == 0 {
			continue
		}
		kept = append(kept, int64(order[i]))
	}
	out, err := takeRecord(ctx, win, kept, mem)
	if err != nil {
		return err
	}
	defer out.Release()
	return emit(out)
}

// writePKGroup writes g's rows as level-0 files: the data file its runs
// were written into (placeRun), completed with its buffered rows when
// their keys follow, and a file merged from its spilled runs and buffered
// rows otherwise (a write that never flushed: that file only). Each holds
// its rows in key order, one version per key, with the sequence numbers
// given, shifted above bucketMaxSeq (the bucket's newest) when the
// smallest of the group's is not above it (a streamed group: its first
// flush's, against the write's base snapshot, which Commit checked is
// still the newest).
func (w *Write) writePKGroup(ctx context.Context, g *writeGroup, bucketMaxSeq int64, codec compress.Compression, pf *pathFactory) (files []encodedFile, err error) {
	ts := w.t.schema
	sc := runSchema(ts)
	var its []runIter
	defer func() {
		for _, it := range its {
			it.close()
		}
	}()
	defer func() {
		if err != nil && g.sink != nil { // its file goes with the commit's
			g.sink.abort()
			files = append(files, encodedFile{g: g, path: g.sink.path})
			g.sink = nil
		}
	}()
	minSeq := int64(math.MaxInt64)
	spilled := false
	for _, r := range g.runs {
		if r.inFile {
			continue
		}
		fr, err := openRun(r.path, w.mem)
		if err != nil {
			return nil, fmt.Errorf("lake: %s: read a sorted run: %w", w.t.FullName(), err)
		}
		its = append(its, fr)
		minSeq = min(minSeq, r.minSeq)
		spilled = true
	}
	if len(g.recs) > 0 {
		s, err := w.sortGroup(g)
		if err != nil {
			return nil, err
		}
		defer s.release()
		m := s.minSeq()
		if g.shiftSet && m < g.firstSeq {
			return nil, fmt.Errorf("lake: %s: a primary-key write has sequence number %d, below its first flush's %d", w.t.FullName(), m, g.firstSeq)
		}
		if g.shiftSet && !spilled && (g.sink == nil || s.firstKeyAfter(g.sink)) {
			if g.sink == nil {
				g.sink = w.t.newPKFileSink(g, g.shift, codec, pf, w.mem)
			}
			it := &memRun{ctx: ctx, s: s, sc: sc, mem: w.mem}
			for {
				b, err := it.next()
				if err != nil {
					return nil, err
				}
				if b == nil {
					break
				}
				err = g.sink.add(ctx, b)
				b.Release()
				if err != nil {
					return nil, err
				}
			}
		} else {
			its = append(its, &memRun{ctx: ctx, s: s, sc: sc, mem: w.mem})
			minSeq = min(minSeq, m)
		}
	}
	if g.sink != nil {
		meta, err := g.sink.close()
		files = append(files, encodedFile{g: g, meta: meta, path: g.sink.path})
		g.sink = nil
		if err != nil {
			return files, err
		}
	}
	if len(its) == 0 {
		return files, nil
	}
	var shift int64
	switch {
	case g.shiftSet:
		shift = g.shift
	case minSeq <= bucketMaxSeq:
		shift = bucketMaxSeq + 1 - minSeq
	}
	sink := w.t.newPKFileSink(g, shift, codec, pf, w.mem)
	err = mergeSortedRuns(ctx, its, ts, w.mem, func(b arrow.RecordBatch) error { return sink.add(ctx, b) })
	if err != nil {
		sink.abort()
		return append(files, encodedFile{g: g, path: sink.path}), err
	}
	meta, err := sink.close()
	return append(files, encodedFile{g: g, meta: meta, path: sink.path}), err
}

// pkFileSink writes a level-0 primary-key data file from batches of
// runSchema rows in key order, one version per key, computing its metadata
// as it goes.
type pkFileSink struct {
	t        *Table
	g        *writeGroup
	shift    int64
	codec    compress.Compression
	pf       *pathFactory
	mem      memory.Allocator
	keyIdx   []int
	keyTypes []paimontype.DataType
	statCols []int
	keyStats *statsCollector
	valStats *statsCollector
	meta     *manifest.DataFileMeta
	pw       *parquetWriter
	path     string
	rows     int64
	deletes  int64
	lastKey  []any
}

func (t *Table) newPKFileSink(g *writeGroup, shift int64, codec compress.Compression, pf *pathFactory, mem memory.Allocator) *pkFileSink {
	ts := t.schema
	keyIdx, keyTypes := trimmedKeyIndices(ts)
	statCols, statTypes, statNames, statModes := t.valueStatsColumns()
	vs := newStatsCollector(statTypes)
	vs.modes = statModes
	meta := &manifest.DataFileMeta{SchemaID: ts.ID, Level: 0, ExtraFiles: []string{}, ValueStatsCols: statNames}
	var fileSource int32
	meta.FileSource = &fileSource
	now := time.Now()
	ct := time.Date(now.Year(), now.Month(), now.Day(), now.Hour(), now.Minute(), now.Second(), now.Nanosecond()/1e6*1e6, time.UTC)
	meta.CreationTime = &ct
	meta.MinSequenceNumber, meta.MaxSequenceNumber = -1, -1
	return &pkFileSink{t: t, g: g, shift: shift, codec: codec, pf: pf, mem: mem, keyIdx: keyIdx, keyTypes: keyTypes,
		statCols: statCols, keyStats: t.keyStatsCollector(ts.TrimmedPrimaryKeys(), keyTypes), valStats: vs, meta: meta}
}

// add writes rows b (runSchema, sequence numbers not shifted yet).
func (s *pkFileSink) add(ctx context.Context, b arrow.RecordBatch) error {
	n := int(b.NumRows())
	if n == 0 {
		return nil
	}
	ts := s.t.schema
	nt := len(ts.Fields)
	if s.pw == nil {
		s.meta.FileName = s.pf.next(dataFilePrefix(ts), ".parquet")
		s.path = s.t.dataFilePath(s.t.partitionTypes(), s.g.partVals, s.g.bucket, s.meta.FileName)
		var err error
		s.meta.MinKey = manifest.SerializeBinaryRow(len(s.keyTypes), manifest.EncodeBinaryRow(s.keyTypes, rowValues(b, s.keyIdx, s.keyTypes, 0)))
		if s.pw, err = newParquetWriter(ctx, s.t.fio, s.path, pkFileSchema(ts), s.codec, s.t.zstdLevel(), s.mem); err != nil {
			return fmt.Errorf("lake: %s: write data file %s: %w", s.t.FullName(), s.path, err)
		}
	}
	seqIn := b.Column(nt).(*array.Int64)
	kinds := b.Column(nt + 1).(*array.Int8)
	seqB := array.NewInt64Builder(s.mem)
	defer seqB.Release()
	seqB.Reserve(n)
	for i := 0; i < n; i++ {
		v := seqIn.Value(i) + s.shift
		seqB.UnsafeAppend(v)
		if s.rows == 0 && i == 0 || v < s.meta.MinSequenceNumber {
			s.meta.MinSequenceNumber = v
		}
		if s.rows == 0 && i == 0 || v > s.meta.MaxSequenceNumber {
			s.meta.MaxSequenceNumber = v
		}
		if RowKind(kinds.Value(i)).isRetract() {
			s.deletes++
		}
	}
	seqArr := seqB.NewArray()
	defer seqArr.Release()
	values := array.NewRecordBatch(ts.ArrowSchema(), b.Columns()[:nt], b.NumRows())
	defer values.Release()
	for i, c := range s.keyIdx {
		s.keyStats.addColumn(i, values.Column(c))
	}
	for i, c := range s.statCols {
		s.valStats.addColumn(i, values.Column(c))
	}
	s.lastKey = rowValues(values, s.keyIdx, s.keyTypes, n-1)
	s.rows += int64(n)
	out := pkFileRecord(ts, values, s.keyIdx, seqArr, kinds)
	defer out.Release()
	if err := s.pw.write(out); err != nil {
		s.pw = nil // closed by write
		return fmt.Errorf("lake: %s: write data file %s: %w", s.t.FullName(), s.path, err)
	}
	return nil
}

func (s *pkFileSink) abort() {
	if s.pw != nil {
		s.pw.abort()
		s.pw = nil
	}
}

// close finishes the file and returns its metadata.
func (s *pkFileSink) close() (*manifest.DataFileMeta, error) {
	if s.pw == nil {
		return nil, fmt.Errorf("lake: %s: a primary-key file without rows", s.t.FullName())
	}
	size, err := s.pw.close()
	s.pw = nil
	if err != nil {
		return nil, fmt.Errorf("lake: %s: write data file %s: %w", s.t.FullName(), s.path, err)
	}
	m := s.meta
	m.MaxKey = manifest.SerializeBinaryRow(len(s.keyTypes), manifest.EncodeBinaryRow(s.keyTypes, s.lastKey))
	m.KeyStats = s.keyStats.stats()
	m.ValueStats = s.valStats.stats()
	m.RowCount = s.rows
	m.DeleteRowCount = &s.deletes
	m.FileSize = size
	return m, nil
}

// trimmedKeyIndices are the positions and types of the trimmed primary-key
// columns among the table's columns.
func trimmedKeyIndices(ts *paimontype.TableSchema) ([]int, []paimontype.DataType) {
	names := ts.TrimmedPrimaryKeys()
	idx := make([]int, len(names))
	types := make([]paimontype.DataType, len(names))
	for i, n := range names {
		idx[i] = ts.FieldIndex(n)
		types[i] = ts.Fields[idx[i]].Type
	}
	return idx, types
}

// pkFileSchema is the schema of pkFileRecord's records.
func pkFileSchema(ts *paimontype.TableSchema) *arrow.Schema {
	var fields []arrow.Field
	for _, name := range ts.TrimmedPrimaryKeys() {
		f := ts.Fields[ts.FieldIndex(name)]
		fields = append(fields, paimontype.ArrowField(keyFieldPrefix+name, f.Type, keyFieldIDStart+f.ID))
	}
	fields = append(fields, arrow.Field{Name: seqNumberField, Type: arrow.PrimitiveTypes.Int64, Metadata: paimontype.FieldIDMetadata(seqNumberFieldID)},
		arrow.Field{Name: valueKindField, Type: arrow.PrimitiveTypes.Int8, Metadata: paimontype.FieldIDMetadata(valueKindFieldID)})
	return arrow.NewSchema(append(fields, ts.ArrowSchema().Fields()...), nil)
}
