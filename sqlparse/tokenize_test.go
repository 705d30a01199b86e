package sqlparse

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLex(t *testing.T) {
	type tok struct {
		kind tokenKind
		text string
	}
	tests := []struct {
		name string
		in   string
		want []tok
	}{
		{name: "empty", in: "", want: nil},
		{name: "only comments", in: " -- x\n /* y */ ", want: nil},
		{name: "identifiers fold", in: "Foo _bar a$1", want: []tok{{tokIdent, "foo"}, {tokIdent, "_bar"}, {tokIdent, "a$1"}}},
		{name: "unicode identifier", in: "Straße", want: []tok{{tokIdent, "straße"}}},
		{name: "quoted identifier", in: `"My ""T"".x$"`, want: []tok{{tokQuotedIdent, `My "T".x$`}}},
		{name: "backtick identifier", in: "`a``b`", want: []tok{{tokQuotedIdent, "a`b"}}},
		{name: "string", in: `'it''s'`, want: []tok{{tokString, "it's"}}},
		{name: "empty string", in: `''`, want: []tok{{tokString, ""}}},
		{name: "numbers", in: "1 10.5 .5 1e10 2E-3", want: []tok{{tokNumber, "1"}, {tokNumber, "10.5"}, {tokNumber, ".5"}, {tokNumber, "1e10"}, {tokNumber, "2E-3"}}},
		{name: "punctuation", in: "(),.=<>;*", want: []tok{{tokPunct, "("}, {tokPunct, ")"}, {tokPunct, ","}, {tokPunct, "."}, {tokPunct, "="}, {tokPunct, "<"}, {tokPunct, ">"}, {tokPunct, ";"}, {tokPunct, "*"}}},
		{name: "line comment", in: "a -- b ; c\nd", want: []tok{{tokIdent, "a"}, {tokIdent, "d"}}},
		{name: "line comment at end", in: "a --", want: []tok{{tokIdent, "a"}}},
		{name: "block comment", in: "a/* ; */b", want: []tok{{tokIdent, "a"}, {tokIdent, "b"}}},
		{name: "nested block comment", in: "a /* x /* y */ ; */ b", want: []tok{{tokIdent, "a"}, {tokIdent, "b"}}},
		{name: "minus is not a comment", in: "a-b", want: []tok{{tokIdent, "a"}, {tokPunct, "-"}, {tokIdent, "b"}}},
		{name: "escape string", in: `E'it\'s;' x`, want: []tok{{tokOtherString, `E'it\'s;'`}, {tokIdent, "x"}}},
		{name: "dollar string", in: "$$ a; 'b $$ $t$ $$ $t$ $1", want: []tok{{tokOtherString, "$$ a; 'b $$"}, {tokOtherString, "$t$ $$ $t$"}, {tokPunct, "$"}, {tokNumber, "1"}}},
		{name: "unicode space is a letter, as in DuckDB", in: "a\u00a0b", want: []tok{{tokIdent, "a\u00a0b"}}},
		{name: "line comment ends at CR", in: "a --x\rb", want: []tok{{tokIdent, "a"}, {tokIdent, "b"}}},
		{name: "dollar tag of any non-ASCII bytes", in: "$€$;$€$ ;", want: []tok{{tokOtherString, "$€$;$€$"}, {tokPunct, ";"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			toks, err := lex(tc.in)
			require.Nil(t, err)
			require.NotEmpty(t, toks)
			assert.Equal(t, tokEOF, toks[len(toks)-1].kind)
			var got []tok
			for _, tk := range toks[:len(toks)-1] {
				got = append(got, tok{tk.kind, tk.text})
				assert.True(t, tk.pos < tk.end && tk.end <= len(tc.in), "bad span %d..%d", tk.pos, tk.end)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestLexErrors(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		msg    string
		offset int
	}{
		{name: "unterminated string", in: "a 'abc", msg: "unterminated string literal", offset: 2},
		{name: "unterminated quoted identifier", in: `a "abc""`, msg: "unterminated quoted identifier", offset: 2},
		{name: "unterminated backtick", in: "`abc", msg: "unterminated quoted identifier", offset: 0},
		{name: "unterminated block comment", in: "a /* /* */", msg: "unterminated block comment", offset: 2},
		{name: "unterminated escape string", in: `E'abc\'`, msg: "unterminated string literal", offset: 0},
		{name: "unterminated dollar string", in: "$x$ abc", msg: "unterminated dollar-quoted string", offset: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			toks, err := lex(tc.in)
			require.NotNil(t, err)
			assert.Equal(t, tc.msg, err.Msg)
			assert.Equal(t, tc.offset, err.Offset)
			assert.Equal(t, tokEOF, toks[len(toks)-1].kind)
		})
	}
}

// TestLexRefusesInvalidUTF8: DuckDB refuses such text whole; flightd's lexer
// must not read a name out of it that DuckDB never would.
func TestLexRefusesInvalidUTF8(t *testing.T) {
	toks, err := lex("a\xffb")
	require.NotNil(t, err)
	require.Contains(t, err.Msg, "UTF-8")
	require.Equal(t, 1, err.Offset)
	require.Len(t, toks, 1)
	require.Equal(t, tokEOF, toks[0].kind)
}

// TestLexRefusesNUL: DuckDB's parser stops at a NUL byte, so text after
// one would be seen by flightd and not by DuckDB.
func TestLexRefusesNUL(t *testing.T) {
	_, err := lex("SELECT 1\x00; COPY x TO 'f'")
	require.NotNil(t, err)
	require.Equal(t, 8, err.Offset)
}

func TestHintFindsOnlyHintComments(t *testing.T) {
	for sql, want := range map[string]int{
		"SELECT * FROM t /*+ OPTIONS('scan.snapshot-id'='3') */": 16,
		"SELECT /*+ x */ 1":                  7,
		"SELECT '/*+ not a hint */' AS s":    -1,
		`SELECT 1 AS "/*+"`:                  -1,
		"SELECT /* plain */ 1":               -1,
		"SELECT 1 -- a line comment":         -1,
		"SELECT 1 /* outer /*+ nested */ */": 18,
		"SELECT 'unterminated":               -1,
	} {
		if got := Hint(sql); got != want {
			t.Errorf("Hint(%q) = %d, want %d", sql, got, want)
		}
	}
}
