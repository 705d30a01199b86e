//go:build duckdb_arrow

package query

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/query/plan"
)

// TestChangelogView: db."t$changelog" is the table's full changelog in SQL,
// listed with the tables; its before-images are the stored rows.
func TestChangelogView(t *testing.T) {
	e := newTestEngine(t)
	run(t, e, "CREATE TABLE kv (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1')")
	run(t, e, "INSERT INTO kv VALUES (1, 'a'), (2, 'b')")
	run(t, e, "INSERT INTO kv VALUES (1, 'a2')")
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.BinaryTypes.String}, {Name: "_rowkind", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{2, 3}, nil)
	b.Field(1).(*array.StringBuilder).AppendValues([]string{"ignored", "x"}, nil)
	b.Field(2).(*array.StringBuilder).AppendValues([]string{"-D", "-D"}, nil)
	rec := b.NewRecordBatch()
	b.Release()
	rr, err := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
	require.NoError(t, err)
	rec.Release()
	_, err = e.Ingest(context.Background(), DefaultDatabase, "kv", false, rr)
	rr.Release()
	require.NoError(t, err)

	require.Equal(t, [][]string{
		{"+I", "0", "1", "a"},
		{"+I", "1", "2", "b"},
		{"-U", "2", "1", "a"},
		{"+U", "2", "1", "a2"},
		{"-D", "3", "2", "b"},
	}, run(t, e, `SELECT _change_type, _log_offset, id, v FROM "kv$changelog" ORDER BY _log_offset, _change_type DESC`))
	require.Equal(t, [][]string{{"5"}}, run(t, e, `SELECT count(*) FROM "default"."kv$changelog"`))

	tables, err := e.Tables(context.Background(), DefaultDatabase)
	require.NoError(t, err)
	var names []string
	for _, ti := range tables {
		names = append(names, ti.Name)
	}
	require.Equal(t, []string{"kv", "kv$rt", "kv$changelog"}, names)

	_, err = e.Execute(context.Background(), plan.Analyze(`SELECT * FROM "nope$changelog"`))
	require.ErrorIs(t, err, engine.ErrNotFound)
	require.ErrorContains(t, err, "changelog")
}
