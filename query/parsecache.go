package query

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"sync"
)

// parseCache remembers DuckDB's parse tree of a statement's shape: its
// text with the integer and string literals taken out. A point query asked
// again with another key then skips json_serialize_sql and the decoding of
// its JSON, together ~0.4 ms, half of what the engine spends on it.
//
// A shape is learnt from two parses: the statement as given and the
// statement with every literal replaced by a distinct sentinel of the same
// kind. The two trees must be equal but for the values of exactly one
// CONSTANT per literal (and query_location, which only points into the
// text for error messages), or the shape is not cached: a literal DuckDB
// folds (-5), reads as something else (ORDER BY 1 stays a constant, a
// digit in a name does not) or that sits in a comment makes the trees
// differ elsewhere. Integers are kept apart by the type DuckDB gives them
// (INTEGER or BIGINT), so a cached constant has the type a parse would give.
// Other literals (decimals, floats, typed strings) stay in the key.
type parseCache struct {
	mu sync.Mutex
	m  map[string]*parsedShape
}

// parsedShape is a learnt shape: tree with one slot per literal, or nil
// tree for a shape that cannot be cached.
type parsedShape struct {
	tree  *object
	slots [][]any // per literal: the path to its CONSTANT's value object
}

const (
	parseCacheEntries = 1024     // shapes kept; all are dropped when full
	maxCachedSQL      = 16 << 10 // longer statements (bulk INSERTs) are not cached
)

// literal is an integer or string literal of a statement.
type literal struct {
	kind byte // 'i': INTEGER (int32), 'l': BIGINT (int64), 's': VARCHAR
	n    int64
	s    string
}

// slotMark starts a literal's place in a shape key (a NUL, which never
// appears in a cached statement).
const slotMark = '\x00'

// shapeOf returns sql's shape key and literals; ok is false for text it
// does not take apart (parameters, dollar quotes, prefixed strings, NUL).
func shapeOf(sql string) (key string, lits []literal, ok bool) {
	if len(sql) > maxCachedSQL {
		return "", nil, false
	}
	var b strings.Builder
	b.Grow(len(sql))
	prevSig := byte(0) // the last non-space byte copied
	slot := func(l literal) {
		lits = append(lits, l)
		b.WriteByte(slotMark)
		b.WriteByte(l.kind)
	}
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == slotMark || c == '?' || c == '$' || c == '\\':
			return "", nil, false
		case c == '-' && i+1 < len(sql) && sql[i+1] == '-': // comment to the end of the line
			j := strings.IndexByte(sql[i:], '\n')
			if j < 0 {
				j = len(sql) - i
			}
			b.WriteString(sql[i : i+j])
			i += j
		case c == '/' && i+1 < len(sql) && sql[i+1] == '*': // comments nest
			depth, j := 0, i
			for ; j < len(sql); j++ {
				if strings.HasPrefix(sql[j:], "/*") {
					depth++
					j++
				} else if strings.HasPrefix(sql[j:], "*/") {
					depth--
					j++
					if depth == 0 {
						j++
						break
					}
				}
			}
			if depth != 0 {
				return "", nil, false
			}
			b.WriteString(sql[i:j])
			i = j
		case c == '"':
			j := closingQuote(sql, i)
			if j < 0 {
				return "", nil, false
			}
			b.WriteString(sql[i : j+1])
			prevSig = '"'
			i = j + 1
		case c == '\'':
			j := closingQuote(sql, i)
			if j < 0 || (i > 0 && isIdentByte(sql[i-1])) { // E'..', X'..': not plain strings
				return "", nil, false
			}
			slot(literal{kind: 's', s: strings.ReplaceAll(sql[i+1:j], "''", "'")})
			prevSig = '\''
			i = j + 1
		case isDigit(c) || (c == '-' && i+1 < len(sql) && isDigit(sql[i+1]) && signStarts(prevSig)):
			j := i + 1
			for j < len(sql) && (isIdentByte(sql[j]) || sql[j] == '.') {
				j++
			}
			tok := sql[i:j]
			n, err := strconv.ParseInt(tok, 10, 64)
			switch {
			case err != nil: // a decimal, float, hex or 1_000: part of the key
				b.WriteString(tok)
			case n > math.MinInt32 && n <= math.MaxInt32: // DuckDB types -2147483648 BIGINT (it negates 2147483648)
				slot(literal{kind: 'i', n: n})
			default:
				slot(literal{kind: 'l', n: n})
			}
			prevSig = '0'
			i = j
		case isIdentByte(c):
			j := i + 1
			for j < len(sql) && isIdentByte(sql[j]) {
				j++
			}
			b.WriteString(sql[i:j])
			prevSig = 'a'
			i = j
		default:
			b.WriteByte(c)
			if !isSpace(c) {
				prevSig = c
			}
			i++
		}
	}
	return b.String(), lits, true
}

// closingQuote returns the index of the quote that closes the one at
// sql[i] (a doubled quote is an escaped one), or -1 when there is none.
func closingQuote(sql string, i int) int {
	q := sql[i]
	for j := i + 1; j < len(sql); j++ {
		if sql[j] != q {
			continue
		}
		if j+1 < len(sql) && sql[j+1] == q {
			j++
			continue
		}
		return j
	}
	return -1
}

// signStarts says whether a '-' after prev starts a negative number (as
// after "=" or "(") rather than being a subtraction.
func signStarts(prev byte) bool {
	return prev == 0 || strings.IndexByte("(,=<>", prev) >= 0
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }
func isIdentByte(c byte) bool {
	return c == '_' || c == '$' || isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'z') || c >= 0x80
}

// render writes key back as SQL with lits in its slots.
func render(key string, lits []literal) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(key); i++ {
		if key[i] != slotMark {
			b.WriteByte(key[i])
			continue
		}
		i++ // the kind
		l := lits[n]
		n++
		if l.kind == 's' {
			b.WriteByte('\'')
			b.WriteString(strings.ReplaceAll(l.s, "'", "''"))
			b.WriteByte('\'')
		} else {
			b.WriteString(strconv.FormatInt(l.n, 10))
		}
	}
	return b.String()
}

// constKey is how a literal's value reads in a parse tree, with its kind.
func constKey(l literal) string {
	if l.kind == 's' {
		return "s" + l.s
	}
	return "n" + strconv.FormatInt(l.n, 10)
}

// treeConstKey is constKey of a CONSTANT's value object, ok false for
// other values (NULL, decimals, ...).
func treeConstKey(v *object) (string, bool) {
	switch x := v.get("value").(type) {
	case string:
		return "s" + x, true
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return "n" + x.String(), true
		}
	}
	return "", false
}

// matchShape walks a (the statement's tree) and b (the sentinels' tree)
// together and records in slots where each literal's constant is; false
// when they differ anywhere else.
func matchShape(a, b any, path []any, lits []literal, index map[string]int, slots [][]any) bool {
	switch x := a.(type) {
	case *object:
		y, ok := b.(*object)
		if !ok || len(x.keys) != len(y.keys) {
			return false
		}
		if x.get("class") == "CONSTANT" {
			xv, _ := x.get("value").(*object)
			yv, _ := y.get("value").(*object)
			if xv != nil && yv != nil && !matchShape(xv.get("value"), yv.get("value"), nil, nil, nil, nil) {
				// values differ: the sentinel's literal must be the one
				// whose value the statement has here, and types agree
				sk, ok1 := treeConstKey(yv)
				xk, ok2 := treeConstKey(xv)
				i, ok3 := index[sk]
				if !ok1 || !ok2 || !ok3 || slots[i] != nil || xk != constKey(lits[i]) ||
					!matchShape(xv.get("type"), yv.get("type"), nil, nil, nil, nil) {
					return false
				}
				slots[i] = append(append([]any{}, path...), "value")
				for _, k := range x.keys {
					if k != "value" && k != "query_location" && !matchShape(x.get(k), y.get(k), nil, nil, nil, nil) {
						return false
					}
				}
				return true
			}
		}
		for i, k := range x.keys {
			if y.keys[i] != k {
				return false
			}
			if k == "query_location" {
				continue
			}
			if !matchShape(x.get(k), y.get(k), append(path, k), lits, index, slots) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !matchShape(x[i], y[i], append(path, i), lits, index, slots) {
				return false
			}
		}
		return true
	default:
		return a == b
	}
}

// instance is a copy of the shape's tree with lits in its slots.
func (sh *parsedShape) instance(lits []literal) *object {
	t := copyTree(sh.tree).(*object)
	for i, path := range sh.slots {
		var cur any = t
		for _, p := range path {
			switch k := p.(type) {
			case string:
				cur = cur.(*object).get(k)
			case int:
				cur = cur.([]any)[k]
			}
		}
		v := cur.(*object)
		if l := lits[i]; l.kind == 's' {
			v.set("value", l.s)
		} else {
			v.set("value", json.Number(strconv.FormatInt(l.n, 10)))
		}
	}
	return t
}

// copyTree deep-copies a decoded JSON value.
func copyTree(v any) any {
	switch x := v.(type) {
	case *object:
		o := &object{keys: append([]string(nil), x.keys...), vals: make(map[string]any, len(x.vals))}
		for k, val := range x.vals {
			o.vals[k] = copyTree(val)
		}
		return o
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = copyTree(x[i])
		}
		return out
	}
	return v
}
