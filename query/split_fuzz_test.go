//go:build duckdb_arrow

package query

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/flightd/flightd/query/plan"
	"github.com/flightd/flightd/sqlparse"
)

// flightd's lexer (package sqlparse) still finds parameter placeholders
// and routes statements; it must agree with DuckDB's parser about where
// every string, quoted identifier and comment ends, and so about which ?
// is a placeholder and how many statements a text holds.
// FuzzStatementSplitAgreesWithDuckDB checks that two ways:
//
//   - generated: the fuzz bytes choose a SELECT list of placeholders,
//     strings ('..', E'..', $tag$..$tag$), quoted identifiers and comments
//     (--, ending at \n, \r or \r\n; nested /* */) whose contents are fuzz
//     bytes (?, quotes, ;, \r, non-ASCII ...), each written correctly, so
//     both DuckDB and flightd must count exactly the placeholders the
//     generator wrote and one statement;
//   - raw: the fuzz text itself, compared wherever DuckDB accepts it.
func FuzzStatementSplitAgreesWithDuckDB(f *testing.F) {
	for _, s := range []string{
		"SELECT 1 AS a --\r; SELECT ?",
		"SELECT ? --\r, ?",
		"SELECT $€$ ? $€$, ?",
		"SELECT $a$ ;? $a$, ? /* ? /* ? */ ; */",
		"SELECT E'\\'?', ?",
		"SELECT '?''?', \"?\"\"\" FROM (SELECT 1 AS \"?\"\"\")",
		"SELECT 1; SELECT ?",
		"SELECT ?\u00a0--?\r\n, ?",
		"\x01\x05\xff;?\r\x02\x03€€\x04--",
	} {
		f.Add(s)
	}
	e := newTestEngine(f)
	f.Fuzz(func(t *testing.T, in string) {
		c, err := e.connect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer e.release(c)
		sql, want := generate(in)
		if got := duckParams(t, c, sql); got != want {
			t.Fatalf("DuckDB finds %d placeholders in generated %q, want %d", got, sql, want)
		}
		if _, n, err := sqlparse.Params(sql); err != nil || n != want {
			t.Fatalf("flightd finds %d placeholders (err %v) in generated %q, want %d", n, err, sql, want)
		}
		if n := sqlparse.Statements(sql); n != 1 {
			t.Fatalf("flightd finds %d statements in generated %q, want 1", n, sql)
		}
		compareRaw(t, c, in)
	})
}

// compareRaw compares the statement count and, for one statement, the
// placeholder count of any text DuckDB parses as SELECTs.
func compareRaw(t *testing.T, c *conn, sql string) {
	if strings.IndexByte(sql, 0) >= 0 {
		// DuckDB's parser stops at NUL; flightd refuses such text whole.
		if err := plan.Analyze(sql).Check(); err == nil {
			t.Fatalf("text with a NUL byte accepted: %q", sql)
		}
		return
	}
	if !strings.Contains(sql, "?") && !strings.Contains(sql, ";") {
		return
	}
	js, err := c.serialize(context.Background(), sql)
	if err != nil {
		return
	}
	var tree struct {
		Error      bool              `json:"error"`
		Statements []json.RawMessage `json:"statements"`
	}
	if json.Unmarshal([]byte(js), &tree) != nil || tree.Error {
		return
	}
	if n := sqlparse.Statements(sql); n != len(tree.Statements) {
		t.Fatalf("flightd finds %d statements in %q, DuckDB %d", n, sql, len(tree.Statements))
	}
	if len(tree.Statements) != 1 {
		return
	}
	st, err := c.prepareOne(sql)
	if err != nil {
		return
	}
	duck := st.NumInput()
	_ = st.Close()
	if _, n, err := sqlparse.Params(sql); err == nil && n != duck {
		t.Fatalf("flightd finds %d placeholders in %q, DuckDB %d", n, sql, duck)
	}
}

// duckParams is DuckDB's placeholder count of one statement.
func duckParams(t *testing.T, c *conn, sql string) int {
	st, err := c.prepareOne(sql)
	if err != nil {
		t.Fatalf("DuckDB refuses generated %q: %v", sql, err)
	}
	defer st.Close()
	return st.NumInput()
}

// generate writes a SELECT list from in: each item is chosen by one byte,
// and takes its content from the bytes up to the next 0x00 (or the end).
// It returns the text and the placeholders it holds.
func generate(in string) (string, int) {
	var b strings.Builder
	b.WriteString("SELECT 0")
	params := 0
	for len(in) > 0 {
		op := in[0]
		content := in[1:]
		if i := strings.IndexByte(content, 0); i >= 0 {
			content, in = content[:i], content[i+1:]
		} else {
			in = ""
		}
		content = strings.ToValidUTF8(content, "\uFFFD")
		switch op % 9 {
		case 0:
			b.WriteString(", ?")
			params++
		case 1:
			b.WriteString(", '" + strings.ReplaceAll(content, "'", "''") + "'")
		case 2:
			r := strings.NewReplacer(`\`, `\\`, `'`, `\'`)
			b.WriteString(", E'" + r.Replace(content) + "'")
		case 3:
			tag := dollarTag(content)
			body := strings.ReplaceAll(content, tag, "")
			for strings.Contains(body, tag) { // removal can make a new one
				body = strings.ReplaceAll(body, tag, "")
			}
			b.WriteString(", " + tag + " " + body + " " + tag)
		case 4:
			if content == "" {
				content = "c"
			}
			b.WriteString(` AS "` + strings.ReplaceAll(content, `"`, `""`) + `", 0`)
		case 5, 6:
			body := strings.NewReplacer("\n", " ", "\r", " ").Replace(content)
			end := [...]string{"\n", "\r", "\r\n"}[int(op/9)%3]
			b.WriteString(" --" + body + end)
		case 7:
			body := content
			for strings.Contains(body, "/*") || strings.Contains(body, "*/") {
				body = strings.NewReplacer("/*", "/ *", "*/", "* /").Replace(body)
			}
			if op/9%2 == 0 {
				body = "/* " + body + " */" // a nested comment
			}
			b.WriteString(" /* " + body + " */")
		case 8:
			b.WriteString(", ?::VARCHAR || ?::VARCHAR")
			params += 2
		}
	}
	return b.String(), params
}

// dollarTag makes a $tag$ delimiter from the first bytes of s: DuckDB's
// tag bytes are [A-Za-z\x80-\xff_] then also [0-9].
func dollarTag(s string) string {
	var t []byte
	for i := 0; i < len(s) && len(t) < 4; i++ {
		c := s[i]
		ok := c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c >= 0x80 || len(t) > 0 && '0' <= c && c <= '9'
		if !ok {
			break
		}
		t = append(t, c)
	}
	// A tag cut inside a multi-byte character is still bytes DuckDB takes;
	// keep the text valid UTF-8 by ending it on a whole character.
	for len(t) > 0 && !utf8Valid(t) {
		t = t[:len(t)-1]
	}
	return "$" + string(t) + "$"
}

func utf8Valid(b []byte) bool { return strings.ToValidUTF8(string(b), "") == string(b) }
