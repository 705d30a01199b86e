//go:build duckdb_arrow

// Command duckref is the in-process reference of the read-path benchmark
// (bench/readpath_bench_test.go): it reads Parquet files with DuckDB's
// read_parquet into Arrow record batches, as a client of DuckDB's Arrow
// interface would, and prints how long that took. It links the same DuckDB
// as flightd (the duckdb-go version go.mod pins), so the benchmark compares
// flightd's read path with this engine's on the same files in the same run,
// without linking DuckDB into the benchmark package.
//
//	duckref -threads 2 -runs 3 -columns id,k,x file.parquet ...
//
// Output: one line of JSON, {"rows": N, "seconds": [...], "cpu_seconds": [...]}, one
// entry per run; the time is from the query's start to its last batch,
// excluding the process start and opening DuckDB, and the CPU time is the
// process's (user and system, all threads) over the same span: on a shared
// machine a steadier measure than the time. (duckdb-go runs a query to a
// materialized result before its first batch, so a time to first batch
// would say nothing here.)
package main

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/duckdb/duckdb-go/v2"
)

type result struct {
	Rows    int64     `json:"rows"`
	Seconds []float64 `json:"seconds"`
	CPU     []float64 `json:"cpu_seconds"`
}

func main() {
	threads := flag.Int("threads", 2, "DuckDB threads (SET threads)")
	runs := flag.Int("runs", 1, "how many times to read the files")
	columns := flag.String("columns", "*", "comma-separated columns to select")
	flag.Parse()
	res, err := run(*threads, *runs, *columns, flag.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "duckref:", err)
		os.Exit(1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(res)
}

func run(threads, runs int, columns string, files []string) (*result, error) {
	if len(files) == 0 {
		return nil, errors.New("no Parquet files given")
	}
	if threads < 1 || runs < 1 {
		return nil, fmt.Errorf("-threads %d -runs %d: want both at least 1", threads, runs)
	}
	ctx := context.Background()
	c, err := duckdb.NewConnector("", func(ex driver.ExecerContext) error {
		_, err := ex.ExecContext(ctx, fmt.Sprintf("SET threads = %d", threads), nil)
		return err
	})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	conn, err := c.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	ar, err := duckdb.NewArrowFromConn(conn)
	if err != nil {
		return nil, err
	}
	quoted := make([]string, len(files))
	for i, f := range files {
		quoted[i] = "'" + strings.ReplaceAll(f, "'", "''") + "'"
	}
	sql := "SELECT " + columns + " FROM read_parquet([" + strings.Join(quoted, ", ") + "])"
	res := &result{}
	for i := 0; i < runs; i++ {
		cpu0 := cpuSeconds()
		start := time.Now()
		r, err := ar.QueryContext(ctx, sql)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sql, err)
		}
		var n int64
		for r.Next() {
			n += r.RecordBatch().NumRows()
		}
		err = r.Err()
		r.Release()
		if err != nil {
			return nil, err
		}
		res.Seconds = append(res.Seconds, time.Since(start).Seconds())
		res.CPU = append(res.CPU, cpuSeconds()-cpu0)
		if i > 0 && n != res.Rows {
			return nil, fmt.Errorf("run %d read %d rows, run 0 read %d", i, n, res.Rows)
		}
		res.Rows = n
	}
	return res, nil
}

// cpuSeconds is the CPU time this process has used, user and system.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
