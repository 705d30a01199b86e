package resultfmt

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Format is an output format.
type Format string

// The formats.
const (
	Table    Format = "table"    // aligned columns for people, fitted to a width, at most MaxRows rows
	CSV      Format = "csv"      // RFC 4180, a header line, NULL as an empty field
	TSV      Format = "tsv"      // CSV with tabs between fields
	JSON     Format = "json"     // one JSON array of objects per result
	JSONL    Format = "jsonl"    // one JSON object per line
	Markdown Format = "markdown" // a Markdown (GitHub) table
	Parquet  Format = "parquet"  // a Parquet file (zstd)
	Arrow    Format = "arrow"    // an Arrow IPC file
)

// Formats lists every format, in the order help texts name them.
var Formats = []Format{Table, CSV, TSV, JSON, JSONL, Markdown, Parquet, Arrow}

// Binary reports whether f writes bytes that are no text (Parquet, Arrow):
// such a stream holds one result, and no terminal wants it.
func (f Format) Binary() bool { return f == Parquet || f == Arrow }

// ParseFormat reads a format's name (case-insensitive; "md" and "ndjson"
// are accepted for markdown and jsonl).
func ParseFormat(s string) (Format, error) {
	switch v := Format(strings.ToLower(strings.TrimSpace(s))); v {
	case "md":
		return Markdown, nil
	case "ndjson":
		return JSONL, nil
	case Table, CSV, TSV, JSON, JSONL, Markdown, Parquet, Arrow:
		return v, nil
	}
	return "", fmt.Errorf("unknown format %q (known: %s)", s, names())
}

// ForPath chooses a format by a file name's extension: .csv, .tsv, .json,
// .jsonl or .ndjson, .md, .parquet, .arrow, .feather or .ipc. ok is false
// for any other name.
func ForPath(path string) (f Format, ok bool) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".csv":
		return CSV, true
	case ".tsv", ".tab":
		return TSV, true
	case ".json":
		return JSON, true
	case ".jsonl", ".ndjson":
		return JSONL, true
	case ".md", ".markdown":
		return Markdown, true
	case ".parquet", ".pq":
		return Parquet, true
	case ".arrow", ".feather", ".ipc":
		return Arrow, true
	}
	return "", false
}

func names() string {
	s := make([]string, len(Formats))
	for i, f := range Formats {
		s[i] = string(f)
	}
	return strings.Join(s, ", ")
}

// DefaultMaxRows is how many rows the table format prints when Options
// does not say.
const DefaultMaxRows = 1000

// Options tunes a Writer; the zero value is fine.
type Options struct {
	// Width fits the table format into this many terminal columns,
	// truncating cells and then hiding columns; 0 fits nothing.
	Width int
	// MaxRows is how many rows the table format keeps to print (it counts
	// the rest); 0 means DefaultMaxRows. Other formats write every row.
	MaxRows int
	// Alloc allocates the Parquet and Arrow writers' buffers; nil means
	// memory.DefaultAllocator.
	Alloc memory.Allocator
}

// Writer writes one result: batches of one schema, in order.
//
// Every format but the table streams: what Write is given is written to
// the io.Writer (the text formats, so a streaming read shows each batch as
// it comes) or encoded into the row group or file being built (Parquet,
// Arrow) before Write returns, so a result of any size passes in the
// memory of a few batches. The table format keeps the text of its first
// MaxRows rows and prints them at Close.
type Writer interface {
	// Write writes rec's rows. rec must have the schema the Writer was
	// made for (field metadata may differ); Write does not retain it.
	Write(rec arrow.RecordBatch) error
	// Close writes what ends the result: the table and its row count,
	// JSON's closing bracket, Parquet's and Arrow's footers. It does not
	// close the io.Writer.
	Close() error
}

// New returns a Writer of format f for results of schema sc, writing to w.
func New(f Format, w io.Writer, sc *arrow.Schema, o Options) (Writer, error) {
	if o.MaxRows <= 0 {
		o.MaxRows = DefaultMaxRows
	}
	if o.Alloc == nil {
		o.Alloc = memory.DefaultAllocator
	}
	switch f {
	case Table:
		return newTable(w, sc, o), nil
	case CSV:
		return newDelimited(w, sc, ','), nil
	case TSV:
		return newDelimited(w, sc, '\t'), nil
	case JSON:
		return newJSON(w, sc, true), nil
	case JSONL:
		return newJSON(w, sc, false), nil
	case Markdown:
		return newMarkdown(w, sc), nil
	case Parquet:
		return newParquet(w, sc, o)
	case Arrow:
		return newArrow(w, sc, o)
	}
	return nil, fmt.Errorf("unknown format %q (known: %s)", f, names())
}
