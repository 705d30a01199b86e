package integration

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/testserver"
)

// TestADBCPartitionedReadsAreOneRead: ADBC's partitioned reads
// (ExecutePartitions, then ReadPartition of each, as a distributed client's
// workers do) return what one read returned when the statement was planned,
// while writers and tiering move the table on; a partition read twice
// returns the same rows.
func TestADBCPartitionedReadsAreOneRead(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, t.TempDir(), "--min-endpoint-rows", "500", "--max-endpoints", "4", "--tiering-interval", "200ms")
	c := connect(t, srv)
	c.mustExec("CREATE DATABASE p")
	c.mustExec("CREATE TABLE p.pk (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '4')")
	c.mustExec("CREATE TABLE p.ap (id BIGINT, v STRING)")
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.BinaryTypes.String}}, nil)
	write := func(round, n int) {
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		defer b.Release()
		for i := 0; i < n; i++ {
			b.Field(0).(*array.Int64Builder).Append(int64((i * 7919) % 5000))
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprint("r", round))
		}
		rec := b.NewRecordBatch()
		defer rec.Release()
		for _, tb := range []string{"pk", "ap"} {
			_, err := c.ingest("p", tb, adbc.OptionValueIngestModeAppend, rec)
			require.NoError(t, err)
		}
	}
	write(0, 4000)
	apRows := 4000
	ctx := context.Background()
	for _, q := range []string{`SELECT * FROM p."pk$rt"`, `SELECT v, id FROM p."ap$rt" WHERE id < 3000`, `SELECT * FROM p.ap`} {
		want := sortedRows(c.mustQuery(q))
		st, err := c.conn.NewStatement()
		require.NoError(t, err)
		require.NoError(t, st.SetSqlQuery(q))
		_, parts, _, err := st.ExecutePartitions(ctx)
		require.NoError(t, err)
		require.NoError(t, st.Close())
		require.Greater(t, parts.NumPartitions, uint64(1), q)
		write(1, 3000) // the tables move on, into the lake
		apRows += 3000
		waitTiered(t, c, "p", "ap", apRows)
		var got [][]string
		for i, id := range parts.PartitionIDs {
			r, err := c.conn.ReadPartition(ctx, id)
			require.NoError(t, err, "%s partition %d", q, i)
			rows, err := rowsOf(r)
			r.Release()
			require.NoError(t, err)
			got = append(got, rows...)
			if i == 0 { // a partition read again
				r, err := c.conn.ReadPartition(ctx, id)
				require.NoError(t, err)
				again, err := rowsOf(r)
				r.Release()
				require.NoError(t, err)
				require.Equal(t, sortedRows(rows), sortedRows(again))
			}
		}
		require.Equal(t, want, sortedRows(got), q)
	}
}
