package resultfmt

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/mattn/go-runewidth"
	"github.com/stretchr/testify/require"
)

// TestTableLayout pins the table flightd sql has always printed, which
// scripts and tests read.
func TestTableLayout(t *testing.T) {
	t.Parallel()
	mem := checkedAlloc(t)
	rec, _, err := array.RecordFromJSON(mem, arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "name", Type: arrow.BinaryTypes.String, Nullable: true}}, nil),
		strings.NewReader(`[{"id":1,"name":"ann"},{"id":22,"name":null}]`))
	require.NoError(t, err)
	defer rec.Release()
	require.Equal(t, "id | name\n---+-----\n1  | ann\n22 | NULL\n(2 rows)\n", string(write(t, Table, rec, Options{})))
	one := rec.NewSlice(0, 1)
	defer one.Release()
	require.Equal(t, "id | name\n---+-----\n1  | ann\n(1 row)\n", string(write(t, Table, one, Options{})))
}

func TestFit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		w      []int
		width  int
		want   []int
		shown  int
		within bool // the result must fit width
	}{
		{name: "no width fits nothing", w: []int{50, 60}, width: 0, want: []int{50, 60}, shown: 2},
		{name: "fits already", w: []int{10, 20}, width: 33, want: []int{10, 20}, shown: 2, within: true},
		{name: "widest cut first", w: []int{5, 100, 40}, width: 60, want: []int{5, 24, 24}, shown: 3, within: true},
		{name: "narrow columns keep their width", w: []int{3, 3, 200}, width: 40, want: []int{3, 3, 28}, shown: 3, within: true},
		{name: "hide from the right", w: []int{30, 30, 30, 30, 30}, width: 40, want: []int{16, 16}, shown: 2, within: true},
		{name: "one column too wide", w: []int{100}, width: 8, want: []int{8}, shown: 1, within: true},
		{name: "first of many too wide", w: []int{100, 100}, width: 8, want: []int{4}, shown: 1, within: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, shown := fit(tc.w, tc.width)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.shown, shown)
			if tc.within {
				n := 0
				for i, x := range got {
					n += x
					if i > 0 {
						n += 3
					}
				}
				if shown < len(tc.w) {
					n += 4
				}
				require.LessOrEqual(t, n, tc.width)
			}
		})
	}
}

func wideRecord(t *testing.T) arrow.RecordBatch {
	t.Helper()
	var fields []arrow.Field
	for _, n := range []string{"id", "description", "c", "d", "e", "f", "g", "h"} {
		fields = append(fields, arrow.Field{Name: n, Type: arrow.BinaryTypes.String, Nullable: true})
	}
	rec, _, err := array.RecordFromJSON(checkedAlloc(t), arrow.NewSchema(fields, nil), strings.NewReader(`[
{"id":"1","description":"a rather long description of the first row, in many words","c":"ccccccccccccccc","d":"日本語のテキスト","e":"eeeeeeeeeeeee","f":"f","g":"g","h":"h"},
{"id":"2","description":"line one\nline two","c":null}]`))
	require.NoError(t, err)
	return rec
}

func TestTableFitsTheWidth(t *testing.T) {
	t.Parallel()
	rec := wideRecord(t)
	defer rec.Release()
	t.Run("unfitted", func(t *testing.T) {
		out := string(write(t, Table, rec, Options{}))
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		require.Equal(t, "(2 rows)", lines[len(lines)-1])
		require.Contains(t, out, "a rather long description of the first row, in many words")
		require.Contains(t, out, `line one\nline two`, "a line break stays on its line")
		require.Contains(t, lines[3], "| NULL ")
	})
	for _, width := range []int{100, 60, 40, 20, 10} {
		out := string(write(t, Table, rec, Options{Width: width}))
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		for _, l := range lines {
			require.LessOrEqual(t, runewidth.StringWidth(l), width, "width %d: %q", width, l)
		}
		require.Len(t, lines, 5, "width %d: header, rule, 2 rows, count", width)
		require.True(t, strings.HasPrefix(lines[0], "id "), "width %d: %q", width, lines[0])
		require.True(t, strings.HasPrefix(lines[2], "1 "), "width %d: %q", width, lines[2])
		require.Contains(t, lines[2], "…", "width %d: a cut cell ends with an ellipsis", width)
	}
	out := string(write(t, Table, rec, Options{Width: 60}))
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.True(t, strings.HasSuffix(lines[0], "| …"), "%q", lines[0])
	require.Equal(t, "(2 rows, 4 of 8 columns hidden: e, f, g, h)", lines[4])
	require.Equal(t, "id | description     | c               | d               | …", lines[0])
	require.Equal(t, "---+-----------------+-----------------+-----------------+--", lines[1])
	require.Equal(t, "1  | a rather long … | ccccccccccccccc | 日本語のテキス… | …", lines[2])
	require.Equal(t, `2  | line one\nline… | NULL            | NULL            | …`, lines[3])
}

func TestTableCountsRowsItDoesNotShow(t *testing.T) {
	t.Parallel()
	mem := checkedAlloc(t)
	b := array.NewInt64Builder(mem)
	defer b.Release()
	for i := range 25 {
		b.Append(int64(i))
	}
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{col}, 25)
	defer rec.Release()
	out := string(write(t, Table, rec, Options{MaxRows: 10}))
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 13)
	require.Equal(t, "(25 rows, first 10 shown)", lines[12])
	require.Equal(t, "9", lines[11])
}
