package ingest

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/internal/arrowutil"
	"github.com/flightd/flightd/query/lakeerr"
	"github.com/flightd/flightd/sqlparse"
)

// insertBatchRows is how many rows an INSERT gathers into one log write.
const insertBatchRows = 64 << 10

// ReadAll reads the whole result of an INSERT's query into Go memory
// before anything is written: results stream, and a query that reads the
// table it inserts into must not see its own rows; and batches DuckDB's
// memory backs are not kept by the log's caches.
func (w *Writer) ReadAll(r array.RecordReader) (array.RecordReader, error) {
	var recs []arrow.RecordBatch
	defer func() {
		for _, rec := range recs {
			rec.Release()
		}
	}()
	for r.Next() {
		rec := r.RecordBatch()
		if rec.NumRows() == 0 {
			continue
		}
		cols := make([]arrow.Array, rec.NumCols())
		for i, c := range rec.Columns() {
			cp, err := array.Concatenate([]arrow.Array{c}, w.opts.Allocator)
			if err != nil {
				for _, c := range cols[:i] {
					c.Release()
				}
				return nil, err
			}
			cols[i] = cp
		}
		recs = append(recs, array.NewRecordBatch(rec.Schema(), cols, rec.NumRows()))
		for _, c := range cols {
			c.Release()
		}
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	return array.NewRecordReader(r.Schema(), recs)
}

// CheckValuesCount refuses an INSERT ... VALUES whose rows do not hold one
// value per column it fills (cols). target describes those columns for
// the errors of other source queries.
func CheckValuesCount(db string, st *sqlparse.Insert, cols []string) (target string, err error) {
	target = fmt.Sprintf("INSERT INTO %s.%s: the table has %s", db, st.Name.Table, plural(len(cols), "column"))
	if len(st.Columns) > 0 {
		target = fmt.Sprintf("INSERT INTO %s.%s: the column list names %s", db, st.Name.Table, plural(len(cols), "column"))
	}
	if rows, ok := sqlparse.ValuesList(st.Query); ok {
		for i, row := range rows {
			if row.Values != len(cols) {
				return target, fmt.Errorf("%w: %s but VALUES row %d %s has %s", engine.ErrInvalid, target, i+1, clip(row.Text, 200), plural(row.Values, "value"))
			}
		}
	}
	return target, nil
}

// plural spells n things.
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}

// clip shortens s to at most n bytes for an error message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}

// Columns is the column list of st: as written, else all of schema's
// columns in order.
func Columns(st *sqlparse.Insert, schema *arrow.Schema) []string {
	if len(st.Columns) > 0 {
		return st.Columns
	}
	cols := make([]string, schema.NumFields())
	for i, f := range schema.Fields() {
		cols[i] = f.Name
	}
	return cols
}

// WriteAll writes r's batches to db.table, gathering small batches.
func (w *Writer) WriteAll(ctx context.Context, db, table string, r array.RecordReader) (int64, error) {
	var pending []arrow.RecordBatch
	var pendingRows, total int64
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		defer func() {
			for _, b := range pending {
				b.Release()
			}
			pending, pendingRows = nil, 0
		}()
		rec := pending[0]
		if len(pending) > 1 {
			var err error
			rec, err = arrowutil.ConcatRecords(pending, w.opts.Allocator)
			if err != nil {
				return err
			}
			defer rec.Release()
		}
		n, err := w.ls.Write(ctx, db, table, rec)
		total += n
		return lakeerr.Map(err)
	}
	for r.Next() {
		rec := r.RecordBatch()
		if rec.NumRows() == 0 {
			continue
		}
		rec.Retain()
		pending = append(pending, rec)
		pendingRows += rec.NumRows()
		if pendingRows >= insertBatchRows {
			if err := flush(); err != nil {
				return total, err
			}
		}
	}
	if err := r.Err(); err != nil {
		for _, b := range pending {
			b.Release()
		}
		return total, fmt.Errorf("%w: %s", engine.ErrInvalid, strings.TrimSpace(err.Error()))
	}
	return total, flush()
}

// FieldIndex is the index of the field name in s: spelled exactly, else
// without case; -1 when there is none.
func FieldIndex(s *arrow.Schema, name string) int {
	for i, f := range s.Fields() {
		if f.Name == name {
			return i
		}
	}
	for i, f := range s.Fields() {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}
