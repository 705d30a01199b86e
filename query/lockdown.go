//go:build duckdb_arrow

package query

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/flightd/flightd/engine"
)

// DuckDB runs client SQL, and DuckDB's own security model treats SQL as
// code that may read and write files, open connections and load
// extensions: flightd is the boundary. Two doors are closed here.
//
// The database: it opens with external access (files, network, ATTACH,
// COPY to or from files), extension installing and loading off, and its
// configuration locked, so no statement can open them again (lockdown). The
// settings are read back once the database is open and the engine refuses
// to start if one did not take (verifyLockdown).
//
// The statement: what runs is exactly one statement, and DuckDB's own
// parser says so (prepareOne): text DuckDB splits into several statements
// is refused before any of it runs, and the one statement must be a query
// (SELECT, or EXPLAIN of one). flightd's own lexer (package sqlparse) only
// routes text to flightd's DDL and INSERT; it never decides what DuckDB
// runs.

// lockdown is the DuckDB configuration every engine opens with, in the
// order it is applied. The database is created with the settings of
// atStart (lockdownDSN); the rest are set in this order on its first
// connection, before any client connects (checkLockdown), because DuckDB
// refuses some settings once external access is off and nothing once the
// configuration is locked, and the driver applies start settings in no
// particular order.
func lockdown(opts Options) [][2]string {
	s := [][2]string{
		{"allow_community_extensions", "false"},
		{"allow_unsigned_extensions", "false"},
	}
	if opts.Threads > 0 {
		s = append(s, [2]string{"threads", fmt.Sprint(opts.Threads)})
	}
	if opts.MemoryLimit != "" {
		s = append(s, [2]string{"memory_limit", opts.MemoryLimit})
	}
	if opts.TempDir != "" {
		s = append(s, [2]string{"temp_directory", opts.TempDir})
	}
	if opts.MaxTempBytes > 0 {
		s = append(s, [2]string{"max_temp_directory_size", fmt.Sprintf("%dMiB", max(opts.MaxTempBytes>>20, 1))})
	}
	return append(s,
		[2]string{"autoinstall_known_extensions", "false"},
		[2]string{"autoload_known_extensions", "false"},
		[2]string{"enable_external_access", "false"},
		[2]string{"lock_configuration", "true"})
}

// atStart reports whether a lockdown setting is given when the database is
// created rather than set on its first connection.
func atStart(name string) bool {
	switch name {
	case "autoinstall_known_extensions", "autoload_known_extensions", "enable_external_access", "lock_configuration":
		return false
	}
	return true
}

// lockdownDSN is the DuckDB data source name of an in-memory database
// created with the start settings of settings.
func lockdownDSN(settings [][2]string) string {
	q := url.Values{}
	for _, kv := range settings {
		if atStart(kv[0]) {
			q.Set(kv[0], kv[1])
		}
	}
	return "?" + q.Encode()
}

// verifyLockdown reads the settings back and fails if one is not what
// lockdown asked for, so a DuckDB that ignores or renames a setting stops
// the server instead of serving unlocked.
func verifyLockdown(ctx context.Context, c driver.Conn, settings [][2]string) error {
	want := map[string]string{}
	var names []string
	for _, kv := range settings {
		switch kv[0] {
		case "threads", "memory_limit", "temp_directory", "max_temp_directory_size":
			continue // sizes and paths DuckDB reports in its own words
		}
		want[kv[0]] = kv[1]
		names = append(names, "'"+kv[0]+"'")
	}
	sort.Strings(names)
	rows, err := c.(driver.QueryerContext).QueryContext(ctx,
		"SELECT name, value FROM duckdb_settings() WHERE name IN ("+strings.Join(names, ", ")+")", nil)
	if err != nil {
		return fmt.Errorf("query: read DuckDB settings: %w", err)
	}
	defer rows.Close()
	got := map[string]string{}
	vals := make([]driver.Value, 2)
	for rows.Next(vals) == nil {
		got[fmt.Sprint(vals[0])] = fmt.Sprint(vals[1])
	}
	for name, v := range want {
		g, ok := got[name]
		if !ok {
			return fmt.Errorf("query: DuckDB has no setting %s: refusing to run client SQL without it", name)
		}
		if !strings.EqualFold(normSetting(g), normSetting(v)) {
			return fmt.Errorf("query: DuckDB setting %s is %q, want %q: refusing to run client SQL", name, g, v)
		}
	}
	return nil
}

// normSetting makes DuckDB's spelling of a list setting comparable.
func normSetting(v string) string {
	parts := strings.Split(strings.ReplaceAll(v, " ", ""), ",")
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// statementKinds names DuckDB's statement types in refusals.
var statementKinds = map[duckdb.StmtType]string{
	duckdb.STATEMENT_TYPE_INSERT:       "INSERT",
	duckdb.STATEMENT_TYPE_UPDATE:       "UPDATE",
	duckdb.STATEMENT_TYPE_DELETE:       "DELETE",
	duckdb.STATEMENT_TYPE_PREPARE:      "PREPARE",
	duckdb.STATEMENT_TYPE_CREATE:       "CREATE",
	duckdb.STATEMENT_TYPE_EXECUTE:      "EXECUTE",
	duckdb.STATEMENT_TYPE_ALTER:        "ALTER",
	duckdb.STATEMENT_TYPE_TRANSACTION:  "transaction (BEGIN/COMMIT/ROLLBACK)",
	duckdb.STATEMENT_TYPE_COPY:         "COPY",
	duckdb.STATEMENT_TYPE_ANALYZE:      "ANALYZE",
	duckdb.STATEMENT_TYPE_VARIABLE_SET: "SET VARIABLE",
	duckdb.STATEMENT_TYPE_CREATE_FUNC:  "CREATE FUNCTION/MACRO",
	duckdb.STATEMENT_TYPE_DROP:         "DROP",
	duckdb.STATEMENT_TYPE_EXPORT:       "EXPORT/IMPORT DATABASE",
	duckdb.STATEMENT_TYPE_PRAGMA:       "PRAGMA",
	duckdb.STATEMENT_TYPE_VACUUM:       "VACUUM/CHECKPOINT",
	duckdb.STATEMENT_TYPE_CALL:         "CALL",
	duckdb.STATEMENT_TYPE_SET:          "SET/RESET",
	duckdb.STATEMENT_TYPE_LOAD:         "INSTALL/LOAD",
	duckdb.STATEMENT_TYPE_EXTENSION:    "extension",
	duckdb.STATEMENT_TYPE_ATTACH:       "ATTACH",
	duckdb.STATEMENT_TYPE_DETACH:       "DETACH",
	duckdb.STATEMENT_TYPE_MULTI:        "multi-statement",
}

// errMultipleStatements is the refusal of text that DuckDB reads as more
// than one statement.
var errMultipleStatements = fmt.Errorf("%w: the text holds more than one statement (DuckDB's parser splits it at a ';' outside strings and comments); send one statement per call", engine.ErrInvalid)

// resultNames are the names of the result columns of st, prepared.
func resultNames(st *duckdb.Stmt) ([]string, error) {
	n, err := st.ColumnCount()
	if err != nil {
		return nil, fmt.Errorf("query: result columns: %w", err)
	}
	names := make([]string, n)
	for i := range names {
		if names[i], err = st.ColumnName(i); err != nil {
			return nil, fmt.Errorf("query: result column %d: %w", i, err)
		}
	}
	return names, nil
}

// prepareOne prepares sql on c as exactly one DuckDB statement and returns
// it if it is a query. Nothing of sql runs here: DuckDB parses and binds
// it only.
func (c *conn) prepareOne(sql string) (*duckdb.Stmt, error) {
	dc, ok := c.c.(*duckdb.Conn)
	if !ok {
		return nil, errors.New("query: not a DuckDB connection")
	}
	// Conn.Prepare (unlike PrepareContext and QueryContext, which run every
	// statement but the last) refuses text of more than one statement.
	st, err := dc.Prepare(sql)
	if err != nil {
		if strings.Contains(err.Error(), "multi-statement") {
			return nil, errMultipleStatements
		}
		return nil, fmt.Errorf("%w: %s", engine.ErrInvalid, cleanDuckErr(err))
	}
	ds := st.(*duckdb.Stmt)
	t, err := ds.StatementType()
	if err == nil && (t == duckdb.STATEMENT_TYPE_SELECT || t == duckdb.STATEMENT_TYPE_EXPLAIN) {
		return ds, nil
	}
	_ = ds.Close()
	if err != nil {
		return nil, fmt.Errorf("query: statement type: %w", err)
	}
	kind := statementKinds[t]
	if kind == "" {
		kind = fmt.Sprintf("DuckDB statement type %d", t)
	}
	return nil, fmt.Errorf("%w: %s statements are not allowed: flightd runs queries (SELECT, WITH, VALUES, FROM, EXPLAIN, DESCRIBE, SHOW, SUMMARIZE), INSERT INTO, and CREATE/DROP/ALTER of its databases and tables", engine.ErrInvalid, kind)
}

// checkLockdown locks the configuration of the database behind c, which
// no client has seen yet, and verifies every setting.
func checkLockdown(c *duckdb.Connector, settings [][2]string) error {
	ctx := context.Background()
	dc, err := c.Connect(ctx)
	if err != nil {
		return fmt.Errorf("query: connect duckdb: %w", err)
	}
	defer dc.Close()
	for _, kv := range settings {
		if atStart(kv[0]) {
			continue
		}
		if _, err := dc.(driver.ExecerContext).ExecContext(ctx, "SET GLOBAL "+kv[0]+" = "+kv[1], nil); err != nil {
			return fmt.Errorf("query: DuckDB setting %s: %w", kv[0], err)
		}
	}
	return verifyLockdown(ctx, dc, settings)
}
