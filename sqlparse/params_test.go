package sqlparse

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParams(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want []int // parameter index per placeholder, in text order
		n    int
		err  string
	}{
		{sql: "SELECT 1", n: 0},
		{sql: "SELECT * FROM t WHERE a = ? AND b = ?", want: []int{0, 1}, n: 2},
		{sql: "SELECT '?', \"?\", ? -- ?\n /* ? */ FROM t", want: []int{0}, n: 1},
		{sql: "SELECT $2, $1, $2", want: []int{1, 0, 1}, n: 2},
		{sql: "SELECT $tag$ ? $tag$, E'\\' ?', ?", want: []int{0}, n: 1},
		{sql: "SELECT $$?$$, ?", want: []int{0}, n: 1},
		{sql: "SELECT ?, $1", err: "mixes ? and $N"},
		{sql: "SELECT $2", err: "parameter $1 is missing"},
		{sql: "SELECT $0", err: "numbered from $1"},
		// DuckDB counts $A as a (named) parameter; flightd found none
		// (FuzzStatementSplitAgreesWithDuckDB).
		{sql: "SELeCT $A/*0;*/", err: "named parameter $A"},
		{sql: "SELECT 1 FROM t$a WHERE x = '$b'", want: nil},
		{sql: "SELECT 'unterminated ?", n: 0},
	} {
		ps, n, err := Params(tc.sql)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.sql)
			continue
		}
		require.NoError(t, err, tc.sql)
		require.Equal(t, tc.n, n, tc.sql)
		var got []int
		for _, p := range ps {
			got = append(got, p.Index)
			require.Contains(t, []string{"?", "$1", "$2"}, tc.sql[p.Pos:p.End], tc.sql)
		}
		require.Equal(t, tc.want, got, tc.sql)
	}
}

func TestSubstitute(t *testing.T) {
	sql := "SELECT * FROM t WHERE a = $2 AND b = $1 OR c = $2"
	ps, n, err := Params(sql)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, "SELECT * FROM t WHERE a = 'x' AND b = 7 OR c = 'x'", Substitute(sql, ps, []string{"7", "'x'"}))

	// A value never runs into its neighbours: no comment from 5--3, no 3e1.
	sql = "SELECT 5-?, -?, ?e1, (?)"
	ps, _, err = Params(sql)
	require.NoError(t, err)
	require.Equal(t, "SELECT 5- -3, - -4, 3 e1, (2)", Substitute(sql, ps, []string{"-3", "-4", "3", "2"}))
	toks, lerr := lex(Substitute(sql, ps, []string{"-3", "-4", "3", "2"}))
	require.Nil(t, lerr)
	require.Len(t, toks, 17, "every value stays its own tokens")
}

func TestInsertValuesRow(t *testing.T) {
	for _, tc := range []struct {
		sql   string
		elems []string
	}{
		{"INSERT INTO t VALUES (?, ?)", []string{"?", "?"}},
		{"insert into db.t (a, b) values (?, f(?, 1), [1, 2]) ;", []string{"?", "f(?, 1)", "[1, 2]"}},
		{"INSERT INTO t VALUES (1, 'a,b')", []string{"1", "'a,b'"}},
		{"INSERT INTO t VALUES (?, random(), 'random()')", []string{"?", "random()", "'random()'"}},
		{"INSERT INTO t VALUES ({'a': 1, 'b': ?}, ?)", []string{"{'a': 1, 'b': ?}", "?"}},
		{"INSERT INTO t VALUES (1), (2)", nil},
		{"INSERT INTO t SELECT ?", nil},
		{"INSERT INTO t VALUES (1) ORDER BY 1", nil},
		{"INSERT INTO t VALUES ()", nil},
		{"SELECT ?", nil},
	} {
		row, ok := InsertValuesRow(tc.sql)
		require.Equal(t, strings.Contains(tc.sql, "random("), row.Volatile, tc.sql)
		if tc.elems == nil {
			require.False(t, ok, tc.sql)
			continue
		}
		require.True(t, ok, tc.sql)
		require.Equal(t, byte('('), tc.sql[row.Pos], tc.sql)
		require.Equal(t, byte(')'), tc.sql[row.End-1], tc.sql)
		var got []string
		for _, e := range row.Elems {
			got = append(got, tc.sql[e[0]:e[1]])
		}
		require.Equal(t, tc.elems, got, tc.sql)
	}
}
