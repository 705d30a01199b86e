package loadfmt

import (
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// textReader reads CSV and JSON files: rows are parsed straight into the
// builders of a batch's columns.
type textReader struct {
	file      File
	o         Options
	count     *countingReader
	dec       io.Closer // the decompressor, if any
	closeFile func()

	schema  *arrow.Schema
	rb      *array.RecordBuilder
	decs    []*decoder
	notNull []bool
	got     []bool // JSON: the columns a row gave

	csv     *csvReader
	csvKeep []bool // CSV: columns where "" is a value (strings, bytes)
	null    []byte
	json    *jsonStream
	idx     names // JSON: columns by name
	inferN  int   // JSON without a table: the rows types were inferred from

	// sample holds the rows read to infer types, to be read first; then
	// sampleErr, the error that ended them, or the end of the file.
	sample    []textRow
	sampleErr error
	sampleEnd bool

	rows    int64 // rows read into batches
	inBatch int   // rows in the builders
	bytes   int64
	drop    bool // the builders' last row is a bad one
	start   Pos  // of the batch being built
	cur     arrow.RecordBatch
	curPos  Pos
	err     error // reported once the rows before it are read
	done    bool
}

// textRow is a row kept for later: a CSV record or a JSON value.
type textRow struct {
	line   int64
	buf    []byte
	ends   []int
	quoted []bool
}

func (t *textReader) setCloser(f func()) { t.closeFile = f }

func (t *textReader) Schema() *arrow.Schema { return t.schema }

func (t *textReader) Batch() (arrow.RecordBatch, Pos) { return t.cur, t.curPos }

func (t *textReader) Err() error { return t.err }

func (t *textReader) Read() int64 { return t.count.n }

func (t *textReader) Close() error {
	if t.cur != nil {
		t.cur.Release()
		t.cur = nil
	}
	if t.rb != nil {
		t.rb.Release()
		t.rb = nil
	}
	var err error
	if t.dec != nil {
		err = t.dec.Close()
	}
	if t.closeFile != nil {
		t.closeFile()
	}
	return err
}

func (t *textReader) pos(line int64) Pos {
	return Pos{File: t.file.Path, Row: t.rows + int64(t.inBatch), Line: line}
}

// rowErr is a RowError on line; column is -1 for the row as a whole.
func (t *textReader) rowErr(line int64, column int, err error) *RowError {
	e := &RowError{Pos: t.pos(line), Err: err}
	if column >= 0 {
		e.Column = t.schema.Field(column).Name
	}
	return e
}

// build makes the builders and decoders of schema.
func (t *textReader) build(schema *arrow.Schema) error {
	t.schema = schema
	t.rb = array.NewRecordBuilder(t.o.Allocator, schema)
	t.decs = make([]*decoder, schema.NumFields())
	t.notNull = make([]bool, schema.NumFields())
	t.got = make([]bool, schema.NumFields())
	for i, f := range schema.Fields() {
		d, err := newDecoder(t.rb.Field(i))
		if err != nil {
			return fmt.Errorf("%s: column %q: %w", t.file.Path, f.Name, err)
		}
		t.decs[i] = d
		t.notNull[i] = !f.Nullable
	}
	return nil
}

// Next reads rows until the batch is full, the file ends or a row is
// bad; the rows before a bad one are a batch of their own.
func (t *textReader) Next() bool {
	if t.cur != nil {
		t.cur.Release()
		t.cur = nil
	}
	if t.done || t.err != nil {
		t.done = true
		return false
	}
	t.start = t.pos(0)
	for t.inBatch < t.o.BatchRows && t.bytes < t.o.BatchBytes {
		more, err := t.row()
		if err != nil {
			t.err = err
			break
		}
		if !more {
			t.done = true
			break
		}
	}
	rows := t.inBatch
	if t.drop {
		rows--
	}
	if rows == 0 {
		if t.inBatch > 0 { // only the bad row: drop it
			t.rb.NewRecordBatch().Release()
			t.inBatch, t.drop = 0, false
		}
		t.done = true
		return false
	}
	rec := t.rb.NewRecordBatch()
	if t.drop {
		t.cur = rec.NewSlice(0, int64(rows))
		rec.Release()
	} else {
		t.cur = rec
	}
	t.curPos = t.start
	t.rows += int64(rows)
	t.inBatch, t.bytes, t.drop = 0, 0, false
	return true
}

// row reads one row into the builders; more is false at the end of
// the file.
func (t *textReader) row() (more bool, err error) {
	if len(t.sample) > 0 {
		r := t.sample[0]
		t.sample[0] = textRow{}
		t.sample = t.sample[1:]
		if t.csv != nil {
			return true, t.csvRow(r)
		}
		return true, t.jsonRow(r.buf, r.line)
	}
	if t.sampleErr != nil || t.sampleEnd {
		err := t.sampleErr
		t.sampleErr = nil
		return false, err
	}
	if t.csv != nil {
		ok, err := t.csv.read()
		if err != nil {
			return false, t.csvErr(err)
		}
		if !ok {
			return false, nil
		}
		return true, t.csvRow(textRow{line: t.csv.start, buf: t.csv.buf, ends: t.csv.ends, quoted: t.csv.quoted})
	}
	v, line, err := t.json.next()
	if err != nil {
		return false, t.jsonErr(err)
	}
	if v == nil {
		return false, nil
	}
	return true, t.jsonRow(v, line)
}

// added counts a row added to the builders, which starts on line.
func (t *textReader) added(line int64, size int) {
	if t.inBatch == 0 {
		t.start.Line = line
	}
	t.inBatch++
	t.bytes += int64(size)
}

// bad ends a row that is only partly in the builders: it appends a null
// to each column that has no value for it, so that every column has the
// row, which the batch then leaves out. It returns err.
func (t *textReader) bad(err error) error {
	for i, ok := range t.got {
		if !ok {
			t.decs[i].b.AppendNull()
		}
	}
	t.inBatch++
	t.drop = true
	return err
}

// ---- CSV ----

func (t *textReader) openCSV(in io.Reader, delim byte) error {
	t.csv = newCSVReader(in, delim)
	t.null = []byte(t.o.Null)
	ok, err := t.csv.read()
	if err != nil {
		return fmt.Errorf("%s: the header: %w", t.file.Path, t.csvErr(err))
	}
	if !ok {
		return fmt.Errorf("%s: empty: no header line", t.file.Path)
	}
	header := make([]string, t.csv.fields())
	seen := map[string]bool{}
	for i := range header {
		header[i] = string(t.csv.field(i))
		if header[i] == "" {
			return fmt.Errorf("%s:%d: field %d of the header is empty: every column needs a name", t.file.Path, t.csv.start, i+1)
		}
		if seen[header[i]] {
			return fmt.Errorf("%s:%d: the header names column %q twice", t.file.Path, t.csv.start, header[i])
		}
		seen[header[i]] = true
	}
	var fields []arrow.Field
	if t.o.Table != nil {
		if err := checkColumns(t.file.Path, header, t.o.Table); err != nil {
			return err
		}
		for _, h := range header {
			i, _ := tableColumn(t.o.Table, h)
			fields = append(fields, t.o.Table.Field(i))
		}
	} else {
		// Infer the types from the first batch's rows, kept to be read.
		kinds := make([]textKind, len(header))
		for len(t.sample) < t.o.BatchRows {
			ok, err := t.csv.read()
			if err != nil {
				t.sampleErr = t.atRow(t.csvErr(err))
				break
			}
			if !ok {
				t.sampleEnd = true
				break
			}
			r := textRow{line: t.csv.start, buf: append([]byte(nil), t.csv.buf...),
				ends: append([]int(nil), t.csv.ends...), quoted: append([]bool(nil), t.csv.quoted...)}
			t.sample = append(t.sample, r)
			for i := range min(len(header), len(r.ends)) { // a row with too many or too few fields is reported when read
				if f := field(r, i); !t.isNull(f, r.quoted[i]) {
					kinds[i].add(f)
				}
			}
		}
		for i, h := range header {
			fields = append(fields, arrow.Field{Name: h, Type: kinds[i].typ(), Nullable: true})
		}
	}
	if err := t.build(arrow.NewSchema(fields, nil)); err != nil {
		return err
	}
	t.csvKeep = make([]bool, len(fields))
	for i, f := range fields {
		switch f.Type.ID() {
		case arrow.STRING, arrow.BINARY:
			t.csvKeep[i] = true
		}
	}
	return nil
}

// atRow gives a RowError met while reading rows ahead to infer types
// its row's index in the file.
func (t *textReader) atRow(err error) error {
	var re *RowError
	if errors.As(err, &re) {
		re.Pos.Row = int64(len(t.sample))
	}
	return err
}

// isNull: an unquoted empty field, or one spelled as Options.Null.
func (t *textReader) isNull(f []byte, quoted bool) bool {
	return !quoted && (len(f) == 0 || (len(t.null) > 0 && string(f) == string(t.null)))
}

func field(r textRow, i int) []byte {
	s := 0
	if i > 0 {
		s = r.ends[i-1]
	}
	return r.buf[s:r.ends[i]]
}

// csvErr is a record's syntax error as a RowError, or a failed read.
func (t *textReader) csvErr(err error) error {
	var re *readError
	if errors.As(err, &re) {
		return fmt.Errorf("%s: %w", t.file.Path, re.err)
	}
	return t.rowErr(t.csv.start, -1, err)
}

func (t *textReader) csvRow(r textRow) error {
	if len(r.ends) != len(t.decs) {
		return t.rowErr(r.line, -1, fmt.Errorf("has %d fields, but the header has %d", len(r.ends), len(t.decs)))
	}
	clear(t.got)
	for i, d := range t.decs {
		f := field(r, i)
		if t.isNull(f, r.quoted[i]) || (len(f) == 0 && !t.csvKeep[i]) {
			if t.notNull[i] {
				return t.bad(t.rowErr(r.line, i, errors.New("NULL (an empty field) in a NOT NULL column")))
			}
			d.b.AppendNull()
		} else if err := appendValue(d, d.text, f); err != nil {
			return t.bad(t.rowErr(r.line, i, err))
		}
		t.got[i] = true
	}
	t.added(r.line, len(r.buf)+len(r.ends))
	return nil
}

// ---- JSON ----

func (t *textReader) openJSON(in io.Reader) error {
	t.json = newJSONStream(in)
	if t.o.Table != nil {
		t.idx = newNames(t.o.Table.Fields())
		return t.build(t.o.Table)
	}
	// Infer the columns and their types from the first batch's rows,
	// kept to be read.
	var row jsonKind
	for len(t.sample) < t.o.BatchRows {
		v, line, err := t.json.next()
		if err != nil {
			t.sampleErr = t.atRow(t.jsonErr(err))
			break
		}
		if v == nil {
			t.sampleEnd = true
			break
		}
		if v[0] != '{' {
			t.sampleErr = t.atRow(t.rowErr(line, -1, fmt.Errorf("a row is a JSON object, not %s", kindName(kindOf(v)))))
			break
		}
		if err := row.add(v, line); err != nil {
			return fmt.Errorf("%s: cannot tell the columns' types: column %w", t.file.Path, err)
		}
		t.sample = append(t.sample, textRow{line: line, buf: append([]byte(nil), v...)})
	}
	t.inferN = len(t.sample)
	var fields []arrow.Field
	for _, name := range row.fields {
		fields = append(fields, arrow.Field{Name: name, Type: row.children[name].typ(), Nullable: true})
	}
	if len(fields) == 0 && t.sampleErr == nil {
		return fmt.Errorf("%s: no row with a key in it: cannot tell the columns", t.file.Path)
	}
	t.idx = newNames(fields)
	return t.build(arrow.NewSchema(fields, nil))
}

func kindOf(v []byte) byte {
	switch v[0] {
	case 't', 'f':
		return 'b'
	case '"':
		return 's'
	case '[':
		return 'a'
	case '{':
		return 'o'
	}
	return 'n'
}

func (t *textReader) jsonErr(err error) error {
	var se *streamError
	if errors.As(err, &se) {
		return t.rowErr(se.Line, -1, se.Err)
	}
	return fmt.Errorf("%s: %w", t.file.Path, err)
}

// colErr is an error in one column of a JSON row.
type colErr struct {
	col int
	err error
}

func (e *colErr) Error() string { return e.err.Error() }

func (t *textReader) jsonRow(v []byte, line int64) error {
	if v[0] != '{' {
		return t.rowErr(line, -1, fmt.Errorf("a row is a JSON object, not %s", kindName(kindOf(v))))
	}
	clear(t.got)
	err := eachMember(v, func(k, e []byte) error {
		i, ok := t.idx.find(k)
		if !ok {
			if t.o.Table == nil {
				return fmt.Errorf("key %s is not a column: the columns were taken from the keys of the first %d rows", quote(k), t.inferN)
			}
			return fmt.Errorf("key %s is not a column of the table (its columns: %s)", quote(k), columnList(t.schema))
		}
		if t.got[i] {
			return fmt.Errorf("key %s twice", quote(k))
		}
		d := t.decs[i]
		if e[0] == 'n' {
			if t.notNull[i] {
				return &colErr{i, errors.New("null in a NOT NULL column")}
			}
			d.b.AppendNull()
		} else if err := appendValue(d, d.json, e); err != nil {
			return &colErr{i, err}
		}
		t.got[i] = true
		return nil
	})
	if err == nil {
		for i, ok := range t.got {
			if !ok {
				if t.notNull[i] {
					err = &colErr{i, errors.New("missing (the key is not in the row) in a NOT NULL column")}
					break
				}
				t.decs[i].b.AppendNull()
				t.got[i] = true
			}
		}
	}
	if err != nil {
		var ce *colErr
		if errors.As(err, &ce) {
			return t.bad(t.rowErr(line, ce.col, ce.err))
		}
		return t.bad(t.rowErr(line, -1, err))
	}
	t.added(line, len(v))
	return nil
}
