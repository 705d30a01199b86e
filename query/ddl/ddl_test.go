package ddl

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/logstore"
	"github.com/flightd/flightd/sqlparse"
)

// newCatalog is a Catalog over a new warehouse and log in t's directory.
func newCatalog(t *testing.T) *Catalog {
	t.Helper()
	dir := t.TempDir()
	cat, err := lake.OpenCatalog(filepath.Join(dir, "warehouse"))
	require.NoError(t, err)
	log, err := logstore.Open(filepath.Join(dir, "log"), logstore.DefaultOptions())
	require.NoError(t, err)
	t.Cleanup(func() { log.Close() })
	return New(lakestream.New(cat, log, lakestream.Options{}), nil)
}

// run runs the DDL statement sql in the session of database db.
func (c *Catalog) run(db, sql string) (*sqlparse.Name, error) {
	return c.Run(engine.WithDatabase(context.Background(), db), sqlparse.Classify(sql), sql)
}

func TestRunChangesTheCatalogAndNamesWhatIsGone(t *testing.T) {
	c := newCatalog(t)
	for _, sql := range []string{
		"CREATE DATABASE shop",
		"CREATE TABLE shop.t (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')",
		"ALTER TABLE t ADD COLUMN w INT",
		"ALTER TABLE t SET ('snapshot.num-retained.max' = '5')",
		"ALTER TABLE IF EXISTS nothing ADD COLUMN w INT",
	} {
		gone, err := c.run("shop", sql)
		require.NoError(t, err, sql)
		require.Nil(t, gone, sql)
	}
	_, err := c.run("shop", "CREATE DATABASE shop")
	require.ErrorIs(t, err, engine.ErrExists)
	_, err = c.run("shop", "CREATE TABLE t (id BIGINT")
	require.ErrorIs(t, err, engine.ErrInvalid)
	_, err = c.run("shop", "DROP TABLE missing")
	require.ErrorIs(t, err, engine.ErrNotFound)

	gone, err := c.run("shop", "DROP TABLE IF EXISTS nothing")
	require.NoError(t, err)
	require.Equal(t, &sqlparse.Name{Database: "shop", Table: "nothing"}, gone, "whatever is kept by that name is stale")
	gone, err = c.run("shop", "ALTER TABLE t RENAME TO u")
	require.NoError(t, err)
	require.Equal(t, &sqlparse.Name{Database: "shop", Table: "t"}, gone, "the old name's views are stale")
	gone, err = c.run("default", "DROP TABLE shop.u")
	require.NoError(t, err)
	require.Equal(t, &sqlparse.Name{Database: "shop", Table: "u"}, gone)
}

func TestWritableRefusesTheNamesThatOnlyRead(t *testing.T) {
	c := newCatalog(t)
	ctx := context.Background()
	_, err := c.run("default", "CREATE DATABASE default")
	require.NoError(t, err)
	_, err = c.run("default", "CREATE TABLE t (id BIGINT)")
	require.NoError(t, err)
	require.NoError(t, c.Writable(ctx, "default", "t"))
	for table, msg := range map[string]string{
		"t$rt":        "read-only real-time view of default.t",
		"t$changelog": "read-only changelog of default.t",
		"t$snapshots": "read-only system table of default.t",
	} {
		err := c.Writable(ctx, "default", table)
		require.ErrorIs(t, err, engine.ErrInvalid, table)
		require.ErrorContains(t, err, msg, table)
	}
	require.ErrorIs(t, c.Writable(ctx, "SYS", "tiering"), engine.ErrInvalid)
	require.ErrorIs(t, c.Writable(ctx, "default", "missing$rt"), engine.ErrNotFound)
}

func TestUseAndSetStreaming(t *testing.T) {
	c := newCatalog(t)
	ctx := context.Background()
	_, err := c.run("default", `CREATE DATABASE "Shop"`)
	require.NoError(t, err)
	db, err := c.Use(ctx, "USE shop")
	require.NoError(t, err)
	require.Equal(t, "Shop", db)
	_, err = c.Use(ctx, "USE nowhere")
	require.ErrorIs(t, err, engine.ErrNotFound)

	on, err := SetStreaming("SET streaming TO 'on'")
	require.NoError(t, err)
	require.True(t, on)
	on, err = SetStreaming("RESET streaming")
	require.NoError(t, err)
	require.False(t, on)
	_, err = SetStreaming("SET threads = 4")
	require.ErrorIs(t, err, engine.ErrInvalid)
	require.ErrorContains(t, err, "SET threads is not allowed")
}
