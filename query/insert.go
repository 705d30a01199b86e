//go:build duckdb_arrow

package query

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/query/ingest"
	"github.com/flightd/flightd/query/lakeerr"
	"github.com/flightd/flightd/query/plan"
)

// insert runs INSERT INTO t [(cols)] <query>: the query runs on DuckDB with
// its columns cast to t's types, and the rows go to t's log.
func (e *Engine) insert(ctx context.Context, ins *plan.Statement) (int64, error) {
	st, err := ins.Insert()
	if err != nil {
		return 0, invalid(err)
	}
	db := engine.DatabaseOf(ctx, st.Name.Database)
	if err := e.catalog.Writable(ctx, db, st.Name.Table); err != nil {
		return 0, err
	}
	schema, err := e.ls.ArrowSchema(ctx, db, st.Name.Table)
	if err != nil {
		return 0, lakeerr.Map(err)
	}
	cols := ingest.Columns(st, schema)
	target, err := ingest.CheckValuesCount(db, st, cols)
	if err != nil {
		return 0, err
	}
	var sel []string
	var alias []string
	for i, c := range cols {
		idx := ingest.FieldIndex(schema, c)
		if idx < 0 {
			return 0, fmt.Errorf("%w: table %s.%s has no column %q", engine.ErrInvalid, db, st.Name.Table, c)
		}
		f := schema.Field(idx)
		a := fmt.Sprintf("__c%d", i)
		alias = append(alias, a)
		if t, ok := ingest.DuckType(f.Type); ok {
			sel = append(sel, fmt.Sprintf("CAST(%s AS %s) AS %s", a, t, plan.QuoteIdent(f.Name)))
		} else {
			sel = append(sel, fmt.Sprintf("%s AS %s", a, plan.QuoteIdent(f.Name)))
		}
	}
	// The query's columns past the aliased ones come out too, so that a
	// query returning more values than the INSERT fills is refused instead
	// of losing them; one returning fewer fails to bind its aliases.
	q := fmt.Sprintf("SELECT %s, COLUMNS(* EXCLUDE (%s)) FROM (%s) AS __flightd_insert(%s)", strings.Join(sel, ", "), strings.Join(alias, ", "), st.Query, strings.Join(alias, ", "))
	r, err := e.query(ctx, plan.AnalyzeQuery(q), false)
	if err != nil {
		if m := aliasMismatch.FindStringSubmatch(err.Error()); m != nil {
			n, _ := strconv.Atoi(m[1])
			return 0, fmt.Errorf("%w: %s but the query returns %d", engine.ErrInvalid, target, n)
		}
		return 0, err
	}
	defer r.Release()
	if n := r.Schema().NumFields(); n != len(cols) {
		return 0, fmt.Errorf("%w: %s but the query returns %d", engine.ErrInvalid, target, n)
	}
	all, err := e.writer.ReadAll(r)
	if err != nil {
		return 0, fmt.Errorf("%w: %s", engine.ErrInvalid, cleanDuckErr(err))
	}
	defer all.Release()
	return e.writer.WriteAll(ctx, db, st.Name.Table, all)
}

// aliasMismatch is DuckDB's error for a query with fewer columns than the
// aliases the INSERT gives them.
var aliasMismatch = regexp.MustCompile(`table "__flightd_insert" has (\d+) columns available but \d+ columns specified`)

// Ingest implements engine.Engine: package ingest converts and writes
// the batches.
func (e *Engine) Ingest(ctx context.Context, db, table string, create bool, r array.RecordReader) (int64, error) {
	db = engine.DatabaseOf(ctx, db)
	if err := e.catalog.Writable(ctx, db, table); err != nil {
		return 0, err
	}
	return e.writer.Ingest(ctx, db, table, create, r)
}

// InsertParams implements engine.Engine (package ingest writes the batch).
func (e *Engine) InsertParams(ctx context.Context, st engine.Statement, params arrow.RecordBatch) (int64, bool, error) {
	return e.writer.InsertParams(ctx, statementOf(st), params)
}
