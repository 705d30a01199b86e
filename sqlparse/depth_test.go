package sqlparse

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A 40 MB CREATE TABLE with an ARRAY nested six million deep overflowed the
// server's stack; the type is refused where the statement is parsed. Here
// only brackets are counted, so one level more passes (the lake refuses it).
func TestCreateTableDeeplyNestedTypeRefusedFast(t *testing.T) {
	for _, depth := range []int{MaxTypeDepth + 2, 1000, 200_000} {
		sql := "CREATE TABLE t (a " + strings.Repeat("ARRAY<", depth) + "INT" + strings.Repeat(">", depth) + ")"
		start := time.Now()
		_, err := ParseCreateTable(sql)
		var pe *Error
		if !errors.As(err, &pe) || !strings.Contains(pe.Msg, "nested deeper than 32 levels") {
			t.Fatalf("depth %d: err = %v", depth, err)
		}
		if len(err.Error()) > 300 {
			t.Fatalf("depth %d: error of %d bytes", depth, len(err.Error()))
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("depth %d: took %v", depth, took)
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
