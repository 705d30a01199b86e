package sqlparse

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Error is the error returned by every Parse function. Its message names the statement being parsed,
// what was wrong, the byte offset into the SQL text and, for syntax errors, the token found there:
//
//	sqlparse: CREATE TABLE: expected ',' or ')' after column "a" at offset 27, found "WITH"
//	sqlparse: CREATE TABLE: duplicate column "a" at offset 31
type Error struct {
	Statement string // e.g. "CREATE TABLE"
	Msg       string // what was wrong, e.g. `duplicate column "a"`
	Offset    int    // byte offset into the SQL text; -1 when the error has no position
	Found     string // the token found at Offset (quoted, or "end of input"); "" for non-syntax errors
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("sqlparse: ")
	if e.Statement != "" {
		b.WriteString(e.Statement)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Offset >= 0 {
		b.WriteString(" at offset ")
		b.WriteString(strconv.Itoa(e.Offset))
	}
	if e.Found != "" {
		b.WriteString(", found ")
		b.WriteString(e.Found)
	}
	return b.String()
}

// maxFound bounds how much of a token an error message quotes.
const maxFound = 40

// describe renders a token for an error message: its source text quoted, or "end of input".
func describe(src string, t token) string {
	if t.kind == tokEOF {
		return "end of input"
	}
	return quoteSource(src[t.pos:t.end])
}

// quoteSource quotes source text for an error message, shortened to about maxFound bytes.
func quoteSource(s string) string {
	if len(s) > maxFound {
		cut := maxFound
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return strconv.Quote(s)
}
