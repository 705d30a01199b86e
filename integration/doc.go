// Package integration holds black-box tests that start the real flightd
// binary and drive it through real clients: the ADBC Flight SQL Go driver
// here, and ADBC Python + pandas + Polars + pypaimon under python/.
//
// FLIGHTD_BIN names the binary (make test-integration sets it); without it
// the tests build one into a temporary directory.
//
// The cluster read tests (cluster_reads_test.go) also drive the Python ADBC
// driver through python/cluster_read.py, with $FLIGHTD_PYTHON or else the
// repository's .venv, and the JDBC driver through JdbcRead (make
// jdbc-check-jar); a driver that is missing is logged as not checked, and
// fails the test under FLIGHTD_REQUIRE_DRIVERS=1.
package integration
