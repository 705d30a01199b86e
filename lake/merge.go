package lake

import (
	"cmp"
	"fmt"
	"slices"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/internal/arrowutil"
	"github.com/flightd/flightd/lake/manifest"
	"github.com/flightd/flightd/lake/paimontype"
)

// A merged primary-key bucket is read as Paimon's merge-tree reader reads it: data files are
// sorted by key with one row per key; each level-0 file is a sorted run, and the files of a
// level above 0 do not overlap, so each such level is one run (files in key order). mergeTask
// merges the runs a row group at a time each:
//
//  1. every run holds its current row group (the rows not yet merged);
//  2. the bound is the smallest of the runs' last keys: every version of a key up to the bound
//     is in the runs' current row groups (a run's later rows have larger keys);
//  3. the rows up to the bound (all of the bound's run, a prefix of the others, found by binary
//     search) are merged as mergePK merges a whole bucket: ordered by key, the table's sequence
//     fields (sequence.field, see SeqOrder), sequence number, then
//     position (a k-way merge of the pieces, each in key order, on a heap), with the runs'
//     pieces laid out in the bucket's file order, so that of two
//     versions with the same sequence number the one in the later file wins, as before; per key
//     the last version wins and is dropped when it is a retraction (-U/-D);
//  4. a run whose row group is used up reads its next one.
//
// A window with rows of a single run needs no sort (its keys are unique): its rows are passed
// on as a slice, without the retractions. Memory: a row group per run, plus one window (at
// most a row group per run) and its output.

type mergeTask struct {
	r        *scanReader
	g        *scanGroup
	want     []arrow.Field // keys, other output columns, _SEQUENCE_NUMBER, _VALUE_KIND
	keyIdx   []int
	keyTypes []paimontype.DataType
	proj     []int // output column i is want[proj[i]]
	seq      *SeqOrder

	dvs     map[string]*manifest.DeletionVector
	runs    []*mergeRun
	started bool
	out     []arrow.RecordBatch // merged, not yet returned
}

type mergeRun struct {
	files []int // indices into the group's files, in key order
	next  int   // files[next] is the next file to open
	fr    *fileReader
	file  int               // index of cur's file in the group's files
	cur   arrow.RecordBatch // current row group, rows from off on not merged yet
	off   int
}

// mergeWant returns the columns a bucket merge reads: the trimmed key columns, the other
// columns of r.schema, the table's sequence fields, then _SEQUENCE_NUMBER and _VALUE_KIND.
func (r *scanReader) mergeWant() []arrow.Field {
	ts := r.t.schema
	full := ts.ArrowSchema()
	var want []arrow.Field
	seen := map[string]bool{}
	for _, n := range ts.TrimmedPrimaryKeys() {
		want = append(want, full.Field(ts.FieldIndex(n)))
		seen[n] = true
	}
	for _, f := range r.schema.Fields() {
		if !seen[f.Name] && f.Name != valueKindField { // KeepKinds: the last field below
			want = append(want, f)
			seen[f.Name] = true
		}
	}
	if seq, _ := SchemaSeqOrder(ts); seq != nil { // checked when the scan began
		for _, f := range seq.arrowFields(ts) {
			if !seen[f.Name] {
				want = append(want, f)
				seen[f.Name] = true
			}
		}
	}
	return append(want, arrow.Field{Name: seqNumberField, Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: valueKindField, Type: arrow.PrimitiveTypes.Int8})
}

func (r *scanReader) newMerge(g *scanGroup) *mergeTask {
	ts := r.t.schema
	m := &mergeTask{r: r, g: g, want: r.mergeWant(), keyTypes: ts.TrimmedKeyTypes()}
	m.seq, _ = SchemaSeqOrder(ts) // checked when the scan began
	for i := range m.keyTypes {
		m.keyIdx = append(m.keyIdx, i)
	}
	for _, f := range r.schema.Fields() {
		for j, wf := range m.want {
			if wf.Name == f.Name {
				m.proj = append(m.proj, j)
				break
			}
		}
	}
	return m
}

// mergeRuns splits a bucket's files into sorted runs: each level-0 file alone, and each level
// above 0 as one run in key order, unless its files' key ranges overlap or cannot be decoded
// (then each of its files is a run of its own, which is always correct, only larger).
func mergeRuns(files []manifest.DataFileMeta, keyTypes []paimontype.DataType) [][]int {
	var runs [][]int
	byLevel := map[int32][]int{}
	var levels []int32
	for i := range files {
		f := &files[i]
		if f.Level == 0 {
			runs = append(runs, []int{i})
			continue
		}
		if _, ok := byLevel[f.Level]; !ok {
			levels = append(levels, f.Level)
		}
		byLevel[f.Level] = append(byLevel[f.Level], i)
	}
	slices.Sort(levels)
	for _, lv := range levels {
		idx := byLevel[lv]
		if run, ok := levelRun(files, idx, keyTypes); ok {
			runs = append(runs, run)
			continue
		}
		for _, i := range idx {
			runs = append(runs, []int{i})
		}
	}
	return runs
}

// levelRun orders the files idx of one level by min key; ok is false when two overlap.
func levelRun(files []manifest.DataFileMeta, idx []int, keyTypes []paimontype.DataType) ([]int, bool) {
	if len(idx) == 1 {
		return idx, true
	}
	type bounds struct {
		i        int
		min, max []any
	}
	decode := func(b []byte) ([]any, bool) {
		_, row, err := manifest.DeserializeBinaryRow(b)
		if err != nil {
			return nil, false
		}
		vals, err := manifest.DecodeBinaryRow(keyTypes, row)
		return vals, err == nil && len(vals) == len(keyTypes)
	}
	bs := make([]bounds, 0, len(idx))
	for _, i := range idx {
		lo, ok1 := decode(files[i].MinKey)
		hi, ok2 := decode(files[i].MaxKey)
		if !ok1 || !ok2 {
			return nil, false
		}
		bs = append(bs, bounds{i, lo, hi})
	}
	slices.SortStableFunc(bs, func(a, b bounds) int { return compareRows(a.min, b.min) })
	out := make([]int, len(bs))
	for j, b := range bs {
		if j > 0 && compareRows(bs[j-1].max, b.min) >= 0 {
			return nil, false
		}
		out[j] = b.i
	}
	return out, true
}

func (m *mergeTask) start() error {
	m.started = true
	dvs, err := m.r.groupDeletions(m.g)
	if err != nil {
		return err
	}
	m.dvs = dvs
	for _, files := range mergeRuns(m.g.files, m.keyTypes) {
		m.runs = append(m.runs, &mergeRun{files: files})
	}
	return nil
}

// fill makes run hold unmerged rows, unless it is at its end (cur nil).
func (m *mergeTask) fill(run *mergeRun) error {
	if run.cur != nil && run.off >= int(run.cur.NumRows()) {
		run.cur.Release()
		run.cur = nil
	}
	for run.cur == nil {
		if run.fr == nil {
			if run.next == len(run.files) {
				return nil
			}
			run.file = run.files[run.next]
			run.next++
			f := &m.g.files[run.file]
			run.fr = m.r.newFileReader(m.g, f, m.want, m.dvs[f.FileName])
		}
		rec, err := run.fr.next()
		if err != nil {
			return err
		}
		if rec == nil {
			run.fr.close()
			run.fr = nil
			continue
		}
		run.cur, run.off = rec, 0
	}
	return nil
}

func (m *mergeTask) next() (arrow.RecordBatch, error) {
	if !m.started {
		if err := m.start(); err != nil {
			return nil, err
		}
	}
	for len(m.out) == 0 {
		more, err := m.step()
		if err != nil {
			return nil, fmt.Errorf("lake: %s: merge bucket %d: %w", m.r.t.FullName(), m.g.bucket, err)
		}
		if !more {
			return nil, nil
		}
	}
	rec := m.out[0]
	m.out = m.out[1:]
	return rec, nil
}

func (m *mergeTask) close() {
	for _, run := range m.runs {
		if run.fr != nil {
			run.fr.close()
			run.fr = nil
		}
		if run.cur != nil {
			run.cur.Release()
			run.cur = nil
		}
	}
	for _, rec := range m.out {
		rec.Release()
	}
	m.out = nil
}

// piece is the rows of a window taken from one run.
type piece struct {
	rec  arrow.RecordBatch // a slice of the run's row group
	file int
}

// step merges one window (see the top of the file); false when every run is at its end.
func (m *mergeTask) step() (bool, error) {
	var live []*mergeRun
	for _, run := range m.runs {
		if err := m.fill(run); err != nil {
			return false, err
		}
		if run.cur != nil {
			live = append(live, run)
		}
	}
	if len(live) == 0 {
		return false, nil
	}
	last := func(run *mergeRun) int { return int(run.cur.NumRows()) - 1 }
	bound := live[0]
	for _, run := range live[1:] {
		if rowsCompare(run.cur, bound.cur, m.keyIdx, m.keyTypes)(last(run), last(bound)) < 0 {
			bound = run
		}
	}
	var pieces []piece
	for _, run := range live {
		n := int(run.cur.NumRows()) - run.off
		if run != bound {
			c := rowsCompare(run.cur, bound.cur, m.keyIdx, m.keyTypes)
			b := last(bound)
			n = sort.Search(n, func(i int) bool { return c(run.off+i, b) > 0 })
		}
		if n == 0 {
			continue
		}
		pieces = append(pieces, piece{rec: run.cur.NewSlice(int64(run.off), int64(run.off+n)), file: run.file})
		run.off += n
	}
	defer func() {
		for _, p := range pieces {
			p.rec.Release()
		}
	}()
	slices.SortFunc(pieces, func(a, b piece) int { return cmp.Compare(a.file, b.file) })
	var win arrow.RecordBatch
	var kept []int64
	kinds := func(rec arrow.RecordBatch) *array.Int8 { return rec.Column(len(m.want) - 1).(*array.Int8) }
	if len(pieces) == 1 {
		win = pieces[0].rec
		win.Retain()
		k := kinds(win)
		retracts := 0
		for i := 0; i < k.Len(); i++ {
			if RowKind(k.Value(i)).isRetract() {
				retracts++
			}
		}
		if retracts > 0 && !m.r.keepKinds {
			kept = make([]int64, 0, k.Len()-retracts)
			for i := 0; i < k.Len(); i++ {
				if !RowKind(k.Value(i)).isRetract() {
					kept = append(kept, int64(i))
				}
			}
		}
	} else {
		recs := make([]arrow.RecordBatch, len(pieces))
		for i, p := range pieces {
			recs[i] = p.rec
		}
		var err error
		win, err = arrowutil.ConcatRecords(recs, m.r.mem)
		if err != nil {
			return false, err
		}
		n := int(win.NumRows())
		cmpKey := rowCompare(win, m.keyIdx, m.keyTypes)
		seqs := win.Column(len(m.want) - 2).(*array.Int64)
		k := kinds(win)
		ends := make([]int, len(pieces))
		end := 0
		for i, p := range pieces {
			end += int(p.rec.NumRows())
			ends[i] = end
		}
		bySeq, err := m.seq.versions(win)
		if err != nil {
			win.Release()
			return false, err
		}
		order := mergeSortedPieces(ends, cmpKey, bySeq, seqs.Int64Values())
		kept = make([]int64, 0, n)
		for i := 0; i < n; i++ {
			if i+1 < n && cmpKey(order[i], order[i+1]) == 0 {
				continue
			}
			if row := order[i]; m.r.keepKinds || !RowKind(k.Value(row)).isRetract() {
				kept = append(kept, int64(row))
			}
		}
	}
	defer win.Release()
	return true, m.emit(win, kept)
}

// mergeSortedPieces returns the rows of a window whose pieces (rows up to ends[0], up to ends[1],
// ...) are each in key order, in the order orderByKeySeqPos sorts them (key, sequence fields,
// sequence number, position): a k-way merge of the pieces on a heap, O(rows x log pieces).
func mergeSortedPieces(ends []int, cmpKey func(a, b int) int, bySeq func(a, b int) int, seqs []int64) []int {
	heads := make([]int, len(ends))
	for i := 1; i < len(ends); i++ {
		heads[i] = ends[i-1]
	}
	less := func(p, q int) bool {
		a, b := heads[p], heads[q]
		if c := cmpKey(a, b); c != 0 {
			return c < 0
		}
		if bySeq != nil {
			if c := bySeq(a, b); c != 0 {
				return c < 0
			}
		}
		if seqs[a] != seqs[b] {
			return seqs[a] < seqs[b]
		}
		return a < b
	}
	var h []int // piece ids, a binary min-heap by their head rows
	down := func(i int) {
		for {
			l := 2*i + 1
			if l >= len(h) {
				return
			}
			c := l
			if r := l + 1; r < len(h) && less(h[r], h[l]) {
				c = r
			}
			if !less(h[c], h[i]) {
				return
			}
			h[i], h[c] = h[c], h[i]
			i = c
		}
	}
	for p := range ends {
		if heads[p] < ends[p] {
			h = append(h, p)
		}
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		down(i)
	}
	order := make([]int, 0, ends[len(ends)-1])
	for len(h) > 0 {
		p := h[0]
		order = append(order, heads[p])
		heads[p]++
		if heads[p] == ends[p] {
			h[0] = h[len(h)-1]
			h = h[:len(h)-1]
		}
		down(0)
	}
	return order
}

// emit projects the window's kept rows (nil: all) to the output columns and queues them in
// batches of at most scanBatchRows.
func (m *mergeTask) emit(win arrow.RecordBatch, kept []int64) error {
	cols := make([]arrow.Array, len(m.proj))
	for i, j := range m.proj {
		cols[i] = win.Column(j)
	}
	proj := array.NewRecordBatch(m.r.schema, cols, win.NumRows())
	defer proj.Release()
	if kept == nil {
		for start := int64(0); start < proj.NumRows(); start += scanBatchRows {
			m.out = append(m.out, proj.NewSlice(start, min(start+scanBatchRows, proj.NumRows())))
		}
		return nil
	}
	for start := 0; start < len(kept); start += scanBatchRows {
		end := min(start+scanBatchRows, len(kept))
		b, err := takeRecord(m.r.ctx, proj, kept[start:end], m.r.mem)
		if err != nil {
			return err
		}
		m.out = append(m.out, b)
	}
	return nil
}
