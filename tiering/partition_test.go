package tiering

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lake/paimontype"
	"github.com/flightd/flightd/lakestream"
)

// Partitioned primary-key tables: Paimon's files key on the primary key
// minus the partition fields, within a partition, so a key excluding the
// partition column is a key per partition.

var partSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "dt", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: lakestream.ChangeKindColumn, Type: arrow.BinaryTypes.String},
}, nil)

// partRow is one row written to a partitioned table; dt nil is NULL.
type partRow struct {
	id   int64
	dt   *string
	v    string
	kind string
}

func partBatch(rows []partRow) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, partSchema)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.Int64Builder).Append(r.id)
		if r.dt == nil {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(*r.dt)
		}
		b.Field(2).(*array.StringBuilder).Append(r.v)
		k := r.kind
		if k == "" {
			k = "+I"
		}
		b.Field(3).(*array.StringBuilder).Append(k)
	}
	return b.NewRecordBatch()
}

// partLayouts are the key layouts of the partitioned tables tested:
// the key excluding the partition column (Java Paimon refuses it for
// fixed buckets, flightd at CREATE; a table from another engine or an
// older flightd can have it), and keys including it, in either order.
var partLayouts = map[string][]string{
	"key_without_partition": {"id"},
	"key_with_partition":    {"id", "dt"},
	"partition_first":       {"dt", "id"},
}

// createPartTable creates db.name (id BIGINT, dt STRING, v STRING)
// PARTITIONED BY (dt) with the given primary key and bucket count, its log
// on. A key without the partition column is created in the catalog
// directly (lakestream refuses it, as Java Paimon does).
func createPartTable(t *testing.T, e *env, name string, pk []string, buckets int) {
	t.Helper()
	require.NoError(t, e.ls.CreateDatabase(t.Context(), "db", true))
	sc := paimontype.Schema{
		Columns: []paimontype.Column{
			{Name: "id", Type: mustType(t, "BIGINT")}, {Name: "dt", Type: mustType(t, "STRING")}, {Name: "v", Type: mustType(t, "STRING")},
		},
		PrimaryKeys:   pk,
		PartitionKeys: []string{"dt"},
		Options:       map[string]string{"bucket": fmt.Sprint(buckets)},
	}
	if !containsString(pk, "dt") {
		sc.Options[lakestream.OptionEnabled] = "true"
		_, err := e.cat.CreateTable(t.Context(), "db", name, sc, false)
		require.NoError(t, err)
		return
	}
	require.NoError(t, e.ls.CreateTable(context.Background(), "db", name, sc, false))
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// scanPart reads a partitioned table as sorted "id/dt=v" strings.
func scanPart(t *testing.T, e *env, table string, realtime bool) []string {
	t.Helper()
	r, err := e.ls.Scan(context.Background(), "db", table, realtime)
	require.NoError(t, err)
	defer r.Release()
	var out []string
	for r.Next() {
		rec := r.RecordBatch()
		ids := rec.Column(0).(*array.Int64)
		dts := rec.Column(1).(*array.String)
		vs := rec.Column(2).(*array.String)
		for i := 0; i < int(rec.NumRows()); i++ {
			dt := "NULL"
			if dts.IsValid(i) {
				dt = dts.Value(i)
			}
			out = append(out, fmt.Sprintf("%d/%s=%s", ids.Value(i), dt, vs.Value(i)))
		}
	}
	require.NoError(t, r.Err())
	sort.Strings(out)
	return out
}

func writePart(t *testing.T, e *env, table string, rows ...partRow) {
	t.Helper()
	rec := partBatch(rows)
	defer rec.Release()
	_, err := e.ls.Write(context.Background(), "db", table, rec)
	require.NoError(t, err)
}

func str(s string) *string { return &s }

// TestSameKeyInTwoPartitionsIsOneRowBeforeTiering: a key written in two
// partitions of a table whose key excludes the partition column is two
// rows in the lake (and for Java Paimon); t$rt showed one before tiering
// and two after.
func TestSameKeyInTwoPartitionsIsOneRowBeforeTiering(t *testing.T) {
	e := open(t, t.TempDir())
	ctx := context.Background()
	createPartTable(t, e, "t", []string{"id"}, 2)
	writePart(t, e, "t", partRow{id: 1, dt: str("day1"), v: "a"})
	writePart(t, e, "t", partRow{id: 1, dt: str("day2"), v: "b"})
	want := []string{"1/day1=a", "1/day2=b"}
	require.Equal(t, want, scanPart(t, e, "t", true), "before tiering")
	require.NoError(t, e.tr.Drain(ctx, "db", "t"))
	require.Equal(t, want, scanPart(t, e, "t", false), "the lake")
	require.Equal(t, want, scanPart(t, e, "t", true), "after tiering")

	// An update and a delete reach their own partition only.
	writePart(t, e, "t", partRow{id: 1, dt: str("day1"), v: "a2"}, partRow{id: 1, dt: str("day2"), kind: "-D"})
	require.Equal(t, []string{"1/day1=a2"}, scanPart(t, e, "t", true))
	require.NoError(t, e.tr.Drain(ctx, "db", "t"))
	require.Equal(t, []string{"1/day1=a2"}, scanPart(t, e, "t", false))
}

// TestKeyWithoutPartitionIsRefusedAtCreate: like Java Paimon, CREATE
// refuses a fixed-bucket table whose primary key leaves out a partition
// column, and says which key to declare.
func TestKeyWithoutPartitionIsRefusedAtCreate(t *testing.T) {
	e := open(t, t.TempDir())
	require.NoError(t, e.ls.CreateDatabase(t.Context(), "db", true))
	cols := []paimontype.Column{{Name: "id", Type: mustType(t, "BIGINT")}, {Name: "dt", Type: mustType(t, "STRING")}, {Name: "v", Type: mustType(t, "STRING")}}
	for _, sc := range []paimontype.Schema{
		{Columns: cols, PrimaryKeys: []string{"id"}, PartitionKeys: []string{"dt"}},
		{Columns: cols, Options: map[string]string{"primary-key": "id", "partition": "dt", "bucket": "2"}},
	} {
		err := e.ls.CreateTable(context.Background(), "db", "t", sc, false)
		require.ErrorIs(t, err, lake.ErrUnsupported)
		require.ErrorContains(t, err, "leaves out dt")
		require.ErrorContains(t, err, "PRIMARY KEY (id, dt)")
		_, err = e.ls.Table(t.Context(), "db", "t")
		require.ErrorIs(t, err, lake.ErrTableNotFound)
	}
}

// TestKeyGivenAsOptionGetsFixedBuckets: a primary key given as Paimon's
// 'primary-key' option (not PRIMARY KEY) skipped the bucket checks: the
// table got Paimon's default, dynamic buckets, which flightd does not
// maintain. It gets flightd's default bucket count like PRIMARY KEY, and a
// dynamic bucket count is refused the same way.
func TestKeyGivenAsOptionGetsFixedBuckets(t *testing.T) {
	e := open(t, t.TempDir())
	ctx := context.Background()
	require.NoError(t, e.ls.CreateDatabase(ctx, "db", true))
	cols := []paimontype.Column{{Name: "id", Type: mustType(t, "BIGINT")}, {Name: "v", Type: mustType(t, "STRING")}}
	require.NoError(t, e.ls.CreateTable(ctx, "db", "t", paimontype.Schema{Columns: cols, Options: map[string]string{"primary-key": "id"}}, false))
	tb, err := e.ls.Table(ctx, "db", "t")
	require.NoError(t, err)
	require.Equal(t, fmt.Sprint(lakestream.DefaultPrimaryKeyBuckets), tb.Schema().Options["bucket"])
	err = e.ls.CreateTable(ctx, "db", "d", paimontype.Schema{Columns: cols, Options: map[string]string{"primary-key": "id", "bucket": "-1"}}, false)
	require.ErrorContains(t, err, "needs a fixed bucket count")
}

// TestPartitionedKeyModel writes random upserts and deletes into
// partitioned primary-key tables of every key layout (the key with and
// without the partition column; NULL partitions where the key allows),
// tiers and restarts at random, and checks after every step that t$rt
// equals a model keyed per partition, then that after a drain t equals
// t$rt and the model, and that the changelog's last change of every key
// agrees with the model.
func TestPartitionedKeyModel(t *testing.T) {
	for name, pk := range partLayouts {
		t.Run(name, func(t *testing.T) {
			rng, seed := seeded(t, 3)
			e := open(t, t.TempDir())
			ctx := context.Background()
			createPartTable(t, e, "p", pk, 1+rng.IntN(3))
			days := []*string{str("d1"), str("d2"), str("d3")}
			if !containsString(pk, "dt") {
				days = append(days, nil) // the default partition
			}
			model := map[string]string{}
			keyOf := func(r partRow) string {
				dt := "NULL"
				if r.dt != nil {
					dt = *r.dt
				}
				return fmt.Sprintf("%d/%s", r.id, dt)
			}
			rows := func() []string {
				var out []string
				for k, v := range model {
					out = append(out, k+"="+v)
				}
				sort.Strings(out)
				return out
			}
			for step := 0; step < 80; step++ {
				switch op := rng.IntN(10); {
				case op < 6:
					batch := make([]partRow, 1+rng.IntN(20))
					for i := range batch {
						r := partRow{id: rng.Int64N(12), dt: days[rng.IntN(len(days))], v: fmt.Sprintf("s%d-%d", step, i),
							kind: []string{"+I", "+U", "-D", "-U", "+I", "+I"}[rng.IntN(6)]}
						if r.kind == "-D" || r.kind == "-U" {
							delete(model, keyOf(r))
						} else {
							model[keyOf(r)] = r.v
						}
						batch[i] = r
					}
					writePart(t, e, "p", batch...)
				case op < 9:
					_, err := e.tr.TierTable(ctx, "db", "p")
					require.NoError(t, err, "step %d seed %d", step, seed)
				default:
					e = e.reopen(t)
				}
				require.Equal(t, rows(), scanPart(t, e, "p", true), "t$rt, step %d seed %d", step, seed)
			}
			before := scanPart(t, e, "p", true)
			require.NoError(t, e.tr.Drain(ctx, "db", "p"))
			require.Equal(t, before, scanPart(t, e, "p", false), "t after the drain is t$rt before it, seed %d", seed)
			require.Equal(t, rows(), scanPart(t, e, "p", false), "t after the drain, seed %d", seed)
			require.Equal(t, rows(), scanPart(t, e, "p", true), "t$rt after the drain, seed %d", seed)

			// The changelog: a key's last change leaves it as the model has it.
			r, err := e.ls.Changelog(ctx, "db", "p")
			require.NoError(t, err)
			defer r.Release()
			last := map[string]string{} // key -> value, "" when deleted
			for r.Next() {
				rec := r.RecordBatch()
				kinds := rec.Column(0).(*array.String)
				ids := rec.Column(4).(*array.Int64)
				dts := rec.Column(5).(*array.String)
				vs := rec.Column(6).(*array.String)
				for i := 0; i < int(rec.NumRows()); i++ {
					row := partRow{id: ids.Value(i)}
					if dts.IsValid(i) {
						row.dt = str(dts.Value(i))
					}
					switch kinds.Value(i) {
					case "+I", "+U":
						last[keyOf(row)] = vs.Value(i)
					case "-D":
						last[keyOf(row)] = ""
					}
				}
			}
			require.NoError(t, r.Err())
			require.NotEmpty(t, last)
			for k, v := range last {
				require.Equal(t, model[k], v, "changelog of %s, seed %d", k, seed)
			}
		})
	}
}

// TestPartitionValueWithNULIsAcknowledgedButNeverTiered: a partition value
// holding a NUL byte was acknowledged into the log, and then no round of
// the table could ever commit (the lake could not name its directory), so
// the table stopped tiering for good. The lake escapes NUL in partition
// paths now, as Java Paimon does: the row tiers and reads back.
func TestPartitionValueWithNULIsAcknowledgedButNeverTiered(t *testing.T) {
	e := open(t, t.TempDir())
	ctx := context.Background()
	createPartTable(t, e, "t", []string{"id", "dt"}, 1)
	rec := partBatch([]partRow{{id: 1, dt: str("ok"), v: "x"}, {id: 2, dt: str("a\x00b"), v: "y"}})
	_, err := e.ls.Write(ctx, "db", "t", rec)
	rec.Release()
	require.NoError(t, err)
	_, err = e.tr.TierTable(ctx, "db", "t")
	require.NoError(t, err)
	require.Equal(t, []string{"1/ok=x", "2/a\x00b=y"}, scanPart(t, e, "t", false))
}

// TestLongPartitionValueIsAcknowledgedButNeverTiered: a partition value
// whose directory name ("dt=<value>", escaped) is longer than a file system
// holds in one path component was acknowledged into the log, and then no
// round of the table could commit. The write is refused now, naming the
// column and the row, and the table keeps tiering; a value that fits only
// unescaped is judged by its escaped length.
func TestLongPartitionValueIsAcknowledgedButNeverTiered(t *testing.T) {
	e := open(t, t.TempDir())
	ctx := context.Background()
	createPartTable(t, e, "t", []string{"id", "dt"}, 1)
	fits := strings.Repeat("x", 255-len("dt="))
	for _, bad := range []string{fits + "x", strings.Repeat("/", 100)} {
		rec := partBatch([]partRow{{id: 1, dt: str("ok"), v: "x"}, {id: 2, dt: str(bad), v: "y"}})
		_, err := e.ls.Write(ctx, "db", "t", rec)
		rec.Release()
		require.ErrorIs(t, err, lakestream.ErrInvalidBatch)
		require.ErrorContains(t, err, `partition column "dt", row 1`)
	}
	writePart(t, e, "t", partRow{id: 1, dt: str(fits), v: "x"})
	_, err := e.tr.TierTable(ctx, "db", "t")
	require.NoError(t, err)
	require.Equal(t, []string{"1/" + fits + "=x"}, scanPart(t, e, "t", false))
}
