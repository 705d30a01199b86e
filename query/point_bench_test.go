package query

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkPointQuery is the engine's share of a point query's latency
// (bench/freshness_bench_test.go measures it end to end): a statement that
// needs no table, a key lookup in t$rt that the fast path serves without
// DuckDB's executor, and one that DuckDB runs; t$rt holds 1000 rows written
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
	} {
		b.Run(q.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				i++
				sql := q.sql
				if strings.Contains(sql, "%d") { // another key each time, as clients ask
					sql = fmt.Sprintf(sql, i*7%3000)
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
					b.Fatal(fmt.Sprintf("%s: %d rows", sql, n))
				}
			}
		})
	}
}
