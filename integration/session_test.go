package integration

import (
	"context"
	"testing"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/testserver"
)

// connectWithCookies is an ADBC connection that keeps the server's
// cookies, which a session needs (ADBC's Flight SQL driver keeps none
// unless told to).
func connectWithCookies(t *testing.T, s *testserver.Server) *client {
	t.Helper()
	db, err := newDriver().NewDatabase(map[string]string{
		adbc.OptionKeyURI:                s.URI(),
		flightsql.OptionCookieMiddleware: adbc.OptionValueEnabled,
	})
	require.NoError(t, err)
	conn, err := db.Open(context.Background())
	require.NoError(t, err)
	c := &client{t: t, db: db, conn: conn}
	t.Cleanup(c.close)
	return c
}

// setDbSchema sets ADBC's current schema. arrow-go's client, which ADBC's
// driver is built on, races the end of a stream against reading its
// headers and sometimes drops the cookie SetSessionOptions answers with;
// setting it again then takes. (USE run as a query comes back in a unary
// call's headers, which never races.)
func (c *client) setDbSchema(db, want string) {
	c.t.Helper()
	for i := 0; i < 10; i++ {
		require.NoError(c.t, c.conn.(adbc.GetSetOptions).SetOption(adbc.OptionKeyCurrentDbSchema, db))
		if c.option(adbc.OptionKeyCurrentDbSchema) == want {
			return
		}
	}
	c.t.Fatalf("the current schema never became %q", want)
}

func (c *client) option(key string) string {
	c.t.Helper()
	v, err := c.conn.(adbc.GetSetOptions).GetOption(key)
	require.NoError(c.t, err, key)
	return v
}

// TestADBCSessionChoosesTheDatabase: ADBC's current schema and USE choose
// where unqualified names resolve, for queries, INSERT, DDL and bulk
// ingest; each connection has its own.
func TestADBCSessionChoosesTheDatabase(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, t.TempDir())
	c := connectWithCookies(t, srv)
	c.mustExec("CREATE DATABASE shop")
	c.mustExec("CREATE TABLE t (id BIGINT, v STRING)")
	c.mustExec("CREATE TABLE shop.t (id BIGINT, v STRING)")
	c.mustExec("INSERT INTO t VALUES (1, 'default')")
	c.mustExec("INSERT INTO shop.t VALUES (1, 'shop')")

	require.Equal(t, "default", c.option(adbc.OptionKeyCurrentDbSchema))
	require.Equal(t, "", c.option(adbc.OptionKeyCurrentCatalog))
	c.setDbSchema("SHOP", "shop")
	require.Equal(t, [][]string{{"shop"}}, c.mustQuery(`SELECT v FROM "t$rt"`))

	// What the session chose reaches writes and bulk ingest too.
	c.mustExec("INSERT INTO t VALUES (2, 'shop')")
	c.mustExec("CREATE TABLE made_here (x BIGINT)")
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).Append(3)
	b.Field(1).(*array.StringBuilder).Append("shop")
	rec := b.NewRecordBatch()
	defer rec.Release()
	_, err := c.ingest("", "t", adbc.OptionValueIngestModeAppend, rec)
	require.NoError(t, err)

	other := connect(t, srv)
	require.Equal(t, [][]string{{"3", "shop"}}, other.mustQuery(`SELECT count(*), min(v) FROM shop."t$rt"`))
	require.Equal(t, [][]string{{"1", "default"}}, other.mustQuery(`SELECT count(*), min(v) FROM "t$rt"`), "another connection has its own session")
	require.Equal(t, [][]string{{"0"}}, other.mustQuery(`SELECT count(*) FROM shop."made_here$rt"`))

	// USE, run as a query, moves the session back.
	c.mustQuery("USE default")
	require.Equal(t, "default", c.option(adbc.OptionKeyCurrentDbSchema))
	require.Equal(t, [][]string{{"default"}}, c.mustQuery(`SELECT v FROM "t$rt"`))

	// Refusals are ADBC errors, and leave the session as it was.
	err = c.conn.(adbc.GetSetOptions).SetOption(adbc.OptionKeyCurrentDbSchema, "nowhere")
	require.Error(t, err)
	err = c.conn.(adbc.GetSetOptions).SetOption(adbc.OptionKeyCurrentCatalog, "spark_catalog")
	require.Error(t, err)
	_, err = c.query("USE nowhere")
	require.ErrorContains(t, err, `database "nowhere" does not exist`)
	require.Equal(t, "default", c.option(adbc.OptionKeyCurrentDbSchema))
}
