package query

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/engine"
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
	stmts, err := engine.BindParams(sql, rec)
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
	e := newTestEngine(b)
	ctx := context.Background()
	for _, s := range []string{
		"CREATE DATABASE bench",
		"CREATE TABLE bench.t (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '4')",
		"INSERT INTO bench.t SELECT i, 'v' || i FROM range(1000) t(i)",
	} {
		if _, err := e.Execute(ctx, s); err != nil {
			b.Fatal(s, err)
		}
	}
	// and 2000 single-row writes after them, un-tiered (the log holds one
	// entry per write; a read of t$rt merges the entries of the key's bucket)
	for i := 1000; i < 3000; i++ {
		if _, err := e.Execute(ctx, fmt.Sprintf("INSERT INTO bench.t VALUES (%d, 'w%d')", i, i)); err != nil {
			b.Fatal(err)
		}
	}
	for _, q := range []struct{ name, sql string }{
		{"select-1", "SELECT 1"},
		{"rt-key", `SELECT id, v FROM bench."t$rt" WHERE id = %d`},
		{"rt-key-duckdb", `SELECT v || '!' FROM bench."t$rt" WHERE id = %d`},
		{"rt-key-bound", `SELECT id, v FROM bench."t$rt" WHERE id = ?`},
	} {
		b.Run(q.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				i++
				sql := q.sql
				if strings.Contains(sql, "%d") { // another key each time, as clients ask
					sql = fmt.Sprintf(sql, i*7%3000)
				}
				if strings.Contains(sql, "?") { // the key as a bound parameter
					sql = bindKey(b, sql, int64(i*7%3000))
				}
				res, err := e.Execute(ctx, sql)
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for res.Reader.Next() {
					n += int(res.Reader.RecordBatch().NumRows())
				}
				res.Reader.Release()
				if n != 1 {
					b.Fatalf("%s: %d rows", sql, n)
				}
			}
		})
	}
}
