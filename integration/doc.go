// Package integration holds black-box tests that start the real flightd
// binary and drive it through real clients: the ADBC Flight SQL Go driver
// here, and ADBC Python + pandas + Polars + pypaimon under python/.
//
// FLIGHTD_BIN names the binary (make test-integration sets it); without it
// the tests build one into a temporary directory.
package integration
