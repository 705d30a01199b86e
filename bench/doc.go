// Package bench measures flightd end to end with Go benchmarks against the
// real binary and real clients (the ADBC Flight SQL Go driver). Run with
// `make bench`; compare runs with benchstat. Sub-benchmark names are
// key=value so benchstat can group them.
package bench
