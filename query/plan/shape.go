package plan

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"sync"
)

// ShapeCache remembers DuckDB's parse tree of a statement's shape: its
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
//
// The zero ShapeCache is empty and ready to use, by several goroutines.
type ShapeCache struct {
	mu sync.Mutex
	m  map[string]*Shape
}

// Get is the shape learnt for key, nil when none is.
func (c *ShapeCache) Get(key string) *Shape {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[key]
}

// Put keeps sh as key's shape; a full cache is emptied first.
func (c *ShapeCache) Put(key string, sh *Shape) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= parseCacheEntries {
		c.m = map[string]*Shape{}
	}
	c.m[key] = sh
}

// Shape is a learnt shape: a tree with one slot per literal, or no tree
// for a shape that cannot be cached.
type Shape struct {
	tree  *Object
	slots [][]any // per literal: the path to its CONSTANT's value object
}

// Cached reports whether sh has a tree: a statement of its shape need not
// be parsed (Instance).
func (sh *Shape) Cached() bool { return sh != nil && sh.tree != nil }

const (
	parseCacheEntries = 1024 // shapes kept; all are dropped when full
	// MaxCachedSQL bounds the statements whose shape is cached, or whose
	// tree a Statement keeps: longer ones (bulk INSERTs) are parsed each time.
	MaxCachedSQL = 16 << 10
)

// Literal is an integer or string literal of a statement.
type Literal struct {
	kind byte // 'i': INTEGER (int32), 'l': BIGINT (int64), 's': VARCHAR
	n    int64
	s    string
}

// slotMark starts a literal's place in a shape key (a NUL, which never
// appears in a cached statement).
const slotMark = '\x00'

// ShapeOf returns sql's shape key and literals; ok is false for text it
// does not take apart (parameters, dollar quotes, prefixed strings, NUL).
func ShapeOf(sql string) (key string, lits []Literal, ok bool) {
	if len(sql) > MaxCachedSQL {
		return "", nil, false
	}
	var b strings.Builder
	b.Grow(len(sql))
	prevSig := byte(0) // the last non-space byte copied
	slot := func(l Literal) {
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
			slot(Literal{kind: 's', s: strings.ReplaceAll(sql[i+1:j], "''", "'")})
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
				slot(Literal{kind: 'i', n: n})
			default:
				slot(Literal{kind: 'l', n: n})
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

// Render writes key back as SQL with lits in its slots.
func Render(key string, lits []Literal) string {
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
func constKey(l Literal) string {
	if l.kind == 's' {
		return "s" + l.s
	}
	return "n" + strconv.FormatInt(l.n, 10)
}

// treeConstKey is constKey of a CONSTANT's value object, ok false for
// other values (NULL, decimals, ...).
func treeConstKey(v *Object) (string, bool) {
	switch x := v.Get("value").(type) {
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
func matchShape(a, b any, path []any, lits []Literal, index map[string]int, slots [][]any) bool {
	switch x := a.(type) {
	case *Object:
		y, ok := b.(*Object)
		if !ok || len(x.keys) != len(y.keys) {
			return false
		}
		if x.Get("class") == "CONSTANT" {
			xv, _ := x.Get("value").(*Object)
			yv, _ := y.Get("value").(*Object)
			if xv != nil && yv != nil && !matchShape(xv.Get("value"), yv.Get("value"), nil, nil, nil, nil) {
				// values differ: the sentinel's literal must be the one
				// whose value the statement has here, and types agree
				sk, ok1 := treeConstKey(yv)
				xk, ok2 := treeConstKey(xv)
				i, ok3 := index[sk]
				if !ok1 || !ok2 || !ok3 || slots[i] != nil || xk != constKey(lits[i]) ||
					!matchShape(xv.Get("type"), yv.Get("type"), nil, nil, nil, nil) {
					return false
				}
				slots[i] = append(append([]any{}, path...), "value")
				for _, k := range x.keys {
					if k != "value" && k != "query_location" && !matchShape(x.Get(k), y.Get(k), nil, nil, nil, nil) {
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
			if !matchShape(x.Get(k), y.Get(k), append(path, k), lits, index, slots) {
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

// Instance is a copy of the shape's tree with lits, the literals of a
// statement of that shape (ShapeOf), in its slots.
func (sh *Shape) Instance(lits []Literal) *Object {
	t := copyTree(sh.tree).(*Object)
	for i, path := range sh.slots {
		var cur any = t
		for _, p := range path {
			switch k := p.(type) {
			case string:
				cur = cur.(*Object).Get(k)
			case int:
				cur = cur.([]any)[k]
			}
		}
		v := cur.(*Object)
		if l := lits[i]; l.kind == 's' {
			v.set("value", l.s)
		} else {
			v.set("value", json.Number(strconv.FormatInt(l.n, 10)))
		}
	}
	return t
}

// LearnShape learns the shape key of a statement whose literals are lits
// (ShapeOf) and whose parse tree is tree: parse parses the shape again
// with sentinel literals, and LearnShape returns tree's slots, a shape with
// no tree when the trees differ elsewhere, or nil (learn it next time)
// when a literal has a sentinel's value.
func LearnShape(key string, lits []Literal, tree *Object, parse func(sql string) (tree *Object, parsed bool, err error)) (*Shape, error) {
	if len(lits) == 0 {
		return &Shape{tree: copyTree(tree).(*Object)}, nil
	}
	sentinels := make([]Literal, len(lits))
	index := map[string]int{} // a sentinel's JSON value -> its literal
	for i, l := range lits {
		s := Literal{kind: l.kind}
		switch l.kind {
		case 'i':
			s.n = 1_000_000_007 + int64(i)
		case 'l':
			s.n = 5_000_000_000_017 + int64(i)
		default:
			s.s = "flightd\x01slot\x01" + strconv.Itoa(i)
		}
		sentinels[i] = s
		index[constKey(s)] = i
	}
	for _, l := range lits {
		if _, clash := index[constKey(l)]; clash {
			return nil, nil
		}
	}
	other, ok, err := parse(Render(key, sentinels))
	if err != nil {
		return nil, err
	}
	if !ok {
		return &Shape{}, nil
	}
	sh := &Shape{slots: make([][]any, len(lits))}
	if !matchShape(tree, other, nil, lits, index, sh.slots) {
		return &Shape{}, nil
	}
	for _, s := range sh.slots {
		if s == nil {
			return &Shape{}, nil
		}
	}
	sh.tree = copyTree(tree).(*Object)
	return sh, nil
}
