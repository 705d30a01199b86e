package integration

// Cross-checks with Java Paimon, the reference implementation: the tables
// flightd tiers must read back in Java with exactly the rows flightd serves,
// tables Java writes must read in flightd, and Java and flightd commits to
// one table must add up. Java runs through integration/java (PaimonCheck, one
// shaded jar built by `make paimon-check-jar`); $PAIMON_CHECK_JAR overrides
// the jar's path.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/testserver"
	"github.com/flightd/flightd/lake"
)

// paimonJar returns the PaimonCheck jar, or skips the test when it is not built.
func paimonJar(t *testing.T) string {
	t.Helper()
	jar := os.Getenv("PAIMON_CHECK_JAR")
	if jar == "" {
		jar = filepath.Join("java", "target", "paimon-check.jar")
	}
	abs, err := filepath.Abs(jar)
	require.NoError(t, err)
	if _, err := os.Stat(abs); err != nil {
		t.Skipf("Java Paimon cross-check skipped: %s is not built (run `make paimon-check-jar`, or set PAIMON_CHECK_JAR)", abs)
	}
	if _, err := exec.LookPath("java"); err != nil {
		t.Skip("Java Paimon cross-check skipped: no `java` on PATH")
	}
	return abs
}

// javaPaimon runs PaimonCheck with args and returns its stdout. Commands go
// to one JVM for the whole test binary (PaimonCheck session), started at the
// first command: starting a JVM costs more than most commands.
func javaPaimon(jar string, args ...string) (string, error) {
	javaSess.Lock()
	defer javaSess.Unlock()
	if javaSess.s == nil || javaSess.s.jar != jar {
		if javaSess.s != nil {
			javaSess.s.close()
		}
		s, err := startJavaSession(jar)
		if err != nil {
			return "", err
		}
		javaSess.s = s
	}
	out, err := javaSess.s.run(args, 3*time.Minute)
	if errors.Is(err, errJavaSessionBroken) {
		javaSess.s.close()
		javaSess.s = nil
	}
	return out, err
}

var javaSess struct {
	sync.Mutex
	s *javaSession
}

var errJavaSessionBroken = errors.New("PaimonCheck session ended")

// javaSession is a PaimonCheck session: commands as JSON arrays on its
// stdin, one JSON answer a line on its stdout.
type javaSession struct {
	jar    string
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *tailBuffer
}

func startJavaSession(jar string) (*javaSession, error) {
	cmd := exec.Command("java", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-jar", jar, "session")
	s := &javaSession{jar: jar, cmd: cmd, stderr: &tailBuffer{max: 64 << 10}}
	cmd.Stderr = s.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start PaimonCheck session: %w", err)
	}
	s.in, s.out = in, bufio.NewReaderSize(out, 1<<20)
	return s, nil
}

// run sends one command and waits at most timeout for its answer.
func (s *javaSession) run(args []string, timeout time.Duration) (string, error) {
	req, err := json.Marshal(args)
	if err != nil {
		return "", err
	}
	if _, err := s.in.Write(append(req, '\n')); err != nil {
		return "", fmt.Errorf("%w: PaimonCheck %s: %v\n%s", errJavaSessionBroken, strings.Join(args, " "), err, s.stderr)
	}
	type answer struct {
		line string
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		line, err := s.out.ReadString('\n')
		got <- answer{line, err}
	}()
	var a answer
	select {
	case a = <-got:
	case <-time.After(timeout):
		return "", fmt.Errorf("%w: PaimonCheck %s: no answer in %v\n%s", errJavaSessionBroken, strings.Join(args, " "), timeout, s.stderr)
	}
	if a.err != nil {
		return "", fmt.Errorf("%w: PaimonCheck %s: %v\n%s", errJavaSessionBroken, strings.Join(args, " "), a.err, s.stderr)
	}
	var reply struct {
		OK  bool   `json:"ok"`
		Out string `json:"out"`
		Err string `json:"err"`
	}
	if err := json.Unmarshal([]byte(a.line), &reply); err != nil {
		return "", fmt.Errorf("%w: PaimonCheck %s: bad answer %q: %v", errJavaSessionBroken, strings.Join(args, " "), a.line, err)
	}
	if !reply.OK {
		return reply.Out, fmt.Errorf("PaimonCheck %s: %s", strings.Join(args, " "), reply.Err)
	}
	return reply.Out, nil
}

func (s *javaSession) close() {
	s.in.Close()
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > b.max {
		b.buf = append([]byte(nil), b.buf[len(b.buf)-b.max:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

func mustJava(t *testing.T, jar string, args ...string) string {
	t.Helper()
	out, err := javaPaimon(jar, args...)
	require.NoError(t, err)
	return out
}

// javaRead reads db.table with Java Paimon: one map per row, numbers as json.Number.
// filter is optional: COL=JSON-VALUE, pushed into Java's scan (file and
// row-group pruning by the statistics flightd wrote), then applied exactly.
func javaRead(jar, warehouse, name string, filter ...string) ([]map[string]any, error) {
	out, err := javaPaimon(jar, append([]string{"read", warehouse, name}, filter...)...)
	if err != nil {
		return nil, err
	}
	var rows []map[string]any
	dec := json.NewDecoder(strings.NewReader(out))
	dec.UseNumber()
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			return nil, fmt.Errorf("PaimonCheck read %s: bad output line: %v\n%s", name, err, out)
		}
		rows = append(rows, m)
	}
	return rows, nil
}

// javaWrite commits rows to db.table with Java Paimon and returns the snapshot id.
func javaWrite(t *testing.T, jar, warehouse, name string, rows ...map[string]any) int64 {
	t.Helper()
	var buf bytes.Buffer
	for _, r := range rows {
		b, err := json.Marshal(r)
		require.NoError(t, err)
		buf.Write(b)
		buf.WriteByte('\n')
	}
	f := filepath.Join(t.TempDir(), "rows.jsonl")
	require.NoError(t, os.WriteFile(f, buf.Bytes(), 0o644))
	out := mustJava(t, jar, "write", warehouse, name, f)
	id, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	require.NoError(t, err, "PaimonCheck write printed %q", out)
	return id
}

// typedResult is a flightd result with its Arrow column types, values
// rendered canonically (see canonArrow / canonJSON).
type typedResult struct {
	names []string
	types []arrow.DataType
	rows  []string // sorted, "|"-joined canonical values
}

func (c *client) typedQuery(sql string) (*typedResult, error) {
	st, err := c.conn.NewStatement()
	require.NoError(c.t, err)
	defer st.Close()
	if err := st.SetSqlQuery(sql); err != nil {
		return nil, err
	}
	r, _, err := st.ExecuteQuery(context.Background())
	if err != nil {
		return nil, err
	}
	defer r.Release()
	res := &typedResult{rows: []string{}}
	for _, f := range r.Schema().Fields() {
		res.names = append(res.names, f.Name)
		res.types = append(res.types, f.Type)
	}
	for r.Next() {
		rec := r.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			vals := make([]string, rec.NumCols())
			for j := range vals {
				vals[j] = canonArrow(rec.Column(j), i)
			}
			res.rows = append(res.rows, strings.Join(vals, "|"))
		}
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	sort.Strings(res.rows)
	return res, nil
}

func (c *client) mustTyped(sql string) *typedResult {
	c.t.Helper()
	res, err := c.typedQuery(sql)
	require.NoError(c.t, err, sql)
	return res
}

const tsLayout = "2006-01-02T15:04:05.999999999"

// canonDecimal renders a decimal string with exactly scale digits.
func canonDecimal(s string, scale int32) string {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return "BADDECIMAL(" + s + ")"
	}
	return r.FloatString(int(scale))
}

func canonArrow(col arrow.Array, i int) string {
	if col.IsNull(i) {
		return "NULL"
	}
	switch a := col.(type) {
	case *array.Float32:
		return strconv.FormatFloat(float64(a.Value(i)), 'g', -1, 32)
	case *array.Float64:
		return strconv.FormatFloat(a.Value(i), 'g', -1, 64)
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.StringView:
		return a.Value(i)
	case *array.Binary:
		return base64.StdEncoding.EncodeToString(a.Value(i))
	case *array.LargeBinary:
		return base64.StdEncoding.EncodeToString(a.Value(i))
	case *array.BinaryView:
		return base64.StdEncoding.EncodeToString(a.Value(i))
	case *array.Date32:
		return a.Value(i).ToTime().UTC().Format("2006-01-02")
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		return a.Value(i).ToTime(unit).UTC().Format(tsLayout)
	case *array.Decimal128:
		dt := a.DataType().(*arrow.Decimal128Type)
		return canonDecimal(a.Value(i).ToString(dt.Scale), dt.Scale)
	case *array.Map: // before *array.List, which it embeds
		start, end := a.ValueOffsets(i)
		parts := make([]string, 0, end-start)
		for j := start; j < end; j++ {
			parts = append(parts, canonArrow(a.Keys(), int(j))+"="+canonArrow(a.Items(), int(j)))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case array.ListLike:
		start, end := a.ValueOffsets(i)
		parts := make([]string, 0, end-start)
		for j := start; j < end; j++ {
			parts = append(parts, canonArrow(a.ListValues(), int(j)))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		parts := make([]string, a.NumField())
		for j := range parts {
			parts[j] = st.Field(j).Name + ": " + canonArrow(a.Field(j), i)
		}
		return "(" + strings.Join(parts, ", ") + ")"
	default:
		return col.ValueStr(i)
	}
}

// canonJSON renders a PaimonCheck JSON value like canonArrow renders a value of type typ.
// ARRAY values are JSON arrays, MAP values arrays of [key, value] pairs, ROW values objects.
func canonJSON(v any, typ arrow.DataType) string {
	if v == nil {
		return "NULL"
	}
	switch tt := typ.(type) {
	case *arrow.MapType:
		pairs, ok := v.([]any)
		if !ok {
			return fmt.Sprintf("BADMAP(%v)", v)
		}
		parts := make([]string, len(pairs))
		for j, p := range pairs {
			kv, ok := p.([]any)
			if !ok || len(kv) != 2 {
				return fmt.Sprintf("BADMAP(%v)", v)
			}
			parts[j] = canonJSON(kv[0], tt.KeyType()) + "=" + canonJSON(kv[1], tt.ItemType())
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case arrow.ListLikeType:
		elems, ok := v.([]any)
		if !ok {
			return fmt.Sprintf("BADARRAY(%v)", v)
		}
		parts := make([]string, len(elems))
		for j, e := range elems {
			parts[j] = canonJSON(e, tt.Elem())
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case *arrow.StructType:
		obj, ok := v.(map[string]any)
		if !ok || len(obj) != tt.NumFields() {
			return fmt.Sprintf("BADROW(%v)", v)
		}
		parts := make([]string, tt.NumFields())
		for j, f := range tt.Fields() {
			fv, ok := obj[f.Name]
			if !ok {
				return fmt.Sprintf("BADROW(%v)", v)
			}
			parts[j] = f.Name + ": " + canonJSON(fv, f.Type)
		}
		return "(" + strings.Join(parts, ", ") + ")"
	}
	switch x := v.(type) {
	case bool:
		return strconv.FormatBool(x)
	case json.Number:
		switch typ.ID() {
		case arrow.FLOAT32:
			f, _ := strconv.ParseFloat(string(x), 32)
			return strconv.FormatFloat(f, 'g', -1, 32)
		case arrow.FLOAT64:
			f, _ := strconv.ParseFloat(string(x), 64)
			return strconv.FormatFloat(f, 'g', -1, 64)
		}
		return string(x)
	case string:
		switch dt := typ.(type) {
		case *arrow.TimestampType:
			ts, err := time.Parse(tsLayout, x)
			if err != nil {
				return "BADTIMESTAMP(" + x + ")"
			}
			return ts.Format(tsLayout)
		case *arrow.Decimal128Type:
			return canonDecimal(x, dt.Scale)
		}
		return x
	default:
		return fmt.Sprint(x)
	}
}

// canonJava renders Java's rows in the column order and types of a flightd result.
func canonJava(t *testing.T, rows []map[string]any, like *typedResult) []string {
	t.Helper()
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		require.Len(t, r, len(like.names), "Java row %v vs flightd columns %v", r, like.names)
		vals := make([]string, len(like.names))
		for j, n := range like.names {
			v, ok := r[n]
			require.True(t, ok, "Java row %v has no column %q", r, n)
			vals[j] = canonJSON(v, like.types[j])
		}
		out = append(out, strings.Join(vals, "|"))
	}
	sort.Strings(out)
	return out
}

// requireSameRows asserts that Java reads db.table with exactly the rows
// flightd serves for `SELECT * FROM db.table`, and returns them.
func requireSameRows(t *testing.T, c *client, jar, warehouse, name string) []string {
	t.Helper()
	fl := c.mustTyped("SELECT * FROM " + name)
	jrows, err := javaRead(jar, warehouse, name)
	require.NoError(t, err)
	require.Equal(t, fl.rows, canonJava(t, jrows, fl), "Java Paimon and flightd disagree on %s", name)
	return fl.rows
}

// requireSameFiltered asserts that Java's read of db.table with the
// pushed-down equality filter col=jsonValue returns exactly the rows of
// flightd's `SELECT * FROM db.table WHERE sqlWhere`: wrong min/max
// statistics in flightd's manifests or Parquet footers make Java skip rows.
func requireSameFiltered(t *testing.T, c *client, jar, warehouse, name, filter, sqlWhere string) {
	t.Helper()
	fl := c.mustTyped("SELECT * FROM " + name + " WHERE " + sqlWhere)
	jrows, err := javaRead(jar, warehouse, name, filter)
	require.NoError(t, err)
	require.Equal(t, fl.rows, canonJava(t, jrows, fl), "Java Paimon (filter %s) and flightd (WHERE %s) disagree on %s", filter, sqlWhere, name)
}

// waitTiered polls until the lake table equals its $rt view (everything
// written so far is tiered) and holds want rows.
func waitTiered(t *testing.T, c *client, db, table string, want int) {
	t.Helper()
	testserver.Eventually(t, 60*time.Second, func() error {
		n := c.scalar(fmt.Sprintf("SELECT count(*) FROM %s.%s", db, table))
		if n != strconv.Itoa(want) {
			return fmt.Errorf("%s.%s has %s rows in the lake, want %d", db, table, n, want)
		}
		lakeRows := c.mustTyped(fmt.Sprintf("SELECT * FROM %s.%s", db, table)).rows
		rt := c.mustTyped(fmt.Sprintf(`SELECT * FROM %s."%s$rt"`, db, table)).rows
		if strings.Join(lakeRows, "\n") != strings.Join(rt, "\n") {
			return fmt.Errorf("%s.%s: lake differs from $rt", db, table)
		}
		return nil
	})
}

// idName returns "id|name" lines of a table, sorted.
func idName(t *testing.T, rows []map[string]any) []string {
	t.Helper()
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = fmt.Sprintf("%v|%v", r["id"], r["name"])
	}
	sort.Strings(out)
	return out
}

func modelLines(m map[int64]string) []string {
	out := make([]string, 0, len(m))
	for id, n := range m {
		out = append(out, fmt.Sprintf("%d|%s", id, n))
	}
	sort.Strings(out)
	return out
}

// pkValues renders rows (id, name, amount, d, ts, day, ok, raw) for ids with
// the given name tag; every 7th id has NULLs.
func pkValues(ids []int64, tag string) string {
	var sb strings.Builder
	for i, id := range ids {
		if i > 0 {
			sb.WriteString(", ")
		}
		if id%7 == 3 {
			fmt.Fprintf(&sb, "(%d, NULL, NULL, NULL, NULL, NULL, NULL, NULL)", id)
			continue
		}
		fmt.Fprintf(&sb, "(%d, '%s-%d', %d.25, %d.%02d, TIMESTAMP '2024-01-01 10:00:00' + INTERVAL %d MICROSECOND, DATE '2024-02-29' + %d, %v, '\\x%02X\\x00AB'::BLOB)",
			id, tag, id, id, id%1000, id%100, id*1234567, id%400, id%2 == 0, id%256)
	}
	return sb.String()
}

func idRange(from, to int64) []int64 {
	var out []int64
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// TestJavaReadsFlightdTables: Java Paimon reads the tables flightd tiered
// (primary key with 4 buckets and upserts over several rounds, append,
// partitioned) with exactly the rows flightd serves.
func TestJavaReadsFlightdTables(t *testing.T) {
	t.Parallel()
	jar := paimonJar(t)
	dir := t.TempDir()
	wh := filepath.Join(dir, "warehouse")
	srv := testserver.Start(t, dir)
	c := connect(t, srv)

	c.mustExec("CREATE DATABASE x")
	c.mustExec(`CREATE TABLE x.pk (id BIGINT, name STRING, amount DOUBLE, d DECIMAL(10,2), ts TIMESTAMP(6), day DATE, ok BOOLEAN, raw BYTES, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '4')`)
	c.mustExec(`CREATE TABLE x.ev (id BIGINT, kind STRING, n INT, d DECIMAL(10,2), ts TIMESTAMP(6), ok BOOLEAN)`)
	c.mustExec(`CREATE TABLE x.ppk (region STRING, id BIGINT, name STRING, v DOUBLE, PRIMARY KEY (region, id) NOT ENFORCED) PARTITIONED BY (region) WITH ('bucket' = '2')`)
	c.mustExec(`CREATE TABLE x.pap (day DATE, id BIGINT, name STRING) PARTITIONED BY (day)`)

	// Round 1: 300 keys, events with duplicates, both partitioned tables.
	c.mustExec("INSERT INTO x.pk VALUES " + pkValues(idRange(0, 300), "r1"))
	c.mustExec(`INSERT INTO x.ev VALUES (1, 'click', 3, 12.50, TIMESTAMP '2024-01-01 10:00:00', true), (1, 'click', 3, 12.50, TIMESTAMP '2024-01-01 10:00:00', true), (2, 'view', NULL, NULL, NULL, NULL), (3, '', -7, -0.01, TIMESTAMP '1969-12-31 23:59:59.999999', false)`)
	c.mustExec(`INSERT INTO x.ppk VALUES ('eu', 1, 'a', 1.5), ('eu', 2, 'b', 2.5), ('us', 1, 'c', NULL), ('us-west/2', 1, 'slash', 0), ('', 9, 'empty region', 9)`)
	c.mustExec(`INSERT INTO x.pap VALUES (DATE '2024-01-01', 1, 'a'), (DATE '2024-01-02', 2, 'b'), (NULL, 3, 'null day')`)
	waitTiered(t, c, "x", "pk", 300)
	waitTiered(t, c, "x", "ev", 4)
	waitTiered(t, c, "x", "ppk", 5)
	waitTiered(t, c, "x", "pap", 3)
	for _, name := range []string{"x.pk", "x.ev", "x.ppk", "x.pap"} {
		t.Run("round1/"+name, func(t *testing.T) { requireSameRows(t, c, jar, wh, name) })
	}

	// Rounds 2 and 3: upserts over earlier rounds plus new keys, each tiered on its own.
	c.mustExec("INSERT INTO x.pk VALUES " + pkValues(append(idRange(0, 50), idRange(300, 350)...), "r2"))
	c.mustExec(`INSERT INTO x.ev VALUES (4, 'r2', 4, 4.00, TIMESTAMP '2024-06-01 00:00:00', NULL)`)
	c.mustExec(`INSERT INTO x.ppk VALUES ('eu', 1, 'a2', 10), ('us', 2, 'd', 20)`)
	c.mustExec(`INSERT INTO x.pap VALUES (DATE '2024-01-01', 4, 'd')`)
	waitTiered(t, c, "x", "pk", 350)
	waitTiered(t, c, "x", "ev", 5)
	waitTiered(t, c, "x", "ppk", 6)
	waitTiered(t, c, "x", "pap", 4)
	c.mustExec("INSERT INTO x.pk VALUES " + pkValues(append(idRange(25, 75), idRange(340, 360)...), "r3"))
	c.mustExec("INSERT INTO x.pk VALUES " + pkValues([]int64{1, 2, 3}, "r3b")) // same keys twice in one round
	waitTiered(t, c, "x", "pk", 360)
	for _, name := range []string{"x.pk", "x.ev", "x.ppk", "x.pap"} {
		t.Run("round3/"+name, func(t *testing.T) { requireSameRows(t, c, jar, wh, name) })
	}
	// Java's filtered scans prune by the statistics flightd wrote.
	t.Run("filtered", func(t *testing.T) {
		for _, f := range []struct{ table, filter, where string }{
			{"x.pk", "id=0", "id = 0"},
			{"x.pk", "id=11", "id = 11"},
			{"x.pk", "id=359", "id = 359"},
			{"x.pk", "id=9999", "id = 9999"},
			{"x.pk", `name="r3-30"`, "name = 'r3-30'"},
			{"x.pk", `name="r1-30"`, "name = 'r1-30'"}, // an old version: must not come back
			{"x.pk", `d="45.45"`, "d = 45.45"},
			{"x.pk", `day="2024-03-01"`, "day = DATE '2024-03-01'"},
			{"x.pk", "ok=false", "ok = false"},
			{"x.ev", `kind="click"`, "kind = 'click'"},
			{"x.ev", `d="-0.01"`, "d = -0.01"},
			{"x.ev", `ts="1969-12-31T23:59:59.999999"`, "ts = TIMESTAMP '1969-12-31 23:59:59.999999'"},
			{"x.ppk", `region="us-west/2"`, "region = 'us-west/2'"},
			{"x.ppk", "id=1", "id = 1"},
			{"x.pap", `day="2024-01-01"`, "day = DATE '2024-01-01'"},
		} {
			requireSameFiltered(t, c, jar, wh, f.table, f.filter, f.where)
		}
	})

	// The newest version of every key wins in Java's merge too.
	jrows, err := javaRead(jar, wh, "x.pk")
	require.NoError(t, err)
	names := map[string]string{}
	for _, r := range jrows {
		names[fmt.Sprint(r["id"])] = fmt.Sprint(r["name"])
	}
	require.Equal(t, "r3b-1", names["1"])
	require.Equal(t, "r3-30", names["30"])
	require.Equal(t, "r2-11", names["11"])
	require.Equal(t, "r1-100", names["100"])
	require.Equal(t, "r3-345", names["345"])
	require.Equal(t, "<nil>", names["3"]) // id%7 == 3: NULLs

	// After a restart (SIGKILL) flightd still serves what Java reads.
	srv.Restart(syscall.SIGKILL)
	c = connect(t, srv)
	requireSameRows(t, c, jar, wh, "x.pk")
}

// TestJavaWrittenTablesReadByFlightd: tables created and written by Java
// Paimon (two commits with updates and a delete) read in flightd as `t`.
func TestJavaWrittenTablesReadByFlightd(t *testing.T) {
	t.Parallel()
	jar := paimonJar(t)
	dir := t.TempDir()
	wh := filepath.Join(dir, "warehouse")
	require.NoError(t, os.MkdirAll(wh, 0o755))

	mustJava(t, jar, "create", wh, "jx.pk", "id", "2", "id:BIGINT,name:STRING,amount:DOUBLE,d:DECIMAL(10,2),ts:TIMESTAMP(6),day:DATE,ok:BOOLEAN,raw:BYTES")
	mustJava(t, jar, "create", wh, "jx.ap", "", "-1", "id:BIGINT,name:STRING,n:INT,ts:TIMESTAMP(6)")
	mustJava(t, jar, "create", wh, "jx.part", "region,id", "2", "region:STRING,id:BIGINT,name:STRING", "region")

	var first []map[string]any
	for i := int64(0); i < 100; i++ {
		r := map[string]any{"id": i, "name": fmt.Sprintf("j1-%d", i), "amount": float64(i) + 0.5, "d": fmt.Sprintf("%d.%02d", i, i%100),
			"ts": fmt.Sprintf("2024-01-01T10:00:%02d.%06d", i%60, i*7), "day": fmt.Sprintf("2024-03-%02d", i%28+1), "ok": i%2 == 0,
			"raw": base64.StdEncoding.EncodeToString([]byte{byte(i), 0, 'x'})}
		if i%9 == 4 {
			r = map[string]any{"id": i}
		}
		first = append(first, r)
	}
	require.EqualValues(t, 1, javaWrite(t, jar, wh, "jx.pk", first...))
	// Second commit: updates, new keys and a delete.
	require.EqualValues(t, 2, javaWrite(t, jar, wh, "jx.pk",
		map[string]any{"id": 1, "name": "j2-1", "amount": -1.0},
		map[string]any{"id": 50, "name": "j2-50", "ts": "2030-12-31T23:59:59.999999"},
		map[string]any{"id": 1000, "name": "new", "d": "-12.34", "day": "1970-01-01"},
		map[string]any{"id": 7, "_kind": "-D"}))
	javaWrite(t, jar, wh, "jx.ap",
		map[string]any{"id": 1, "name": "a", "n": 1, "ts": "2024-01-01T00:00:00"},
		map[string]any{"id": 1, "name": "a", "n": 1, "ts": "2024-01-01T00:00:00"},
		map[string]any{"id": 2, "name": nil, "n": nil, "ts": nil})
	javaWrite(t, jar, wh, "jx.ap", map[string]any{"id": 3, "name": "b", "n": -5, "ts": "1999-01-01T12:34:56.5"})
	javaWrite(t, jar, wh, "jx.part",
		map[string]any{"region": "eu", "id": 1, "name": "a"},
		map[string]any{"region": "us", "id": 1, "name": "b"})
	javaWrite(t, jar, wh, "jx.part", map[string]any{"region": "eu", "id": 1, "name": "a2"})

	srv := testserver.Start(t, dir, "--warehouse", wh)
	c := connect(t, srv)
	for _, name := range []string{"jx.pk", "jx.ap", "jx.part"} {
		t.Run(name, func(t *testing.T) { requireSameRows(t, c, jar, wh, name) })
	}
	require.Equal(t, "100", c.scalar("SELECT count(*) FROM jx.pk")) // 100 + 1 new - 1 deleted
	require.Equal(t, [][]string{{"j2-1", "-1"}}, c.mustQuery("SELECT name, amount FROM jx.pk WHERE id = 1"))
	require.Equal(t, "0", c.scalar("SELECT count(*) FROM jx.pk WHERE id = 7"))
	require.Equal(t, "4", c.scalar("SELECT count(*) FROM jx.ap"))

	// A Java commit while flightd runs is visible to flightd's next query.
	t.Run("live", func(t *testing.T) {
		javaWrite(t, jar, wh, "jx.pk", map[string]any{"id": 2000, "name": "live"})
		testserver.Eventually(t, 20*time.Second, func() error {
			if n := c.scalar("SELECT count(*) FROM jx.pk"); n != "101" {
				return fmt.Errorf("flightd sees %s rows in jx.pk, want 101", n)
			}
			return nil
		})
		requireSameRows(t, c, jar, wh, "jx.pk")
	})

	// flightd writing into a table it did not create: report what happens.
	t.Run("flightd-insert-into-java-table", func(t *testing.T) {
		_, err := c.exec(`INSERT INTO jx.pk (id, name) VALUES (3000, 'from flightd')`)
		if err != nil {
			t.Logf("flightd rejects writes into a Java-created table (no lakestream options): %v", err)
			return
		}
		// Accepted (direct lake commit for a table without lakestream.enabled):
		// it must reach the lake and Java must read it.
		t.Logf("flightd accepted a write into a Java-created table")
		testserver.Eventually(t, 30*time.Second, func() error {
			if n := c.scalar("SELECT count(*) FROM jx.pk WHERE id = 3000"); n != "1" {
				return fmt.Errorf("row 3000 not in the lake yet")
			}
			return nil
		})
		requireSameRows(t, c, jar, wh, "jx.pk")
	})
}

// snapshotKinds lists "KIND by flightd|Java" for every snapshot of a table.
func snapshotKinds(t *testing.T, tableDir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(tableDir, "snapshot", "snapshot-*"))
	require.NoError(t, err)
	type snap struct {
		ID         int64  `json:"id"`
		CommitUser string `json:"commitUser"`
		CommitKind string `json:"commitKind"`
	}
	var snaps []snap
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var s snap
		require.NoError(t, json.Unmarshal(b, &s), f)
		snaps = append(snaps, s)
	}
	sort.Slice(snaps, func(i, j int) bool { return snaps[i].ID < snaps[j].ID })
	out := make([]string, len(snaps))
	for i, s := range snaps {
		who := "Java"
		if s.CommitUser == "__flightd_lakestream_tiering" {
			who = "flightd"
		}
		out[i] = s.CommitKind + " by " + who
	}
	return out
}

// TestJavaMixedCommits: Java commits into tables flightd created and tiered,
// then flightd writes and tiers more; both see the union, newest version per
// key, no duplicate and no lost row.
func TestJavaMixedCommits(t *testing.T) {
	t.Parallel()
	jar := paimonJar(t)
	dir := t.TempDir()
	wh := filepath.Join(dir, "warehouse")
	srv := testserver.Start(t, dir)
	c := connect(t, srv)

	c.mustExec("CREATE DATABASE mx")
	c.mustExec(`CREATE TABLE mx.pk (id BIGINT, name STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '4')`)
	c.mustExec(`CREATE TABLE mx.ap (id BIGINT, name STRING)`)

	pk := map[int64]string{}
	var ap []string
	insert := func(table string, ids []int64, tag string) {
		var vals []string
		for _, id := range ids {
			name := fmt.Sprintf("%s-%d", tag, id)
			vals = append(vals, fmt.Sprintf("(%d, '%s')", id, name))
			if table == "pk" {
				pk[id] = name
			} else {
				ap = append(ap, fmt.Sprintf("%d|%s", id, name))
			}
		}
		c.mustExec(fmt.Sprintf("INSERT INTO mx.%s VALUES %s", table, strings.Join(vals, ", ")))
	}
	javaInsert := func(table string, ids []int64, tag string) {
		var rows []map[string]any
		for _, id := range ids {
			name := fmt.Sprintf("%s-%d", tag, id)
			rows = append(rows, map[string]any{"id": id, "name": name})
			if table == "pk" {
				pk[id] = name
			} else {
				ap = append(ap, fmt.Sprintf("%d|%s", id, name))
			}
		}
		javaWrite(t, jar, wh, "mx."+table, rows...)
	}
	check := func(t *testing.T) {
		t.Helper()
		want := modelLines(pk)
		sort.Strings(ap)
		for _, tc := range []struct {
			table string
			want  []string
		}{{"pk", want}, {"ap", ap}} {
			name := "mx." + tc.table
			require.Equal(t, tc.want, sortedRows(c.mustQuery("SELECT id, name FROM "+name)), "flightd %s", name)
			require.Equal(t, tc.want, sortedRows(c.mustQuery(fmt.Sprintf(`SELECT id, name FROM mx."%s$rt"`, tc.table))), "flightd %s$rt", name)
			jrows, err := javaRead(jar, wh, name)
			require.NoError(t, err)
			require.Equal(t, tc.want, idName(t, jrows), "Java %s", name)
		}
	}

	// flightd: two tiered rounds (the second with upserts).
	insert("pk", idRange(0, 200), "f1")
	insert("ap", idRange(0, 20), "f1")
	waitTiered(t, c, "mx", "pk", len(pk))
	waitTiered(t, c, "mx", "ap", len(ap))
	insert("pk", idRange(150, 250), "f2")
	waitTiered(t, c, "mx", "pk", len(pk))
	check(t)

	// Java: upserts of keys flightd wrote (in every bucket), new keys, appends.
	javaInsert("pk", append(idRange(0, 40), idRange(1000, 1040)...), "j1")
	javaInsert("ap", idRange(100, 110), "j1")
	t.Run("after-java-commit", check)

	// More flightd rounds, so every bucket has more level-0 files than
	// num-sorted-run.compaction-trigger (5): Java's next write compacts
	// them (a COMPACT snapshot that deletes flightd's files).
	for round := 0; round < 5; round++ {
		insert("pk", idRange(int64(round*10), int64(round*10+80)), fmt.Sprintf("fr%d", round))
		waitTiered(t, c, "mx", "pk", len(pk))
	}
	javaInsert("pk", idRange(70, 90), "jc")
	kinds := snapshotKinds(t, filepath.Join(wh, "mx.db", "pk"))
	t.Logf("mx.pk snapshots: %v", kinds)
	require.Contains(t, kinds, "COMPACT by Java", "Java's write should have compacted flightd's level-0 files")
	t.Run("after-java-compaction", check)

	// flightd again: upserts over Java's and its own rows, new keys; tiered.
	insert("pk", append(idRange(20, 60), idRange(1020, 1030)...), "f3")
	insert("pk", idRange(2000, 2010), "f3")
	insert("ap", idRange(200, 205), "f3")
	waitTiered(t, c, "mx", "pk", len(pk))
	waitTiered(t, c, "mx", "ap", len(ap))
	t.Run("after-flightd-tiering", func(t *testing.T) {
		check(t)
		requireSameRows(t, c, jar, wh, "mx.pk")
		requireSameRows(t, c, jar, wh, "mx.ap")
	})

	// Java once more on top of flightd's newest snapshot, then a restart.
	javaInsert("pk", idRange(55, 65), "j2")
	srv.Restart(syscall.SIGTERM)
	c = connect(t, srv)
	insert("pk", []int64{60}, "f4")
	waitTiered(t, c, "mx", "pk", len(pk))
	t.Run("after-restart", check)
}

// javaWriteWith is javaWrite with dynamic table options for the write ("k=v;k=v", e.g.
// "write-only=true": no compaction, so a deletion-vector primary-key table keeps level-0 files).
func javaWriteWith(t *testing.T, jar, warehouse, name, opts string, rows ...map[string]any) int64 {
	t.Helper()
	var buf bytes.Buffer
	for _, r := range rows {
		b, err := json.Marshal(r)
		require.NoError(t, err)
		buf.Write(b)
		buf.WriteByte('\n')
	}
	f := filepath.Join(t.TempDir(), "rows.jsonl")
	require.NoError(t, os.WriteFile(f, buf.Bytes(), 0o644))
	out := mustJava(t, jar, "write", warehouse, name, f, opts)
	id, err := strconv.ParseInt(strings.TrimSpace(out), 10, 64)
	require.NoError(t, err, "PaimonCheck write printed %q", out)
	return id
}

// dvInfo is what PaimonCheck dvinfo reports about the latest snapshot.
type dvInfo struct {
	Files       int64 `json:"files"`
	Level0      int64 `json:"level0"`
	WithDv      int64 `json:"withDv"`
	DeletedRows int64 `json:"deletedRows"`
}

func javaDVInfo(t *testing.T, jar, warehouse, name string) dvInfo {
	t.Helper()
	var info dvInfo
	out := mustJava(t, jar, "dvinfo", warehouse, name)
	require.NoError(t, json.Unmarshal([]byte(out), &info), out)
	return info
}

// lakeTyped reads db.table through the lake package (no server) and renders it as typedQuery does.
func lakeTyped(t *testing.T, warehouse, name string) *typedResult {
	t.Helper()
	ctx := context.Background()
	cat, err := lake.OpenCatalog(warehouse)
	require.NoError(t, err)
	db, table, ok := strings.Cut(name, ".")
	require.True(t, ok, name)
	tb, err := cat.GetTable(ctx, db, table)
	require.NoError(t, err)
	snap, err := tb.LatestSnapshot(ctx)
	require.NoError(t, err)
	rr, err := tb.Scan(ctx, snap, lake.ScanOptions{})
	require.NoError(t, err, name)
	defer rr.Release()
	res := &typedResult{rows: []string{}}
	for _, f := range rr.Schema().Fields() {
		res.names = append(res.names, f.Name)
		res.types = append(res.types, f.Type)
	}
	for rr.Next() {
		rec := rr.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			vals := make([]string, rec.NumCols())
			for j := range vals {
				vals[j] = canonArrow(rec.Column(j), i)
			}
			res.rows = append(res.rows, strings.Join(vals, "|"))
		}
	}
	require.NoError(t, rr.Err(), name)
	sort.Strings(res.rows)
	return res
}

// requireJavaRowsEverywhere asserts that the lake package and the server (`SELECT * FROM
// db.table`) both read exactly the rows Java Paimon reads, with Java's column names, and returns
// Java's rows.
func requireJavaRowsEverywhere(t *testing.T, c *client, jar, warehouse, name string) []map[string]any {
	t.Helper()
	jrows, err := javaRead(jar, warehouse, name)
	require.NoError(t, err)
	lk := lakeTyped(t, warehouse, name)
	require.Equal(t, lk.rows, canonJava(t, jrows, lk), "Java Paimon and the lake package disagree on %s", name)
	fl := c.mustTyped("SELECT * FROM " + name)
	require.Equal(t, lk.names, fl.names, "lake package and server columns of %s", name)
	require.Equal(t, fl.rows, canonJava(t, jrows, fl), "Java Paimon and flightd disagree on %s", name)
	return jrows
}

// byID indexes Java rows by their "id" column.
func byID(rows []map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, r := range rows {
		out[fmt.Sprint(r["id"])] = r
	}
	return out
}

func named(ids []int64, tag string, extra func(id int64) map[string]any) []map[string]any {
	out := make([]map[string]any, len(ids))
	for i, id := range ids {
		r := map[string]any{"id": id, "name": fmt.Sprintf("%s-%d", tag, id)}
		if extra != nil {
			for k, v := range extra(id) {
				r[k] = v
			}
		}
		out[i] = r
	}
	return out
}

// TestJavaDeletionVectors: tables Java writes with 'deletion-vectors.enabled' = 'true' (a
// primary-key table whose updates and deletes Java's lookup compaction turns into deletion
// vectors, plus level-0 files Java's batch reads do not see; append tables, partitioned
// bucket-unaware and bucketed, with rows deleted through deletion vectors before and after a
// compaction) read in flightd exactly as in Java; flightd refuses to write into them.
func TestJavaDeletionVectors(t *testing.T) {
	t.Parallel()
	jar := paimonJar(t)
	dir := t.TempDir()
	wh := filepath.Join(dir, "warehouse")
	require.NoError(t, os.MkdirAll(wh, 0o755))

	mustJava(t, jar, "create", wh, "jdv.pk", "id", "2", "id:BIGINT,name:STRING,n:INT,d:DECIMAL(10,2)", "", "deletion-vectors.enabled=true")
	mustJava(t, jar, "create", wh, "jdv.ap", "", "-1", "region:STRING,id:BIGINT,name:STRING", "region",
		"deletion-vectors.enabled=true;compaction.min.file-num=2")
	mustJava(t, jar, "create", wh, "jdv.bap", "", "2", "id:BIGINT,name:STRING", "",
		"deletion-vectors.enabled=true;bucket-key=id;compaction.min.file-num=2")

	pkRow := func(id int64) map[string]any {
		return map[string]any{"n": id % 17, "d": fmt.Sprintf("%d.%02d", id, id%100)}
	}
	// Primary key: every write is an APPEND plus a COMPACT that writes deletion vectors.
	javaWrite(t, jar, wh, "jdv.pk", named(idRange(0, 200), "w1", pkRow)...)
	w2 := named(append(idRange(0, 50), idRange(200, 220)...), "w2", pkRow)
	for id := int64(150); id < 160; id++ {
		w2 = append(w2, map[string]any{"id": id, "_kind": "-D"})
	}
	javaWrite(t, jar, wh, "jdv.pk", w2...)
	w3 := named(idRange(40, 61), "w3", nil)
	for id := int64(0); id < 5; id++ {
		w3 = append(w3, map[string]any{"id": id, "_kind": "-D"})
	}
	javaWrite(t, jar, wh, "jdv.pk", w3...)
	mustJava(t, jar, "compact", wh, "jdv.pk")
	javaWrite(t, jar, wh, "jdv.pk", named(idRange(100, 111), "w4", pkRow)...)
	// Level 0 only (no compaction): invisible to Java's batch read, so to flightd's too.
	javaWriteWith(t, jar, wh, "jdv.pk", "write-only=true", named(append(idRange(120, 126), 9000), "hidden", pkRow)...)
	info := javaDVInfo(t, jar, wh, "jdv.pk")
	t.Logf("jdv.pk: %+v", info)
	require.Positive(t, info.WithDv, "Java should have written deletion vectors")
	require.Positive(t, info.DeletedRows)
	require.Positive(t, info.Level0, "the write-only commit should have left level-0 files")

	// Append tables: rows deleted through deletion vectors, an update (delete + insert), a
	// compaction (which applies and drops the vectors of the files it rewrites), more deletes.
	for _, name := range []string{"jdv.ap", "jdv.bap"} {
		region := func(id int64) map[string]any {
			if name == "jdv.ap" {
				return map[string]any{"region": []string{"eu", "us"}[id%2]}
			}
			return nil
		}
		javaWrite(t, jar, wh, name, named(idRange(0, 100), "a1", region)...)
		javaWrite(t, jar, wh, name, named(idRange(100, 200), "a2", region)...)
		mustJava(t, jar, "dvdelete", wh, name, "id=3,4,150,151")
		mustJava(t, jar, "dvdelete", wh, name, "id=10")
		javaWrite(t, jar, wh, name, named([]int64{10}, "u", region)...)
		mustJava(t, jar, "compact", wh, name)
		javaWrite(t, jar, wh, name, named(idRange(200, 210), "a3", region)...)
		mustJava(t, jar, "dvdelete", wh, name, "id=20,21,205")
		info := javaDVInfo(t, jar, wh, name)
		t.Logf("%s: %+v", name, info)
		require.Positive(t, info.WithDv, "%s: Java should have deletion vectors", name)
	}

	srv := testserver.Start(t, dir, "--warehouse", wh)
	c := connect(t, srv)
	for _, name := range []string{"jdv.pk", "jdv.ap", "jdv.bap"} {
		t.Run(name, func(t *testing.T) {
			rows := byID(requireJavaRowsEverywhere(t, c, jar, wh, name))
			switch name {
			case "jdv.pk":
				require.Len(t, rows, 220-10-5)
				require.Equal(t, "w2-5", rows["5"]["name"])
				require.Equal(t, "w3-45", rows["45"]["name"])
				require.Equal(t, "w4-100", rows["100"]["name"])
				require.Equal(t, "w1-120", rows["120"]["name"]) // the level-0 update is not visible
				require.NotContains(t, rows, "9000")
				require.NotContains(t, rows, "155")
				require.NotContains(t, rows, "2")
			default:
				require.Len(t, rows, 210-7)
				require.Equal(t, "u-10", rows["10"]["name"])
				for _, id := range []string{"3", "4", "150", "151", "20", "21", "205"} {
					require.NotContains(t, rows, id)
				}
			}
		})
	}
	t.Run("writes-refused", func(t *testing.T) {
		for _, name := range []string{"jdv.pk", "jdv.bap"} {
			_, err := c.exec("INSERT INTO " + name + " (id, name) VALUES (7777, 'from flightd')")
			require.Error(t, err, name)
			require.Contains(t, err.Error(), "deletion-vectors.enabled", name)
		}
	})
}

// TestJavaSchemaEvolution: tables whose schema Java evolves between commits (a column added,
// one renamed, INT widened to BIGINT and FLOAT to DOUBLE, a field added to and one renamed in a
// nested ROW, a column dropped and re-added under the same name with another type) read in
// flightd exactly as in Java: columns of older files are matched by field id.
func TestJavaSchemaEvolution(t *testing.T) {
	t.Parallel()
	jar := paimonJar(t)
	dir := t.TempDir()
	wh := filepath.Join(dir, "warehouse")
	require.NoError(t, os.MkdirAll(wh, 0o755))
	cols := "id:BIGINT,a:INT,b:STRING,c:DOUBLE,d:INT,f:FLOAT,r:ROW<x INT, y STRING>"
	mustJava(t, jar, "create", wh, "jevo.pk", "id", "2", cols)
	mustJava(t, jar, "create", wh, "jevo.ap", "", "-1", cols)

	for _, name := range []string{"jevo.pk", "jevo.ap"} {
		var s0 []map[string]any
		for id := int64(0); id < 40; id++ {
			r := map[string]any{"id": id, "a": id * 3, "b": fmt.Sprintf("b%d", id), "c": float64(id) + 0.5, "d": id * 10,
				"f": float64(id) + 0.1, "r": map[string]any{"x": id, "y": fmt.Sprintf("y%d", id)}}
			if id%9 == 4 {
				r = map[string]any{"id": id, "r": map[string]any{"x": nil, "y": nil}}
			}
			if id%9 == 5 {
				r = map[string]any{"id": id}
			}
			if id == 29 {
				r["a"] = -7 // a negative INT: its stats must not be read as a BIGINT after the widening
			}
			s0 = append(s0, r)
		}
		javaWrite(t, jar, wh, name, s0...)
		mustJava(t, jar, "alter", wh, name, "add:e:STRING;rename:b:b2;type:a:BIGINT;type:f:DOUBLE;add:r.z:BIGINT;rename:r.x:x2")
		var s1 []map[string]any
		for id := int64(30); id < 50; id++ {
			s1 = append(s1, map[string]any{"id": id, "a": 4000000000 + id, "b2": fmt.Sprintf("s1-%d", id), "c": -float64(id),
				"d": id, "e": fmt.Sprintf("e%d", id), "f": float64(id) / 3,
				"r": map[string]any{"x2": id, "y": fmt.Sprintf("s1y%d", id), "z": id * 100}})
		}
		javaWrite(t, jar, wh, name, s1...)
		mustJava(t, jar, "alter", wh, name, "drop:d")
		mustJava(t, jar, "alter", wh, name, "add:d:STRING")
		var s2 []map[string]any
		for id := int64(45); id < 60; id++ {
			s2 = append(s2, map[string]any{"id": id, "a": -id, "b2": fmt.Sprintf("s2-%d", id), "d": fmt.Sprintf("d%d", id),
				"e": nil, "r": map[string]any{"x2": nil, "y": "s2", "z": nil}})
		}
		javaWrite(t, jar, wh, name, s2...)
	}

	// Only a widening: the statistics of the first file name every column of today's schema,
	// but hold a 4-byte INT where the schema now says BIGINT.
	mustJava(t, jar, "create", wh, "jevo.wide", "", "-1", "id:BIGINT,a:INT,r:ROW<x INT>")
	javaWrite(t, jar, wh, "jevo.wide", map[string]any{"id": 1, "a": -7}, map[string]any{"id": 2, "a": 5, "r": map[string]any{"x": 1}})
	mustJava(t, jar, "alter", wh, "jevo.wide", "type:a:BIGINT")
	javaWrite(t, jar, wh, "jevo.wide", map[string]any{"id": 3, "a": -7})

	srv := testserver.Start(t, dir, "--warehouse", wh)
	c := connect(t, srv)
	t.Run("jevo.wide", func(t *testing.T) {
		requireJavaRowsEverywhere(t, c, jar, wh, "jevo.wide")
		// Files of older schemas must not be pruned by their statistics under today's types.
		requireSameFiltered(t, c, jar, wh, "jevo.wide", "a=-7", "a = -7")
		require.Equal(t, "2", c.scalar("SELECT count(*) FROM jevo.wide WHERE a = -7"))
	})
	for _, name := range []string{"jevo.pk", "jevo.ap"} {
		t.Run(name, func(t *testing.T) {
			rows := requireJavaRowsEverywhere(t, c, jar, wh, name)
			requireSameFiltered(t, c, jar, wh, name, "a=-7", "a = -7")
			require.Equal(t, "1", c.scalar("SELECT count(*) FROM "+name+" WHERE a = -7"))
			requireSameFiltered(t, c, jar, wh, name, `b2="b7"`, "b2 = 'b7'")
			require.Equal(t, "1", c.scalar("SELECT count(*) FROM "+name+" WHERE b2 = 'b7'"))
			if name == "jevo.pk" {
				ids := byID(rows)
				require.Len(t, ids, 60)
				require.Equal(t, "b1", ids["1"]["b2"])            // renamed column keeps its data
				require.Nil(t, ids["1"]["d"])                     // re-added column: null in older files
				require.Nil(t, ids["1"]["e"])                     // added column: null in older files
				require.Equal(t, json.Number("3"), ids["1"]["a"]) // widened
				require.Equal(t, "d50", ids["50"]["d"])
			}
		})
	}
}

// TestJavaNestedTypes: ARRAY, MAP and ROW columns (nested in each other, with null values,
// null elements, empty collections and null fields) that Java writes read in flightd exactly as
// in Java, in a primary-key table (merged across files) and an append table.
func TestJavaNestedTypes(t *testing.T) {
	t.Parallel()
	jar := paimonJar(t)
	dir := t.TempDir()
	wh := filepath.Join(dir, "warehouse")
	require.NoError(t, os.MkdirAll(wh, 0o755))
	cols := "id:BIGINT,arr:ARRAY<INT>,m:MAP<STRING,BIGINT>,r:ROW<x INT, y STRING, z ARRAY<STRING>>," +
		"ar:ARRAY<ROW<k STRING, v DECIMAL(10,2)>>,mm:MAP<INT,ARRAY<TIMESTAMP(6)>>,nn:ARRAY<INT NOT NULL>,rr:ROW<q ROW<w DOUBLE>>"
	mustJava(t, jar, "create", wh, "jnest.pk", "id", "2", cols)
	mustJava(t, jar, "create", wh, "jnest.ap", "", "-1", cols)
	rows := []map[string]any{
		{"id": 1, "arr": []any{1, 2, 3}, "m": []any{[]any{"a", 1}, []any{"b", nil}},
			"r":  map[string]any{"x": 1, "y": "y", "z": []any{"p", nil, "q"}},
			"ar": []any{map[string]any{"k": "k1", "v": "1.50"}, nil, map[string]any{"k": nil, "v": nil}},
			"mm": []any{[]any{1, []any{"2024-01-01T00:00:00.123456", nil}}, []any{2, nil}}, "nn": []any{1, 2},
			"rr": map[string]any{"q": map[string]any{"w": 1.25}}},
		{"id": 2},
		{"id": 3, "arr": []any{}, "m": []any{}, "r": map[string]any{"x": nil, "y": nil, "z": nil}, "ar": []any{}, "mm": []any{},
			"nn": []any{}, "rr": map[string]any{"q": nil}},
		{"id": 4, "arr": []any{nil}, "m": []any{[]any{"", 0}}, "r": map[string]any{"x": 4, "y": "", "z": []any{}},
			"ar": []any{nil}, "mm": []any{[]any{0, []any{}}}, "nn": []any{0}, "rr": map[string]any{"q": map[string]any{"w": nil}}},
	}
	for id := int64(5); id < 40; id++ {
		rows = append(rows, map[string]any{"id": id, "arr": []any{id, -id}, "m": []any{[]any{fmt.Sprint("k", id), id}},
			"r":  map[string]any{"x": id, "y": fmt.Sprint(id), "z": []any{fmt.Sprint(id)}},
			"ar": []any{map[string]any{"k": fmt.Sprint(id), "v": fmt.Sprintf("%d.%02d", id, id)}},
			"mm": []any{[]any{id, []any{fmt.Sprintf("2024-02-%02dT01:02:03", id%28+1)}}}, "nn": []any{id},
			"rr": map[string]any{"q": map[string]any{"w": float64(id) / 4}}})
	}
	update := []map[string]any{
		{"id": 4, "arr": []any{4, 4}, "m": []any{[]any{"z", 9}, []any{"y", nil}}, "r": map[string]any{"x": 44, "y": "u", "z": []any{"u", nil}},
			"ar": []any{map[string]any{"k": "u", "v": "-0.01"}}, "nn": []any{4}},
		{"id": 6},
		{"id": 1000, "arr": []any{nil, nil}, "rr": map[string]any{"q": nil}},
	}
	for _, name := range []string{"jnest.pk", "jnest.ap"} {
		javaWrite(t, jar, wh, name, rows...)
		javaWrite(t, jar, wh, name, update...)
	}

	srv := testserver.Start(t, dir, "--warehouse", wh)
	c := connect(t, srv)
	for _, name := range []string{"jnest.pk", "jnest.ap"} {
		t.Run(name, func(t *testing.T) {
			got := requireJavaRowsEverywhere(t, c, jar, wh, name)
			if name == "jnest.pk" {
				require.Len(t, got, 40)
			} else {
				require.Len(t, got, 42)
			}
		})
	}
}

// TestJavaReadsFlightdCompactedAppend: append tables flightd tiered in many small rounds,
// compacted by lake's CompactAppend (fewer, larger files in a COMPACT snapshot), read in Java
// with exactly the rows flightd served; Java then appends and compacts on top, and flightd serves
// what Java reads.
func TestJavaReadsFlightdCompactedAppend(t *testing.T) {
	t.Parallel()
	jar := paimonJar(t)
	dir := t.TempDir()
	wh := filepath.Join(dir, "warehouse")
	srv := testserver.Start(t, dir)
	c := connect(t, srv)
	c.mustExec("CREATE DATABASE ca")
	c.mustExec(`CREATE TABLE ca.ev (id BIGINT, kind STRING, n INT, d DECIMAL(10,2))`)
	c.mustExec(`CREATE TABLE ca.pev (day DATE, id BIGINT, name STRING) PARTITIONED BY (day)`)
	// Rounds of big's size are compacted by joining their Parquet row groups
	// as they are; the tiny ones of the others are re-encoded.
	c.mustExec(`CREATE TABLE ca.big (id BIGINT, kind STRING, n INT)`)
	const bigRows = 17000
	// Small rounds never fill a file, so tiering compacts them once ten have
	// piled up per partition (twice its CompactMinFiles).
	const rounds = 11
	for r := 0; r < rounds; r++ {
		c.mustExec(fmt.Sprintf("INSERT INTO ca.big SELECT range AS id, 'k' || (range %% 7) AS kind, (range %% 1000)::INT AS n FROM range(%d, %d)", r*bigRows, (r+1)*bigRows))
		waitTiered(t, c, "ca", "big", bigRows*(r+1))
		var ev, pev []string
		for i := 0; i < 20; i++ {
			id := r*100 + i
			ev = append(ev, fmt.Sprintf("(%d, 'k%d', %d, %d.%02d)", id, i%3, i, id, i))
			pev = append(pev, fmt.Sprintf("(DATE '2024-01-0%d', %d, 'n%d')", 1+i%2, id, id))
		}
		c.mustExec("INSERT INTO ca.ev VALUES " + strings.Join(ev, ", "))
		c.mustExec("INSERT INTO ca.pev VALUES " + strings.Join(pev, ", "))
		waitTiered(t, c, "ca", "ev", 20*(r+1))
		waitTiered(t, c, "ca", "pev", 20*(r+1))
	}
	served := map[string]*typedResult{}
	for _, name := range []string{"ca.ev", "ca.pev", "ca.big"} {
		served[name] = c.mustTyped("SELECT * FROM " + name)
	}
	srv.Stop(syscall.SIGTERM)

	ctx := context.Background()
	cat, err := lake.OpenCatalog(wh)
	require.NoError(t, err)
	require.GreaterOrEqual(t, maxRowGroups(t, filepath.Join(wh, "ca.db", "big", "bucket-0")), 10, "big's rounds joined as they are")
	for name, parts := range map[string]int64{"ca.ev": 1, "ca.pev": 2, "ca.big": 1} {
		// Tiering compacted the small files once ten had piled up per
		// partition: what is left is that file plus the round after it.
		before := javaDVInfo(t, jar, wh, name)
		require.Equal(t, 2*parts, before.Files, "%s: tiering compacts append tables", name)
		jrows, err := javaRead(jar, wh, name)
		require.NoError(t, err)
		require.Equal(t, served[name].rows, canonJava(t, jrows, served[name]), "Java reads %s after tiering's compaction", name)
		_, table, _ := strings.Cut(name, ".")
		tb, err := cat.GetTable(ctx, "ca", table)
		require.NoError(t, err)
		snap, err := tb.LatestSnapshot(ctx)
		require.NoError(t, err)
		cs, err := tb.CompactAppend(ctx, lake.CompactOptions{CommitUser: "compact-test", ExpectedLatest: snap.ID, MinFiles: 2})
		require.NoError(t, err)
		require.NotNil(t, cs, name)
		after := javaDVInfo(t, jar, wh, name)
		require.Equal(t, parts, after.Files, "%s: one file per partition after compaction", name)
		jrows, err = javaRead(jar, wh, name)
		require.NoError(t, err)
		require.Equal(t, served[name].rows, canonJava(t, jrows, served[name]), "Java reads %s after flightd's compaction", name)
	}

	// Java appends and compacts on top of flightd's COMPACT snapshot.
	javaWrite(t, jar, wh, "ca.ev", map[string]any{"id": 9000, "kind": "java", "n": 1, "d": "1.00"})
	mustJava(t, jar, "compact", wh, "ca.ev")
	srv.Restart(syscall.SIGTERM)
	c = connect(t, srv)
	for _, name := range []string{"ca.ev", "ca.pev", "ca.big"} {
		requireSameRows(t, c, jar, wh, name)
	}
	require.Equal(t, strconv.Itoa(20*rounds+1), c.scalar("SELECT count(*) FROM ca.ev"))
}

// maxRowGroups is the most row groups a Parquet file in dir has.
func maxRowGroups(t *testing.T, dir string) int {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.parquet"))
	require.NoError(t, err)
	most := 0
	for _, p := range paths {
		r, err := file.OpenParquetFile(p, false)
		require.NoError(t, err)
		most = max(most, r.NumRowGroups())
		require.NoError(t, r.Close())
	}
	return most
}
