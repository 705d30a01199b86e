package integration

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/testserver"
)

var ordersSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "customer", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
}, nil)

// model is what shop.orders must contain: customer per id.
type model map[int64]string

func (m model) lines() []string {
	out := make([]string, 0, len(m))
	for id, c := range m {
		out = append(out, fmt.Sprintf("%d|%s", id, c))
	}
	sort.Strings(out)
	return out
}

func ordersBatch(ids []int64, customer func(int64) string) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, ordersSchema)
	defer b.Release()
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append(customer(id))
		b.Field(2).(*array.Float64Builder).Append(float64(id) / 4)
		b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(base.Add(time.Duration(id) * time.Second).UnixMicro()))
	}
	return b.NewRecordBatch()
}

func (c *client) idCustomer(table string) []string {
	c.t.Helper()
	rows := c.mustQuery("SELECT id, customer FROM " + table)
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r[0] + "|" + r[1]
	}
	sort.Strings(out)
	return out
}

// TestSpine drives the whole story of the spine issue through ADBC.
func TestSpine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv := testserver.Start(t, dir)
	c := connect(t, srv)

	c.mustExec("CREATE DATABASE shop")
	c.mustExec("CREATE DATABASE IF NOT EXISTS shop")
	_, err := c.exec("CREATE DATABASE shop")
	require.ErrorContains(t, err, "exists")

	c.mustExec(`CREATE TABLE shop.orders (id BIGINT, customer STRING, amount DOUBLE, ts TIMESTAMP(6), PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '4')`)
	c.mustExec(`CREATE TABLE shop.events (id BIGINT, kind VARCHAR, n INTEGER, d DECIMAL(10,2), day DATE, ok BOOLEAN, raw BYTES)`)
	c.mustExec(`CREATE TABLE IF NOT EXISTS shop.events (id BIGINT)`)

	m := model{}
	// Bulk ingest 1000 rows.
	ids := make([]int64, 1000)
	for i := range ids {
		ids[i] = int64(i)
	}
	cust := func(id int64) string { return "c" + strconv.FormatInt(id%37, 10) }
	rec := ordersBatch(ids, cust)
	n, err := c.ingest("shop", "orders", adbc.OptionValueIngestModeAppend, rec)
	rec.Release()
	require.NoError(t, err)
	require.EqualValues(t, 1000, n)
	for _, id := range ids {
		m[id] = cust(id)
	}
	c.mustExec(`INSERT INTO shop.orders VALUES (5000, 'zed', 1.5, TIMESTAMP '2024-01-01 10:00:00')`)
	m[5000] = "zed"

	// Visible at once in t$rt.
	require.Equal(t, "1001", c.scalar(`SELECT count(*) FROM shop."orders$rt"`))
	require.Equal(t, m.lines(), c.idCustomer(`shop."orders$rt"`))

	// Upsert: newest row per id.
	c.mustExec(`INSERT INTO shop.orders (id, customer, amount) VALUES (1, 'updated', 99.5), (2, 'twice', 1), (2, 'thrice', 2)`)
	m[1], m[2] = "updated", "thrice"
	require.Equal(t, "1001", c.scalar(`SELECT count(*) FROM shop."orders$rt"`))
	require.Equal(t, m.lines(), c.idCustomer(`shop."orders$rt"`))
	require.Equal(t, [][]string{{"1", "updated", "99.5", "NULL"}}, c.mustQuery(`SELECT id, customer, amount, ts FROM shop."orders$rt" WHERE id = 1`))

	// Tiering commits a snapshot within the interval; t then has the same rows.
	testserver.Eventually(t, 30*time.Second, func() error {
		got := c.idCustomer("shop.orders")
		if strings.Join(got, ",") != strings.Join(m.lines(), ",") {
			return fmt.Errorf("lake has %d rows, want %d", len(got), len(m))
		}
		return nil
	})
	require.Equal(t, sortedRows(c.mustQuery(`SELECT * FROM shop."orders$rt"`)), sortedRows(c.mustQuery(`SELECT * FROM shop.orders`)))

	// Rows written after a commit are only in t$rt until the next one.
	c.mustExec(`ALTER TABLE shop.orders SET ('lakestream.freshness' = '1h')`)
	time.Sleep(1500 * time.Millisecond) // let a round that started before the ALTER finish
	before := c.idCustomer("shop.orders")
	c.mustExec(`INSERT INTO shop.orders VALUES (6000, 'late', 2.5, NULL)`)
	m[6000] = "late"
	require.Equal(t, m.lines(), c.idCustomer(`shop."orders$rt"`))
	time.Sleep(2 * time.Second)
	require.Equal(t, before, c.idCustomer("shop.orders"), "t must not change while tiering waits")
	require.NotContains(t, c.idCustomer("shop.orders"), "6000|late")
	c.mustExec(`ALTER TABLE shop.orders SET ('lakestream.freshness' = '1s')`)
	testserver.Eventually(t, 30*time.Second, func() error {
		if strings.Join(c.idCustomer("shop.orders"), ",") != strings.Join(m.lines(), ",") {
			return fmt.Errorf("lake not caught up")
		}
		return nil
	})

	// Append table: every row kept, duplicates included.
	c.mustExec(`INSERT INTO shop.events VALUES (1, 'click', 3, 12.50, DATE '2024-02-29', true, 'AQID'::BLOB), (1, 'click', 3, 12.50, DATE '2024-02-29', true, NULL), (2, 'view', NULL, NULL, NULL, NULL, NULL)`)
	require.Equal(t, "3", c.scalar(`SELECT count(*) FROM shop."events$rt"`))
	require.Equal(t, [][]string{{"1", "2", "25.00"}, {"2", "1", "NULL"}}, c.mustQuery(`SELECT id, count(*), sum(d)::VARCHAR FROM shop."events$rt" GROUP BY id ORDER BY id`))

	// Any DuckDB SQL over the names: join, aggregate, order, limit.
	rows := c.mustQuery(`SELECT o.customer, count(*) AS n FROM shop."orders$rt" o JOIN shop."events$rt" e ON o.id = e.id GROUP BY o.customer ORDER BY n DESC, o.customer LIMIT 5`)
	require.Equal(t, [][]string{{"updated", "2"}, {"thrice", "1"}}, rows)
	require.Equal(t, "2", c.scalar(`WITH t AS (SELECT * FROM shop."orders$rt" WHERE customer LIKE 'c3%') SELECT count(DISTINCT customer) FROM t WHERE customer IN ('c3', 'c30')`))

	// Bad input gets a clear error and the server keeps serving.
	_, err = c.query(`SELECT * FROM shop.nope`)
	require.ErrorContains(t, err, "shop.nope does not exist")
	_, err = c.query(`SELECT * FROM shop."nope$rt"`)
	require.ErrorContains(t, err, "does not exist")
	_, err = c.query(`SELEC * FROM shop.orders`)
	require.ErrorContains(t, err, "syntax error")
	_, err = c.exec(`INSERT INTO shop.orders (customer) VALUES ('no id')`)
	require.ErrorContains(t, err, `"id"`)
	_, err = c.exec(`UPDATE shop.orders SET customer = 'x' WHERE id = 1`)
	require.ErrorContains(t, err, "UPDATE is not supported on lake-stream tables")
	_, err = c.exec(`DELETE FROM shop.orders WHERE id = 1`)
	require.ErrorContains(t, err, "DELETE")
	_, err = c.exec(`INSERT OVERWRITE shop.orders SELECT * FROM shop.orders`)
	require.ErrorContains(t, err, "INSERT OVERWRITE")
	bad := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "bogus", Type: arrow.BinaryTypes.String}}, nil)
	bb := array.NewRecordBuilder(memory.DefaultAllocator, bad)
	bb.Field(0).(*array.Int64Builder).Append(7)
	bb.Field(1).(*array.StringBuilder).Append("x")
	badRec := bb.NewRecordBatch()
	bb.Release()
	_, err = c.ingest("shop", "orders", adbc.OptionValueIngestModeAppend, badRec)
	badRec.Release()
	require.ErrorContains(t, err, `"bogus"`)
	nullPK := ordersBatch([]int64{1}, cust)
	nb := array.NewRecordBuilder(memory.DefaultAllocator, ordersSchema)
	nb.Field(0).AppendNull()
	nb.Field(1).(*array.StringBuilder).Append("null key")
	nb.Field(2).AppendNull()
	nb.Field(3).AppendNull()
	nullRec := nb.NewRecordBatch()
	nb.Release()
	nullPK.Release()
	_, err = c.ingest("shop", "orders", adbc.OptionValueIngestModeAppend, nullRec)
	nullRec.Release()
	require.ErrorContains(t, err, "null")
	_, err = c.ingest("shop", "missing", adbc.OptionValueIngestModeAppend, ordersBatch([]int64{1}, cust))
	require.ErrorContains(t, err, "not found")
	require.Equal(t, m.lines(), c.idCustomer(`shop."orders$rt"`), "failed writes must not change the table")

	// Deletes arrive as rows with a change kind.
	delSchema := arrow.NewSchema(append(ordersSchema.Fields(), arrow.Field{Name: "_rowkind", Type: arrow.BinaryTypes.String}), nil)
	db := array.NewRecordBuilder(memory.DefaultAllocator, delSchema)
	db.Field(0).(*array.Int64Builder).Append(5000)
	db.Field(1).(*array.StringBuilder).Append("zed")
	db.Field(2).AppendNull()
	db.Field(3).AppendNull()
	db.Field(4).(*array.StringBuilder).Append("-D")
	delRec := db.NewRecordBatch()
	db.Release()
	_, err = c.ingest("shop", "orders", adbc.OptionValueIngestModeAppend, delRec)
	delRec.Release()
	require.NoError(t, err)
	delete(m, 5000)
	require.Equal(t, m.lines(), c.idCustomer(`shop."orders$rt"`))

	// Restart in the middle: acknowledged rows survive, tiered rows are not duplicated.
	c.mustExec(`INSERT INTO shop.orders VALUES (7000, 'before-restart', 1, NULL)`)
	m[7000] = "before-restart"
	c.close()
	srv.Restart(syscall.SIGTERM)
	c = connect(t, srv)
	require.Equal(t, m.lines(), c.idCustomer(`shop."orders$rt"`))
	require.Equal(t, "3", c.scalar(`SELECT count(*) FROM shop."events$rt"`))

	c.mustExec(`INSERT INTO shop.orders VALUES (8000, 'before-kill', 1, NULL)`)
	m[8000] = "before-kill"
	c.close()
	srv.Restart(syscall.SIGKILL)
	c = connect(t, srv)
	require.Equal(t, m.lines(), c.idCustomer(`shop."orders$rt"`))
	testserver.Eventually(t, 30*time.Second, func() error {
		got := c.idCustomer("shop.orders")
		if strings.Join(got, ",") != strings.Join(m.lines(), ",") {
			return fmt.Errorf("lake has %d rows, want %d", len(got), len(m))
		}
		return nil
	})
	require.Equal(t, "3", c.scalar(`SELECT count(*) FROM shop.events`))
	require.Equal(t, sortedRows(c.mustQuery(`SELECT * FROM shop."orders$rt"`)), sortedRows(c.mustQuery(`SELECT * FROM shop.orders`)))
	// The lag system table agrees: nothing left to tier.
	testserver.Eventually(t, 30*time.Second, func() error {
		if lag := c.scalar(`SELECT sum(lag_rows) FROM sys.tiering WHERE database = 'shop'`); lag != "0" {
			return fmt.Errorf("lag %s rows", lag)
		}
		return nil
	})
	require.Equal(t, "5", c.scalar(`SELECT count(*) FROM sys.tiering WHERE database = 'shop'`), "4 buckets of orders and 1 of events")
}
