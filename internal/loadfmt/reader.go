package loadfmt

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/klauspost/compress/zstd"
)

// Options configure a Reader.
type Options struct {
	// Table is the schema of the table the rows go to: batches hold the
	// file's columns in the table's types (CSV, a column per header
	// name; JSON, every column of the table), and a file column that is
	// not a table column is an error. nil: the file's own types (CSV and
	// JSON: inferred from the first batch's values).
	Table *arrow.Schema
	// BatchRows bounds a batch's rows (default DefaultBatchRows);
	// BatchBytes its size, roughly (default DefaultBatchBytes).
	BatchRows  int
	BatchBytes int64
	// Delimiter separates CSV fields (default ',', for TSV a tab).
	Delimiter byte
	// Null is one more spelling of NULL in CSV, besides the empty
	// field, when not quoted (NULL, \N, ...).
	Null string
	// Allocator holds the batches (default memory.DefaultAllocator).
	Allocator memory.Allocator
}

// Defaults of Options.
const (
	DefaultBatchRows  = 64 << 10
	DefaultBatchBytes = 16 << 20
)

// Reader reads a file's rows as batches.
//
// The batch Batch returns is owned by the reader until the next call to
// Next or Close (Retain it to keep it). When Next returns false, Err
// says why: nil at the end of the file, a *RowError for a row that
// could not be read or converted, or another error. The batches before
// a *RowError hold every row before the bad one.
type Reader interface {
	// Schema is every batch's schema.
	Schema() *arrow.Schema
	Next() bool
	// Batch is the current batch and the position of its first row.
	Batch() (arrow.RecordBatch, Pos)
	Err() error
	// Read is how many bytes of the file the reader has used, for
	// progress (of the compressed file, for compressed text).
	Read() int64
	Close() error
}

// Open opens f for reading. ctx bounds the reads of Parquet files.
func Open(ctx context.Context, f File, o Options) (Reader, error) {
	if o.BatchRows <= 0 {
		o.BatchRows = DefaultBatchRows
	}
	if o.BatchBytes <= 0 {
		o.BatchBytes = DefaultBatchBytes
	}
	if o.Allocator == nil {
		o.Allocator = memory.DefaultAllocator
	}
	var file *os.File
	if f.Path == Stdin {
		file = os.Stdin
	} else {
		var err error
		if file, err = os.Open(f.Path); err != nil {
			return nil, err
		}
	}
	closeFile := func() {
		if file != os.Stdin {
			file.Close()
		}
	}
	var (
		r   Reader
		err error
	)
	switch f.Format {
	case Parquet:
		r, err = openParquet(ctx, f, file, o)
	case Arrow:
		r, err = openArrow(ctx, f, file, o)
	case CSV, TSV, JSON:
		cr := &countingReader{r: file}
		var in io.Reader = cr
		var dec io.Closer
		switch compressionOf(f.Path) {
		case "gzip":
			gz, gerr := gzip.NewReader(cr)
			if gerr != nil {
				closeFile()
				return nil, fmt.Errorf("%s: %w", f.Path, gerr)
			}
			in, dec = gz, gz
		case "zstd":
			zr, zerr := zstd.NewReader(cr)
			if zerr != nil {
				closeFile()
				return nil, fmt.Errorf("%s: %w", f.Path, zerr)
			}
			in, dec = zr, closerFunc(func() error { zr.Close(); return nil })
		}
		t := &textReader{file: f, o: o, count: cr, dec: dec}
		if f.Format == JSON {
			err = t.openJSON(in)
		} else {
			delim := o.Delimiter
			if delim == 0 {
				delim = ','
				if f.Format == TSV {
					delim = '\t'
				}
			}
			err = t.openCSV(in, delim)
		}
		if err != nil && dec != nil {
			dec.Close()
		}
		r = t
	default:
		err = fmt.Errorf("unknown format %q", f.Format)
	}
	if err != nil {
		closeFile()
		return nil, err
	}
	if c, ok := r.(interface{ setCloser(func()) }); ok {
		c.setCloser(closeFile)
	}
	return r, nil
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// tableColumn finds the table's column called name: exactly, else
// ignoring case (as the server matches them).
func tableColumn(table *arrow.Schema, name string) (int, bool) {
	if i := table.FieldIndices(name); len(i) > 0 {
		return i[0], true
	}
	for i, f := range table.Fields() {
		if strings.EqualFold(f.Name, name) {
			return i, true
		}
	}
	return -1, false
}

// columnList names the table's columns for a message.
func columnList(table *arrow.Schema) string {
	s := make([]string, table.NumFields())
	for i, f := range table.Fields() {
		s[i] = f.Name
	}
	return strings.Join(s, ", ")
}

// checkColumns checks a file's columns against the table: each must be
// a table column, and each NOT NULL column of the table must be there.
func checkColumns(path string, cols []string, table *arrow.Schema) error {
	have := make([]bool, table.NumFields())
	for _, c := range cols {
		i, ok := tableColumn(table, c)
		if !ok {
			return fmt.Errorf("%s: column %q is not a column of the table (its columns: %s)", path, c, columnList(table))
		}
		if have[i] {
			return fmt.Errorf("%s: two columns are column %q of the table", path, table.Field(i).Name)
		}
		have[i] = true
	}
	for i, f := range table.Fields() {
		if !have[i] && !f.Nullable {
			return fmt.Errorf("%s: has no column %q, which is NOT NULL in the table", path, f.Name)
		}
	}
	return nil
}
