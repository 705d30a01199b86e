package paimontype

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Fuzz targets for the decoders of text another engine (or a damaged file)
// can hand the lake: type strings and schema JSON. Seeds are below, plus
// testdata/fuzz/<target>.

// fuzzSeedTypes are type spellings of every kind, nested ones included.
var fuzzSeedTypes = []string{
	"BOOLEAN", "TINYINT", "SMALLINT", "INT NOT NULL", "BIGINT", "FLOAT", "DOUBLE PRECISION",
	"DECIMAL(38, 10)", "CHAR(3)", "VARCHAR(20)", "STRING", "BINARY(4)", "VARBINARY(9)", "BYTES",
	"DATE", "TIME(3)", "TIMESTAMP(9)", "TIMESTAMP(3) WITH LOCAL TIME ZONE", "TIMESTAMP_LTZ(6)",
	"ARRAY<INT NOT NULL>", "MULTISET<STRING>", "MAP<STRING, BIGINT> NOT NULL",
	"ROW<a INT, `b c` STRING 'a ''comment''', d ARRAY<ROW(x DOUBLE)>>",
	"ROW(a: INT)", nestedArray(MaxTypeDepth, "INT"), nestedArray(MaxTypeDepth+1, "INT"),
}

// typeDepth is the number of composite levels of t.
func typeDepth(t DataType) int {
	d := 0
	switch t.Root {
	case TypeArray, TypeMultiset:
		d = typeDepth(*t.Elem)
	case TypeMap:
		d = max(typeDepth(*t.Key), typeDepth(*t.Value))
	case TypeRow:
		for _, f := range t.Fields {
			d = max(d, typeDepth(f.Type))
		}
	default:
		return 0
	}
	return d + 1
}

// FuzzParseType: any text parses or fails with an error; a parsed type is
// within MaxTypeDepth, has an Arrow type, and its spelling and its JSON both
// read back as the same type.
func FuzzParseType(f *testing.F) {
	for _, s := range fuzzSeedTypes {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		dt, err := ParseType(s)
		if err != nil {
			if len(err.Error()) > 1000 {
				t.Fatalf("error of %d bytes", len(err.Error()))
			}
			return
		}
		if d := typeDepth(dt); d > MaxTypeDepth {
			t.Fatalf("ParseType(%q): depth %d", s, d)
		}
		_ = dt.ArrowType()
		back, err := ParseType(dt.String())
		if err != nil {
			t.Fatalf("ParseType(%q).String() = %q does not parse: %v", s, dt.String(), err)
		}
		if !reflect.DeepEqual(dt, back) {
			t.Fatalf("ParseType(%q) = %#v, its spelling %q reads as %#v", s, dt, dt.String(), back)
		}
		js, err := json.Marshal(dt)
		if err != nil {
			t.Fatalf("marshal %q: %v", s, err)
		}
		var fromJSON DataType
		if err := json.Unmarshal(js, &fromJSON); err != nil {
			t.Fatalf("ParseType(%q): its JSON %s does not read back: %v", s, js, err)
		}
		if !reflect.DeepEqual(dt, fromJSON) {
			t.Fatalf("ParseType(%q) = %#v, its JSON %s reads as %#v", s, dt, js, fromJSON)
		}
	})
}

// FuzzSchemaJSON: a schema file decodes or fails with an error; a decoded
// schema is within MaxTypeDepth and writes a file that reads back to the
// same schema and writes the same bytes again.
func FuzzSchemaJSON(f *testing.F) {
	f.Add(fuzzSeedSchema(f))
	f.Add([]byte(`{"id": 0, "fields": [{"id": 0, "name": "a", "type": "INT"}], "highestFieldId": 0}`))
	f.Add(prettyNestedSchema(MaxTypeDepth))
	f.Add(prettyNestedSchema(MaxTypeDepth + 1))
	f.Fuzz(func(t *testing.T, b []byte) {
		var s TableSchema
		if err := json.Unmarshal(b, &s); err != nil {
			return
		}
		for _, fd := range s.Fields {
			if d := typeDepth(fd.Type); d > MaxTypeDepth {
				t.Fatalf("field %q: depth %d", fd.Name, d)
			}
		}
		_ = s.ArrowSchema()
		out, err := s.MarshalJSON()
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		var back TableSchema
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("%s\nwrote\n%s\nwhich does not read back: %v", b, out, err)
		}
		again, err := back.MarshalJSON()
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		if string(out) != string(again) {
			t.Fatalf("not stable: %s\nthen\n%s", out, again)
		}
	})
}

// fuzzSeedSchema is the schema file of a primary-key table with nested
// columns and comments, as the lake writes it.
func fuzzSeedSchema(f *testing.F) []byte {
	var cols []Column
	for _, s := range []string{"id BIGINT", "name STRING", "tags ARRAY<STRING>", "m MAP<STRING, INT>",
		"r ROW<a INT, b DECIMAL(10, 2)>", "ts TIMESTAMP(3)"} {
		name, typ, _ := strings.Cut(s, " ")
		dt, err := ParseType(typ)
		require.NoError(f, err)
		cols = append(cols, Column{Name: name, Type: dt, Comment: "column " + name})
	}
	ts, err := NewTableSchema(Schema{Columns: cols, PrimaryKeys: []string{"id"},
		Options: map[string]string{"bucket": "2"}, Comment: "fuzz seeds"}, 1735689600000)
	require.NoError(f, err)
	b, err := ts.MarshalJSON()
	require.NoError(f, err)
	return b
}
