//go:build duckdb_arrow

package query

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/internal/memguard"
	"github.com/flightd/flightd/query/plan"
)

// refuse runs sql and asserts it is refused as invalid with a message
// holding want.
func refuse(t *testing.T, e *Engine, sql, want string) {
	t.Helper()
	res, err := e.Execute(context.Background(), plan.Analyze(sql))
	if err == nil && res.Reader != nil {
		// A refusal may surface while the rows are read.
		for res.Reader.Next() {
		}
		err = res.Reader.Err()
		res.Reader.Release()
	}
	require.Error(t, err, "%q ran", sql)
	require.ErrorIs(t, err, engine.ErrInvalid, "%q: %v", sql, err)
	require.Contains(t, err.Error(), want, sql)
}

// TestClientSQLCannotReadFiles: file and network table functions, COPY,
// ATTACH, INSTALL/LOAD and settings are closed to client SQL, and the
// engine still answers afterwards.
func TestClientSQLCannotReadFiles(t *testing.T) {
	e := newTestEngine(t)
	secret := filepath.Join(t.TempDir(), "auth.key")
	require.NoError(t, os.WriteFile(secret, []byte("top secret"), 0o600))
	out := filepath.Join(t.TempDir(), "out.csv")
	for _, c := range []struct{ sql, want string }{
		{"SELECT * FROM read_text('" + secret + "')", "disabled"},
		{"SELECT * FROM read_blob('" + secret + "')", "disabled"},
		{"SELECT * FROM read_csv('" + secret + "')", "disabled"},
		{"SELECT * FROM read_parquet('" + secret + "')", "disabled"},
		{"SELECT * FROM glob('/*')", "disabled"},
		{"SELECT * FROM read_csv('https://127.0.0.1:1/x.csv')", ""},
		{"COPY (SELECT 'x') TO '" + out + "'", "COPY statements are not allowed"},
		{"PRAGMA disabled_optimizers=''", "not allowed"},
		{"PRAGMA profiling_output='" + out + "'", "not allowed"},
		{"SET disabled_optimizers = ''", "not allowed"},
		{"RESET disabled_optimizers", "not allowed"},
		{"SET enable_external_access = true", "not allowed"},
		{"INSTALL httpfs", "not allowed"},
		{"LOAD httpfs", "not allowed"},
		{"ATTACH '" + out + "' AS x", "not allowed"},
		{"DETACH x", "not allowed"},
		{"CALL pragma_version()", "not allowed"},
		{"CHECKPOINT", "not allowed"},
		{"VACUUM", "not allowed"},
		{"EXPORT DATABASE '" + t.TempDir() + "'", "not allowed"},
		{"CREATE MACRO m(a) AS a", "not allowed"},
		{"CREATE SECRET s (TYPE s3, KEY_ID 'k', SECRET 's')", "not allowed"},
		{"CREATE VIEW v AS SELECT 1", "not allowed"},
		{"CREATE SEQUENCE s", "not allowed"},
		{"BEGIN TRANSACTION", "not allowed"},
		{"SELECT 1 AS a --\r; COPY (SELECT 'x') TO '" + out + "'; SELECT 2", ""},
		{"SELECT 1; SELECT 2", ""},
	} {
		t.Run(c.sql, func(t *testing.T) {
			refuse(t, e, c.sql, c.want)
		})
	}
	_, err := os.Stat(out)
	require.True(t, os.IsNotExist(err), "a refused statement wrote %s", out)
	// The settings stayed as the lockdown set them, and queries still run.
	require.Equal(t, [][]string{{"false", "true"}},
		run(t, e, "SELECT current_setting('enable_external_access')::VARCHAR, current_setting('lock_configuration')::VARCHAR"))
	require.Equal(t, [][]string{{"2"}}, run(t, e, "SELECT 1 + 1"))
}

// TestSmuggledStatementNeverRuns: DuckDB ends a -- comment at \r, so text
// that flightd's old lexer saw as one statement was three to DuckDB, which
// ran them all. Whatever the lexer says, DuckDB's parser decides, and more
// than one statement is refused before any runs.
func TestSmuggledStatementNeverRuns(t *testing.T) {
	e := newTestEngine(t)
	out := filepath.Join(t.TempDir(), "x.csv")
	for _, sql := range []string{
		"SELECT 1 AS a --\r; COPY (SELECT 'x') TO '" + out + "' (FORMAT csv); SELECT 2",
		"SELECT 1 AS a --\r; INSTALL httpfs",
		"SELECT $€$ x $€$; SELECT 2",
		"SELECT 1 AS a /* */; PRAGMA disabled_optimizers=''",
		"WITH x AS (SELECT 1) SELECT * FROM x --\r; SET threads = 1",
	} {
		refuse(t, e, sql, "")
		_, err := e.Prepare(context.Background(), plan.Analyze(sql))
		require.Error(t, err, "prepare %q", sql)
	}
	_, err := os.Stat(out)
	require.True(t, os.IsNotExist(err), "a smuggled COPY wrote %s", out)
	// Had INSTALL run, the extension directory would be listable; with the
	// file system closed it is not even that.
	refuse(t, e, "SELECT * FROM duckdb_extensions()", "disabled by configuration")
}

// TestPragmaCannotChangeOtherClients: PRAGMA disabled_optimizers set empty once
// turned filtering off for every client; now it is refused and a filtered
// query still filters.
func TestPragmaCannotChangeOtherClients(t *testing.T) {
	e := newTestEngine(t)
	run(t, e, "CREATE TABLE p (id BIGINT)")
	run(t, e, "INSERT INTO p SELECT range FROM range(100)")
	refuse(t, e, "PRAGMA disabled_optimizers=''", "PRAGMA statements are not allowed")
	require.Equal(t, [][]string{{"10"}}, run(t, e, `SELECT count(*) FROM "p$rt" WHERE id < 10 AND id + 0 >= 0`))
}

// TestLockdownVerifiedAtStart: a setting DuckDB does not hold as asked
// stops the engine from starting.
func TestLockdownVerifiedAtStart(t *testing.T) {
	e := newTestEngine(t)
	c, err := e.connect(context.Background())
	require.NoError(t, err)
	defer e.release(c)
	require.NoError(t, verifyLockdown(context.Background(), c.c, lockdown(Options{})))
	err = verifyLockdown(context.Background(), c.c, [][2]string{{"enable_external_access", "true"}})
	require.ErrorContains(t, err, "enable_external_access")
	err = verifyLockdown(context.Background(), c.c, [][2]string{{"no_such_setting_at_all", "x"}})
	require.ErrorContains(t, err, "no setting")
	// The file and extension doors and the lock are set after the start
	// settings, on the first connection, and the lock holds.
	require.NotContains(t, lockdownDSN(lockdown(Options{})), "lock_configuration")
	require.Error(t, c.exec(context.Background(), "SET GLOBAL lock_configuration = false"))
}

// TestSpillsUnderMemoryLimit: with external access off, DuckDB still
// spills to the temp directory flightd gives it, so a sort larger than
// the memory limit completes instead of failing.
func TestSpillsUnderMemoryLimit(t *testing.T) {
	tmp := filepath.Join(t.TempDir(), "duckdb-tmp")
	e := newTestEngineWith(t, Options{Threads: 1, MemoryLimit: "64MiB", TempDir: tmp})
	const sort = "SELECT max(i) FROM (SELECT row_number() OVER (ORDER BY s DESC) AS i FROM (SELECT range::VARCHAR || repeat('x', 40) AS s FROM range(3000000)))"
	require.Equal(t, [][]string{{"3000000"}}, run(t, e, sort))
	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	t.Logf("temp dir entries after the sort: %d", len(entries))
}

// TestHugeResultCancelledAtMemoryCeiling: DuckDB materialises a result
// the row path builds (types the Arrow path does not give, such as
// INTERVAL) before its first row, outside memory_limit; SELECT * FROM
// range(10^12) grew the server until the kernel ended it. Past the
// ceiling it is cancelled with RESOURCE_EXHAUSTED, and the engine serves
// on, even while the allocator still holds the memory.
func TestHugeResultCancelledAtMemoryCeiling(t *testing.T) {
	ceiling := memguard.ResidentBytes() + 384<<20
	e := newTestEngineWith(t, Options{Threads: 2, MemoryLimit: "128MiB", MemoryCeiling: ceiling})
	for range 2 { // the second time with the first one's memory still held
		_, err := e.Execute(context.Background(), plan.Analyze("SELECT range, INTERVAL 1 DAY AS d FROM range(1000000000000)"))
		require.ErrorIs(t, err, engine.ErrExhausted)
		require.ErrorContains(t, err, "ceiling")
		require.Equal(t, [][]string{{"42"}}, run(t, e, "SELECT 42"))
	}
}

// TestHugeResultStreamsUnderMemoryCeiling: an Arrow result streams, so
// SELECT * FROM range(10^12) holds about a chunk at a time: millions of
// rows are read with the memory guard watching, and nothing is cancelled.
func TestHugeResultStreamsUnderMemoryCeiling(t *testing.T) {
	ceiling := memguard.ResidentBytes() + 384<<20
	e := newTestEngineWith(t, Options{Threads: 2, MemoryLimit: "128MiB", MemoryCeiling: ceiling})
	res, err := e.Execute(context.Background(), plan.Analyze("SELECT *, 'row ' || range::VARCHAR AS s FROM range(1000000000000)"))
	require.NoError(t, err)
	var rows int64
	for rows < 20_000_000 && res.Reader.Next() {
		rows += res.Reader.RecordBatch().NumRows()
	}
	require.NoError(t, res.Reader.Err())
	res.Reader.Release()
	require.GreaterOrEqual(t, rows, int64(20_000_000))
	require.Equal(t, [][]string{{"42"}}, run(t, e, "SELECT 42"))
}

// DuckDB's own bound on spilling is 90% of the free disk, which a client's
// query could take from the log and the lake (a cancelled test once left
// 60 GB in its spill directory), and its max_temp_directory_size does not
// hold for a sort (600 MB spilled under a 2 MiB bound): the spill guard
// cancels the statement once the directory passes MaxTempBytes, the
// client gets RESOURCE_EXHAUSTED, and the engine serves on.
func TestSpillBeyondMaxTempBytesFails(t *testing.T) {
	const sortBig = `SELECT md5(i::VARCHAR) AS h, md5(h) AS h2, i FROM range(3000000) r(i) ORDER BY h`
	spill := func(limit int64) error {
		e := newTestEngineWith(t, Options{Threads: 1, MemoryLimit: "64MiB", MaxTempBytes: limit})
		res, err := e.Execute(context.Background(), plan.Analyze(sortBig))
		if err == nil {
			for res.Reader.Next() {
			}
			err = res.Reader.Err()
			res.Reader.Release()
		}
		require.Equal(t, [][]string{{"2"}}, run(t, e, `SELECT 1 + 1`), "the engine serves on")
		return err
	}
	require.NoError(t, spill(1<<30), "the sort spills within 1 GiB")
	err := spill(16 << 20)
	require.ErrorIs(t, err, engine.ErrExhausted, "the same sort may not spill more than 16 MiB")
	require.ErrorContains(t, err, "--max-spill")
}
