//go:build duckdb_arrow

package query

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/duckdb/duckdb-go/v2"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/query/plan"
	"github.com/flightd/flightd/sqlparse"
)

// prepareParams describes a statement with parameter placeholders: the
// parameters' types, for clients that build their values from them (JDBC
// does, and refuses a value its type cannot take), and a query's result
// schema. The values are bound later as literals (Engine.Bind).
func (e *Engine) prepareParams(ctx context.Context, st *plan.Statement, ps []sqlparse.Param, n int) (engine.Prepared, error) {
	switch kind := st.Class(); kind {
	case sqlparse.KindQuery:
		return e.prepareQueryParams(ctx, st, ps, n)
	case sqlparse.KindInsert:
		types, err := e.writer.ParamTypes(ctx, st)
		if err != nil {
			return engine.Prepared{}, err
		}
		return engine.Prepared{Update: true, Parameters: paramSchema(types)}, nil
	default:
		return engine.Prepared{}, fmt.Errorf("%w: parameters (? or $N) can be bound in queries and INSERT INTO only, not in %s statements", engine.ErrInvalid, kind)
	}
}

// prepareQueryParams asks DuckDB for the parameter types of the statement
// with its tables bound, then runs it under LIMIT 0 with a typed NULL for
// each parameter to learn its result schema.
func (e *Engine) prepareQueryParams(ctx context.Context, st *plan.Statement, ps []sqlparse.Param, n int) (engine.Prepared, error) {
	duck := make([]duckdb.Type, n) // TYPE_INVALID: DuckDB cannot tell
	_, err := e.queryWith(ctx, st, true, func(c *conn, run string) error {
		ds, err := c.prepareOne(run)
		if err != nil {
			return err
		}
		defer ds.Close()
		if ds.NumInput() != n {
			return nil // leave the types unknown
		}
		for i := range n {
			if duck[i], err = ds.ParamType(i + 1); err != nil {
				return fmt.Errorf("query: parameter %d: %w", i+1, err)
			}
		}
		return nil
	})
	if err != nil {
		return engine.Prepared{}, err
	}
	types := make([]arrow.DataType, n)
	nulls := make([]string, n)
	for i, t := range duck {
		types[i] = paramType(t)
		nulls[i] = "NULL" // where DuckDB cannot tell: a typed one could make the statement fail (? + ?)
		if t != duckdb.TYPE_INVALID {
			nulls[i] = "CAST(NULL AS " + duckTypeName(t) + ")"
		}
	}
	r, err := e.query(ctx, plan.AnalyzeQuery(sqlparse.Substitute(st.SQL(), ps, nulls)), true)
	if err != nil {
		return engine.Prepared{}, err
	}
	defer r.Release()
	return engine.Prepared{DatasetSchema: r.Schema(), Parameters: paramSchema(types)}, nil
}

// paramType is the Arrow type a parameter that DuckDB types t is declared
// with. The choices follow what the Arrow Flight SQL JDBC driver can bind:
// integers as Int64 and floating point and decimals as Float64 (it accepts
// any Java number there), timestamps in milliseconds (it writes
// setTimestamp's epoch milliseconds into the vector unscaled, whatever its
// unit), and anything else as a string, which the statement casts.
func paramType(t duckdb.Type) arrow.DataType {
	switch t {
	case duckdb.TYPE_BOOLEAN:
		return arrow.FixedWidthTypes.Boolean
	case duckdb.TYPE_TINYINT, duckdb.TYPE_SMALLINT, duckdb.TYPE_INTEGER, duckdb.TYPE_BIGINT,
		duckdb.TYPE_UTINYINT, duckdb.TYPE_USMALLINT, duckdb.TYPE_UINTEGER, duckdb.TYPE_UBIGINT, duckdb.TYPE_HUGEINT:
		return arrow.PrimitiveTypes.Int64
	case duckdb.TYPE_FLOAT, duckdb.TYPE_DOUBLE, duckdb.TYPE_DECIMAL:
		return arrow.PrimitiveTypes.Float64
	case duckdb.TYPE_BLOB:
		return arrow.BinaryTypes.Binary
	case duckdb.TYPE_DATE:
		return arrow.FixedWidthTypes.Date32
	case duckdb.TYPE_TIMESTAMP, duckdb.TYPE_TIMESTAMP_S, duckdb.TYPE_TIMESTAMP_MS, duckdb.TYPE_TIMESTAMP_NS:
		return &arrow.TimestampType{Unit: arrow.Millisecond}
	case duckdb.TYPE_TIMESTAMP_TZ:
		return &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}
	}
	return arrow.BinaryTypes.String
}

// duckTypeName spells DuckDB's type t for a CAST that stands for the
// parameter while the result schema is found: DuckDB's own type (a
// DECIMAL's width is not known: DOUBLE; other types: VARCHAR).
func duckTypeName(t duckdb.Type) string {
	switch t {
	case duckdb.TYPE_BOOLEAN:
		return "BOOLEAN"
	case duckdb.TYPE_TINYINT:
		return "TINYINT"
	case duckdb.TYPE_SMALLINT:
		return "SMALLINT"
	case duckdb.TYPE_INTEGER:
		return "INTEGER"
	case duckdb.TYPE_BIGINT:
		return "BIGINT"
	case duckdb.TYPE_UTINYINT:
		return "UTINYINT"
	case duckdb.TYPE_USMALLINT:
		return "USMALLINT"
	case duckdb.TYPE_UINTEGER:
		return "UINTEGER"
	case duckdb.TYPE_UBIGINT:
		return "UBIGINT"
	case duckdb.TYPE_HUGEINT:
		return "HUGEINT"
	case duckdb.TYPE_FLOAT:
		return "FLOAT"
	case duckdb.TYPE_DOUBLE, duckdb.TYPE_DECIMAL:
		return "DOUBLE"
	case duckdb.TYPE_BLOB:
		return "BLOB"
	case duckdb.TYPE_DATE:
		return "DATE"
	case duckdb.TYPE_TIME:
		return "TIME"
	case duckdb.TYPE_TIMESTAMP:
		return "TIMESTAMP"
	case duckdb.TYPE_TIMESTAMP_S:
		return "TIMESTAMP_S"
	case duckdb.TYPE_TIMESTAMP_MS:
		return "TIMESTAMP_MS"
	case duckdb.TYPE_TIMESTAMP_NS:
		return "TIMESTAMP_NS"
	case duckdb.TYPE_TIMESTAMP_TZ:
		return "TIMESTAMPTZ"
	}
	return "VARCHAR"
}

func paramSchema(types []arrow.DataType) *arrow.Schema {
	fs := make([]arrow.Field, len(types))
	for i, t := range types {
		fs[i] = arrow.Field{Name: fmt.Sprintf("$%d", i+1), Type: t, Nullable: true}
	}
	return arrow.NewSchema(fs, nil)
}
