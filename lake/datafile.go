package lake

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"

	"github.com/flightd/flightd/internal/bufpool"
	"github.com/flightd/flightd/lake/fileio"
)

// System columns of primary-key data files.
const (
	keyFieldPrefix    = "_KEY_"
	seqNumberField    = "_SEQUENCE_NUMBER"
	valueKindField    = "_VALUE_KIND"
	keyFieldIDStart   = 1073741823 // Integer.MAX_VALUE / 2
	seqNumberFieldID  = 2147483646
	valueKindFieldID  = 2147483645
	defaultFileFormat = "parquet"
)

func compressionFor(opt string) (compress.Compression, error) {
	switch strings.ToLower(strings.TrimSpace(opt)) {
	case "", "zstd":
		return compress.Codecs.Zstd, nil
	case "none", "uncompressed":
		return compress.Codecs.Uncompressed, nil
	case "snappy":
		return compress.Codecs.Snappy, nil
	case "gzip":
		return compress.Codecs.Gzip, nil
	case "lz4":
		return compress.Codecs.Lz4Raw, nil
	}
	return compress.Codecs.Uncompressed, fmt.Errorf("lake: unsupported file.compression %q", opt)
}

// countingWriter counts bytes written.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// writeParquet writes rec as one Parquet file (message paimon_schema, field ids from the Arrow field
// metadata, decimals p<=18 as INT32/INT64, nanosecond timestamps as INT96) and returns its size.
// zstdLevel is the table's file.compression.zstd-level, Paimon's default 1
// when unset or not a level. Level 1 encodes ~25% faster than arrow-go's
// default (3) on Paimon-shaped data, with files of the same size
// (bench/parquet_bench_test.go), which is what lets tiering keep up.
func (t *Table) zstdLevel() int {
	n, err := strconv.Atoi(strings.TrimSpace(t.schema.Options["file.compression.zstd-level"]))
	if err != nil || n < 1 || n > 22 {
		return 1
	}
	return n
}

func writeParquet(ctx context.Context, fio fileio.FileIO, path string, rec arrow.RecordBatch, codec compress.Compression, zstdLevel int, mem memory.Allocator) (int64, error) {
	pw, err := newParquetWriter(ctx, fio, path, rec.Schema(), codec, zstdLevel, mem)
	if err != nil {
		return 0, err
	}
	if err := pw.fw.Write(rec); err != nil {
		pw.abort()
		return 0, err
	}
	return pw.close()
}

// parquetWriter is a data file being written: writeParquet's in one call,
// or a primary-key file whose sorted rows arrive batch by batch (write), in
// row groups of maxRowGroupRows.
type parquetWriter struct {
	w  io.WriteCloser
	cw *countingWriter
	fw *pqarrow.FileWriter
}

func newParquetWriter(ctx context.Context, fio fileio.FileIO, path string, schema *arrow.Schema, codec compress.Compression, zstdLevel int, mem memory.Allocator) (*parquetWriter, error) {
	w, err := fio.Create(ctx, path)
	if err != nil {
		return nil, err
	}
	cw := &countingWriter{w: w}
	level := compress.DefaultCompressionLevel
	if codec == compress.Codecs.Zstd {
		level = zstdLevel
	}
	opts := []parquet.WriterProperty{
		parquet.WithRootName("paimon_schema"),
		parquet.WithCompressionLevel(level),
		parquet.WithCompression(codec),
		// No dictionaries: on Paimon-shaped data (bench/parquet_bench_test.go)
		// pqarrow encodes 2.5x faster without them and the zstd files come out
		// 20% smaller, since its dictionary fallback on high-cardinality
		// columns costs more than it saves. Readers handle either.
		parquet.WithDictionaryDefault(false),
		parquet.WithStoreDecimalAsInteger(true),
		parquet.WithAllocator(mem),
		parquet.WithCreatedBy("flightd lake"),
		parquet.WithMaxRowGroupLength(maxRowGroupRows),
	}
	if schema.HasField(seqNumberField) {
		// A primary-key file: a point lookup reads the pages that hold its
		// key's row (readRows), found through the offset index.
		opts = append(opts, parquet.WithPageIndexEnabled(true), parquet.WithDataPageSize(pkDataPageSize))
	}
	props := parquet.NewWriterProperties(opts...)
	// TIMESTAMP(7..9) and TIMESTAMP_LTZ(7..9) (Arrow nanoseconds) are INT96,
	// as Java's ParquetSchemaConverter writes precision above 6 (and reads
	// INT96 back as TIMESTAMP(9)); millisecond and microsecond columns stay
	// INT64 (the option only changes nanosecond columns).
	fw, err := pqarrow.NewFileWriter(schema, cw, props, pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(mem),
		pqarrow.WithDeprecatedInt96Timestamps(true)))
	if err != nil {
		w.Close()
		return nil, err
	}
	return &parquetWriter{w: w, cw: cw, fw: fw}, nil
}

// write adds rec's rows to the file: they fill the open row group, which
// is written out once it holds maxRowGroupRows, so the writer holds at
// most a row group.
func (pw *parquetWriter) write(rec arrow.RecordBatch) error {
	if err := pw.fw.WriteBuffered(rec); err != nil {
		pw.abort()
		return err
	}
	return nil
}

// close finishes the file and returns its size.
func (pw *parquetWriter) close() (int64, error) {
	if err := pw.fw.Close(); err != nil { // FileWriter.Close does not close the sink
		pw.w.Close()
		return 0, err
	}
	if err := pw.w.Close(); err != nil {
		return 0, err
	}
	return pw.cw.n, nil
}

// abort closes the file after a failure (the caller removes it).
func (pw *parquetWriter) abort() {
	_ = pw.fw.Close()
	_ = pw.w.Close()
}

// parquetFile is an open data file.
type parquetFile struct {
	f      fileio.ReadAtSeekCloser
	pr     *file.Reader
	fr     *pqarrow.FileReader
	seekPR *file.Reader        // for seekRows: streams pages (nil until used)
	fr1    *pqarrow.FileReader // batches of one row of seekPR
	mem    memory.Allocator
	path   string
	// rawMem is mem's unzeroed view (nil: mem has none), and frRaw reads
	// flat fixed-width columns with it (nil until used): see readLeaves.
	rawMem memory.Allocator
	frRaw  *pqarrow.FileReader
}

// FooterCacheBytes bounds the decoded Parquet footers of data files kept
// in memory (an estimate, footerCost times their encoded size). Data files
// are immutable and named once, like manifests (see manifest_cache.go), so
// a file opened again, as every point lookup of a bucket opens its files,
// is not read and parsed again: parsing the footer was a fifth of a
// lookup. Set it before the first scan; 0 disables the cache.
var FooterCacheBytes int64 = 32 << 20

// footerCost is the memory of a decoded footer per byte of its encoding.
const footerCost = 4

var parquetFooters = newLRUCache[*metadata.FileMetaData](&FooterCacheBytes)

func openParquet(ctx context.Context, fio fileio.FileIO, path string, mem memory.Allocator) (*parquetFile, error) {
	f, err := openData(ctx, fio, path)
	if err != nil {
		return nil, err
	}
	props := parquet.NewReaderProperties(mem)
	if fileio.IsLocal(fio) {
		// Read pages through a small buffer instead of each column chunk
		// into a fresh buffer of its size: the allocation and zeroing of
		// that buffer was a third of a one-column scan (BenchmarkScanDecode,
		// columns=x: 1.45x the rows/s). Not on S3, where a read is a GET.
		props.BufferedStreamEnabled = true
		props.BufferSize = streamBufferSize
	}
	opts := []file.ReadOption{file.WithReadProps(props)}
	md, cached := parquetFooters.get(path)
	if cached {
		opts = append(opts, file.WithMetadata(md))
	}
	pr, err := file.NewParquetReader(f, opts...)
	if err != nil {
		f.Close()
		return nil, err
	}
	if !cached {
		parquetFooters.put(path, footerCost*int64(pr.MetaData().Size()), pr.MetaData())
	}
	fr, err := pqarrow.NewFileReader(pr, scanReadProps, mem)
	if err != nil {
		pr.Close()
		return nil, err
	}
	pf := &parquetFile{f: f, pr: pr, fr: fr, mem: mem, path: path}
	if u, ok := bufpool.UnzeroedOf(mem); ok {
		pf.rawMem = u
	}
	return pf, nil
}

// scanReadProps are the Arrow read properties of a data file's readers,
// fr and frRaw alike.
var scanReadProps = pqarrow.ArrowReadProperties{Parallel: false, BatchSize: 64 * 1024}

// fixedWidth reports whether leaf is a top-level column of a fixed-width
// integer or floating-point Parquet type that pqarrow decodes into a
// buffer of its own values, writing each of them: INT32, INT64, FLOAT or
// DOUBLE that is not a decimal (those pqarrow rebuilds as Decimal128).
func (p *parquetFile) fixedWidth(leaf int) bool {
	c := p.pr.MetaData().Schema.Column(leaf)
	if c.MaxRepetitionLevel() != 0 || len(c.ColumnPath()) != 1 {
		return false
	}
	switch c.PhysicalType() {
	case parquet.Types.Int32, parquet.Types.Int64, parquet.Types.Float, parquet.Types.Double:
	default:
		return false
	}
	if _, dec := c.LogicalType().(*schema.DecimalLogicalType); dec {
		return false
	}
	return c.ConvertedType() != schema.ConvertedTypes.Decimal
}

// readLeaves reads leaves of row group rg whole. A column whose decoded
// values are written in full (fixedWidth) is read through frRaw, into
// buffers the pool does not clear first: clearing them was a seventh of
// the CPU of an aggregate over a table (BenchmarkScanDecode). pqarrow does
// not write the slots under nulls, so clearNullSlots does.
func (p *parquetFile) readLeaves(ctx context.Context, rg int, leaves []int) (arrow.Table, error) {
	if p.rawMem == nil {
		return p.fr.ReadRowGroups(ctx, leaves, []int{rg})
	}
	var raw, rest []int
	for _, l := range leaves {
		if p.fixedWidth(l) {
			raw = append(raw, l)
		} else {
			rest = append(rest, l)
		}
	}
	if len(raw) == 0 {
		return p.fr.ReadRowGroups(ctx, leaves, []int{rg})
	}
	if p.frRaw == nil {
		fr, err := pqarrow.NewFileReader(p.pr, scanReadProps, p.rawMem)
		if err != nil {
			return nil, err
		}
		p.frRaw = fr
	}
	rawTbl, err := p.frRaw.ReadRowGroups(ctx, raw, []int{rg})
	if err != nil {
		return nil, err
	}
	for i := 0; i < int(rawTbl.NumCols()); i++ {
		for _, ch := range rawTbl.Column(i).Data().Chunks() {
			clearNullSlots(ch)
		}
	}
	if len(rest) == 0 {
		return rawTbl, nil
	}
	defer rawTbl.Release()
	restTbl, err := p.fr.ReadRowGroups(ctx, rest, []int{rg})
	if err != nil {
		return nil, err
	}
	defer restTbl.Release()
	fields := append(append([]arrow.Field(nil), rawTbl.Schema().Fields()...), restTbl.Schema().Fields()...)
	cols := make([]arrow.Column, 0, len(fields))
	for _, t := range []arrow.Table{rawTbl, restTbl} {
		for i := 0; i < int(t.NumCols()); i++ {
			cols = append(cols, *t.Column(i))
		}
	}
	return array.NewTable(arrow.NewSchema(fields, nil), cols, rawTbl.NumRows()), nil
}

// clearNullSlots zeroes the values under the nulls of a fixed-width array
// read into an unzeroed buffer, so that no byte of an earlier batch is
// sent in their place.
func clearNullSlots(arr arrow.Array) {
	if arr.NullN() == 0 {
		return
	}
	d := arr.Data()
	bufs := d.Buffers()
	if len(bufs) < 2 || bufs[1] == nil {
		return
	}
	width := d.DataType().(arrow.FixedWidthDataType).BitWidth() / 8
	vals := bufs[1].Bytes()
	for i := 0; i < d.Len(); i++ {
		if arr.IsNull(i) {
			at := (d.Offset() + i) * width
			clear(vals[at : at+width])
		}
	}
}

// Close closes the file (seekPR shares it and holds nothing else).
func (p *parquetFile) Close() error { return p.pr.Close() }

// leafIndices returns the Parquet leaf column indices of the named top-level fields (-1 entry: missing).
func (p *parquetFile) fieldLeaves(name string) []int {
	for _, f := range p.fr.Manifest.Fields {
		if f.Field.Name == name {
			var out []int
			var walk func(sf pqarrow.SchemaField)
			walk = func(sf pqarrow.SchemaField) {
				if len(sf.Children) == 0 {
					out = append(out, sf.ColIndex)
					return
				}
				for _, c := range sf.Children {
					walk(c)
				}
			}
			walk(f)
			return out
		}
	}
	return nil
}

// readRowGroup reads the given fields of one row group and returns a record with exactly the
// requested fields: columns are matched by name, cast to the wanted type when the file type differs,
// and filled with nulls when the file lacks them (schema evolution).
func (p *parquetFile) readRowGroup(ctx context.Context, rg int, want []arrow.Field, mem memory.Allocator) (arrow.RecordBatch, error) {
	return p.readRows(ctx, rg, want, nil, mem)
}

// readRows is readRowGroup of the rows (runs of positions in the row
// group; nil: all). A few runs of consecutive rows of flat columns that
// have an offset index (primary-key files, see writeParquet) are read by
// seeking to their pages, so only those pages are decompressed and
// decoded; otherwise the columns are decoded whole and the rows taken.
func (p *parquetFile) readRows(ctx context.Context, rg int, want []arrow.Field, rows rowRuns, mem memory.Allocator) (arrow.RecordBatch, error) {
	var leaves []int
	present := make([]bool, len(want))
	int96 := map[int]int{} // want index -> leaf of a top-level INT96 column
	for i, f := range want {
		l := p.fieldLeaves(f.Name)
		if len(l) == 1 && p.topLevelInt96(l[0]) {
			present[i] = true
			int96[i] = l[0]
			continue
		}
		if len(l) > 0 {
			present[i] = true
			leaves = append(leaves, l...)
		}
	}
	nrows := p.pr.MetaData().RowGroups[rg].NumRows
	if rows != nil {
		nrows = rows.count()
	}
	var tbl arrow.Table
	if len(leaves) > 0 {
		var err error
		if rows != nil && p.canSeek(rg, leaves, len(rows)) {
			tbl, err = p.seekRows(ctx, rg, leaves, rows)
			if err != nil {
				return nil, err
			}
		} else {
			tbl, err = p.readLeaves(ctx, rg, leaves)
			if err != nil {
				return nil, err
			}
			if rows != nil {
				all := tbl
				tbl, err = takeTable(ctx, all, rows.positions(), mem)
				all.Release()
				if err != nil {
					return nil, err
				}
			}
		}
		defer tbl.Release()
	}
	cols := make([]arrow.Array, len(want))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, f := range want {
		if !present[i] {
			cols[i] = array.MakeArrayOfNull(mem, f.Type, int(nrows))
			continue
		}
		if leaf, ok := int96[i]; ok {
			arr, err := p.readInt96(rg, leaf, int(p.pr.MetaData().RowGroups[rg].NumRows), mem)
			if err != nil {
				return nil, fmt.Errorf("column %s: %w", f.Name, err)
			}
			if rows != nil {
				taken, err := takeArray(ctx, arr, rows.positions(), mem)
				arr.Release()
				if err != nil {
					return nil, fmt.Errorf("column %s: %w", f.Name, err)
				}
				arr = taken
			}
			if !arrow.TypeEqual(arr.DataType(), f.Type) {
				casted, err := conformArray(ctx, arr, f.Type, mem)
				arr.Release()
				if err != nil {
					return nil, fmt.Errorf("column %s: cannot read INT96 as %s: %w", f.Name, f.Type, err)
				}
				arr = casted
			}
			cols[i] = arr
			continue
		}
		idx := tbl.Schema().FieldIndices(f.Name)
		if len(idx) == 0 {
			return nil, fmt.Errorf("column %s missing after read", f.Name)
		}
		chunked := tbl.Column(idx[0]).Data()
		var arr arrow.Array
		if len(chunked.Chunks()) == 1 {
			arr = chunked.Chunk(0)
			arr.Retain()
		} else {
			var err error
			arr, err = array.Concatenate(chunked.Chunks(), mem)
			if err != nil {
				return nil, err
			}
		}
		if !arrow.TypeEqual(arr.DataType(), f.Type) {
			casted, err := conformArray(ctx, arr, f.Type, mem)
			arr.Release()
			if err != nil {
				return nil, fmt.Errorf("column %s: cannot read %s as %s: %w", f.Name, chunked.DataType(), f.Type, err)
			}
			arr = casted
		}
		cols[i] = arr
	}
	return array.NewRecordBatch(arrow.NewSchema(want, nil), cols, nrows), nil
}

// pkDataPageSize is the data page size of primary-key files (Parquet's
// default is 1 MiB, a whole row group of an 8-byte column): the unit a
// point lookup decompresses and decodes per column.
const pkDataPageSize = 64 * 1024

// streamBufferSize is the read size of page streams of scans of local
// files: a compressed page of a primary-key file (pkDataPageSize before
// compression) or two.
const streamBufferSize = 64 * 1024

// seekBufferSize is the read size of seekRows' page streams. A seek reads
// one page per column, a page header and then its body (which bypasses the
// buffer when it is larger): a larger buffer only reads and zeroes bytes
// the lookup does not use. 8 KiB instead of 64 took a lookup's allocation
// from 4.6 to 3.6 MB and its time by 5-15% (BenchmarkPointLookupPK).
const seekBufferSize = 8 * 1024

// maxSeekRuns is the most runs of consecutive rows of a row group readRows
// reads by seeking: each seek decompresses a page per column (a run of
// rows the pages that hold it), and a row group of a primary-key file has
// some 16 pages per 8-byte column.
const maxSeekRuns = 8

// rowRuns are rows of a row group as ascending, disjoint runs of
// consecutive positions [from, to): a point lookup's candidate pages are a
// few runs of thousands of rows each, cheaper kept as runs than listed.
type rowRuns [][2]int64

// runsOf splits ascending row positions into runs of consecutive rows.
func runsOf(rows []int64) rowRuns {
	var runs rowRuns
	for _, r := range rows {
		if n := len(runs); n > 0 && runs[n-1][1] == r {
			runs[n-1][1]++
			continue
		}
		runs = append(runs, [2]int64{r, r + 1})
	}
	return runs
}

// count is the number of rows in the runs.
func (rs rowRuns) count() int64 {
	var n int64
	for _, r := range rs {
		n += r[1] - r[0]
	}
	return n
}

// positions lists the rows of the runs.
func (rs rowRuns) positions() []int64 {
	out := make([]int64, 0, rs.count())
	for _, r := range rs {
		for i := r[0]; i < r[1]; i++ {
			out = append(out, i)
		}
	}
	return out
}

// canSeek reports whether readRows reads the runs of rows of the leaves of
// row group rg by seeking: few runs, flat columns (a seek within nested
// values is left to whole reads), each with an offset index to find its
// pages.
func (p *parquetFile) canSeek(rg int, leaves []int, runs int) bool {
	if runs > maxSeekRuns {
		return false
	}
	md := p.pr.MetaData()
	rgm := md.RowGroup(rg)
	for _, l := range leaves {
		c := md.Schema.Column(l)
		if c.MaxRepetitionLevel() != 0 || len(c.ColumnPath()) != 1 {
			return false
		}
		cc, err := rgm.ColumnChunk(l)
		if err != nil || cc.GetOffsetIndexLocation() == nil {
			return false
		}
	}
	return true
}

// seekRows reads runs of rows of the leaves of row group rg, seeking to
// each through the offset index and reading it as one batch.
func (p *parquetFile) seekRows(ctx context.Context, rg int, leaves []int, runs rowRuns) (arrow.Table, error) {
	var recs []arrow.RecordBatch
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	var sc *arrow.Schema
	for _, run := range runs {
		n := run[1] - run[0]
		if p.seekPR == nil {
			// A reader of its own that streams a column chunk from the page
			// it seeks to (the scan's reader loads whole chunks on S3).
			props := parquet.NewReaderProperties(p.mem)
			props.BufferedStreamEnabled = true
			props.BufferSize = seekBufferSize
			pr, err := file.NewParquetReader(p.f, file.WithReadProps(props), file.WithMetadata(p.pr.MetaData()))
			if err != nil {
				return nil, err
			}
			p.seekPR = pr
		}
		fr := p.fr1
		if n > 1 || fr == nil {
			var err error
			if fr, err = pqarrow.NewFileReader(p.seekPR, pqarrow.ArrowReadProperties{BatchSize: n}, p.mem); err != nil {
				return nil, err
			}
			if n == 1 {
				p.fr1 = fr
			}
		}
		rr, err := fr.GetRecordReader(ctx, leaves, []int{rg})
		if err != nil {
			return nil, err
		}
		sc = rr.Schema()
		rec, err := p.readRun(rr, run)
		rr.Release()
		if err != nil {
			return nil, fmt.Errorf("read rows %d..%d of row group %d: %w", run[0], run[1]-1, rg, err)
		}
		recs = append(recs, rec)
	}
	return array.NewTableFromRecords(sc, recs), nil
}

// readRun reads the rows of run from rr, a reader of batches of at least
// that many rows.
func (p *parquetFile) readRun(rr pqarrow.RecordReader, run [2]int64) (arrow.RecordBatch, error) {
	n := run[1] - run[0]
	if err := rr.SeekToRow(run[0]); err != nil {
		return nil, err
	}
	rec, err := rr.Read()
	if err != nil {
		return nil, err
	}
	if rec.NumRows() < n {
		return nil, fmt.Errorf("%d rows read", rec.NumRows())
	}
	if rec.NumRows() > n {
		return rec.NewSlice(0, n), nil
	}
	rec.Retain()
	return rec, nil
}

// takeTable selects rows of every column of tbl.
func takeTable(ctx context.Context, tbl arrow.Table, rows []int64, mem memory.Allocator) (arrow.Table, error) {
	cols := make([]arrow.Column, 0, tbl.NumCols())
	defer func() {
		for i := range cols {
			cols[i].Release()
		}
	}()
	for i := 0; i < int(tbl.NumCols()); i++ {
		chunks := tbl.Column(i).Data().Chunks()
		var arr arrow.Array
		if len(chunks) == 1 {
			arr = chunks[0]
			arr.Retain()
		} else {
			var err error
			if arr, err = array.Concatenate(chunks, mem); err != nil {
				return nil, err
			}
		}
		taken, err := takeArray(ctx, arr, rows, mem)
		arr.Release()
		if err != nil {
			return nil, err
		}
		ch := arrow.NewChunked(taken.DataType(), []arrow.Array{taken})
		taken.Release()
		cols = append(cols, *arrow.NewColumn(tbl.Schema().Field(i), ch))
		ch.Release()
	}
	return array.NewTable(tbl.Schema(), cols, int64(len(rows))), nil
}

// takeArray selects rows of arr.
func takeArray(ctx context.Context, arr arrow.Array, rows []int64, mem memory.Allocator) (arrow.Array, error) {
	bld := array.NewInt64Builder(mem)
	bld.AppendValues(rows, nil)
	idx := bld.NewArray()
	bld.Release()
	defer idx.Release()
	return compute.TakeArray(compute.WithAllocator(ctx, mem), arr, idx)
}

// maxRowGroupRows bounds a Parquet row group. Row groups are what a scan
// reads at once and what statistics prune within a file, so large files
// (compaction output) stay readable in bounded memory and a point query
// reads one group, not the file.
const maxRowGroupRows = 128 * 1024

// topLevelInt96 reports whether Parquet leaf column leaf is an INT96 column
// of its own (not inside a group).
func (p *parquetFile) topLevelInt96(leaf int) bool {
	c := p.pr.MetaData().Schema.Column(leaf)
	return c.PhysicalType() == parquet.Types.Int96 && len(c.ColumnPath()) == 1
}

// julianUnixEpochDay is the Julian day of 1970-01-01.
const julianUnixEpochDay = 2440588

// readInt96 reads a top-level INT96 column of row group rg as Arrow
// nanosecond timestamps. Java Paimon (ParquetRowDataWriter.timestampToInt96)
// splits a timestamp before 1970 with Java's truncating division, so its
// nanoseconds of the day are negative there; pqarrow refuses such values,
// while the value is still julianDay*day + nanosOfDay, as Java reads it back.
// A value outside the Arrow nanosecond range (1677..2262) is an error.
func (p *parquetFile) readInt96(rg, leaf, nrows int, mem memory.Allocator) (arrow.Array, error) {
	cr, err := p.pr.RowGroup(rg).Column(leaf)
	if err != nil {
		return nil, err
	}
	r, ok := cr.(*file.Int96ColumnChunkReader)
	if !ok {
		return nil, fmt.Errorf("INT96 column read as %T", cr)
	}
	maxDef := p.pr.MetaData().Schema.Column(leaf).MaxDefinitionLevel()
	vals := make([]parquet.Int96, nrows)
	defs := make([]int16, nrows)
	var lvls int64
	var nvals int
	for lvls < int64(nrows) {
		l, v, err := r.ReadBatch(int64(nrows)-lvls, vals[nvals:], defs[lvls:], nil)
		if err != nil {
			return nil, err
		}
		if l == 0 {
			return nil, fmt.Errorf("INT96 column ends after %d of %d rows", lvls, nrows)
		}
		lvls += l
		nvals += v
	}
	const nanosPerDay = 86400 * int64(1e9)
	b := array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Nanosecond})
	defer b.Release()
	b.Reserve(nrows)
	next := 0
	for row := 0; row < nrows; row++ {
		if maxDef > 0 && defs[row] < maxDef {
			b.AppendNull()
			continue
		}
		v := vals[next]
		next++
		nanos := int64(binary.LittleEndian.Uint64(v[:8]))
		days := int64(binary.LittleEndian.Uint32(v[8:])) - julianUnixEpochDay
		if days >= -106750 && days <= 106750 && nanos > -nanosPerDay && nanos < nanosPerDay {
			b.Append(arrow.Timestamp(days*nanosPerDay + nanos)) // cannot overflow
			continue
		}
		t := new(big.Int).Mul(big.NewInt(days), big.NewInt(nanosPerDay))
		t.Add(t, big.NewInt(nanos))
		if !t.IsInt64() {
			return nil, fmt.Errorf("INT96 timestamp (day %d, nanosecond %d) is outside the nanosecond range", days, nanos)
		}
		b.Append(arrow.Timestamp(t.Int64()))
	}
	return b.NewArray(), nil
}
