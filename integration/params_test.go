package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/testserver"
)

// paramBatch is a parameter batch of an int64 and a string column.
func paramBatch(ids []int64, names []*string) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil))
	defer b.Release()
	for i, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		if i < len(names) && names[i] != nil {
			b.Field(1).(*array.StringBuilder).Append(*names[i])
		} else {
			b.Field(1).AppendNull()
		}
	}
	return b.NewRecordBatch()
}

// TestParameters binds parameters through ADBC (Go): a prepared INSERT takes
// a batch of rows in one execution, and a prepared query, re-bound with
// random keys, returns what the same query with the values written into its
// text returns, before and after the rows are tiered into the lake.
func TestParameters(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, t.TempDir(), "--tiering-interval", "500ms")
	c := connect(t, srv)
	ctx := context.Background()
	c.mustExec("CREATE DATABASE p")
	c.mustExec("CREATE TABLE p.t (id BIGINT, name STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '4')")

	rng := rand.New(rand.NewPCG(1, 2))
	const n = 500
	ids := make([]int64, n)
	names := make([]*string, n)
	for i := range ids {
		ids[i] = int64(i * 3)
		if rng.IntN(5) > 0 {
			s := fmt.Sprintf("n'%d?%s", i, strings.Repeat("\\", rng.IntN(3)))
			names[i] = &s
		}
	}
	ins, err := c.conn.NewStatement()
	require.NoError(t, err)
	defer ins.Close()
	require.NoError(t, ins.SetSqlQuery("INSERT INTO p.t VALUES (?, ?)"))
	require.NoError(t, ins.Prepare(ctx))
	ps, err := ins.GetParameterSchema()
	require.NoError(t, err)
	require.Equal(t, []arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.String}, []arrow.DataType{ps.Field(0).Type, ps.Field(1).Type})
	rec := paramBatch(ids, names)
	require.NoError(t, ins.Bind(ctx, rec))
	rec.Release()
	got, err := ins.ExecuteUpdate(ctx)
	require.NoError(t, err)
	require.EqualValues(t, n, got)

	q, err := c.conn.NewStatement()
	require.NoError(t, err)
	defer q.Close()
	require.NoError(t, q.SetSqlQuery(`SELECT id, name FROM p."t$rt" WHERE id = ? OR name = ? ORDER BY id`))
	require.NoError(t, q.Prepare(ctx))
	literal := func(s *string) string {
		if s == nil {
			return "NULL"
		}
		return "'" + strings.ReplaceAll(*s, "'", "''") + "'"
	}
	check := func(round string) {
		for range 40 {
			id := int64(rng.IntN(3 * n)) // a third of them exist
			name := names[rng.IntN(n)]
			rec := paramBatch([]int64{id}, []*string{name})
			require.NoError(t, q.Bind(ctx, rec))
			rec.Release()
			r, _, err := q.ExecuteQuery(ctx)
			require.NoError(t, err)
			bound, err := rowsOf(r)
			require.NoError(t, err)
			r.Release()
			want := sortedRows(c.mustQuery(fmt.Sprintf(`SELECT id, name FROM p."t$rt" WHERE id = %d OR name = %s ORDER BY id`, id, literal(name))))
			require.Equal(t, want, sortedRows(bound), "%s: id %d name %s", round, id, literal(name))
		}
	}
	check("log")
	require.Eventually(t, func() bool { return c.scalar("SELECT count(*) FROM p.t") == fmt.Sprint(n) }, 30*time.Second, 100*time.Millisecond)
	check("lake")

	// Several rows bound to a query run it once per row, the results one
	// after another (Flight SQL; ADBC's validation suite binds three).
	// Parameters keep their width: a BIGINT stays BIGINT, a NULL is typed.
	sel, err := c.conn.NewStatement()
	require.NoError(t, err)
	defer sel.Close()
	require.NoError(t, sel.SetSqlQuery(`SELECT ? AS id, ? AS name`))
	require.NoError(t, sel.Prepare(ctx))
	a, b := "a", "b"
	three := paramBatch([]int64{1, 5_000_000_000, 3}, []*string{&a, nil, &b})
	require.NoError(t, sel.Bind(ctx, three))
	three.Release()
	r, _, err := sel.ExecuteQuery(ctx)
	require.NoError(t, err)
	require.Equal(t, arrow.PrimitiveTypes.Int64, r.Schema().Field(0).Type, "a BIGINT parameter comes back BIGINT")
	rows, err := rowsOf(r)
	require.NoError(t, err)
	r.Release()
	require.Equal(t, [][]string{{"1", "a"}, {"5000000000", "NULL"}, {"3", "b"}}, rows)
	// Two rows of the lookup: both keys' rows, in the rows' order.
	two := paramBatch([]int64{6, 3}, nil)
	require.NoError(t, q.Bind(ctx, two))
	two.Release()
	r, _, err = q.ExecuteQuery(ctx)
	require.NoError(t, err)
	rows, err = rowsOf(r)
	require.NoError(t, err)
	r.Release()
	var ids2 []string
	for _, row := range rows {
		ids2 = append(ids2, row[0])
	}
	require.Equal(t, []string{"6", "3"}, ids2)
	// DDL takes no parameters.
	st, err := c.conn.NewStatement()
	require.NoError(t, err)
	defer st.Close()
	require.NoError(t, st.SetSqlQuery("CREATE TABLE p.x (a BIGINT) WITH ('bucket' = ?)"))
	require.ErrorContains(t, st.Prepare(ctx), "can be bound in queries and INSERT INTO only")
}
