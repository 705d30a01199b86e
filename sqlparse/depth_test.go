package sqlparse

import (
	"errors"
	"strings"
	"testing"
)

// A 40 MB CREATE TABLE with an ARRAY nested six million deep overflowed the
// server's stack; the type is refused where the statement is parsed. Here
// only brackets are counted, so one level more passes (the lake refuses it).
func TestCreateTableDeeplyNestedTypeRefusedFast(t *testing.T) {
	stmt := func(depth int) string {
		return "CREATE TABLE t (a " + strings.Repeat("ARRAY<", depth) + "INT" + strings.Repeat(">", depth) + ")"
	}
	// Work in allocations (machine load does not change them): the lexer
	// reads the whole text, the parser stops at the first level too deep.
	perByte := func(depth int) float64 {
		sql := stmt(depth)
		return testing.AllocsPerRun(1, func() { _, _ = ParseCreateTable(sql) }) / float64(len(sql))
	}
	base := perByte(MaxTypeDepth + 2)
	for _, depth := range []int{MaxTypeDepth + 2, 1000, 200_000} {
		sql := stmt(depth)
		_, err := ParseCreateTable(sql)
		var pe *Error
		if !errors.As(err, &pe) || !strings.Contains(pe.Msg, "nested deeper than 32 levels") {
			t.Fatalf("depth %d: err = %v", depth, err)
		}
		if len(err.Error()) > 300 {
			t.Fatalf("depth %d: error of %d bytes", depth, len(err.Error()))
		}
		if pb := perByte(depth); pb > 2*base+0.01 {
			t.Fatalf("depth %d: %.3f allocations per byte, %.3f at depth %d", depth, pb, base, MaxTypeDepth+2)
		}
	}
	for _, typ := range []string{
		strings.Repeat("ARRAY<", MaxTypeDepth) + "DECIMAL(10, 2)" + strings.Repeat(">", MaxTypeDepth),
		strings.Repeat("ROW(a ", MaxTypeDepth) + "INT" + strings.Repeat(")", MaxTypeDepth),
	} {
		ct, err := ParseCreateTable("CREATE TABLE t (a " + typ + ")")
		if err != nil {
			t.Fatalf("%.30s: %v", typ, err)
		}
		if ct.Columns[0].Type != strings.ReplaceAll(typ, ", ", ",") && ct.Columns[0].Type != typ {
			t.Fatalf("type %q", ct.Columns[0].Type)
		}
	}
}
