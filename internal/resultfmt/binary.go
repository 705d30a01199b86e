package resultfmt

import (
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Parquet row groups end at whichever comes first: rowGroupRows rows, or
// rowGroupBytes of encoded data, which the writer keeps in memory until
// the group is complete.
const (
	rowGroupRows  = 1 << 20
	rowGroupBytes = 64 << 20
)

// parquetWriter writes a Parquet file with the result's Arrow schema
// stored in it (so Arrow readers get the same types back), zstd-compressed.
type parquetWriter struct {
	sc *arrow.Schema
	fw *pqarrow.FileWriter
}

func newParquet(w io.Writer, sc *arrow.Schema, o Options) (Writer, error) {
	sc = plainSchema(sc)
	opts := []parquet.WriterProperty{
		parquet.WithAllocator(o.Alloc),
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithMaxRowGroupLength(rowGroupRows),
		parquet.WithCreatedBy("flightd"),
	}
	// Dictionaries pay for strings; for numbers and times, hashing every
	// value costs more than half the encoding and zstd finds the repeats.
	for _, f := range sc.Fields() {
		if fixedWidth(f.Type) {
			opts = append(opts, parquet.WithDictionaryFor(f.Name, false))
		}
	}
	props := parquet.NewWriterProperties(opts...)
	arrProps := pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(o.Alloc), pqarrow.WithStoreSchema())
	fw, err := pqarrow.NewFileWriter(sc, w, props, arrProps)
	if err != nil {
		// Name the column Parquet has no type for (an INTERVAL).
		for _, f := range sc.Fields() {
			if _, ferr := pqarrow.ToParquet(arrow.NewSchema([]arrow.Field{f}, nil), props, arrProps); ferr != nil {
				return nil, fmt.Errorf("parquet: column %q of type %s: %w (cast it, e.g. to VARCHAR)", f.Name, f.Type, ferr)
			}
		}
		return nil, fmt.Errorf("parquet: %w", err)
	}
	return &parquetWriter{sc: sc, fw: fw}, nil
}

func (p *parquetWriter) Write(rec arrow.RecordBatch) error {
	rec = array.NewRecordBatch(p.sc, rec.Columns(), rec.NumRows())
	defer rec.Release()
	if err := p.fw.WriteBuffered(rec); err != nil {
		return fmt.Errorf("parquet: %w", err)
	}
	if p.fw.RowGroupTotalCompressedBytes()+p.fw.RowGroupTotalBytesWritten() >= rowGroupBytes {
		if err := p.fw.NewBufferedRowGroupChecked(); err != nil {
			return fmt.Errorf("parquet: %w", err)
		}
	}
	return nil
}

func (p *parquetWriter) Close() error {
	if err := p.fw.Close(); err != nil {
		return fmt.Errorf("parquet: %w", err)
	}
	return nil
}

// arrowWriter writes an Arrow IPC file (Feather v2).
type arrowWriter struct {
	sc *arrow.Schema
	fw *ipc.FileWriter
}

func newArrow(w io.Writer, sc *arrow.Schema, o Options) (Writer, error) {
	sc = plainSchema(sc)
	fw, err := ipc.NewFileWriter(w, ipc.WithSchema(sc), ipc.WithAllocator(o.Alloc))
	if err != nil {
		return nil, fmt.Errorf("arrow: %w", err)
	}
	return &arrowWriter{sc: sc, fw: fw}, nil
}

func (a *arrowWriter) Write(rec arrow.RecordBatch) error {
	rec = array.NewRecordBatch(a.sc, rec.Columns(), rec.NumRows())
	defer rec.Release()
	if err := a.fw.Write(rec); err != nil {
		return fmt.Errorf("arrow: %w", err)
	}
	return nil
}

func (a *arrowWriter) Close() error {
	if err := a.fw.Close(); err != nil {
		return fmt.Errorf("arrow: %w", err)
	}
	return nil
}

// plainSchema is sc without the Flight SQL column metadata
// (ARROW:FLIGHT:SQL:*) a server puts on its result fields: it describes
// the wire, not the data, and would only clutter a file.
func plainSchema(sc *arrow.Schema) *arrow.Schema {
	fields := make([]arrow.Field, sc.NumFields())
	for i, f := range sc.Fields() {
		if f.HasMetadata() {
			var keys, vals []string
			for k, key := range f.Metadata.Keys() {
				if !strings.HasPrefix(key, "ARROW:FLIGHT:SQL:") {
					keys = append(keys, key)
					vals = append(vals, f.Metadata.Values()[k])
				}
			}
			f.Metadata = arrow.NewMetadata(keys, vals)
		}
		fields[i] = f
	}
	md := sc.Metadata()
	return arrow.NewSchema(fields, &md)
}

// fixedWidth reports whether t is a number, a time or a boolean.
func fixedWidth(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.DATE32, arrow.DATE64, arrow.TIME32, arrow.TIME64, arrow.TIMESTAMP, arrow.DURATION, arrow.BOOL:
		return true
	}
	return numeric(t)
}
