package paimontype

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func nestedArray(depth int, elem string) string {
	return strings.Repeat("ARRAY<", depth) + elem + strings.Repeat(">", depth)
}

// A CREATE TABLE with an ARRAY nested six million deep overflowed the stack;
// 11000 deep wrote a 363 MB schema file; 1000 deep took minutes to load.
//
// Work is measured in allocations, which do not depend on the machine's
// load: refusing any depth costs what refusing the first level too deep
// does.
func TestDeeplyNestedTypeRefusedFast(t *testing.T) {
	base := testing.AllocsPerRun(1, func() { _, _ = ParseType(nestedArray(MaxTypeDepth+1, "INT")) })
	for _, depth := range []int{MaxTypeDepth + 1, 1000, 11000, 6_000_000} {
		s := nestedArray(depth, "INT")
		var err error
		allocs := testing.AllocsPerRun(1, func() { _, err = ParseType(s) })
		require.ErrorIs(t, err, ErrTypeTooDeep, "depth %d", depth)
		require.Less(t, len(err.Error()), 400, "the error quotes the type clipped")
		require.LessOrEqual(t, allocs, base+8, "depth %d: refusing it allocates more than refusing depth %d", depth, MaxTypeDepth+1)
	}
	for _, s := range []string{
		strings.Repeat("MAP<INT, ", MaxTypeDepth+1) + "INT" + strings.Repeat(">", MaxTypeDepth+1),
		strings.Repeat("MULTISET<", MaxTypeDepth+1) + "INT" + strings.Repeat(">", MaxTypeDepth+1),
		strings.Repeat("ROW(a ", MaxTypeDepth+1) + "INT" + strings.Repeat(")", MaxTypeDepth+1),
		strings.Repeat("ROW<a ", MaxTypeDepth+1) + "INT" + strings.Repeat(">", MaxTypeDepth+1),
		strings.Repeat("((((", 1000),
	} {
		_, err := ParseType(s)
		require.ErrorIs(t, err, ErrTypeTooDeep, "%.40s", s)
	}
}

func TestTypeAtMaxDepthParsesFast(t *testing.T) {
	for _, s := range []string{
		nestedArray(MaxTypeDepth, "DECIMAL(10, 2)"),
		strings.Repeat("MAP<INT, ", MaxTypeDepth) + "INT" + strings.Repeat(">", MaxTypeDepth),
		strings.Repeat("ROW(a ", MaxTypeDepth) + "TIMESTAMP(3)" + strings.Repeat(")", MaxTypeDepth),
	} {
		dt, err := ParseType(s)
		require.NoError(t, err)
		back, err := ParseType(dt.String())
		require.NoError(t, err)
		require.Equal(t, dt, back)
		// A few allocations per level, not per level squared.
		allocs := testing.AllocsPerRun(1, func() { _, _ = ParseType(s) })
		require.Less(t, allocs, float64(20*MaxTypeDepth), "%.30s", s)
	}
}

// prettyNestedSchema is a schema file as another engine might write it: one
// column whose type is an ARRAY nested depth deep, in Jackson's layout.
func prettyNestedSchema(depth int) []byte {
	var inner any = "INT"
	for range depth {
		inner = JSONObject{{"type", "ARRAY"}, {"element", inner}}
	}
	return JacksonPretty(JSONObject{{"version", 3}, {"id", 0},
		{"fields", []any{JSONObject{{"id", 0}, {"name", "a"}, {"type", inner}}}},
		{"highestFieldId", 0}, {"partitionKeys", []any{}}, {"primaryKeys", []any{}},
		{"options", JSONObject{}}, {"timeMillis", 0}})
}

// A schema file nested deeper than MaxTypeDepth, as another engine could
// write it, is refused with a clear error, fast.
func TestDeeplyNestedSchemaFileRefusedFast(t *testing.T) {
	decode := func(b []byte) (allocs float64, err error) {
		allocs = testing.AllocsPerRun(5, func() {
			var s TableSchema
			err = json.Unmarshal(b, &s)
		})
		return allocs, err
	}
	base, _ := decode(prettyNestedSchema(MaxTypeDepth + 1))
	for _, depth := range []int{MaxTypeDepth + 1, 1000, 2000} {
		allocs, err := decode(prettyNestedSchema(depth))
		require.ErrorIs(t, err, ErrTypeTooDeep, "depth %d", depth)
		if depth == MaxTypeDepth+1 {
			require.Contains(t, err.Error(), `field "a"`)
		}
		// The same depth as base moved by 2 between runs under -race (a
		// clean-clone CI failed on 298 > 296); decoding depth 1000 whole
		// costs thousands more.
		require.LessOrEqual(t, allocs, base+32, "depth %d: refused after decoding it", depth)
	}
	// Composite types spelled as strings count too.
	b := []byte(`{"id": 0, "name": "a", "type": {"type": "ARRAY", "element": "` + nestedArray(MaxTypeDepth, "INT") + `"}}`)
	var f DataField
	require.ErrorIs(t, json.Unmarshal(b, &f), ErrTypeTooDeep)
}

// Depth 1000 took 105 s to load: encoding/json called DataType.UnmarshalJSON
// at every level, each validating its whole (pretty-printed, so quadratic in
// depth) subtree again. Decoding is linear now.
func TestNestedSchemaFileLoadsInLinearTime(t *testing.T) {
	// Allocations per level stay the same from depth 8 to depth 32 (a
	// quadratic decoder's would grow fourfold).
	perLevel := func(depth int) float64 {
		b := prettyNestedSchema(depth)
		return testing.AllocsPerRun(5, func() {
			var s TableSchema
			require.NoError(t, json.Unmarshal(b, &s))
		}) / float64(depth)
	}
	require.Less(t, perLevel(MaxTypeDepth), 1.5*perLevel(8))
	b := prettyNestedSchema(MaxTypeDepth)
	var s TableSchema
	require.NoError(t, json.Unmarshal(b, &s))
	dt := s.Fields[0].Type
	for range MaxTypeDepth {
		require.Equal(t, TypeArray, dt.Root)
		dt = *dt.Elem
	}
	require.Equal(t, TypeInt, dt.Root)
	out, err := s.MarshalJSON()
	require.NoError(t, err)
	require.Equal(t, string(b), string(out))
}

// The deepest schema file a type within MaxTypeDepth needs, ROWs all the
// way down, still loads.
func TestRowsAtMaxDepthRoundTripThroughSchemaFile(t *testing.T) {
	dt, err := ParseType(strings.Repeat("ROW(a ", MaxTypeDepth-1) + "ROW(b INT 'c')" + strings.Repeat(")", MaxTypeDepth-1))
	require.NoError(t, err)
	ts, err := NewTableSchema(Schema{Columns: []Column{{Name: "r", Type: dt}}}, 1)
	require.NoError(t, err)
	b, err := ts.MarshalJSON()
	require.NoError(t, err)
	var back TableSchema
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, ts.Fields, back.Fields)
}

// A field without a type decoded to the zero DataType, which later printed
// as UNKNOWN(0) and mapped to Arrow's null type.
func TestSchemaFieldWithoutTypeRefused(t *testing.T) {
	var f DataField
	require.Error(t, json.Unmarshal([]byte(`{"id": 1, "name": "a"}`), &f))
	require.Error(t, json.Unmarshal([]byte(`{"id": 1, "name": "a", "type": null}`), &f))
	require.Error(t, json.Unmarshal([]byte(`{"id": 1.5, "name": "a", "type": "INT"}`), &f))
	require.NoError(t, json.Unmarshal([]byte(`{"id": 1, "name": "a", "type": "INT", "description": null}`), &f))
	require.Equal(t, DataField{ID: 1, Name: "a", Type: DataType{Root: TypeInt}}, f)
	var tt DataType
	require.True(t, errors.Is(json.Unmarshal([]byte(`{"type": "ROW", "fields": [{"id": 2, "name": "x", "type": `+
		`{"type": "ROW", "fields": []}}]}`), &tt), nil))
}

// ROW<\xff INT> parsed, and the schema file then named the field "\ufffd":
// JSON holds only Unicode text.
func TestTypeWithInvalidUTF8NameRefused(t *testing.T) {
	for _, s := range []string{"ROW<\xff INT>", "ROW<`a\xc3` INT>", "ROW<a INT '\xff'>"} {
		_, err := ParseType(s)
		require.ErrorContains(t, err, "not valid UTF-8", "%q", s)
	}
	dt, err := ParseType("ROW<`\u00e9t\u00e9` INT 'caf\u00e9'>")
	require.NoError(t, err)
	js, err := json.Marshal(dt)
	require.NoError(t, err)
	var back DataType
	require.NoError(t, json.Unmarshal(js, &back))
	require.Equal(t, dt, back)
}
