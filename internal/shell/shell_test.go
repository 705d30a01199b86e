package shell

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFeederCutsStatementsAtTheirSemicolon(t *testing.T) {
	t.Parallel()
	var f feeder
	var got []statement
	for _, line := range []string{
		"-- a script",           // 1
		"SELECT 1 AS a,",        // 2
		"  ';' AS b; SELECT",    // 3
		"",                      // 4
		"2; /* c; */ SELECT $$", // 5
		"x;y$$;",                // 6
		"SELECT 'open",          // 7
	} {
		got = append(got, f.feed(line)...)
	}
	require.Equal(t, []statement{
		{text: "SELECT 1 AS a,\n  ';' AS b", line: 2},
		{text: "SELECT\n\n2", line: 3},
		{text: "SELECT $$\nx;y$$", line: 5},
	}, got)
	require.False(t, f.blank())
	_, ok, err := f.finish()
	require.True(t, ok)
	require.ErrorContains(t, err, "unterminated string literal")

	f = feeder{}
	f.feed("SELECT 1;")
	f.skip() // a backslash command
	f.feed("SELECT")
	f.feed("  2")
	st, ok, err := f.finish()
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, statement{text: "SELECT\n  2", line: 3}, st)
}

func TestFeederHistory(t *testing.T) {
	t.Parallel()
	var f feeder
	f.feed("SELECT 1,")
	require.Nil(t, f.history(), "no entry while a statement is under way")
	f.feed("   2;")
	require.Equal(t, []string{"SELECT 1, 2;"}, f.history())
	f.feed("SELECT 1 -- one")
	f.feed(", 2;")
	require.Equal(t, []string{"SELECT 1 -- one", ", 2;"}, f.history(), "a line comment keeps its lines apart")
	f.feed("SELECT 'abandoned")
	f.reset()
	require.True(t, f.blank())
	require.Nil(t, f.history())
}

func TestSplitName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []string
		err  string
	}{
		{in: "t", want: []string{"t"}},
		{in: "Shop.Orders", want: []string{"shop", "orders"}},
		{in: `shop."orders$rt"`, want: []string{"shop", "orders$rt"}},
		{in: `"My ""Db"""."a.b"`, want: []string{`My "Db"`, "a.b"}},
		{in: `shop."x`, err: "unterminated"},
		{in: "shop.", err: "empty name"},
		{in: `"a"b`, err: "expected '.'"},
	} {
		got, err := splitName(tc.in)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
}

func TestQuoteIdent(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"orders": "orders", "orders$rt": `"orders$rt"`, "default": `"default"`, "Shop": `"Shop"`,
		"t1": "t1", "1t": `"1t"`, `a"b`: `"a""b"`, "odd name": `"odd name"`,
	} {
		require.Equal(t, want, quoteIdent(in), in)
	}
}

func TestComplete(t *testing.T) {
	t.Parallel()
	s := New(nil, Options{})
	s.tables = &tableCache{valid: true, tables: [][2]string{
		{"default", "events"}, {"default", "events$rt"}, {"shop", "orders"}, {"shop", "orders$rt"},
	}}
	for _, tc := range []struct {
		name, line string
		pos        int // -1: the end
		head       string
		want       []string
		tail       string
	}{
		{name: "keyword in lower case", line: "sel", pos: -1, want: []string{"select"}},
		{name: "keyword in upper case", line: "SELECT * FR", pos: -1, head: "SELECT * ", want: []string{"FROM"}},
		{name: "qualified table", line: "SELECT * FROM shop.o", pos: -1, head: "SELECT * FROM ",
			want: []string{`shop."orders$rt"`, "shop.orders"}},
		{name: "typed without the quotes", line: "FROM shop.orders$", pos: -1, head: "FROM ",
			want: []string{`shop."orders$rt"`}},
		{name: "bare names of the current database", line: "FROM ev", pos: -1, head: "FROM ",
			want: []string{`"events$rt"`, "events"}},
		{name: "names and keywords", line: "FROM e", pos: -1, head: "FROM ",
			want: []string{`"events$rt"`, "events", "else", "end", "enforced", "except", "exists", "explain"}},
		{name: "database name", line: "FROM sh", pos: -1, head: "FROM ",
			want: []string{`shop."orders$rt"`, "shop.orders", "show"}},
		{name: "in the middle of a line", line: "SELECT * FROM sh WHERE x", pos: 16, head: "SELECT * FROM ",
			want: []string{`shop."orders$rt"`, "shop.orders", "show"}, tail: " WHERE x"},
		{name: "backslash command", line: `\ti`, pos: -1, want: []string{`\timing`}},
		{name: "table after \\d", line: `\d shop.`, pos: -1, head: `\d `, want: []string{`shop."orders$rt"`, "shop.orders"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pos := tc.pos
			if pos < 0 {
				pos = len([]rune(tc.line))
			}
			head, got, tail := s.complete(tc.line, pos)
			require.Equal(t, tc.head, head)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.tail, tail)
		})
	}
}
