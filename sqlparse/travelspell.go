package sqlparse

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// VersionMarker marks an AT clause written by RewriteTravels for Spark's
// VERSION AS OF and the option scan.version: its string names a tag when
// the table has one of that name, else (when it is all digits) a snapshot
// id, as Paimon's scan.version does. DuckDB's own AT (VERSION => 'x')
// names a tag only.
const VersionMarker = "/* scan.version */"

// HintOptions are the options a /*+ OPTIONS(...) */ hint after a table's
// name may set: the read-only options of Paimon's that choose the
// snapshot a batch read reads.
var HintOptions = []string{"scan.snapshot-id", "scan.tag-name", "scan.version", "scan.timestamp-millis", "scan.timestamp", "scan.mode"}

// RewriteTravels rewrites the time-travel spellings of Paimon's engines
// that follow a table's name in a FROM clause into DuckDB's AT clause,
// which the engine reads; the alias of the reference, which these
// spellings put after the clause and DuckDB before it, moves in front:
//
//	t VERSION AS OF 3 [AS] a               -> t a AT (VERSION => /* scan.version */ '3')   (Spark)
//	t VERSION AS OF 'tag'                  -> t AT (VERSION => /* scan.version */ 'tag')
//	t TIMESTAMP AS OF '2024-01-01 10:00:00' -> t AT (TIMESTAMP => '2024-01-01 10:00:00')   (Spark)
//	t TIMESTAMP AS OF 1704103200           -> seconds since 1970, as Spark casts a number
//	t FOR SYSTEM_TIME AS OF TIMESTAMP '...' -> t AT (TIMESTAMP => '...')                   (Flink)
//	t /*+ OPTIONS('scan.snapshot-id'='3') */ -> t AT (VERSION => 3)                         (Flink)
//
// A hint takes the options in HintOptions (scan.snapshot-id, scan.tag-name,
// scan.version, scan.timestamp-millis, scan.timestamp; scan.mode only as
// Paimon's batch read takes it with them); any other option, or any other
// hint, is an error naming it. Timestamps without a zone are UTC. Text
// without such a spelling comes back as it is; so does text the lexer
// refuses (the stage that reads it says why).
func RewriteTravels(sql string) (string, error) {
	if !strings.Contains(sql, "/*+") && !asOf(sql) {
		return sql, nil
	}
	toks, lerr := lex(sql)
	if lerr != nil {
		return sql, nil
	}
	n := len(toks)
	for range 5 { // so that looking a few tokens ahead never runs off the end
		toks = append(toks, toks[len(toks)-1])
	}
	type edit struct {
		start, end int
		text       string
	}
	var edits []edit
	active := []bool{false} // per parenthesis depth: inside a FROM clause
	for i := 0; i < n; i++ {
		t := toks[i]
		d := len(active) - 1
		switch {
		case t.is("("):
			active = append(active, false)
			continue
		case t.is(")"):
			if d > 0 {
				active = active[:d]
			}
			continue
		case isKeyword(t, "from") || isKeyword(t, "join"):
			active[d] = true
		case t.is(","):
			if !active[d] {
				continue
			}
		case t.kind == tokIdent && fromEnds[t.text]:
			active[d] = false
			continue
		default:
			continue
		}
		// A table's name may follow.
		j := i + 1
		if !isName(toks[j]) || isKeyword(toks[j], "lateral") {
			continue
		}
		for j++; toks[j].is(".") && isName(toks[j+1]); j += 2 {
		}
		nameEnd := toks[j-1].end
		at, clauseEnd, k, err := travelClause(sql, toks, j)
		if err != nil {
			return sql, err
		}
		if clauseEnd < 0 {
			continue
		}
		// The alias, which DuckDB reads before AT.
		alias := ""
		switch {
		case isKeyword(toks[k], "as") && isName(toks[k+1]):
			alias = sql[toks[k].pos:toks[k+1].end]
			clauseEnd = toks[k+1].end
			k += 2
		case toks[k].kind == tokQuotedIdent || toks[k].kind == tokIdent && !aliasStops[toks[k].text]:
			alias = sql[toks[k].pos:toks[k].end]
			clauseEnd = toks[k].end
			k++
		}
		text := ""
		if alias != "" {
			text = " " + alias
		}
		if at != "" {
			text += " " + at
		}
		edits = append(edits, edit{nameEnd, clauseEnd, text})
		i = k - 1
	}
	if len(edits) == 0 {
		return sql, nil
	}
	sort.Slice(edits, func(a, b int) bool { return edits[a].start > edits[b].start })
	for _, e := range edits {
		sql = sql[:e.start] + e.text + sql[e.end:]
	}
	return sql, nil
}

// fromEnds are the keywords that end a FROM clause's list of tables.
var fromEnds = map[string]bool{"where": true, "group": true, "having": true, "order": true, "limit": true,
	"qualify": true, "window": true, "union": true, "except": true, "intersect": true, "select": true,
	"on": true, "using": true, "offset": true, "values": true, "returning": true, "set": true}

// aliasStops are the keywords that may follow a table reference and so
// are no alias of it.
var aliasStops = map[string]bool{"where": true, "group": true, "having": true, "order": true, "limit": true,
	"qualify": true, "window": true, "union": true, "except": true, "intersect": true, "on": true,
	"using": true, "offset": true, "join": true, "inner": true, "left": true, "right": true, "full": true,
	"cross": true, "natural": true, "positional": true, "asof": true, "anti": true, "semi": true,
	"outer": true, "at": true, "tablesample": true, "pivot": true, "unpivot": true, "returning": true,
	"fetch": true, "for": true, "version": true, "timestamp": true, "as": true, "select": true,
	"from": true, "into": true, "values": true, "with": true, "lateral": true, "sample": true}

// travelClause reads a time-travel spelling at toks[j], right after a
// table's name ending at toks[j-1]: a hint comment between the two, or
// VERSION | TIMESTAMP | FOR SYSTEM_TIME AS OF. It returns DuckDB's AT
// clause for it ("" when the hint chooses no snapshot), where the
// spelling's text ends (-1 when there is none) and the token after it.
func travelClause(sql string, toks []token, j int) (at string, end, next int, err error) {
	if h := strings.Index(sql[toks[j-1].end:toks[j].pos], "/*+"); h >= 0 {
		start := toks[j-1].end + h
		body, cend, err := hintBody(sql, start)
		if err != nil {
			return "", -1, j, err
		}
		at, err := hintTravel(sql, body, start+3)
		if err != nil {
			return "", -1, j, err
		}
		if rest := sql[cend:toks[j].pos]; strings.Contains(rest, "/*+") {
			return "", -1, j, &Error{Statement: "hint", Msg: "one hint comment per table", Offset: cend + strings.Index(rest, "/*+")}
		}
		if isKeyword(toks[j], "for") || isKeyword(toks[j], "version") || isKeyword(toks[j], "timestamp") {
			if _, e, _, _ := spelledTravel(sql, toks, j); e >= 0 {
				return "", -1, j, &Error{Statement: "hint", Msg: "a table reads one snapshot: its hint and its AS OF clause both choose one", Offset: start}
			}
		}
		return at, cend, j, nil
	}
	return spelledTravel(sql, toks, j)
}

// spelledTravel reads VERSION AS OF v, TIMESTAMP AS OF t or FOR
// SYSTEM_TIME AS OF t at toks[j].
func spelledTravel(sql string, toks []token, j int) (at string, end, next int, err error) {
	var what string
	k := j
	switch {
	case isKeyword(toks[k], "version") && isKeyword(toks[k+1], "as") && isKeyword(toks[k+2], "of"):
		what, k = "VERSION AS OF", k+3
	case isKeyword(toks[k], "timestamp") && isKeyword(toks[k+1], "as") && isKeyword(toks[k+2], "of"):
		what, k = "TIMESTAMP AS OF", k+3
	case isKeyword(toks[k], "for") && isKeyword(toks[k+1], "system_time") && isKeyword(toks[k+2], "as") && isKeyword(toks[k+3], "of"):
		what, k = "FOR SYSTEM_TIME AS OF", k+4
	default:
		return "", -1, j, nil
	}
	bad := func(t token, format string) (string, int, int, error) {
		return "", -1, j, &Error{Statement: what, Msg: format, Offset: t.pos, Found: describe(sql, t)}
	}
	v := toks[k]
	switch what {
	case "VERSION AS OF":
		if v.kind != tokNumber && v.kind != tokString {
			return bad(v, "expected a snapshot id or a tag's name")
		}
		if v.kind == tokNumber && !allDigits(v.text) {
			return bad(v, "a snapshot id is a positive integer")
		}
		return "AT (VERSION => " + VersionMarker + " " + quoteString(v.text) + ")", v.end, k + 1, nil
	case "TIMESTAMP AS OF":
		if isKeyword(v, "timestamp") && toks[k+1].kind == tokString {
			k++
			v = toks[k]
		}
		switch {
		case v.kind == tokString:
			return "AT (TIMESTAMP => " + quoteString(v.text) + ")", v.end, k + 1, nil
		case v.kind == tokNumber && allDigits(v.text):
			s, err := strconv.ParseInt(v.text, 10, 64)
			if err != nil || s > 1<<40 {
				return bad(v, "seconds since 1970 out of range")
			}
			return "AT (TIMESTAMP => " + quoteString(utcText(s*1000)) + ")", v.end, k + 1, nil
		}
		return bad(v, "expected a timestamp string or seconds since 1970")
	default:
		if isKeyword(v, "timestamp") && toks[k+1].kind == tokString {
			k++
			v = toks[k]
		}
		if v.kind != tokString {
			return bad(v, "expected a timestamp literal (TIMESTAMP '2024-01-01 00:00:00'); flightd reads past snapshots, it has no lookup joins")
		}
		return "AT (TIMESTAMP => " + quoteString(v.text) + ")", v.end, k + 1, nil
	}
}

// hintBody returns the text of the hint comment at start (between /*+
// and its */, comments nesting as the lexer's do) and where it ends.
func hintBody(sql string, start int) (string, int, error) {
	depth := 0
	for i := start; i+1 < len(sql); {
		switch {
		case sql[i] == '/' && sql[i+1] == '*':
			depth++
			i += 2
		case sql[i] == '*' && sql[i+1] == '/':
			depth--
			i += 2
			if depth == 0 {
				return sql[start+3 : i-2], i, nil
			}
		default:
			i++
		}
	}
	return "", -1, &Error{Statement: "hint", Msg: "unterminated hint comment", Offset: start}
}

// hintTravel reads a hint's body, OPTIONS('k' = 'v', ...), at offset off
// of sql, into the AT clause its options choose.
func hintTravel(sql, body string, off int) (string, error) {
	toks, lerr := lex(body)
	if lerr != nil {
		return "", &Error{Statement: "hint", Msg: lerr.Msg, Offset: off + lerr.Offset}
	}
	for i := range toks {
		toks[i].pos += off
		toks[i].end += off
	}
	p := &parser{src: sql, toks: toks, stmt: "hint"}
	if t := p.peek(); !isKeyword(t, "options") {
		return "", p.syntaxErr(t, "flightd applies only OPTIONS(...) hints after a table's name")
	}
	p.next()
	opts, err := p.options()
	if err != nil {
		return "", err
	}
	if t := p.peek(); t.kind != tokEOF {
		return "", p.syntaxErr(t, "flightd applies one OPTIONS(...) hint per table")
	}
	return hintAt(opts, off)
}

// hintAt is the AT clause a hint's options choose.
func hintAt(opts map[string]string, off int) (string, error) {
	errf := func(format string, args ...any) error {
		return &Error{Statement: "OPTIONS hint", Msg: fmt.Sprintf(format, args...), Offset: off}
	}
	allowed := map[string]bool{}
	for _, k := range HintOptions {
		allowed[k] = true
	}
	var keys []string
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var set []string
	for _, k := range keys {
		if !allowed[k] {
			return "", errf("option %q is not one flightd applies to a read (it applies %s)", k, strings.Join(HintOptions, ", "))
		}
		if k != "scan.mode" {
			set = append(set, k)
		}
	}
	if len(set) > 1 {
		return "", errf("options %s each choose a snapshot to read; set one", strings.Join(set, " and "))
	}
	choice := ""
	if len(set) == 1 {
		choice = set[0]
	}
	v := strings.TrimSpace(opts[choice])
	at := ""
	switch choice {
	case "scan.snapshot-id":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return "", errf("option scan.snapshot-id = %q: a snapshot id is a positive integer", v)
		}
		at = "AT (VERSION => " + strconv.FormatInt(n, 10) + ")"
	case "scan.tag-name":
		if v == "" {
			return "", errf("option scan.tag-name is empty")
		}
		at = "AT (VERSION => " + quoteString(v) + ")"
	case "scan.version":
		if v == "" {
			return "", errf("option scan.version is empty")
		}
		at = "AT (VERSION => " + VersionMarker + " " + quoteString(v) + ")"
	case "scan.timestamp-millis":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || n > 1<<50 {
			return "", errf("option scan.timestamp-millis = %q: milliseconds since 1970 are a non-negative integer", v)
		}
		at = "AT (TIMESTAMP => " + quoteString(utcText(n)) + ")"
	case "scan.timestamp":
		if v == "" {
			return "", errf("option scan.timestamp is empty")
		}
		at = "AT (TIMESTAMP => " + quoteString(v) + ")"
	}
	// scan.mode only as Paimon's batch read takes it with the option set.
	mode := strings.ToLower(strings.TrimSpace(opts["scan.mode"]))
	ok := map[string]bool{"": true, "default": true, "latest": choice == "", "latest-full": choice == "", "full": choice == "",
		"from-snapshot":      choice == "scan.snapshot-id" || choice == "scan.tag-name",
		"from-snapshot-full": choice == "scan.snapshot-id" || choice == "scan.tag-name",
		"from-timestamp":     choice == "scan.timestamp-millis" || choice == "scan.timestamp"}
	if !ok[mode] {
		with := "without a snapshot option"
		if choice != "" {
			with = "with " + choice
		}
		return "", errf("option scan.mode = %q does not read one snapshot %s", opts["scan.mode"], with)
	}
	return at, nil
}

// utcText writes Unix milliseconds as a timestamp with its UTC zone.
func utcText(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000") + "+00:00"
}

// quoteString writes s as a SQL string literal.
func quoteString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// asOf reports whether s may hold the words AS OF (any case, whitespace
// between): a cheap look before lexing, so that statements without a
// spelled travel (a large INSERT's values) are not lexed twice.
func asOf(s string) bool {
	space := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' }
	for i := 0; i+1 < len(s); i++ {
		if s[i]|0x20 != 'o' || s[i+1]|0x20 != 'f' || i+2 < len(s) && isIdentPart(s[i+2]) {
			continue
		}
		j := i
		for j > 0 && space(s[j-1]) {
			j--
		}
		if j == i || j < 2 || s[j-2]|0x20 != 'a' || s[j-1]|0x20 != 's' || j > 2 && isIdentPart(s[j-3]) {
			continue
		}
		return true
	}
	return false
}
