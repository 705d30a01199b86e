//go:build duckdb_arrow

package query

import (
	"context"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/query/plan"
)

func fieldTypes(s *arrow.Schema) []string {
	var out []string
	for _, f := range s.Fields() {
		out = append(out, f.Name+" "+f.Type.String())
	}
	return out
}

func TestPrepareTypesParameters(t *testing.T) {
	e := newTestEngine(t)
	ctx := context.Background()
	run(t, e, "CREATE DATABASE db")
	run(t, e, "CREATE TABLE db.t (id BIGINT, name STRING, price DECIMAL(10,2), ts TIMESTAMP(6), day DATE, ok BOOLEAN, f DOUBLE, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")

	p, err := e.Prepare(ctx, plan.Analyze(`SELECT name, price FROM db."t$rt" WHERE id = ? AND ts < ? AND day = ? AND price > ? AND ok = ? AND f = ? AND name LIKE ?`))
	require.NoError(t, err)
	require.False(t, p.Update)
	require.Equal(t, []string{"name utf8", "price decimal(10, 2)"}, fieldTypes(p.DatasetSchema))
	require.Equal(t, []string{"$1 int64", "$2 timestamp[ms]", "$3 date32", "$4 float64", "$5 bool", "$6 float64", "$7 utf8"}, fieldTypes(p.Parameters))

	// A parameter the statement does not type is a string; the result schema
	// still comes out (a NULL in its place).
	p, err = e.Prepare(ctx, plan.Analyze(`SELECT CAST($1 AS INTEGER) + 1 AS b, $2 AS a, $2 AS c`))
	require.NoError(t, err)
	require.Equal(t, []string{"$1 int64", "$2 utf8"}, fieldTypes(p.Parameters))
	require.Equal(t, 3, p.DatasetSchema.NumFields())

	// An INSERT's VALUES placeholders take their columns' types.
	p, err = e.Prepare(ctx, plan.Analyze(`INSERT INTO db.t (id, price, ts, name) VALUES (?, ?, ?, upper(?))`))
	require.NoError(t, err)
	require.True(t, p.Update)
	require.Equal(t, []string{"$1 int64", "$2 decimal(10, 2)", "$3 timestamp[ms]", "$4 utf8"}, fieldTypes(p.Parameters))
	p, err = e.Prepare(ctx, plan.Analyze(`INSERT INTO db.t VALUES (?, ?, ?, ?, ?, ?, ?)`))
	require.NoError(t, err)
	require.Equal(t, []string{"$1 int64", "$2 utf8", "$3 decimal(10, 2)", "$4 timestamp[ms]", "$5 date32", "$6 bool", "$7 float64"}, fieldTypes(p.Parameters))

	for sql, msg := range map[string]string{
		`SELECT ?, $1`: "mixes ? and $N",
		`ALTER TABLE db.t SET ('lakestream.freshness' = ?)`: "can be bound in queries and INSERT INTO only",
		`SELECT * FROM db."nope$rt" WHERE id = ?`:           "nope",
		`INSERT INTO db.nope VALUES (?)`:                    "nope",
		`SELECT * FROM db."t$rt" WHERE no_such_column = ?`:  "no_such_column",
	} {
		_, err := e.Prepare(ctx, plan.Analyze(sql))
		require.ErrorContains(t, err, msg, sql)
	}
	// Statements without placeholders are described as before.
	p, err = e.Prepare(ctx, plan.Analyze(`SELECT '?' AS q`))
	require.NoError(t, err)
	require.Nil(t, p.Parameters)
}

// TestBoundLiteralsMeanTheirValues runs every literal engine.Literal writes
// through DuckDB and compares the value that comes back with the one bound.
func TestBoundLiteralsMeanTheirValues(t *testing.T) {
	e := newTestEngine(t)
	mem := memory.DefaultAllocator
	for _, tc := range []struct {
		typ  arrow.DataType
		json string
		want string // the value as DuckDB returns it; "" = as bound
	}{
		{arrow.PrimitiveTypes.Int64, `-9223372036854775808`, ""},
		{arrow.PrimitiveTypes.Uint64, `18446744073709551615`, ""},
		{arrow.BinaryTypes.String, `"it's \\x41 ? $1 -- /* é"`, ""},
		{arrow.BinaryTypes.String, `""`, ""},
		{arrow.PrimitiveTypes.Float64, `0.1`, ""},
		{arrow.PrimitiveTypes.Float64, `1e300`, ""},
		{arrow.PrimitiveTypes.Float64, `-2.5e-300`, ""},
		{arrow.PrimitiveTypes.Float32, `1.1`, ""},
		{arrow.FixedWidthTypes.Boolean, `false`, ""},
		{arrow.FixedWidthTypes.Date32, `"1969-12-31"`, ""},
		{&arrow.TimestampType{Unit: arrow.Microsecond}, `"2024-02-29T10:11:12.345678"`, ""},
		{&arrow.TimestampType{Unit: arrow.Nanosecond}, `"2024-02-29T10:11:12.000000001"`, ""},
		{&arrow.Decimal128Type{Precision: 38, Scale: 10}, `"-1234567890123456789012345678.0123456789"`, ""},
		{arrow.BinaryTypes.Binary, `"AAH/Jw=="`, ""},
	} {
		rec, _, err := array.RecordFromJSON(mem, arrow.NewSchema([]arrow.Field{{Name: "p", Type: tc.typ}}, nil), strings.NewReader(`[{"p": `+tc.json+`}]`))
		require.NoError(t, err)
		want := tc.want
		if want == "" {
			want = rec.Column(0).ValueStr(0)
		}
		stmts, err := plan.Bind(plan.Analyze("SELECT ? AS v"), rec)
		rec.Release()
		require.NoError(t, err)
		require.Len(t, stmts, 1)
		got := run(t, e, stmts[0])
		require.Equal(t, [][]string{{want}}, got, "%s %s: %s", tc.typ, tc.json, stmts[0])
	}

	// Doubles of every magnitude come back bit for bit, and a negative
	// value after a minus is a number, not the start of a comment.
	rng := rand.New(rand.NewPCG(3, 4))
	b := array.NewFloat64Builder(mem)
	defer b.Release()
	want := make([]float64, 200)
	for i := range want {
		// Half of any bits, half written without an exponent (17 digits),
		// which DuckDB would read as a DECIMAL first.
		want[i] = math.Float64frombits(rng.Uint64())
		if i%2 == 0 || math.IsNaN(want[i]) || math.IsInf(want[i], 0) {
			want[i] = (rng.Float64() - 0.5) * math.Pow(10, float64(rng.IntN(18)-3))
		}
		b.Append(want[i])
	}
	col := b.NewArray()
	defer col.Release()
	f := arrow.Field{Name: "f", Type: arrow.PrimitiveTypes.Float64}
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{f, f}, nil), []arrow.Array{col, col}, int64(len(want)))
	defer rec.Release()
	stmts, err := plan.Bind(plan.Analyze("SELECT ? AS v, 5-? AS w -- the rest of the line"), rec)
	require.NoError(t, err)
	for i, sql := range stmts {
		rows := run(t, e, sql)
		require.Len(t, rows, 1, sql)
		require.Len(t, rows[0], 2, sql)
		v, err := strconv.ParseFloat(rows[0][0], 64)
		require.NoError(t, err)
		require.Equal(t, math.Float64bits(want[i]), math.Float64bits(v), sql)
		w, err := strconv.ParseFloat(rows[0][1], 64)
		require.NoError(t, err)
		require.Equal(t, 5-want[i], w, sql)
	}
}

// TestInsertParamsWritesTheBatch: an INSERT whose VALUES row is all
// placeholders writes the parameter rows as a batch (ok), cast to the
// columns; other INSERT shapes and values only SQL converts are left to
// SQL (not ok, nothing written), and both paths store the same rows.
func TestInsertParamsWritesTheBatch(t *testing.T) {
	e := newTestEngine(t)
	ctx := context.Background()
	run(t, e, "CREATE DATABASE db")
	run(t, e, "CREATE TABLE db.t (id BIGINT, name STRING, price DECIMAL(10,2), day DATE, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '2')")
	batch := func(fields []arrow.Field, rows string) arrow.RecordBatch {
		rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, arrow.NewSchema(fields, nil), strings.NewReader(rows))
		require.NoError(t, err)
		t.Cleanup(rec.Release)
		return rec
	}
	i32 := arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true}
	str := arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true}
	dec := arrow.Field{Name: "c", Type: &arrow.Decimal128Type{Precision: 5, Scale: 1}, Nullable: true}
	f64 := arrow.Field{Name: "c", Type: arrow.PrimitiveTypes.Float64, Nullable: true}
	for _, tc := range []struct {
		sql    string
		params arrow.RecordBatch
		direct bool
	}{
		// Exact or Arrow-castable values: straight to the log.
		{"INSERT INTO db.t VALUES (?, ?, ?, ?)", batch([]arrow.Field{i32, str, dec, {Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true}},
			`[{"a": 1, "b": "x", "c": "1.5", "d": "2024-01-02"}, {"a": 2, "b": null, "c": null, "d": null}]`), true},
		// Placeholders out of order and columns named: mapped by position.
		{"INSERT INTO db.t (name, id) VALUES ($2, $1)", batch([]arrow.Field{i32, str}, `[{"a": 3, "b": "y"}]`), true},
		// An element that is not a bare placeholder: SQL.
		{"INSERT INTO db.t (id, name) VALUES (?, upper(?))", batch([]arrow.Field{i32, str}, `[{"a": 4, "b": "z"}]`), false},
		// A string that Arrow does not read as a DATE but DuckDB does (ISO with time).
		{"INSERT INTO db.t (id, day) VALUES (?, ?)", batch([]arrow.Field{i32, {Name: "d", Type: arrow.BinaryTypes.String}}, `[{"a": 5, "d": "2024-03-04 00:00:00"}]`), false},
		// Doubles into a decimal column: Arrow casts them.
		{"INSERT INTO db.t (id, price) VALUES (?, ?)", batch([]arrow.Field{i32, f64}, `[{"a": 6, "c": 2.25}]`), true},
	} {
		n, ok, err := e.InsertParams(ctx, plan.Analyze(tc.sql), tc.params)
		require.NoError(t, err, tc.sql)
		require.Equal(t, tc.direct, ok, tc.sql)
		if !ok {
			require.Zero(t, n)
			stmts, err := plan.Bind(plan.Analyze(tc.sql), tc.params)
			require.NoError(t, err)
			for _, s := range stmts {
				res, err := e.Execute(ctx, plan.Analyze(s))
				require.NoError(t, err, s)
				n += res.Affected
			}
		}
		require.Equal(t, tc.params.NumRows(), n, tc.sql)
	}
	got := run(t, e, `SELECT id, name, price, day FROM db."t$rt" ORDER BY id`)
	require.Equal(t, [][]string{
		{"1", "x", "1.5", "2024-01-02"},
		{"2", "(null)", "(null)", "(null)"},
		{"3", "y", "(null)", "(null)"},
		{"4", "Z", "(null)", "(null)"},
		{"5", "(null)", "(null)", "2024-03-04"},
		{"6", "(null)", "2.25", "(null)"},
	}, got)
	// A NULL key is refused, nothing written.
	_, ok, err := e.InsertParams(ctx, plan.Analyze("INSERT INTO db.t (id, name) VALUES (?, ?)"), batch([]arrow.Field{i32, str}, `[{"a": null, "b": "n"}]`))
	require.True(t, ok)
	require.ErrorIs(t, err, engine.ErrInvalid)
	require.Equal(t, "6", run(t, e, `SELECT count(*) FROM db."t$rt"`)[0][0])
}
