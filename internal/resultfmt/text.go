package resultfmt

import (
	"bufio"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// delimited writes CSV (RFC 4180) or, with a tab, TSV: a header line of
// the column names, then a line per row. A field is quoted when it holds
// the delimiter, a quote, a line break or space at either end; NULL is an
// empty field and an empty string is "", so a reader that keeps the
// difference (DuckDB's, pandas' with keep_default_na) gets it back.
type delimited struct {
	w     *bufio.Writer
	delim byte
	line  []byte
}

func newDelimited(w io.Writer, sc *arrow.Schema, delim byte) *delimited {
	d := &delimited{w: bufio.NewWriterSize(w, 64<<10), delim: delim}
	for i, f := range sc.Fields() {
		if i > 0 {
			d.line = append(d.line, delim)
		}
		d.line = d.appendField(d.line, []byte(f.Name), false)
	}
	d.line = append(d.line, '\n')
	return d // the header goes out with the first rows or at Close
}

func (d *delimited) Write(rec arrow.RecordBatch) error {
	var cell []byte
	cols := rec.Columns()
	for r := 0; r < int(rec.NumRows()); r++ {
		for c, col := range cols {
			if c > 0 {
				d.line = append(d.line, d.delim)
			}
			if col.IsNull(r) {
				continue
			}
			cell = appendText(cell[:0], col, r, binaryBase64)
			d.line = d.appendField(d.line, cell, true)
		}
		d.line = append(d.line, '\n')
		if len(d.line) >= 32<<10 {
			if _, err := d.w.Write(d.line); err != nil {
				return err
			}
			d.line = d.line[:0]
		}
	}
	if _, err := d.w.Write(d.line); err != nil {
		return err
	}
	d.line = d.line[:0]
	return d.w.Flush()
}

func (d *delimited) Close() error {
	if _, err := d.w.Write(d.line); err != nil {
		return err
	}
	d.line = d.line[:0]
	return d.w.Flush()
}

// appendField appends v, quoted if it must be; notNull quotes an empty
// value, which would otherwise read back as NULL.
func (d *delimited) appendField(dst, v []byte, notNull bool) []byte {
	quote := len(v) == 0 && notNull
	if len(v) > 0 && (v[0] == ' ' || v[len(v)-1] == ' ') {
		quote = true
	}
	for _, c := range v {
		if c == d.delim || c == '"' || c == '\n' || c == '\r' {
			quote = true
			break
		}
	}
	if !quote {
		return append(dst, v...)
	}
	dst = append(dst, '"')
	for _, c := range v {
		if c == '"' {
			dst = append(dst, '"')
		}
		dst = append(dst, c)
	}
	return append(dst, '"')
}

// jsonWriter writes each row as an object of the columns in their order:
// a line each (JSON lines), or the lines joined into one array.
type jsonWriter struct {
	w     *bufio.Writer
	names [][]byte // each column's name as a JSON string and ':'
	array bool
	rows  int64
	line  []byte
}

func newJSON(w io.Writer, sc *arrow.Schema, array bool) *jsonWriter {
	j := &jsonWriter{w: bufio.NewWriterSize(w, 64<<10), array: array}
	for _, f := range sc.Fields() {
		j.names = append(j.names, append(appendJSONString(nil, f.Name), ':'))
	}
	return j
}

func (j *jsonWriter) Write(rec arrow.RecordBatch) error {
	cols := rec.Columns()
	for r := 0; r < int(rec.NumRows()); r++ {
		if j.array {
			if j.rows == 0 {
				j.line = append(j.line, "[\n"...)
			} else {
				j.line = append(j.line, ",\n"...)
			}
		}
		j.line = append(j.line, '{')
		for c, col := range cols {
			if c > 0 {
				j.line = append(j.line, ',')
			}
			j.line = append(j.line, j.names[c]...)
			j.line = appendJSON(j.line, col, r)
		}
		j.line = append(j.line, '}')
		if !j.array {
			j.line = append(j.line, '\n')
		}
		j.rows++
		if len(j.line) >= 32<<10 {
			if _, err := j.w.Write(j.line); err != nil {
				return err
			}
			j.line = j.line[:0]
		}
	}
	if _, err := j.w.Write(j.line); err != nil {
		return err
	}
	j.line = j.line[:0]
	return j.w.Flush()
}

func (j *jsonWriter) Close() error {
	if j.array {
		if j.rows == 0 {
			j.line = append(j.line, "[]\n"...)
		} else {
			j.line = append(j.line, "\n]\n"...)
		}
	}
	if _, err := j.w.Write(j.line); err != nil {
		return err
	}
	j.line = j.line[:0]
	return j.w.Flush()
}

// markdown writes a GitHub Markdown table, a line per row as it comes:
// numbers right-aligned, '|' escaped, line breaks shown as \n, NULL as
// NULL.
type markdown struct {
	w    *bufio.Writer
	line []byte
}

func newMarkdown(w io.Writer, sc *arrow.Schema) *markdown {
	m := &markdown{w: bufio.NewWriterSize(w, 64<<10)}
	m.line = append(m.line, '|')
	for _, f := range sc.Fields() {
		m.line = append(m.line, ' ')
		m.line = append(m.line, escapeMarkdown(displayText(f.Name))...)
		m.line = append(m.line, " |"...)
	}
	m.line = append(m.line, "\n|"...)
	for _, f := range sc.Fields() {
		if numeric(f.Type) {
			m.line = append(m.line, " ---: |"...)
		} else {
			m.line = append(m.line, " --- |"...)
		}
	}
	m.line = append(m.line, '\n')
	return m
}

func (m *markdown) Write(rec arrow.RecordBatch) error {
	var cell []byte
	cols := rec.Columns()
	for r := 0; r < int(rec.NumRows()); r++ {
		m.line = append(m.line, '|')
		for _, col := range cols {
			m.line = append(m.line, ' ')
			if col.IsNull(r) {
				m.line = append(m.line, "NULL"...)
			} else {
				cell = appendText(cell[:0], col, r, binaryHex)
				m.line = append(m.line, escapeMarkdown(displayText(string(cell)))...)
			}
			m.line = append(m.line, " |"...)
		}
		m.line = append(m.line, '\n')
		if _, err := m.w.Write(m.line); err != nil {
			return err
		}
		m.line = m.line[:0]
	}
	return m.w.Flush()
}

func (m *markdown) Close() error {
	if _, err := m.w.Write(m.line); err != nil {
		return err
	}
	m.line = m.line[:0]
	return m.w.Flush()
}

func escapeMarkdown(s string) string {
	return strings.ReplaceAll(s, "|", `\|`)
}

// numeric reports whether values of t are numbers, which tables align right.
func numeric(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64,
		arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64,
		arrow.DECIMAL32, arrow.DECIMAL64, arrow.DECIMAL128, arrow.DECIMAL256:
		return true
	}
	return false
}

// displayText shows control characters (a line break, a tab) as escapes,
// so that a value stays on its line of a table.
func displayText(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20 || c == 0x7f:
			b.WriteString(`\x`)
			b.WriteByte("0123456789abcdef"[c>>4])
			b.WriteByte("0123456789abcdef"[c&0xf])
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
