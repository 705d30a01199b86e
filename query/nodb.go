//go:build !duckdb_arrow

package query

import (
	"errors"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/lakestream"
)

// Engine is a stand-in when flightd is built without DuckDB's Arrow API.
type Engine struct{ engine.Engine }

// New fails: the SQL engine needs `-tags duckdb_arrow` (make build sets it).
func New(*lakestream.Service, Options) (*Engine, error) {
	return nil, errors.New("query: this flightd was built without -tags duckdb_arrow; build it with `make build`")
}

// Close does nothing.
func (e *Engine) Close() error { return nil }
