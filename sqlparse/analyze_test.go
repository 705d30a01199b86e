package sqlparse

import (
	"reflect"
	"testing"
)

// analyzeAgrees fails t unless Analyze(sql) is what Classify, Hint and
// Params each return for sql.
func analyzeAgrees(t *testing.T, sql string) {
	t.Helper()
	a := Analyze(sql)
	ps, n, err := Params(sql)
	want := Analysis{Kind: Classify(sql), Hint: Hint(sql), Params: ps, NumParams: n, ParamsErr: err}
	if !reflect.DeepEqual(a, want) {
		t.Fatalf("Analyze(%q) = %+v, the passes one by one %+v", sql, a, want)
	}
}

func TestAnalyzeIsEachPassInOne(t *testing.T) {
	for _, tc := range classifyTests {
		analyzeAgrees(t, tc.sql)
	}
	for _, sql := range []string{
		"SELECT * FROM t /*+ OPTIONS('scan.snapshot-id'='3') */ WHERE a = ?",
		"SELECT $2, $1, $2", "SELECT ?, $1", "SELECT $A", "SELECT 'unterminated ?",
		"INSERT INTO t VALUES (?, ?)", "SELECT 1; SELECT ?", "SELECT \x00 ?",
	} {
		analyzeAgrees(t, sql)
	}
}
