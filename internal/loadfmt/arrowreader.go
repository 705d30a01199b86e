package loadfmt

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/util"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/flightd/flightd/internal/arrowconv"
)

// arrowReader reads Parquet and Arrow files: their batches, cut to at
// most BatchRows rows and about BatchBytes, converted to the table's
// types.
type arrowReader struct {
	ctx       context.Context
	file      File
	o         Options
	closeFile func()
	release   func() // the source's resources

	// next reads the source's next batch (the reader's to release).
	next func() (arrow.RecordBatch, error)
	// where places row (of the file) in its row group or batch.
	where func(row int64) Pos
	read  func() int64

	schema  *arrow.Schema // of the batches out
	notNull []int         // columns of schema that are NOT NULL in the table

	src     arrow.RecordBatch // the source batch being cut
	srcRows int64             // rows of the file before src
	off     int64             // rows of src handed out
	rows    int64             // rows handed out
	cur     arrow.RecordBatch
	curPos  Pos
	err     error
	done    bool
}

func (a *arrowReader) setCloser(f func()) { a.closeFile = f }

func (a *arrowReader) Schema() *arrow.Schema { return a.schema }

func (a *arrowReader) Batch() (arrow.RecordBatch, Pos) { return a.cur, a.curPos }

func (a *arrowReader) Err() error { return a.err }

func (a *arrowReader) Read() int64 { return a.read() }

func (a *arrowReader) Close() error {
	for _, r := range []*arrow.RecordBatch{&a.cur, &a.src} {
		if *r != nil {
			(*r).Release()
			*r = nil
		}
	}
	if a.release != nil {
		a.release()
		a.release = nil
	}
	if a.closeFile != nil {
		a.closeFile()
	}
	return nil
}

// init sets the batches' schema from the file's, checking the file's
// columns against the table.
func (a *arrowReader) init(fileSchema *arrow.Schema) error {
	if a.o.Table == nil {
		a.schema = fileSchema
		return nil
	}
	names := make([]string, fileSchema.NumFields())
	for i, f := range fileSchema.Fields() {
		names[i] = f.Name
	}
	if err := checkColumns(a.file.Path, names, a.o.Table); err != nil {
		return err
	}
	fields := make([]arrow.Field, fileSchema.NumFields())
	for i, f := range fileSchema.Fields() {
		j, _ := tableColumn(a.o.Table, f.Name)
		tf := a.o.Table.Field(j)
		fields[i] = arrow.Field{Name: tf.Name, Type: tf.Type, Nullable: tf.Nullable}
		if !tf.Nullable {
			a.notNull = append(a.notNull, i)
		}
	}
	a.schema = arrow.NewSchema(fields, nil)
	return nil
}

func (a *arrowReader) Next() bool {
	if a.cur != nil {
		a.cur.Release()
		a.cur = nil
	}
	for !a.done && a.err == nil {
		if a.src == nil || a.off == a.src.NumRows() {
			if a.src != nil {
				a.srcRows += a.src.NumRows()
				a.src.Release()
				a.src = nil
			}
			rec, err := a.next()
			if err != nil {
				a.err = fmt.Errorf("%s: %w", a.file.Path, err)
				break
			}
			if rec == nil {
				a.done = true
				break
			}
			a.src, a.off = rec, 0
			continue
		}
		n := a.src.NumRows() - a.off
		n = min(n, int64(a.o.BatchRows))
		if size := util.TotalRecordSize(a.src); size > 0 {
			perRow := max(size/max(a.src.NumRows(), 1), 1)
			n = min(n, max(a.o.BatchBytes/perRow, 1))
		}
		piece := a.src.NewSlice(a.off, a.off+n)
		out, good, err := a.convert(piece)
		piece.Release()
		pos := a.where(a.srcRows + a.off)
		a.off += good
		if err != nil {
			a.err = err
		}
		if out != nil {
			a.cur, a.curPos = out, pos
			a.rows += out.NumRows()
			return true
		}
	}
	return false
}

// convert brings rec to the batches' schema. When a row cannot be
// converted (or is null in a NOT NULL column), out holds the rows before
// it (nil if none), good how many, and err names it.
func (a *arrowReader) convert(rec arrow.RecordBatch) (out arrow.RecordBatch, good int64, err error) {
	if a.o.Table == nil {
		rec.Retain()
		return rec, rec.NumRows(), nil
	}
	conv, err := a.convertAll(rec)
	if err == nil {
		if bad, col := a.firstNull(conv); bad >= 0 {
			out = sliceOrNil(conv, bad)
			conv.Release()
			return out, bad, &RowError{Pos: a.where(a.srcRows + a.off + bad), Column: a.schema.Field(col).Name,
				Err: errors.New("null in a NOT NULL column")}
		}
		return conv, rec.NumRows(), nil
	}
	// Find the first row that does not convert: converting is per value,
	// so halves narrow it down.
	empty := rec.NewSlice(0, 0)
	z, zerr := a.convertAll(empty)
	empty.Release()
	if zerr != nil { // the column's type, not a value
		return nil, 0, fmt.Errorf("%s: %w", a.file.Path, zerr)
	}
	z.Release()
	lo, hi := int64(0), rec.NumRows() // rows [0, lo) convert; [0, hi) do not
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		part := rec.NewSlice(0, mid)
		c, perr := a.convertAll(part)
		part.Release()
		if perr != nil {
			hi = mid
		} else {
			c.Release()
			lo = mid
		}
	}
	bad := hi - 1
	row := rec.NewSlice(bad, bad+1)
	one, err := a.convertAll(row)
	row.Release()
	if err == nil {
		one.Release()
		err = errors.New("cannot be converted to the table's types")
	}
	if bad > 0 {
		part := rec.NewSlice(0, bad)
		out, _ = a.convertAll(part)
		part.Release()
	}
	return out, bad, &RowError{Pos: a.where(a.srcRows + a.off + bad), Err: err}
}

// convertAll is rec in the batches' schema.
func (a *arrowReader) convertAll(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	conv, err := arrowconv.Record(a.ctx, a.o.Allocator, a.o.Table, rec)
	if err != nil {
		return nil, err
	}
	defer conv.Release()
	return array.NewRecordBatch(a.schema, conv.Columns(), conv.NumRows()), nil
}

// firstNull is the first row with a null in a NOT NULL column, and the
// column; -1 if none.
func (a *arrowReader) firstNull(rec arrow.RecordBatch) (row int64, col int) {
	row, col = -1, -1
	for _, c := range a.notNull {
		arr := rec.Column(c)
		if arr.NullN() == 0 {
			continue
		}
		for i := 0; i < arr.Len() && (row < 0 || int64(i) < row); i++ {
			if arr.IsNull(i) {
				row, col = int64(i), c
				break
			}
		}
	}
	return row, col
}

func sliceOrNil(rec arrow.RecordBatch, n int64) arrow.RecordBatch {
	if n == 0 {
		return nil
	}
	return rec.NewSlice(0, n)
}

// ---- Parquet ----

func openParquet(ctx context.Context, f File, fh *os.File, o Options) (Reader, error) {
	props := parquet.NewReaderProperties(o.Allocator)
	// Read a column chunk's pages as they are needed rather than the
	// whole chunk at once: a row group of a large file may hold
	// gigabytes.
	props.BufferedStreamEnabled = true
	props.BufferSize = 1 << 20
	pf, err := file.NewParquetReader(fh, file.WithReadProps(props))
	if err != nil {
		return nil, fmt.Errorf("%s: not a Parquet file: %w", f.Path, err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: int64(o.BatchRows), Parallel: true}, o.Allocator)
	if err != nil {
		pf.Close()
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	sc, err := fr.Schema()
	if err != nil {
		pf.Close()
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	a := &arrowReader{ctx: ctx, file: f, o: o}
	if err := a.init(sc); err != nil {
		pf.Close()
		return nil, err
	}
	meta := pf.MetaData()
	starts := make([]int64, pf.NumRowGroups()) // each row group's first row
	var total int64
	for i := range starts {
		starts[i] = total
		total += meta.RowGroup(i).NumRows()
	}
	var rr pqarrow.RecordReader
	if total > 0 {
		if rr, err = fr.GetRecordReader(ctx, nil, nil); err != nil {
			pf.Close()
			return nil, fmt.Errorf("%s: %w", f.Path, err)
		}
	}
	a.release = func() {
		if rr != nil {
			rr.Release()
		}
		pf.Close()
	}
	a.next = func() (arrow.RecordBatch, error) {
		if rr == nil || !rr.Next() {
			if rr != nil && rr.Err() != nil && !errors.Is(rr.Err(), io.EOF) {
				return nil, rr.Err()
			}
			return nil, nil
		}
		rec := rr.RecordBatch()
		rec.Retain()
		return rec, nil
	}
	a.where = func(row int64) Pos {
		g := sort.Search(len(starts), func(i int) bool { return starts[i] > row }) - 1
		g = max(g, 0)
		return Pos{File: f.Path, Row: row, Kind: "row group", Group: g, GroupRow: row - starts[g]}
	}
	a.read = func() int64 {
		if total == 0 {
			return f.Size
		}
		return f.Size * (a.srcRows + a.off) / total
	}
	return a, nil
}

// ---- Arrow IPC ----

// arrowMagic begins an Arrow IPC file (a stream has none).
var arrowMagic = []byte("ARROW1")

func openArrow(ctx context.Context, f File, fh *os.File, o Options) (Reader, error) {
	a := &arrowReader{ctx: ctx, file: f, o: o}
	var head [6]byte
	isFile := false
	var stream io.Reader
	cr := &countingReader{r: fh}
	if f.Path == Stdin {
		br := bufio.NewReaderSize(cr, 1<<20)
		if b, _ := br.Peek(6); bytes.Equal(b, arrowMagic) {
			return nil, errors.New("-: an Arrow file (not a stream) cannot be read from standard input: give its path")
		}
		stream = br
	} else {
		n, _ := io.ReadFull(fh, head[:])
		isFile = n == 6 && bytes.Equal(head[:], arrowMagic)
		if _, err := fh.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		stream = bufio.NewReaderSize(cr, 1<<20)
	}
	var starts []int64 // each batch's first row, as they are read
	if isFile {
		ra := &countingReaderAt{r: fh}
		fr, err := ipc.NewFileReader(ra, ipc.WithAllocator(o.Allocator))
		if err != nil {
			return nil, fmt.Errorf("%s: not an Arrow file: %w", f.Path, err)
		}
		if err := a.init(fr.Schema()); err != nil {
			fr.Close()
			return nil, err
		}
		i := 0
		a.next = func() (arrow.RecordBatch, error) {
			if i >= fr.NumRecords() {
				return nil, nil
			}
			rec, err := fr.RecordBatchAt(i)
			if err != nil {
				return nil, fmt.Errorf("record batch %d: %w", i, err)
			}
			i++
			starts = append(starts, a.srcRows)
			return rec, nil
		}
		a.release = func() { fr.Close() }
		a.read = func() int64 { return min(ra.n, max(f.Size, 0)) }
	} else {
		rd, err := ipc.NewReader(stream, ipc.WithAllocator(o.Allocator))
		if err != nil {
			return nil, fmt.Errorf("%s: not an Arrow file or stream: %w", f.Path, err)
		}
		if err := a.init(rd.Schema()); err != nil {
			rd.Release()
			return nil, err
		}
		a.next = func() (arrow.RecordBatch, error) {
			if !rd.Next() {
				return nil, rd.Err()
			}
			rec := rd.RecordBatch()
			rec.Retain()
			starts = append(starts, a.srcRows)
			return rec, nil
		}
		a.release = rd.Release
		a.read = func() int64 { return cr.n }
	}
	a.where = func(row int64) Pos {
		g := sort.Search(len(starts), func(i int) bool { return starts[i] > row }) - 1
		g = max(g, 0)
		var first int64
		if g < len(starts) {
			first = starts[g]
		}
		return Pos{File: f.Path, Row: row, Kind: "batch", Group: g, GroupRow: row - first}
	}
	return a, nil
}

// countingReaderAt counts the bytes read through it.
type countingReaderAt struct {
	r interface {
		io.Reader
		io.ReaderAt
		io.Seeker
	}
	n int64
}

func (c *countingReaderAt) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n += int64(n)
	return n, err
}

func (c *countingReaderAt) Seek(off int64, whence int) (int64, error) {
	return c.r.Seek(off, whence)
}
