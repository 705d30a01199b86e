package query

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/query/plan"
)

// bindKey binds key to the one parameter of sql as a client's DoPut does.
func bindKey(b *testing.B, sql string, key int64) string {
	bld := array.NewInt64Builder(memory.DefaultAllocator)
	bld.Append(key)
	col := bld.NewArray()
	bld.Release()
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{col}, 1)
	col.Release()
	defer rec.Release()
	stmts, err := plan.Bind(plan.Analyze(sql), rec)
	if err != nil || len(stmts) != 1 {
		b.Fatal(stmts, err)
	}
	return stmts[0]
}

// BenchmarkPointQuery is the engine's share of a point query's latency
// (bench/freshness_bench_test.go measures it end to end): a statement that
// needs no table, a key lookup in t$rt that the fast path serves without
// DuckDB's executor, and one that DuckDB runs, and the lookup with its key
// bound as a parameter (rt-key-bound: binding included); t$rt holds 1000 rows written
// at once and 2000 written one by one.
func BenchmarkPointQuery(b *testing.B) {
	benchmarkPoints(b, func(ctx context.Context, e *Engine, sql string) (engine.Result, error) {
		return e.Execute(ctx, e.Analyze(sql))
	})
}

// BenchmarkPointQueryFlight is BenchmarkPointQuery with every call the
// Flight layer makes of the engine for one query: GetFlightInfo's
// analysis and Prepare, then the DoGet's analysis, ShortWork (its
// admission lane) and Execute.
func BenchmarkPointQueryFlight(b *testing.B) {
	benchmarkPoints(b, func(ctx context.Context, e *Engine, sql string) (engine.Result, error) {
		// GetFlightInfo
		st := e.Analyze(sql)
		if st.Kind() != engine.KindQuery {
			return engine.Result{}, errors.New("not a query")
		}
		if _, err := e.Prepare(ctx, st); err != nil {
			return engine.Result{}, err
		}
		// DoGet
		st = e.Analyze(sql)
		if st.Kind() != engine.KindQuery {
			return engine.Result{}, errors.New("not a query")
		}
		e.ShortWork(ctx, st)
		return e.Execute(ctx, st)
	})
}

// benchmarkPoints runs each of pointQueries through query, with another
// key each time, and checks that it returns one row.
func benchmarkPoints(b *testing.B, query func(ctx context.Context, e *Engine, sql string) (engine.Result, error)) {
	e := pointEngine(b)
	ctx := context.Background()
	for _, q := range pointQueries {
		b.Run(q.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				i++
				res, err := query(ctx, e, pointSQL(b, q.sql, i))
				if err != nil {
					b.Fatal(err)
				}
				drainOne(b, res.Reader)
			}
		})
	}
}

var pointQueries = []struct{ name, sql string }{
	{"select-1", "SELECT 1"},
	{"rt-key", `SELECT id, v FROM bench."t$rt" WHERE id = %d`},
	{"rt-key-duckdb", `SELECT v || '!' FROM bench."t$rt" WHERE id = %d`},
	{"rt-key-bound", `SELECT id, v FROM bench."t$rt" WHERE id = ?`},
}

// pointSQL is sql of the i-th iteration: another key each time, as
// clients ask, written in or bound as a parameter.
func pointSQL(b *testing.B, sql string, i int) string {
	if strings.Contains(sql, "%d") {
		sql = fmt.Sprintf(sql, i*7%3000)
	}
	if strings.Contains(sql, "?") {
		sql = bindKey(b, sql, int64(i*7%3000))
	}
	return sql
}

// drainOne reads r to its end and fails unless it held one row.
func drainOne(b *testing.B, r array.RecordReader) {
	n := 0
	for r.Next() {
		n += int(r.RecordBatch().NumRows())
	}
	r.Release()
	if n != 1 {
		b.Fatalf("%d rows", n)
	}
}

// pointEngine is an engine whose bench.t holds 1000 rows written at once
// and, in t$rt, 2000 written one by one.
func pointEngine(b *testing.B) *Engine {
	e := newTestEngine(b)
	ctx := context.Background()
	for _, s := range []string{
		"CREATE DATABASE bench",
		"CREATE TABLE bench.t (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '4')",
		"INSERT INTO bench.t SELECT i, 'v' || i FROM range(1000) t(i)",
	} {
		if _, err := e.Execute(ctx, plan.Analyze(s)); err != nil {
			b.Fatal(s, err)
		}
	}
	// and 2000 single-row writes after them, un-tiered (the log holds one
	// entry per write; a read of t$rt merges the entries of the key's bucket)
	for i := 1000; i < 3000; i++ {
		if _, err := e.Execute(ctx, plan.Analyze(fmt.Sprintf("INSERT INTO bench.t VALUES (%d, 'w%d')", i, i))); err != nil {
			b.Fatal(err)
		}
	}
	return e
}
