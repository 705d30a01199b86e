package plan

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/sqlparse"
)

// TravelOf reads an AT clause: VERSION => integer (a snapshot) or string (a
// tag), TIMESTAMP => a timestamp literal (UTC unless it says otherwise).
func TravelOf(at *Object) (lakestream.Travel, error) {
	unit, _ := at.Get("unit").(string)
	expr, _ := at.Get("expr").(*Object)
	typ, val, ok := literalOf(expr)
	switch {
	case !ok:
		return lakestream.Travel{}, fmt.Errorf("%s takes a constant", unit)
	case strings.EqualFold(unit, "VERSION"):
		switch typ {
		case "INTEGER", "BIGINT", "SMALLINT", "TINYINT", "HUGEINT", "UBIGINT", "UINTEGER":
			id, err := strconv.ParseInt(val, 10, 64)
			if err != nil || id <= 0 {
				return lakestream.Travel{}, fmt.Errorf("VERSION => %s: a snapshot id is a positive integer", val)
			}
			return lakestream.Travel{Snapshot: id}, nil
		case "VARCHAR":
			return lakestream.Travel{Tag: val}, nil
		}
		return lakestream.Travel{}, fmt.Errorf("VERSION takes a snapshot id or a tag's name, not a %s", typ)
	case strings.EqualFold(unit, "TIMESTAMP"):
		if typ != "VARCHAR" && typ != "TIMESTAMP" && typ != "TIMESTAMP WITH TIME ZONE" {
			return lakestream.Travel{}, fmt.Errorf("TIMESTAMP takes a timestamp, not a %s", typ)
		}
		t, err := parseTimestamp(val)
		if err != nil {
			return lakestream.Travel{}, err
		}
		ms := t.UnixMilli()
		return lakestream.Travel{Millis: &ms}, nil
	}
	return lakestream.Travel{}, fmt.Errorf("AT takes VERSION or TIMESTAMP, not %s", unit)
}

// literalOf reads a constant, or a constant string cast to a type, as its
// type and text.
func literalOf(e *Object) (typ, val string, ok bool) {
	if e == nil {
		return "", "", false
	}
	if e.Get("class") == "CAST" {
		child, _ := e.Get("child").(*Object)
		ct, _ := e.Get("cast_type").(*Object)
		if ct == nil {
			return "", "", false
		}
		ctyp, _ := ct.Get("id").(string)
		_, v, ok := literalOf(child)
		return strings.ReplaceAll(ctyp, "_", " "), v, ok
	}
	if e.Get("class") != "CONSTANT" {
		return "", "", false
	}
	v, _ := e.Get("value").(*Object)
	if v == nil {
		return "", "", false
	}
	if null, _ := v.Get("is_null").(bool); null {
		return "", "", false
	}
	t, _ := v.Get("type").(*Object)
	if t == nil {
		return "", "", false
	}
	typ, _ = t.Get("id").(string)
	switch x := v.Get("value").(type) {
	case string:
		return typ, x, true
	case json.Number:
		return typ, x.String(), true
	}
	return "", "", false
}

// Location is where a node's text starts in the statement.
func Location(node *Object) (int, error) {
	n, _ := node.Get("query_location").(json.Number)
	loc, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil || loc < 0 || loc > math.MaxInt32 {
		return 0, fmt.Errorf("no location")
	}
	return int(loc), nil
}

// parseTimestamp reads the timestamp spellings DuckDB takes: a date, a
// date and time with optional fraction, and an optional zone offset.
func parseTimestamp(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{"2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999Z07", "2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999Z07:00", "2006-01-02T15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("TIMESTAMP => %q: not a timestamp (YYYY-MM-DD [hh:mm:ss[.fff]] [+hh:mm], UTC unless a zone is given)", s)
}

// Travel is one traveling reference's rewrite: the span of its text (its
// name and AT clause) and the name of the view that replaces it.
type Travel struct {
	Span sqlparse.AtSpan
	Name string // the replacement of Span's name, quoted
}

// RewriteTravels replaces each traveling reference's name and AT clause
// in text by its view's name, keeping an alias between them.
func RewriteTravels(text string, travels []Travel) string {
	sort.Slice(travels, func(i, j int) bool { return travels[i].Span.NameStart > travels[j].Span.NameStart })
	for _, t := range travels {
		s := t.Span
		text = text[:s.NameStart] + t.Name + text[s.NameEnd:s.AtStart] + text[s.AtEnd:]
	}
	return text
}
