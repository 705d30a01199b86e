package plan

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/sqlparse"
)

// Bind returns the statements that run st with the parameter rows of
// params (one column per parameter, in order; a row per execution), each
// placeholder replaced by its value written as a SQL literal. Values are
// substituted into the text rather than bound inside DuckDB so that a bound
// statement takes the same paths as a literal one: the point-query path,
// pruning by key, partition and statistics, and the parse cache (a
// statement's shape is parsed once whatever its values).
//
// An INSERT INTO t ... VALUES (...) whose one row holds every placeholder
// becomes a single statement with a row per parameter row (written as one
// batch, as JDBC executeBatch and Python executemany expect), unless the row
// holds something that must be evaluated once per row (a subquery, random(),
// nextval(): sqlparse.ValuesRow.Volatile). Any other statement becomes one
// statement per parameter row. A statement
// without placeholders accepts no values (nil or zero columns).
func Bind(st *Statement, params arrow.RecordBatch) ([]string, error) {
	sql := st.SQL()
	ps, n, err := st.Params()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", engine.ErrInvalid, err)
	}
	cols := 0
	if params != nil {
		cols = int(params.NumCols())
	}
	if n == 0 && cols == 0 {
		return []string{sql}, nil
	}
	if cols != n {
		return nil, fmt.Errorf("%w: the statement takes %d parameter(s) but %d value column(s) were bound", engine.ErrInvalid, n, cols)
	}
	rows := int(params.NumRows())
	vals := make([][]string, rows)
	for r := range vals {
		vals[r] = make([]string, n)
		for c := range n {
			v, err := engine.Literal(params.Column(c), r)
			if err != nil {
				return nil, fmt.Errorf("%w: parameter %d (%s), row %d: %w", engine.ErrInvalid, c+1, params.Schema().Field(c).Name, r+1, err)
			}
			vals[r][c] = v
		}
	}
	if row, ok := st.ValuesRow(); ok && rows > 1 && !row.Volatile && within(ps, row.Pos, row.End) {
		tuple := sql[row.Pos:row.End]
		local := make([]sqlparse.Param, len(ps))
		for i, p := range ps {
			local[i] = sqlparse.Param{Pos: p.Pos - row.Pos, End: p.End - row.Pos, Index: p.Index}
		}
		var b strings.Builder
		b.WriteString(sql[:row.Pos])
		for r, v := range vals {
			if r > 0 {
				b.WriteString(", ")
			}
			b.WriteString(sqlparse.Substitute(tuple, local, v))
		}
		b.WriteString(sql[row.End:])
		return []string{b.String()}, nil
	}
	out := make([]string, rows)
	for r, v := range vals {
		out[r] = sqlparse.Substitute(sql, ps, v)
	}
	return out, nil
}

func within(ps []sqlparse.Param, pos, end int) bool {
	for _, p := range ps {
		if p.Pos < pos || p.End > end {
			return false
		}
	}
	return true
}
