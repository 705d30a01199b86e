package integration

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/testserver"
)

// requireInvalid asserts err is the server's INVALID_ARGUMENT (never
// INTERNAL), with a message holding want and none of the server's paths
// that the statement did not name itself.
func requireInvalid(t *testing.T, err error, sql, want string, paths ...string) {
	t.Helper()
	require.Error(t, err, "%q was not refused", sql)
	var ae adbc.Error
	require.True(t, errors.As(err, &ae), "%q: %v", sql, err)
	require.Equal(t, adbc.StatusInvalidArgument, ae.Code, "%q: %v", sql, err)
	require.Contains(t, err.Error(), want, sql)
	for _, p := range paths {
		if strings.Contains(sql, p) {
			continue // the client's own text, echoed
		}
		require.NotContains(t, err.Error(), p, "%q: the error shows a server path", sql)
	}
}

// TestSQLReachesOnlyFlightdTables: every attack of the lockdown issue,
// against the real binary with default flags. Each is refused as
// INVALID_ARGUMENT, no file appears outside the data dir, DuckDB's settings
// are as the server set them, and the server answers afterwards.
func TestSQLReachesOnlyFlightdTables(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	outside := t.TempDir() // where a successful attack would write
	srv := testserver.Start(t, data)
	c := connect(t, srv)
	c.mustExec("CREATE TABLE sec (id BIGINT, s VARCHAR)")
	c.mustExec("INSERT INTO sec SELECT range, 'v' || range FROM range(100)")
	testserver.Eventually(t, time.Minute, func() error {
		if n := c.scalar("SELECT count(*) FROM sec"); n != "100" {
			return errors.New("not tiered yet: " + n)
		}
		return nil
	})
	secret := filepath.Join(data, "auth.key")
	if _, err := os.Stat(secret); err != nil {
		require.NoError(t, os.WriteFile(secret, []byte("secret"), 0o600))
	}
	var snapshot string
	_ = filepath.Walk(data, func(p string, info os.FileInfo, err error) error {
		if err == nil && strings.HasPrefix(info.Name(), "snapshot-") {
			snapshot = p
		}
		return nil
	})
	require.NotEmpty(t, snapshot)
	logFile := filepath.Join(data, "log", "MANIFEST")
	out := filepath.Join(outside, "x.csv")

	files := []string{"/etc/shadow", "/etc/passwd", secret, snapshot, logFile}
	var attacks []string
	for _, f := range files {
		for _, fn := range []string{"read_text", "read_blob", "read_csv", "read_parquet", "read_json"} {
			attacks = append(attacks, "SELECT * FROM "+fn+"('"+f+"')")
		}
	}
	attacks = append(attacks,
		"SELECT * FROM glob('/*')",
		"SELECT * FROM glob('"+data+"/*')",
		"SELECT * FROM read_csv('https://127.0.0.1:9/x.csv')",
		"SELECT * FROM read_csv('s3://bucket/x.csv')",
		"SELECT 1 AS a --\r; COPY (SELECT 'x') TO '"+out+"'; SELECT 2",
		"SELECT 1 AS a --\r; INSTALL httpfs",
		"SELECT $€$ a $€$; COPY (SELECT 'x') TO '"+out+"'",
		"COPY (SELECT * FROM sec) TO '"+out+"'",
		"COPY sec FROM '"+out+"'",
		"PRAGMA disabled_optimizers=''",
		"PRAGMA profiling_output='"+out+"'",
		"PRAGMA enable_profiling",
		"SET disabled_optimizers = ''",
		"SET GLOBAL enable_external_access = true",
		"RESET ALL",
		"INSTALL httpfs",
		"LOAD httpfs",
		"ATTACH '"+filepath.Join(outside, "x.db")+"' AS x",
		"DETACH memory",
		"CALL pragma_version()",
		"CHECKPOINT",
		"VACUUM",
		"EXPORT DATABASE '"+outside+"'",
		"IMPORT DATABASE '"+outside+"'",
		"CREATE MACRO m(a) AS a",
		"CREATE SECRET s (TYPE s3, KEY_ID 'k', SECRET 's')",
		"CREATE VIEW v AS SELECT 1",
		"CREATE SEQUENCE q",
		"CREATE TEMP TABLE tt AS SELECT 1",
		"BEGIN TRANSACTION",
		"SELECT 1\x00; COPY (SELECT 'x') TO '"+out+"'",
	)
	for _, sql := range attacks {
		_, qerr := c.query(sql)
		requireInvalid(t, qerr, sql, "", data)
		_, eerr := c.exec(sql)
		requireInvalid(t, eerr, sql, "", data)
	}

	// Table options that are paths stay inside the table.
	for _, opt := range []string{"data-file.prefix", "changelog-file.prefix"} {
		sql := "CREATE TABLE esc (id BIGINT) WITH ('" + opt + "' = '../../../" + outside + "/x-')"
		_, err := c.exec(sql)
		requireInvalid(t, err, sql, opt)
	}
	// Names that would be paths.
	for _, sql := range []string{
		`CREATE TABLE "../esc" (id BIGINT)`,
		`CREATE TABLE "a/b" (id BIGINT)`,
		`CREATE DATABASE ".."`,
	} {
		_, err := c.exec(sql)
		requireInvalid(t, err, sql, "", data)
	}

	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	require.Empty(t, entries, "an attack wrote outside the data dir")
	// The settings are as the server set them, for every client.
	require.Equal(t, [][]string{{"false", "true", "false"}}, c.mustQuery(
		"SELECT current_setting('enable_external_access')::VARCHAR, current_setting('lock_configuration')::VARCHAR, current_setting('autoload_known_extensions')::VARCHAR"))
	// The optimizer PRAGMA did not take: a filter still filters.
	require.Equal(t, "10", c.scalar("SELECT count(*) FROM sec WHERE id < 10 AND s <> ''"))
	require.Equal(t, "10", c.scalar(`SELECT count(*) FROM "sec$rt" WHERE id < 10 AND s <> ''`))
	srv.Stop(syscall.SIGTERM)
	require.NotContains(t, srv.Log(), "panic")
}

// TestUserMistakesAreNeverInternal: a statement a user got wrong is
// INVALID_ARGUMENT, NOT_FOUND or ALREADY_EXISTS, never INTERNAL or
// UNKNOWN, and its message carries no path of the server's.
func TestUserMistakesAreNeverInternal(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	srv := testserver.Start(t, data)
	c := connect(t, srv)
	c.mustExec("CREATE TABLE a (id BIGINT, s VARCHAR)")
	c.mustExec("CREATE TABLE p (id BIGINT, s VARCHAR, PRIMARY KEY (id) NOT ENFORCED)")
	for sql, want := range map[string]adbc.Status{
		`CREATE TABLE "fresh$rt" (id INT)`:                          adbc.StatusInvalidArgument,
		`CREATE TABLE "x\y" (id INT)`:                               adbc.StatusInvalidArgument,
		`CREATE TABLE ".hidden" (id INT)`:                           adbc.StatusInvalidArgument,
		`CREATE DATABASE sys`:                                       adbc.StatusInvalidArgument,
		"ALTER TABLE p SET ('bucket' = '7')":                        adbc.StatusInvalidArgument,
		"ALTER TABLE a SET ('data-file.prefix' = 'x/../../y-')":     adbc.StatusInvalidArgument,
		"ALTER TABLE a SET ('path' = '/tmp')":                       adbc.StatusInvalidArgument,
		"CREATE TABLE a2 (id INT) WITH ('data-file.prefix' = '..')": adbc.StatusInvalidArgument,
		"UPDATE a SET s = 'x'":                                      adbc.StatusInvalidArgument,
		"DELETE FROM a":                                             adbc.StatusInvalidArgument,
		"INSERT OVERWRITE a VALUES (1, 'x')":                        adbc.StatusInvalidArgument,
		"CREATE TABLE y (a FOO)":                                    adbc.StatusInvalidArgument,
		"CREATE TABLE y (a " + strings.Repeat("ARRAY<", 40) + "INT" + strings.Repeat(">", 40) + ")": adbc.StatusInvalidArgument,
		"INSERT INTO p VALUES (NULL, 'x')": adbc.StatusInvalidArgument,
		"SELEC 1":                          adbc.StatusInvalidArgument,
		"USE x":                            adbc.StatusNotFound,
		"INSERT INTO missing VALUES (1)":   adbc.StatusNotFound,
		"DROP TABLE missing":               adbc.StatusNotFound,
		"SELECT * FROM nodb.t":             adbc.StatusNotFound,
		"CREATE TABLE a (id INT)":          adbc.StatusAlreadyExists,
	} {
		_, err := c.exec(sql)
		require.Error(t, err, sql)
		var ae adbc.Error
		require.True(t, errors.As(err, &ae), "%q: %v", sql, err)
		require.Equal(t, want, ae.Code, "%q: %v", sql, err)
		require.NotContains(t, err.Error(), data, sql)
	}
	require.Equal(t, "0", c.scalar("SELECT count(*) FROM a"))
}
