//go:build duckdb_arrow

package query

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/expr"
	"github.com/flightd/flightd/lake/expr/exprtest"
	"github.com/flightd/flightd/query/plan"
)

var seedFlag = flag.Uint64("seed", 0, "seed for the randomized tests (0 = time based)")

// TestExprAgreesWithDuckDB: the rows a plain scan hands out without DuckDB
// (expr.NewReader, package lake/expr) are exactly the rows DuckDB's WHERE
// picks from the same data. Random batches (every type expr evaluates,
// with nulls and boundary values: bounds of each integer type, dates of
// years 0000 and 9999 and beyond, empty, non-ASCII, NUL-holding strings)
// are loaded into DuckDB through its Arrow scan; random conjunctions of
// =, <, <=, >, >=, IN and BETWEEN, written with literals as a client
// writes them (integer and string literals on either side, DATE '...',
// strings cast to integers and dates, some DuckDB refuses), run on both.
// For each case:
//
//   - what pushdown reads from DuckDB's parse tree of the statement
//     (plan.HintsOf) is the conjunction written, when it reads every
//     conjunct;
//   - when expr binds the conjunction, DuckDB runs it without error and
//     both pick the same rows; when expr refuses it, DuckDB has the last
//     word (nothing to compare);
//   - pruning never skips a row DuckDB returns: the range test of each
//     column's [min, max] and the single-value test of each returned row
//     say it may match.
func TestExprAgreesWithDuckDB(t *testing.T) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -seed %d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	ctx := context.Background()
	e := newTestEngine(t)
	c, err := e.connect(ctx)
	require.NoError(t, err)
	defer c.close()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer func() {
		if !t.Failed() { // a failed case leaves its batch
			mem.AssertSize(t, 0)
		}
	}()

	fields := []arrow.Field{{Name: "idx", Type: arrow.PrimitiveTypes.Int64}}
	for _, typ := range exprtest.Types {
		fields = append(fields, arrow.Field{Name: "c_" + typ.String(), Type: typ, Nullable: true})
	}
	sc := arrow.NewSchema(fields, nil)
	var cases, compared, refused, pushed, matching int
	for batch := 0; batch < 40; batch++ {
		n := 1 + rng.IntN(48)
		cols := make([]arrow.Array, len(fields))
		vals := make([][]any, len(fields))
		ib := array.NewInt64Builder(mem)
		for i := 0; i < n; i++ {
			ib.Append(int64(i))
		}
		cols[0] = ib.NewArray()
		ib.Release()
		for i, typ := range exprtest.Types {
			cols[i+1], vals[i+1] = exprtest.Column(rng, mem, typ, n)
		}
		rec := array.NewRecordBatch(sc, cols, int64(n))
		for _, a := range cols {
			a.Release()
		}
		loadTable(t, c, sc, rec, "expr_t")

		for q := 0; q < 10; q++ {
			cases++
			var conjuncts []string
			var want []expr.Predicate // what the conjuncts say
			for range 1 + rng.IntN(3) {
				ci := 1 + rng.IntN(len(exprtest.Types))
				name, typ := fields[ci].Name, fields[ci].Type
				p := exprtest.Predicate(rng, name, typ, vals[ci])
				sql, ps := conjunctSQL(rng, p, typ, vals[ci])
				conjuncts = append(conjuncts, sql)
				want = append(want, ps...)
			}
			sql := "SELECT idx FROM expr_t WHERE " + strings.Join(conjuncts, " AND ") + " ORDER BY idx"
			where := fmt.Sprintf("seed %d, batch %d, case %d: %s\n%s", seed, batch, q, sql, describe(rec, want))

			// pushdown reads what was written
			js, err := c.serialize(ctx, sql)
			require.NoError(t, err, where)
			tree, ok := plan.ParseTree(js)
			require.True(t, ok, where)
			stmts, _ := tree.Get("statements").([]any)
			node, _ := stmts[0].(*plan.Object).Get("node").(*plan.Object).Get("from_table").(*plan.Object)
			if got := plan.HintsOf(tree).Of(node).FilterFor(sc); len(got) == len(want) {
				pushed++
				require.Equal(t, want, got, "pushdown: %s", where)
			}

			duck, duckErr := duckRows(ctx, c, sql)
			f, ok := expr.BindSchema(sc, want)
			if !ok {
				refused++
				continue
			}
			require.NoError(t, duckErr, "expr binds what DuckDB refuses: %s", where)
			compared++
			rr, err := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
			require.NoError(t, err)
			r := expr.NewReader(ctx, mem, rr, f)
			got := []int64{}
			for r.Next() {
				got = append(got, r.RecordBatch().Column(0).(*array.Int64).Int64Values()...)
			}
			require.NoError(t, r.Err())
			r.Release()
			require.Equal(t, duck, got, "rows: %s", where)
			if len(duck) == 0 {
				continue
			}
			matching++
			conjs := map[int]expr.Conj{}
			for _, term := range f {
				conjs[term.Col] = append(conjs[term.Col], term.Bound)
			}
			for col, conj := range conjs {
				lo, hi := valueRange(vals[col])
				require.True(t, conj.MayMatchRange(lo, hi), "range [%q, %q] of %s pruned: %s", lo, hi, fields[col].Name, where)
				for _, i := range duck {
					require.True(t, conj.MayMatchValue(vals[col][i]), "value %q of row %d pruned: %s", vals[col][i], i, where)
				}
			}
		}
		require.NoError(t, c.exec(ctx, "DROP TABLE expr_t"))
		rec.Release()
	}
	t.Logf("%d cases: %d compared (%d with rows), %d refused by expr; pushdown read %d whole", cases, compared, matching, refused, pushed)
	require.Greater(t, compared, cases/2, "most cases compared")
	require.Greater(t, matching, compared/4, "many cases return rows")
}

// loadTable copies rec into a DuckDB temporary table through the Arrow scan.
func loadTable(t *testing.T, c *conn, sc *arrow.Schema, rec arrow.RecordBatch, name string) {
	t.Helper()
	rr, err := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
	require.NoError(t, err)
	release, err := c.ar.RegisterView(rr, "src_"+name)
	rr.Release()
	require.NoError(t, err)
	require.NoError(t, c.exec(context.Background(), fmt.Sprintf("CREATE TEMP TABLE %s AS SELECT * FROM src_%s", name, name)))
	require.NoError(t, c.exec(context.Background(), "DROP VIEW src_"+name))
	release()
}

// duckRows runs sql, a query of one BIGINT column, and returns its values.
func duckRows(ctx context.Context, c *conn, sql string) ([]int64, error) {
	r, err := c.ar.QueryContext(ctx, sql)
	if err != nil {
		return nil, err
	}
	defer r.Release()
	out := []int64{}
	for r.Next() {
		out = append(out, r.RecordBatch().Column(0).(*array.Int64).Int64Values()...)
	}
	return out, r.Err()
}

// conjunctSQL writes p as a WHERE conjunct, in one of the forms a client
// writes: the column on either side, DATE '...' for a date string, and for
// >= at times a BETWEEN with a second bound; it returns the predicates the
// conjunct says.
func conjunctSQL(rng *rand.Rand, p expr.Predicate, typ arrow.DataType, vals []any) (string, []expr.Predicate) {
	lit := func(v any) string {
		if s, ok := v.(string); ok {
			q := "'" + strings.ReplaceAll(s, "'", "''") + "'"
			if expr.KindOf(typ) == expr.KindDate && rng.IntN(3) == 0 {
				q = "DATE " + q
			}
			return q
		}
		return strconv.FormatInt(v.(int64), 10)
	}
	switch {
	case p.Op == expr.OpIn:
		l := make([]string, len(p.Values))
		for i, v := range p.Values {
			l[i] = lit(v)
		}
		return fmt.Sprintf("%s IN (%s)", p.Column, strings.Join(l, ", ")), []expr.Predicate{p}
	case p.Op == expr.OpGe && rng.IntN(3) == 0:
		hi := expr.Predicate{Column: p.Column, Op: expr.OpLe, Values: []any{exprtest.Constant(rng, typ, vals)}}
		return fmt.Sprintf("%s BETWEEN %s AND %s", p.Column, lit(p.Values[0]), lit(hi.Values[0])), []expr.Predicate{p, hi}
	}
	ops := map[expr.Op][2]string{expr.OpEq: {"=", "="}, expr.OpLt: {"<", ">"}, expr.OpLe: {"<=", ">="}, expr.OpGt: {">", "<"}, expr.OpGe: {">=", "<="}}[p.Op]
	if rng.IntN(4) == 0 {
		return fmt.Sprintf("%s %s %s", lit(p.Values[0]), ops[1], p.Column), []expr.Predicate{p}
	}
	return fmt.Sprintf("%s %s %s", p.Column, ops[0], lit(p.Values[0])), []expr.Predicate{p}
}

// describe prints the columns ps name, row by row.
func describe(rec arrow.RecordBatch, ps []expr.Predicate) string {
	var sb strings.Builder
	seen := map[string]bool{}
	for _, p := range ps {
		if seen[p.Column] {
			continue
		}
		seen[p.Column] = true
		col := rec.Column(rec.Schema().FieldIndices(p.Column)[0])
		fmt.Fprintf(&sb, "%s:", p.Column)
		for i := 0; i < col.Len(); i++ {
			fmt.Fprintf(&sb, " %q", col.ValueStr(i))
		}
		sb.WriteString("\n")
	}
	return sb.String()
}

// valueRange is the [min, max] of a column's present values (int64 or
// string), as statistics give it; nil, nil when all are null.
func valueRange(vals []any) (lo, hi any) {
	for _, v := range vals {
		switch x := v.(type) {
		case int64:
			if lo == nil || x < lo.(int64) {
				lo = x
			}
			if hi == nil || x > hi.(int64) {
				hi = x
			}
		case string:
			if lo == nil || x < lo.(string) {
				lo = x
			}
			if hi == nil || x > hi.(string) {
				hi = x
			}
		}
	}
	return lo, hi
}
