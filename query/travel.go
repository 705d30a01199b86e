//go:build duckdb_arrow

package query

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/sqlparse"
)

// Time travel. DuckDB's parser reads t AT (VERSION => n), AT (VERSION =>
// 'tag') and AT (TIMESTAMP => t), but its binder refuses the clause on a
// view, and every flightd table is one. So a reference that travels gets a
// view of its own, named after the snapshot (t$at3), whose scan reads that
// snapshot of the lake, and the statement runs with the reference's text
// (the name and its AT clause, found from the parse tree's location) put
// as that view's name; the rest of the text runs as written.

// travelRef is one reference's rewrite: the span of its text and the view
// name that replaces it.
type travelRef struct {
	span sqlparse.AtSpan
	name string // the replacement of span's name, quoted
}

// travel resolves the time travel of the reference node (at is its AT
// clause) to a snapshot, and returns the key and reference of the view that
// reads it; the text's rewrite goes to travels.
func (e *Engine) travel(ctx context.Context, text string, k viewKey, r tableRef, node, at *object, travels *[]travelRef) (viewKey, tableRef, error) {
	if r.realtime || r.ro || r.whole() {
		return k, r, fmt.Errorf("%w: %s.%s has no history to travel in: AT (...) reads a past snapshot of the lake table %s.%s", engine.ErrInvalid, r.db, nameOf(r), r.db, r.table)
	}
	tr, err := travelOf(at)
	if err != nil {
		return k, r, fmt.Errorf("%w: %s.%s AT (...): %w", engine.ErrInvalid, r.db, r.table, err)
	}
	cut, err := e.ls.TravelCut(ctx, r.db, r.table, tr)
	if err != nil {
		return k, r, mapErr(err)
	}
	loc, err := locationOf(node)
	if err != nil {
		return k, r, fmt.Errorf("%w: the statement's AT clause of %s.%s could not be located", engine.ErrInvalid, r.db, r.table)
	}
	span, ok := sqlparse.AtClause(text, loc)
	if !ok {
		return k, r, fmt.Errorf("%w: the AT clause of %s.%s could not be read from the statement's text; write it right after the table's name: %s AT (VERSION => n)", engine.ErrInvalid, r.db, r.table, r.table)
	}
	r.snapshot, r.tag = cut.Snapshot, cut.Tag
	name := k.name + "$at" + strconv.FormatInt(cut.Snapshot, 10)
	if cut.Tag != "" {
		name += "$" + cut.Tag
	}
	k.name = strings.ToLower(name)
	repl := quoteIdent(k.name)
	if s, _ := node.get("schema_name").(string); s != "" {
		repl = quoteIdent(k.schema) + "." + repl
	}
	*travels = append(*travels, travelRef{span: span, name: repl})
	return k, r, nil
}

// nameOf is the name a reference was written with (t$rt, t$changelog, ...).
func nameOf(r tableRef) string {
	switch {
	case r.realtime:
		return r.table + lakestream.RealtimeSuffix
	case r.ro:
		return r.table + lakestream.ReadOptimizedSuffix
	case r.changelog:
		return r.table + lakestream.ChangelogSuffix
	case r.meta != "":
		return r.table + r.meta
	}
	return r.table
}

// travelOf reads an AT clause: VERSION => integer (a snapshot) or string (a
// tag), TIMESTAMP => a timestamp literal (UTC unless it says otherwise).
func travelOf(at *object) (lakestream.Travel, error) {
	unit, _ := at.get("unit").(string)
	expr, _ := at.get("expr").(*object)
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
func literalOf(e *object) (typ, val string, ok bool) {
	if e == nil {
		return "", "", false
	}
	if e.get("class") == "CAST" {
		child, _ := e.get("child").(*object)
		ct, _ := e.get("cast_type").(*object)
		if ct == nil {
			return "", "", false
		}
		ctyp, _ := ct.get("id").(string)
		_, v, ok := literalOf(child)
		return strings.ReplaceAll(ctyp, "_", " "), v, ok
	}
	if e.get("class") != "CONSTANT" {
		return "", "", false
	}
	v, _ := e.get("value").(*object)
	if v == nil {
		return "", "", false
	}
	if null, _ := v.get("is_null").(bool); null {
		return "", "", false
	}
	t, _ := v.get("type").(*object)
	if t == nil {
		return "", "", false
	}
	typ, _ = t.get("id").(string)
	switch x := v.get("value").(type) {
	case string:
		return typ, x, true
	case json.Number:
		return typ, x.String(), true
	}
	return "", "", false
}

// locationOf is where a node's text starts in the statement.
func locationOf(node *object) (int, error) {
	n, _ := node.get("query_location").(json.Number)
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

// rewriteTravels replaces each traveling reference's name and AT clause
// in text by its view's name, keeping an alias between them.
func rewriteTravels(text string, travels []travelRef) string {
	sort.Slice(travels, func(i, j int) bool { return travels[i].span.NameStart > travels[j].span.NameStart })
	for _, t := range travels {
		s := t.span
		text = text[:s.NameStart] + t.name + text[s.NameEnd:s.AtStart] + text[s.AtEnd:]
	}
	return text
}
