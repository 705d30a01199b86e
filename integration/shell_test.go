package integration

// `flightd sql` as a shell and `flightd export`, through the real binary:
// scripts on standard input and in files, their output formats read back,
// a failing script's exit status and line, exports read back by Go's
// Parquet and CSV readers, and the interactive shell on a pseudo-terminal
// (Ctrl-C cancels a long statement and the shell goes on; history is
// written; Ctrl-D quits).

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/creack/pty"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/testserver"
)

// runCLI runs the flightd binary with stdin and returns its output and
// exit code.
func runCLI(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, testserver.Binary(t), args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("flightd %v: %v", args, err)
	}
	return out.String(), errOut.String(), code
}

// shellScript makes the table the other subtests read. Its comments,
// strings and dollar-quoted text hold ';' that end nothing; USE holds for
// the statements after it (the shell keeps the session), and the last
// statement has no ';'.
const shellScript = `CREATE DATABASE sh;
USE sh;
CREATE TABLE t (id BIGINT, name STRING, amount DECIMAL(10, 2), ts TIMESTAMP(6),
                PRIMARY KEY (id) NOT ENFORCED);
/* a comment; with a semicolon */
INSERT INTO t VALUES (1, 'ann; "quoted"', 9.50, TIMESTAMP '2024-01-01 10:00:00.5'), -- one;
                     (2, NULL, -0.05, NULL), (3, '', 0, TIMESTAMP '1999-12-31 23:59:59');
SELECT id, name, amount, ts FROM "t$rt" ORDER BY id;
SELECT $$a;b$$ AS s`

func TestShellScriptsAndExport(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, t.TempDir())
	server := []string{"--server", srv.Addr}
	sql := func(t *testing.T, stdin string, args ...string) (string, string, int) {
		t.Helper()
		return runCLI(t, stdin, append(append([]string{"sql"}, server...), args...)...)
	}

	t.Run("script on stdin as csv", func(t *testing.T) {
		out, errOut, code := sql(t, shellScript, "--format", "csv")
		require.Equal(t, 0, code, errOut)
		r := csv.NewReader(strings.NewReader(out))
		r.FieldsPerRecord = -1 // one result after another, each with its header
		got, err := r.ReadAll()
		require.NoError(t, err, out)
		require.Equal(t, [][]string{
			{"rows_affected"}, {"0"}, // CREATE DATABASE
			{"rows_affected"}, {"0"}, // USE
			{"rows_affected"}, {"0"}, // CREATE TABLE
			{"rows_affected"}, {"3"}, // INSERT
			{"id", "name", "amount", "ts"},
			{"1", `ann; "quoted"`, "9.50", "2024-01-01 10:00:00.5"},
			{"2", "", "-0.05", ""},
			{"3", "", "0.00", "1999-12-31 23:59:59"},
			{"s"}, {"a;b"},
		}, got)
		// NULL is an empty field, '' a quoted one.
		require.Contains(t, out, "\n2,,-0.05,\n3,\"\",0.00,")
	})

	t.Run("statements as json", func(t *testing.T) {
		out, errOut, code := sql(t, `SELECT id, name, amount, ts FROM sh."t$rt" WHERE id <= 2 ORDER BY id; SELECT 1 AS one;`, "--format", "json")
		require.Equal(t, 0, code, errOut)
		d := json.NewDecoder(strings.NewReader(out))
		d.UseNumber()
		var first, second []map[string]any
		require.NoError(t, d.Decode(&first), out)
		require.NoError(t, d.Decode(&second), out)
		require.Equal(t, []map[string]any{
			{"id": json.Number("1"), "name": `ann; "quoted"`, "amount": json.Number("9.50"), "ts": "2024-01-01 10:00:00.5"},
			{"id": json.Number("2"), "name": nil, "amount": json.Number("-0.05"), "ts": nil},
		}, first)
		require.Equal(t, []map[string]any{{"one": json.Number("1")}}, second)
	})

	t.Run("a failing script stops at the line of its statement", func(t *testing.T) {
		dir := t.TempDir()
		script := filepath.Join(dir, "load.sql")
		require.NoError(t, os.WriteFile(script, []byte(
			"INSERT INTO sh.t VALUES (10, 'ten', 1, NULL);\n"+ // 1
				"\n"+ // 2
				"SELECT\n"+ // 3
				"  nope FROM sh.t;\n"+ // 4
				"INSERT INTO sh.t VALUES (11, 'eleven', 1, NULL);\n"), 0o644)) // 5
		out, errOut, code := sql(t, "", "-f", script, "--format", "csv")
		require.Equal(t, 1, code, "stdout %s stderr %s", out, errOut)
		require.Contains(t, errOut, script+":3: ", errOut)
		require.Contains(t, errOut, "nope")
		ids, errOut, code := sql(t, "", "--format", "csv", `SELECT id FROM sh."t$rt" WHERE id >= 10 ORDER BY id`)
		require.Equal(t, 0, code, errOut)
		require.Equal(t, "id\n10\n", ids, "the statement before the error ran, the one after did not")

		// --continue-on-error reports it and goes on; the exit status still says it failed.
		out, errOut, code = sql(t, "", "-f", script, "--format", "csv", "--continue-on-error")
		require.Equal(t, 1, code, "stdout %s stderr %s", out, errOut)
		require.Contains(t, errOut, "Error: "+script+":3: ")
		require.Contains(t, errOut, "1 of 3 statements failed, the first at "+script+":3")
		ids, errOut, code = sql(t, "", "--format", "csv", `SELECT id FROM sh."t$rt" WHERE id >= 10 ORDER BY id`)
		require.Equal(t, 0, code, errOut)
		require.Equal(t, "id\n10\n11\n", ids)
	})

	t.Run("parquet output holds the one query's result", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "q.parquet")
		// USE's result is not written into the file; the query's is.
		_, errOut, code := sql(t, "USE sh;\nSELECT id FROM \"t$rt\" WHERE id < 10 ORDER BY id;\n", "-o", path)
		require.Equal(t, 0, code, errOut)
		f, err := os.Open(path)
		require.NoError(t, err)
		defer f.Close()
		pf, err := file.NewParquetReader(f)
		require.NoError(t, err)
		defer pf.Close()
		require.Equal(t, int64(3), pf.NumRows())
		require.Equal(t, "id", pf.MetaData().Schema.Column(0).Name())
		// A second query has nowhere to go.
		_, errOut, code = sql(t, "SELECT 1;\nSELECT 2;\n", "-o", path)
		require.Equal(t, 1, code)
		require.Contains(t, errOut, "stdin:2: --format parquet holds one result")
	})

	t.Run("an output that fails ends the statement", func(t *testing.T) {
		if _, err := os.Stat("/dev/full"); err != nil {
			t.Skip("no /dev/full here")
		}
		// Writing to /dev/full fails at the first batch; the read of
		// the rest is abandoned and the server ends the statement.
		_, errOut, code := sql(t, "", "--format", "csv", "-o", "/dev/full",
			"SELECT a.range AS a, b.range AS b FROM range(1000000) a, range(100000) b")
		require.Equal(t, 1, code, errOut)
		require.Contains(t, errOut, "no space left on device")
		c := connect(t, srv)
		waitFor(t, "the server to end the abandoned statement", func() bool {
			for _, r := range c.mustQuery("SELECT sql FROM sys.statements") {
				if strings.Contains(r[0], "range(100000) b") {
					return false
				}
			}
			return true
		})
	})

	t.Run("one statement prints a table", func(t *testing.T) {
		out, errOut, code := sql(t, "", `SELECT id, name FROM sh."t$rt" WHERE id = 1`)
		require.Equal(t, 0, code, errOut)
		require.Equal(t, "id | name\n---+--------------\n1  | ann; \"quoted\"\n(1 row)\n", out)
	})

	// The export queries: every column kind a result carries, from the table and computed.
	const exportQuery = `SELECT id, name, amount, ts, [id, NULL]::BIGINT[] AS l, {'k': name, 'n': id} AS st,
		MAP {'a': id} AS m, ('x' || id)::BLOB AS b, id / 3 AS f, DATE '2024-02-28' + id::INT AS d,
		TIMESTAMPTZ '2024-01-01 10:00:00+02' AS tz, id % 2 = 0 AS even
		FROM sh."t$rt" WHERE id < 10 ORDER BY id`

	t.Run("export parquet reads back equal", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "out.parquet")
		_, errOut, code := runCLI(t, "", append(append([]string{"export"}, server...), exportQuery, path)...)
		require.Equal(t, 0, code, errOut)
		require.Contains(t, errOut, "exported 3 rows (")
		require.Contains(t, errOut, "to "+path)
		f, err := os.Open(path)
		require.NoError(t, err)
		defer f.Close()
		pf, err := file.NewParquetReader(f)
		require.NoError(t, err)
		defer pf.Close()
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, mem)
		require.NoError(t, err)
		got, err := fr.ReadTable(context.Background())
		require.NoError(t, err)
		defer got.Release()

		want := queryTable(t, connect(t, srv), exportQuery)
		defer want.Release()
		require.Equal(t, want.NumRows(), got.NumRows())
		require.Equal(t, want.NumCols(), got.NumCols())
		for c := 0; c < int(want.NumCols()); c++ {
			w, g := concatColumn(t, want.Column(c), mem), concatColumn(t, got.Column(c), mem)
			require.True(t, arrow.TypeEqual(w.DataType(), g.DataType()), "%s: %s read back as %s", want.Column(c).Name(), w.DataType(), g.DataType())
			require.True(t, array.Equal(w, g), "%s: %s != %s", want.Column(c).Name(), w, g)
			w.Release()
			g.Release()
		}
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Len(t, entries, 1, "no temporary file left")
	})

	t.Run("export csv", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "out.csv")
		_, errOut, code := runCLI(t, "", append(append([]string{"export"}, server...), exportQuery, path)...)
		require.Equal(t, 0, code, errOut)
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		got, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
		require.NoError(t, err, "%s", b)
		require.Equal(t, [][]string{
			{"id", "name", "amount", "ts", "l", "st", "m", "b", "f", "d", "tz", "even"},
			{"1", `ann; "quoted"`, "9.50", "2024-01-01 10:00:00.5", "[1,null]", `{"k":"ann; \"quoted\"","n":1}`, `{"a":1}`, "eDE=",
				"0.3333333333333333", "2024-02-29", "2024-01-01 08:00:00Z", "false"},
			{"2", "", "-0.05", "", "[2,null]", `{"k":null,"n":2}`, `{"a":2}`, "eDI=", "0.6666666666666666", "2024-03-01", "2024-01-01 08:00:00Z", "true"},
			{"3", "", "0.00", "1999-12-31 23:59:59", "[3,null]", `{"k":"","n":3}`, `{"a":3}`, "eDM=", "1", "2024-03-02", "2024-01-01 08:00:00Z", "false"},
		}, got)
	})

	t.Run("a failed export leaves the file as it was", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "keep.jsonl")
		require.NoError(t, os.WriteFile(path, []byte("old\n"), 0o644))
		// The error comes mid-stream, after batches were written.
		_, errOut, code := runCLI(t, "", append(append([]string{"export"}, server...),
			"SELECT CASE WHEN range = 2000000 THEN error('boom') ELSE range END AS v FROM range(3000000)", path)...)
		require.Equal(t, 1, code, errOut)
		// The query's own error, or (when another of DuckDB's threads
		// noticed first) its interruption.
		require.Regexp(t, `export to .*keep.jsonl failed after \d+ rows, nothing written: Internal: .*(boom|Interrupted)`, errOut)
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Equal(t, "old\n", string(b))
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Len(t, entries, 1, "no temporary file left")
	})
}

// queryTable runs sql through ADBC and returns its result as one table.
func queryTable(t *testing.T, c *client, sql string) arrow.Table {
	t.Helper()
	st, err := c.conn.NewStatement()
	require.NoError(t, err)
	defer st.Close()
	require.NoError(t, st.SetSqlQuery(sql))
	rdr, _, err := st.ExecuteQuery(context.Background())
	require.NoError(t, err)
	defer rdr.Release()
	var recs []arrow.RecordBatch
	for rdr.Next() {
		rec := rdr.RecordBatch()
		rec.Retain()
		recs = append(recs, rec)
	}
	require.NoError(t, rdr.Err())
	tbl := array.NewTableFromRecords(rdr.Schema(), recs)
	for _, r := range recs {
		r.Release()
	}
	return tbl
}

func concatColumn(t *testing.T, col *arrow.Column, mem memory.Allocator) arrow.Array {
	t.Helper()
	a, err := array.Concatenate(col.Data().Chunks(), mem)
	require.NoError(t, err)
	return a
}

// terminal is the output side of a pseudo-terminal, read as it comes.
type terminal struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	mark int // expect looks after here
	more chan struct{}
	done chan struct{}
}

func readTerminal(r io.Reader) *terminal {
	term := &terminal{more: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(term.done)
		b := make([]byte, 4096)
		for {
			n, err := r.Read(b)
			term.mu.Lock()
			term.buf.Write(b[:n])
			term.mu.Unlock()
			select {
			case term.more <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	return term
}

// expect waits until s appears after what earlier expects consumed, and
// returns the output up to it.
func (term *terminal) expect(t *testing.T, s string) string {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		term.mu.Lock()
		out := term.buf.String()[term.mark:]
		if i := strings.Index(out, s); i >= 0 {
			term.mark += i + len(s)
			term.mu.Unlock()
			return out[:i+len(s)]
		}
		term.mu.Unlock()
		select {
		case <-term.more:
		case <-term.done:
			term.mu.Lock()
			defer term.mu.Unlock()
			if !strings.Contains(term.buf.String()[term.mark:], s) {
				t.Fatalf("terminal closed before %q; it shows:\n%s", s, term.buf.String())
			}
		case <-timeout:
			term.mu.Lock()
			defer term.mu.Unlock()
			t.Fatalf("no %q within 60s; the terminal shows:\n%s", s, term.buf.String())
		}
	}
}

func TestShellInteractive(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, t.TempDir())
	c := connect(t, srv)
	config := t.TempDir()
	cmd := exec.Command(testserver.Binary(t), "sql", "--server", srv.Addr)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FLIGHTD_HISTORY=") && !strings.HasPrefix(kv, "XDG_CONFIG_HOME=") && !strings.HasPrefix(kv, "TERM=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "XDG_CONFIG_HOME="+config, "TERM=xterm")
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 60})
	require.NoError(t, err)
	defer ptmx.Close()
	var waitErr error
	exited := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	term := readTerminal(ptmx)
	send := func(s string) {
		_, err := ptmx.Write([]byte(s))
		require.NoError(t, err)
	}

	term.expect(t, "default=> ")
	// A statement over two lines; its result in a table.
	send("SELECT 6 * 7\r")
	term.expect(t, "default-> ")
	send("  AS answer;\r")
	require.Contains(t, term.expect(t, "(1 row)"), "answer\r\n------\r\n42\r\n(1 row)")

	// A wide result fits the terminal's 60 columns.
	send("SELECT repeat('x', 100) AS wide, 1 AS n;\r")
	out := term.expect(t, "(1 row)")
	require.Contains(t, out, "xxx… | 1")
	for _, l := range strings.Split(out, "\r\n") {
		if strings.HasPrefix(l, "x") {
			require.LessOrEqual(t, len([]rune(l)), 60, l)
		}
	}

	// Ctrl-C cancels a statement that would run for hours; the server
	// stops it and the shell goes on.
	const long = "SELECT sum(a.range * b.range) AS s FROM range(1000000) a, range(10000000) b"
	send(long + ";\r")
	running := func() bool {
		rows := c.mustQuery("SELECT sql FROM sys.statements")
		for _, r := range rows {
			if strings.Contains(r[0], "range(10000000) b") {
				return true
			}
		}
		return false
	}
	waitFor(t, "the long statement to run", running)
	send("\x03")
	term.expect(t, "Cancelled.")
	waitFor(t, "the server to end the cancelled statement", func() bool { return !running() })
	send("SELECT 'still here' AS s;\r")
	require.Contains(t, term.expect(t, "(1 row)"), "s\r\n----------\r\nstill here\r\n(1 row)")

	// Ctrl-C at the prompt drops the statement being typed.
	send("SELECT 'dropped'")
	send("\x03")
	term.expect(t, "default=> ")
	// Ctrl-D quits.
	send("\x04")
	select {
	case <-exited:
		require.NoError(t, waitErr, "the terminal shows:\n%s", term.buf.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("the shell did not quit on Ctrl-D; it shows:\n%s", term.buf.String())
	}

	history, err := os.ReadFile(filepath.Join(config, "flightd", "history"))
	require.NoError(t, err)
	require.Equal(t, []string{
		"SELECT 6 * 7 AS answer;",
		"SELECT repeat('x', 100) AS wide, 1 AS n;",
		long + ";",
		"SELECT 'still here' AS s;",
	}, strings.Split(strings.TrimSpace(string(history)), "\n"))
	info, err := os.Stat(filepath.Join(config, "flightd", "history"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "statements may hold secrets")
}

// waitFor polls cond (a query of the server's state) until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}
