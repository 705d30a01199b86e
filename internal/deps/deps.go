//go:build tools

// Package deps pins the modules the project builds on, so that `go mod tidy`
// keeps them while packages are being written.
package deps

import (
	_ "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	_ "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	_ "github.com/apache/arrow-go/v18/parquet/pqarrow"
	_ "github.com/dgraph-io/badger/v4"
	_ "github.com/duckdb/duckdb-go/v2"
	_ "github.com/google/uuid"
	_ "github.com/hamba/avro/v2"
	_ "github.com/klauspost/compress/zstd"
	_ "github.com/stretchr/testify/require"
)
