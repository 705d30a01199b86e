package sqlparse

import (
	"fmt"
	"strconv"
	"strings"
)

// Param is one statement parameter placeholder: ? or $N.
type Param struct {
	// Pos and End are byte offsets: src[Pos:End] is the placeholder as written.
	Pos, End int
	// Index is the parameter it stands for, from 0: the n-th ? in text order, or N-1 for $N.
	Index int
}

// Params returns the parameter placeholders of sql in text order and how many parameters the
// statement takes. ? placeholders are numbered in order of appearance; $N refers to the N-th
// parameter (it may appear more than once), and every one of $1 to the highest must appear.
// Placeholders inside strings, quoted identifiers and comments are not parameters. Mixing ? and $N
// is an error, as in DuckDB; so is a named parameter ($name), which positional values cannot bind. Text that does not lex (an unterminated string) has no parameters: the
// statement fails later with the lexer's or DuckDB's error.
func Params(sql string) ([]Param, int, error) {
	toks, lerr := lex(sql)
	if lerr != nil {
		return nil, 0, nil
	}
	return params(sql, toks)
}

// params is Params of sql whose tokens, lexed without error, are toks.
func params(sql string, toks []token) ([]Param, int, error) {
	var ps []Param
	qmarks, dollars, n := 0, 0, 0
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.is("?"):
			ps = append(ps, Param{Pos: t.pos, End: t.end, Index: qmarks})
			qmarks++
			n = qmarks
		case t.is("$") && toks[i+1].kind == tokNumber && toks[i+1].pos == t.end:
			num := toks[i+1]
			k, err := strconv.Atoi(num.text)
			if err != nil || k < 1 || k > 1<<16 {
				return nil, 0, &Error{Statement: "parameters", Msg: fmt.Sprintf("parameter $%s: parameters are numbered from $1", num.text), Offset: t.pos}
			}
			ps = append(ps, Param{Pos: t.pos, End: num.end, Index: k - 1})
			dollars++
			n = max(n, k)
			i++
		case t.is("$") && toks[i+1].kind == tokIdent && toks[i+1].pos == t.end:
			// DuckDB takes $name as a named parameter, which Flight SQL's
			// positional parameter values cannot name.
			name := sql[toks[i+1].pos:toks[i+1].end]
			return nil, 0, &Error{Statement: "parameters", Msg: fmt.Sprintf("named parameter $%s: parameters are bound by position; use ? or $1, $2, ...", name), Offset: t.pos}
		}
	}
	if qmarks > 0 && dollars > 0 {
		return nil, 0, &Error{Statement: "parameters", Msg: "the statement mixes ? and $N placeholders; use one style", Offset: -1}
	}
	if dollars > 0 {
		seen := make([]bool, n)
		for _, p := range ps {
			seen[p.Index] = true
		}
		for i, ok := range seen {
			if !ok {
				return nil, 0, &Error{Statement: "parameters", Msg: fmt.Sprintf("parameter $%d is missing: the statement uses up to $%d", i+1, n), Offset: -1}
			}
		}
	}
	return ps, n, nil
}

// Substitute returns src with every placeholder in ps replaced by values[p.Index]. ps must be
// in text order (as Params returns them). A value is set off by a space from a neighbour it could
// run into: 5-? with -3 must not become the comment 5--3, nor ?e1 with 3 the number 3e1.
func Substitute(src string, ps []Param, values []string) string {
	var b strings.Builder
	last := 0
	for _, p := range ps {
		b.WriteString(src[last:p.Pos])
		if p.Pos > 0 && !separates(src[p.Pos-1]) {
			b.WriteByte(' ')
		}
		b.WriteString(values[p.Index])
		if p.End < len(src) && !separates(src[p.End]) {
			b.WriteByte(' ')
		}
		last = p.End
	}
	b.WriteString(src[last:])
	return b.String()
}

// separates reports whether c ends any token next to it.
func separates(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '(', ')', ',', ';', '[', ']':
		return true
	}
	return false
}

// ValuesRow describes an INSERT whose source query is one VALUES row, INSERT INTO t [(cols)]
// VALUES (e1, ..., en) [;]: the row can be repeated to insert many rows in one statement.
type ValuesRow struct {
	// Pos and End are byte offsets of the parenthesised row in the statement, parentheses included.
	Pos, End int
	// Elems are the byte spans [start, end) of the row's elements, in order.
	Elems [][2]int
	// Volatile is set when the row holds a subquery or a call whose value
	// differs from row to row (random, uuid, gen_random_uuid, nextval): it
	// must be evaluated once per row, so repeating it in one statement would
	// change what it means.
	Volatile bool
}

var volatileCalls = map[string]bool{"random": true, "uuid": true, "gen_random_uuid": true, "nextval": true}

// InsertValuesRow returns the VALUES row of an INSERT INTO ... VALUES (...) statement with exactly
// one row; ok is false for any other statement.
func InsertValuesRow(sql string) (row ValuesRow, ok bool) {
	ins, err := ParseInsert(sql)
	if err != nil {
		return ValuesRow{}, false
	}
	return ins.ValuesRow(sql)
}

// ValuesRow is InsertValuesRow of sql, the statement ins was parsed from
// (ParseInsert), without parsing it again.
func (ins *Insert) ValuesRow(sql string) (row ValuesRow, ok bool) {
	toks, lerr := lex(sql)
	if lerr != nil {
		return ValuesRow{}, false
	}
	// The source query is a substring of sql; find its first token.
	i := 0
	for i < len(toks) && !(isKeyword(toks[i], "values") && strings.HasPrefix(sql[toks[i].pos:], ins.Query)) {
		i++
	}
	if i+1 >= len(toks) || !toks[i+1].is("(") {
		return ValuesRow{}, false
	}
	open := toks[i+1]
	depth, start := 0, i+2
	for j := i + 1; j < len(toks); j++ {
		t := toks[j]
		if isKeyword(t, "select") || t.kind == tokIdent && volatileCalls[t.text] && toks[j+1].is("(") {
			row.Volatile = true
		}
		switch {
		case t.is("(") || t.is("[") || t.is("{"):
			depth++
		case t.is(")") || t.is("]") || t.is("}"):
			depth--
		}
		if depth == 1 && t.is(",") || depth == 0 {
			if start == j {
				return ValuesRow{}, false // an empty element
			}
			row.Elems = append(row.Elems, [2]int{toks[start].pos, toks[j-1].end})
			start = j + 1
		}
		if depth == 0 {
			rest := toks[j+1:]
			if len(rest) > 0 && rest[0].is(";") {
				rest = rest[1:]
			}
			if len(rest) != 1 || rest[0].kind != tokEOF {
				return ValuesRow{}, false // a second row, or more after it
			}
			row.Pos, row.End = open.pos, t.end
			return row, true
		}
	}
	return ValuesRow{}, false
}
