//go:build duckdb_arrow

package query

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/duckdb/duckdb-go/v2"
)

// Nested result columns. DuckDB names them T[] (LIST), STRUCT("a" T, ...)
// and MAP(K, V); duckdb-go hands out []any, map[string]any and
// duckdb.OrderedMap. They become Arrow lists, structs and maps, so clients
// get the same shapes as from a plain scan of the table.

// nestedTypeOf parses a nested DuckDB type name; ok is false for anything
// it does not know (the column is then rendered as text).
func nestedTypeOf(name string) (arrow.DataType, bool) {
	name = strings.TrimSpace(name)
	switch {
	case strings.HasSuffix(name, "[]"):
		elem, ok := elemTypeOf(name[:len(name)-2])
		if !ok {
			return nil, false
		}
		return arrow.ListOf(elem), true
	case strings.HasPrefix(name, "STRUCT(") && strings.HasSuffix(name, ")"):
		parts, ok := splitTop(name[len("STRUCT(") : len(name)-1])
		if !ok {
			return nil, false
		}
		fields := make([]arrow.Field, 0, len(parts))
		for _, p := range parts {
			fname, ftype, ok := cutFieldName(p)
			if !ok {
				return nil, false
			}
			t, ok := elemTypeOf(ftype)
			if !ok {
				return nil, false
			}
			fields = append(fields, arrow.Field{Name: fname, Type: t, Nullable: true})
		}
		return arrow.StructOf(fields...), true
	case strings.HasPrefix(name, "MAP(") && strings.HasSuffix(name, ")"):
		parts, ok := splitTop(name[len("MAP(") : len(name)-1])
		if !ok || len(parts) != 2 {
			return nil, false
		}
		k, ok1 := elemTypeOf(parts[0])
		v, ok2 := elemTypeOf(parts[1])
		if !ok1 || !ok2 {
			return nil, false
		}
		return arrow.MapOf(k, v), true
	}
	return nil, false
}

// elemTypeOf is the Arrow type of a type nested in another: a nested one,
// or a scalar that appendValue can fill from duckdb-go's values.
func elemTypeOf(name string) (arrow.DataType, bool) {
	name = strings.TrimSpace(name)
	if t, ok := nestedTypeOf(name); ok {
		return t, true
	}
	var p, s int64
	if strings.HasPrefix(name, "DECIMAL(") {
		if _, err := fmt.Sscanf(name, "DECIMAL(%d,%d)", &p, &s); err != nil {
			return nil, false
		}
	}
	t := arrowTypeOf(name, p, s)
	if t.ID() == arrow.STRING && name != "VARCHAR" {
		return nil, false // unknown, or nested in a form not parsed above
	}
	return t, true
}

// splitTop splits a comma-separated list at the top level (not inside
// parentheses or quotes).
func splitTop(s string) ([]string, bool) {
	var out []string
	depth, start := 0, 0
	inQuote := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			inQuote = !inQuote
		case inQuote:
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ',' && depth == 0:
			out = append(out, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	if inQuote || depth != 0 {
		return nil, false
	}
	return append(out, strings.TrimSpace(s[start:])), true
}

// cutFieldName splits `"name" TYPE` (or `name TYPE`).
func cutFieldName(p string) (name, typ string, ok bool) {
	if strings.HasPrefix(p, `"`) {
		var b strings.Builder
		for i := 1; i < len(p); i++ {
			if p[i] == '"' {
				if i+1 < len(p) && p[i+1] == '"' {
					b.WriteByte('"')
					i++
					continue
				}
				return b.String(), strings.TrimSpace(p[i+1:]), true
			}
			b.WriteByte(p[i])
		}
		return "", "", false
	}
	name, typ, ok = strings.Cut(p, " ")
	return name, strings.TrimSpace(typ), ok
}

// appendNested fills a list, struct or map builder from duckdb-go's value.
func appendNested(b array.Builder, v any) (bool, error) {
	switch b := b.(type) {
	case *array.MapBuilder:
		m, ok := v.(duckdb.OrderedMap)
		if !ok {
			if p, isPtr := v.(*duckdb.OrderedMap); isPtr && p != nil {
				m, ok = *p, true
			}
		}
		if !ok {
			return true, fmt.Errorf("unexpected %T for a map", v)
		}
		b.Append(true)
		keys, vals := m.Keys(), m.Values()
		for i := range keys {
			if err := appendValue(b.KeyBuilder(), keys[i]); err != nil {
				return true, err
			}
			if err := appendValue(b.ItemBuilder(), vals[i]); err != nil {
				return true, err
			}
		}
		return true, nil
	case *array.ListBuilder:
		l, ok := v.([]any)
		if !ok {
			return true, fmt.Errorf("unexpected %T for a list", v)
		}
		b.Append(true)
		for _, e := range l {
			if err := appendValue(b.ValueBuilder(), e); err != nil {
				return true, err
			}
		}
		return true, nil
	case *array.StructBuilder:
		m, ok := v.(map[string]any)
		if !ok {
			return true, fmt.Errorf("unexpected %T for a struct", v)
		}
		b.Append(true)
		st := b.Type().(*arrow.StructType)
		for i, f := range st.Fields() {
			if err := appendValue(b.FieldBuilder(i), m[f.Name]); err != nil {
				return true, err
			}
		}
		return true, nil
	}
	return false, nil
}
