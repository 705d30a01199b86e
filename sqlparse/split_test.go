package sqlparse

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSplit(t *testing.T) {
	t.Parallel()
	type stmt struct {
		text string
		line int
	}
	for _, tc := range []struct {
		name   string
		script string
		want   []stmt
		rest   string // what Split leaves unfinished
	}{
		{name: "two statements", script: "SELECT 1;\nSELECT 2;\n",
			want: []stmt{{"SELECT 1", 1}, {"SELECT 2", 2}}, rest: "\n"},
		{name: "no final semicolon", script: "SELECT 1; SELECT 2",
			want: []stmt{{"SELECT 1", 1}}, rest: " SELECT 2"},
		{name: "semicolon in strings", script: "SELECT ';', 'a'';b';SELECT E'\\';', \"x;y\";",
			want: []stmt{{"SELECT ';', 'a'';b'", 1}, {"SELECT E'\\';', \"x;y\"", 1}}, rest: ""},
		{name: "line comment", script: "-- first; not a statement\nSELECT 1 -- one; still one\n, 2;",
			want: []stmt{{"SELECT 1 -- one; still one\n, 2", 2}}, rest: ""},
		{name: "carriage return ends a line comment", script: "SELECT 1 --x\r;SELECT 2;",
			want: []stmt{{"SELECT 1", 1}, {"SELECT 2", 1}}, rest: ""},
		{name: "nested block comment", script: "/* a; /* b; */ c; */ SELECT /* ; */ 1;",
			want: []stmt{{"SELECT /* ; */ 1", 1}}, rest: ""},
		{name: "dollar quoting", script: "SELECT $$a;b$$, $x$ $$; $x$;\nSELECT $1;",
			want: []stmt{{"SELECT $$a;b$$, $x$ $$; $x$", 1}, {"SELECT $1", 2}}, rest: ""},
		{name: "empty statements dropped", script: ";; /* c */ ;\n\nSELECT 1;;",
			want: []stmt{{"SELECT 1", 3}}, rest: ""},
		{name: "unterminated string stays in rest", script: "SELECT 1;\nSELECT 'a;\nb",
			want: []stmt{{"SELECT 1", 1}}, rest: "\nSELECT 'a;\nb"},
		{name: "unterminated comment stays in rest", script: "SELECT 1; /* x;",
			want: []stmt{{"SELECT 1", 1}}, rest: " /* x;"},
		{name: "multi-line statement", script: "\n\nSELECT\n  1\n;",
			want: []stmt{{"SELECT\n  1", 3}}, rest: ""},
		{name: "quoted table name with dollar", script: `SELECT * FROM shop."t$rt";`,
			want: []stmt{{`SELECT * FROM shop."t$rt"`, 1}}, rest: ""},
		{name: "NUL byte leaves everything", script: "SELECT 1; SELECT '\x00';",
			want: nil, rest: "SELECT 1; SELECT '\x00';"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stmts, rest := Split(tc.script)
			var got []stmt
			for _, s := range stmts {
				require.Equal(t, s.Text, tc.script[s.Offset:s.Offset+len(s.Text)], "Offset")
				got = append(got, stmt{s.Text, s.Line})
			}
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.rest, tc.script[rest:])
		})
	}
}

func TestLast(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		text   string
		want   string
		line   int
		ok     bool
		errMsg string
	}{
		{name: "blank", text: "  \n", ok: false},
		{name: "only comments", text: "-- a\n/* b */\n", ok: false},
		{name: "statement without semicolon", text: "\n-- c\nSELECT 1 -- d", want: "SELECT 1", line: 3, ok: true},
		{name: "after the last statement", text: "SELECT 1;\nSELECT 2", want: "SELECT 2", line: 2, ok: true},
		{name: "nothing after the last statement", text: "SELECT 1; -- end", ok: false},
		{name: "unterminated string", text: "SELECT 1;\n\nSELECT 'abc", line: 3, ok: true, errMsg: "unterminated string literal"},
		{name: "unterminated block comment", text: "SELECT 1 /* x", line: 1, ok: true, errMsg: "unterminated block comment"},
		{name: "unterminated dollar string", text: "SELECT $a$ x", line: 1, ok: true, errMsg: "unterminated dollar-quoted string"},
		{name: "unterminated quoted identifier", text: "\nSELECT \"x", line: 2, ok: true, errMsg: "unterminated quoted identifier"},
		{name: "NUL byte", text: "SELECT 1;\nSELECT '\x00'", line: 2, ok: true, errMsg: "NUL byte"},
		{name: "invalid UTF-8", text: "SELECT '\xff'", line: 1, ok: true, errMsg: "invalid UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, ok, err := Last(tc.text)
			require.Equal(t, tc.ok, ok)
			if tc.errMsg != "" {
				var pe *Error
				require.True(t, errors.As(err, &pe), "%v", err)
				require.Contains(t, pe.Msg, tc.errMsg)
				require.Equal(t, tc.line, st.Line)
				require.Equal(t, pe.Offset, st.Offset)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, st.Text)
			if ok {
				require.Equal(t, tc.line, st.Line)
				require.Equal(t, st.Text, tc.text[st.Offset:st.Offset+len(st.Text)])
			}
		})
	}
}

// TestSplitAgreesWithStatements checks Split and Last against Statements,
// whose count the differential fuzz test holds to DuckDB's parser.
func TestSplitAgreesWithStatements(t *testing.T) {
	t.Parallel()
	for _, tc := range classifyTests {
		checkSplit(t, tc.sql)
	}
	for _, s := range []string{"SELECT 1; SELECT 2", "a;b;;c;", "SELECT ';' -- ;\n; x"} {
		checkSplit(t, s)
	}
}

// checkSplit checks that Split and Last never lose or invent a statement:
// together they find Statements' count, and the statements are
// substrings of the script in order.
func checkSplit(t *testing.T, sql string) {
	t.Helper()
	stmts, rest := Split(sql)
	require.True(t, rest >= 0 && rest <= len(sql), "rest %d of %q", rest, sql)
	prev := 0
	for _, s := range stmts {
		require.GreaterOrEqual(t, s.Offset, prev, "%q", sql)
		require.Equal(t, s.Text, sql[s.Offset:s.Offset+len(s.Text)], "%q", sql)
		require.Equal(t, 1+strings.Count(sql[:s.Offset], "\n"), s.Line, "%q", sql)
		prev = s.Offset + len(s.Text)
	}
	require.LessOrEqual(t, prev, rest, "%q", sql)
	last, ok, err := Last(sql)
	if err != nil {
		return // Statements counts the tokens before the error; DuckDB refuses the text
	}
	n := len(stmts)
	if ok {
		n++
		require.GreaterOrEqual(t, last.Offset, rest, "%q", sql)
	}
	require.Equal(t, Statements(sql), n, "%q", sql)
}
