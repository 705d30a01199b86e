package lake

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/expr"
	"github.com/flightd/flightd/lake/manifest"
	"github.com/flightd/flightd/lake/paimontype"
)

func TestTruncateBounds(t *testing.T) {
	for _, c := range []struct {
		in, min, max string
		n            int
		ok           bool
	}{
		{"abc", "abc", "abc", 3, true},
		{"abcd", "abc", "abd", 3, true},
		{"ab", "ab", "ab", 16, true},
		{"", "", "", 4, true},
		{"aé€😀x", "aé€😀", "aé€😁", 4, true},
		{"a\U0010FFFFz", "a\U0010FFFF", "b", 2, true},                   // the last code point cannot grow: the one before does
		{"\U0010FFFF\U0010FFFFz", "\U0010FFFF\U0010FFFF", "", 2, false}, // none can: no bound
		{"a\uD7FFz", "a\uD7FF", "a\uE000", 2, true},                     // skip the surrogates
		{"zzz\xffq", "zzz", "zz{", 3, true},
	} {
		require.Equal(t, c.min, truncateMin(c.in, c.n), "min of %q", c.in)
		max, ok := truncateMax(c.in, c.n)
		require.Equal(t, c.ok, ok, "max of %q", c.in)
		if ok {
			require.Equal(t, c.max, max, "max of %q", c.in)
			require.LessOrEqual(t, c.min, c.in)
			require.GreaterOrEqual(t, max, c.in)
		}
	}
	_, ok := truncateMax("a\xffbcd", 2) // invalid UTF-8 in the kept prefix
	require.False(t, ok)
}

// Randomized: truncated bounds always bound the value, in byte order.
func TestTruncateBoundsRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []rune{'a', 'b', 'z', 'é', '€', '\uD7FF', '\uE000', '\uFFFF', '\U0001F600', '\U0010FFFF', 0, 0x7f}
	for i := 0; i < 20000; i++ {
		var sb strings.Builder
		for k := rng.IntN(12); k > 0; k-- {
			sb.WriteRune(alphabet[rng.IntN(len(alphabet))])
		}
		s, n := sb.String(), 1+rng.IntN(6)
		lo := truncateMin(s, n)
		require.LessOrEqual(t, lo, s)
		require.LessOrEqual(t, len([]rune(lo)), n)
		if hi, ok := truncateMax(s, n); ok {
			require.GreaterOrEqual(t, hi, s, "max of %q (%d)", s, n)
			require.LessOrEqual(t, len([]rune(hi)), n)
		}
	}
}

func TestStatsModeOptions(t *testing.T) {
	for _, ok := range []string{"none", "COUNTS", "Full", "truncate(1)", "TRUNCATE(200)"} {
		_, err := parseStatsMode(ok)
		require.NoError(t, err, ok)
	}
	for _, bad := range []string{"truncate(0)", "truncate(-1)", "truncate", "partial", "truncate(99999999999999)"} {
		_, err := parseStatsMode(bad)
		require.Error(t, err, bad)
	}
	c := newTestCatalog(t)
	_, err := c.CreateTable(t.Context(), "db", "t", paimontype.Schema{Columns: testCols, Options: map[string]string{"fields.name.stats-mode": "truncate"}}, false)
	require.ErrorIs(t, err, ErrInvalidOption)
	require.ErrorContains(t, err, "fields.name.stats-mode")
	_, err = c.CreateTable(t.Context(), "db", "t", paimontype.Schema{Columns: testCols, Options: map[string]string{"metadata.stats-mode": "some"}}, false)
	require.ErrorIs(t, err, ErrInvalidOption)
	_, err = c.CreateTable(t.Context(), "db", "t", paimontype.Schema{Columns: testCols}, false)
	require.NoError(t, err)
	_, err = c.AlterTableOptions(context.Background(), "db", "t", map[string]string{"metadata.stats-mode": "truncate(x)"})
	require.ErrorIs(t, err, ErrInvalidOption)
	_, err = c.AlterTableOptions(context.Background(), "db", "t", map[string]string{"metadata.stats-mode": "counts"})
	require.NoError(t, err)
}

// fileStats returns the one data file's decoded value and key statistics.
func fileStats(t *testing.T, tb *Table, s *Snapshot) (f manifest.DataFileMeta, vmin, vmax, kmin, kmax []any) {
	t.Helper()
	entries, _, err := tb.dataFiles(context.Background(), s)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	f = entries[0].File
	names := f.ValueStatsCols
	if names == nil {
		for _, fd := range tb.schema.Fields {
			names = append(names, fd.Name)
		}
	}
	var types []paimontype.DataType
	for _, n := range names {
		types = append(types, tb.schema.Fields[tb.schema.FieldIndex(n)].Type)
	}
	vmin, err = decodeStatsRow(types, f.ValueStats.MinValues)
	require.NoError(t, err)
	vmax, err = decodeStatsRow(types, f.ValueStats.MaxValues)
	require.NoError(t, err)
	if tb.schema.HasPrimaryKey() {
		var kt []paimontype.DataType
		for _, n := range tb.schema.TrimmedPrimaryKeys() {
			kt = append(kt, tb.schema.Fields[tb.schema.FieldIndex(n)].Type)
		}
		kmin, err = decodeStatsRow(kt, f.KeyStats.MinValues)
		require.NoError(t, err)
		kmax, err = decodeStatsRow(kt, f.KeyStats.MaxValues)
		require.NoError(t, err)
	}
	return f, vmin, vmax, kmin, kmax
}

// The statistics written under each mode, as Java's collectors make them.
func TestStatsModesWritten(t *testing.T) {
	long := strings.Repeat("x", 20) + "1"
	longer := strings.Repeat("x", 20) + "2"
	cols := []paimontype.Column{{Name: "id", Type: mustType(t, "STRING")}, {Name: "name", Type: mustType(t, "STRING")},
		{Name: "bin", Type: mustType(t, "BYTES")}, {Name: "n", Type: mustType(t, "INT")}}
	write := func(t *testing.T, name string, pk bool, opts map[string]string) (manifest.DataFileMeta, []any, []any, []any, []any) {
		c := newTestCatalog(t)
		sc := paimontype.Schema{Columns: cols, Options: opts}
		if pk {
			sc.PrimaryKeys = []string{"id"}
			opts["bucket"] = "1"
		}
		tb, err := c.CreateTable(t.Context(), "db", name, sc, false)
		require.NoError(t, err)
		rec := buildStatsRows(t, tb, [][]any{{long + strings.Repeat("k", 200), long, []byte("b1"), int32(1)},
			{longer + strings.Repeat("k", 200), longer, []byte("b2"), nil}})
		defer rec.Release()
		ctx := context.Background()
		w := tb.NewWrite(ctx)
		var kinds []RowKind
		var seqs []int64
		if pk {
			kinds, seqs = []RowKind{Insert, Insert}, []int64{0, 1}
		}
		require.NoError(t, w.Write(ctx, 0, rec, kinds, seqs))
		s, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 1})
		require.NoError(t, err)
		entries, _, err := tb.dataFiles(ctx, s)
		require.NoError(t, err)
		require.Len(t, entries, 1)
		return fileStats(t, tb, s)
	}
	t.Run("default truncate(16), keys truncate(128), bytes no bounds", func(t *testing.T) {
		f, vmin, vmax, kmin, kmax := write(t, "d", true, map[string]string{})
		require.Nil(t, f.ValueStatsCols)
		require.Equal(t, []any{strings.Repeat("x", 16), strings.Repeat("x", 16), nil, int32(1)}, vmin)
		require.Equal(t, []any{strings.Repeat("x", 15) + "y", strings.Repeat("x", 15) + "y", nil, int32(1)}, vmax)
		require.Equal(t, []any{(long + strings.Repeat("k", 200))[:128]}, kmin)
		require.Equal(t, []any{(longer + strings.Repeat("k", 200))[:127] + "l"}, kmax)
		require.Equal(t, int64(1), *f.ValueStats.NullCounts[3])
	})
	t.Run("full, counts, none per field", func(t *testing.T) {
		f, vmin, vmax, _, _ := write(t, "f", false, map[string]string{"metadata.stats-mode": "full",
			"fields.name.stats-mode": "counts", "fields.n.stats-mode": "none"})
		require.Equal(t, []string{"id", "name", "bin"}, f.ValueStatsCols)
		require.Equal(t, []any{long + strings.Repeat("k", 200), nil, nil}, vmin)
		require.Equal(t, []any{longer + strings.Repeat("k", 200), nil, nil}, vmax)
		require.Equal(t, int64(0), *f.ValueStats.NullCounts[1])
	})
	t.Run("none everywhere", func(t *testing.T) {
		f, vmin, vmax, kmin, _ := write(t, "n", true, map[string]string{"metadata.stats-mode": "none",
			"fields._KEY_id.stats-mode": "truncate(2)"})
		require.Equal(t, []string{}, f.ValueStatsCols)
		require.Empty(t, vmin)
		require.Empty(t, vmax)
		require.Equal(t, []any{"xx"}, kmin)
	})
}

// buildStatsRows builds a record of tb's columns from rows of values in
// column order (nil: null).
func buildStatsRows(t *testing.T, tb *Table, rows [][]any) arrow.RecordBatch {
	t.Helper()
	sc := tb.Schema().ArrowSchema()
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, r := range rows {
		for i := range sc.Fields() {
			if r[i] == nil {
				b.Field(i).AppendNull()
				continue
			}
			switch fb := b.Field(i).(type) {
			case *array.Int32Builder:
				fb.Append(r[i].(int32))
			case *array.StringBuilder:
				fb.Append(r[i].(string))
			case *array.BinaryBuilder:
				fb.Append(r[i].([]byte))
			default:
				t.Fatalf("column %d: %T", i, fb)
			}
		}
	}
	return b.NewRecordBatch()
}

// Randomized: with truncated statistics over values with long shared
// prefixes, a pruned scan keeps every row that matches the filter (compared
// with a full scan), on an append table (value statistics) and a
// primary-key table (key statistics), across commits and a compaction.
func TestPruningWithTruncatedStatsKeepsMatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 11))
	prefixes := []string{strings.Repeat("p", 30), strings.Repeat("p", 29) + "q", strings.Repeat("é", 20), strings.Repeat("\U0010FFFF", 5), ""}
	tails := []string{"", "a", "b", "zz", "é", "\U0010FFFF", "\uD7FF", "~"}
	value := func() string {
		s := prefixes[rng.IntN(len(prefixes))]
		for k := rng.IntN(4); k > 0; k-- {
			s += tails[rng.IntN(len(tails))]
		}
		return s
	}
	for trial := 0; trial < 6; trial++ {
		n := 1 + rng.IntN(20)
		mode := fmt.Sprintf("truncate(%d)", n)
		pk := trial%2 == 1
		c := newTestCatalog(t)
		opts := map[string]string{"metadata.stats-mode": mode, "fields._KEY_name.stats-mode": mode}
		sc := paimontype.Schema{Columns: []paimontype.Column{{Name: "name", Type: mustType(t, "STRING")}, {Name: "id", Type: mustType(t, "BIGINT")}}, Options: opts}
		if pk {
			sc.PrimaryKeys = []string{"name"}
			opts["bucket"] = "1"
		}
		tb, err := c.CreateTable(ctx, "db", fmt.Sprint("t", trial), sc, false)
		require.NoError(t, err)
		var all []string
		var latest int64
		for commit := 0; commit < 8; commit++ {
			var rows []map[string]any
			for k := 1 + rng.IntN(5); k > 0; k-- {
				v := value()
				rows = append(rows, map[string]any{"name": v, "id": int64(commit)})
				all = append(all, v)
			}
			if pk { // one version per key within a write
				seen := map[string]bool{}
				rows = slices.DeleteFunc(rows, func(r map[string]any) bool {
					d := seen[r["name"].(string)]
					seen[r["name"].(string)] = true
					return d
				})
			}
			latest = commitAny(t, tb, rows).ID
		}
		check := func(s *Snapshot) {
			// every name of s, read once: a query's expected names are those
			// of them that match, a pruned scan's must be the same
			stored := scanNames(t, tb, s, nil)
			for q := 0; q < 200; q++ {
				var p expr.Predicate
				v := all[rng.IntN(len(all))]
				switch rng.IntN(3) {
				case 0:
					v = truncateMin(v, rng.IntN(len([]rune(v))+1))
				case 1:
					v += tails[rng.IntN(len(tails))]
				}
				p = expr.Predicate{Column: "name", Op: expr.Op(rng.IntN(6)), Values: []any{v}}
				if p.Op == expr.OpIn {
					p.Values = append(p.Values, all[rng.IntN(len(all))])
				}
				want := matching(stored, p)
				got := matching(scanNames(t, tb, s, []expr.Predicate{p}), p)
				require.Equal(t, want, got, "%s: %s %v %q", mode, p.Column, p.Op, p.Values)
			}
		}
		s, err := tb.Snapshot(ctx, latest)
		require.NoError(t, err)
		check(s)
		if pk {
			cs, err := tb.Compact(ctx, CompactOptions{CommitUser: "u", ExpectedLatest: latest, MinFiles: 2})
			require.NoError(t, err)
			require.NotNil(t, cs)
			check(cs)
		} else {
			cs, err := tb.CompactAppend(ctx, CompactOptions{CommitUser: "u", ExpectedLatest: latest, MinFiles: 2})
			require.NoError(t, err)
			require.NotNil(t, cs)
			check(cs)
		}
	}
}

// scanNames scans s with filter and returns the names it reads, nulls left out.
func scanNames(t *testing.T, tb *Table, s *Snapshot, filter []expr.Predicate) []string {
	t.Helper()
	rr, err := tb.Scan(context.Background(), s, ScanOptions{Columns: []string{"name"}, Filter: filter})
	require.NoError(t, err)
	defer rr.Release()
	var out []string
	for rr.Next() {
		col := rr.RecordBatch().Column(0).(*array.String)
		for i := 0; i < col.Len(); i++ {
			if !col.IsNull(i) {
				out = append(out, strings.Clone(col.Value(i)))
			}
		}
	}
	require.NoError(t, rr.Err())
	return out
}

// matching returns the names that satisfy p, sorted.
func matching(names []string, p expr.Predicate) []string {
	var out []string
	for _, v := range names {
		if stringMatches(v, p) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

func stringMatches(v string, p expr.Predicate) bool {
	c := p.Values[0].(string)
	switch p.Op {
	case expr.OpEq:
		return v == c
	case expr.OpLt:
		return v < c
	case expr.OpLe:
		return v <= c
	case expr.OpGt:
		return v > c
	case expr.OpGe:
		return v >= c
	case expr.OpIn:
		for _, x := range p.Values {
			if v == x.(string) {
				return true
			}
		}
	}
	return false
}
