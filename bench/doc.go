// Package bench measures flightd end to end with Go benchmarks against the
// real binary and real clients (the ADBC Flight SQL Go driver). Run with
// `make bench`; compare runs with benchstat. Sub-benchmark names are
// key=value so benchstat can group them. The read path of a tiered table
// against DuckDB reading the same files (BenchmarkReadPath, minutes) runs
// with `make bench-read`; bench/duckref is its DuckDB side, a command of
// its own so that this package does not link DuckDB.
package bench
