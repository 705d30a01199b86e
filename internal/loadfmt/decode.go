package loadfmt

import (
	"fmt"
	"math"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/internal/arrowconv"
)

// decoder appends values of one Arrow type to its builder, read from
// their text (a CSV field) or from a JSON value. Neither is called for a
// NULL: the caller appends those.
type decoder struct {
	b    array.Builder
	name string // the type as a table declares it, for messages
	// text appends the value s spells; json the JSON value v (not null;
	// valid JSON). With put false they only check that the value can be
	// appended. Either appends exactly one value or none (and returns an
	// error): nested values are checked before anything is appended.
	text func(s []byte, put bool) error
	json func(v []byte, put bool) error
	// nested: a list, struct or map, whose append can fail halfway.
	nested bool
}

// typeName is t as a table declares it (BIGINT, DECIMAL(10, 2), ...).
func typeName(t arrow.DataType) string {
	if s, err := arrowconv.PaimonType(t); err == nil {
		return s
	}
	return t.String()
}

// newDecoder returns the decoder of b's type.
func newDecoder(b array.Builder) (*decoder, error) {
	t := b.Type()
	d := &decoder{b: b, name: typeName(t)}
	fromText := func() { // JSON: a string holding the text
		d.json = func(v []byte, put bool) error {
			s, err := jsonString(v, d.name)
			if err != nil {
				return err
			}
			return d.text(s, put)
		}
	}
	fromNumber := func() { // JSON: a number, as its text
		d.json = func(v []byte, put bool) error {
			if v[0] != '-' && (v[0] < '0' || v[0] > '9') {
				return wrongJSON(v, "a number", d.name)
			}
			return d.text(v, put)
		}
	}
	switch b := b.(type) {
	case *array.BooleanBuilder:
		d.text = func(s []byte, put bool) error {
			v, err := parseBool(s)
			if err == nil && put {
				b.Append(v)
			}
			return err
		}
		d.json = func(v []byte, put bool) error {
			switch v[0] {
			case 't', 'f':
				if put {
					b.Append(v[0] == 't')
				}
				return nil
			}
			return wrongJSON(v, "true or false", d.name)
		}
	case *array.Int8Builder:
		d.text = func(s []byte, put bool) error {
			v, err := parseInt(s, 8, d.name)
			if err == nil && put {
				b.Append(int8(v))
			}
			return err
		}
		fromNumber()
	case *array.Int16Builder:
		d.text = func(s []byte, put bool) error {
			v, err := parseInt(s, 16, d.name)
			if err == nil && put {
				b.Append(int16(v))
			}
			return err
		}
		fromNumber()
	case *array.Int32Builder:
		d.text = func(s []byte, put bool) error {
			v, err := parseInt(s, 32, d.name)
			if err == nil && put {
				b.Append(int32(v))
			}
			return err
		}
		fromNumber()
	case *array.Int64Builder:
		d.text = func(s []byte, put bool) error {
			v, err := parseInt(s, 64, d.name)
			if err == nil && put {
				b.Append(v)
			}
			return err
		}
		fromNumber()
	case *array.Float32Builder:
		d.text = func(s []byte, put bool) error {
			v, err := parseFloat(s, 32, d.name)
			if err == nil && put {
				b.Append(float32(v))
			}
			return err
		}
		d.json = floatJSON(d)
	case *array.Float64Builder:
		d.text = func(s []byte, put bool) error {
			v, err := parseFloat(s, 64, d.name)
			if err == nil && put {
				b.Append(v)
			}
			return err
		}
		d.json = floatJSON(d)
	case *array.Decimal128Builder:
		dt := t.(*arrow.Decimal128Type)
		d.text = func(s []byte, put bool) error {
			v, err := parseDecimal(s, dt.Precision, dt.Scale)
			if err == nil && put {
				b.Append(v)
			}
			return err
		}
		fromNumber()
	case *array.StringBuilder:
		d.text = func(s []byte, put bool) error {
			if err := checkUTF8(s); err != nil {
				return err
			}
			if put {
				b.BinaryBuilder.Append(s)
			}
			return nil
		}
		fromText()
	case *array.BinaryBuilder:
		d.text = func(s []byte, put bool) error {
			v, err := parseBytes(s)
			if err == nil && put {
				b.Append(v)
			}
			return err
		}
		fromText()
	case *array.Date32Builder:
		d.text = func(s []byte, put bool) error {
			days, n, ok := parseDate(s)
			if !ok || n != len(s) {
				return fmt.Errorf("%s is not a DATE (YYYY-MM-DD)", quote(s))
			}
			if days < math.MinInt32 || days > math.MaxInt32 {
				return fmt.Errorf("%s is out of range for DATE", quote(s))
			}
			if put {
				b.Append(arrow.Date32(days))
			}
			return nil
		}
		fromText()
	case *array.Time32Builder:
		unit := t.(*arrow.Time32Type).Unit
		d.text = func(s []byte, put bool) error {
			nanos, _, n, ok := parseClock(s)
			if !ok || n != len(s) {
				return fmt.Errorf("%s is not a %s (HH:MM:SS[.fff])", quote(s), d.name)
			}
			per := int64(unit.Multiplier())
			if nanos%per != 0 {
				return fmt.Errorf("%s is finer than %s holds (Paimon keeps times in milliseconds)", quote(s), d.name)
			}
			if put {
				b.Append(arrow.Time32(nanos / per))
			}
			return nil
		}
		fromText()
	case *array.Time64Builder:
		unit := t.(*arrow.Time64Type).Unit
		d.text = func(s []byte, put bool) error {
			nanos, _, n, ok := parseClock(s)
			if !ok || n != len(s) {
				return fmt.Errorf("%s is not a %s (HH:MM:SS[.ffffff])", quote(s), d.name)
			}
			per := int64(unit.Multiplier())
			if nanos%per != 0 {
				return fmt.Errorf("%s is finer than %s holds", quote(s), d.name)
			}
			if put {
				b.Append(arrow.Time64(nanos / per))
			}
			return nil
		}
		fromText()
	case *array.TimestampBuilder:
		unit := t.(*arrow.TimestampType).Unit
		d.text = func(s []byte, put bool) error {
			dt, ok := parseTimestamp(s)
			if !ok {
				return fmt.Errorf("%s is not a %s (YYYY-MM-DD HH:MM:SS[.ffffff][zone])", quote(s), d.name)
			}
			v, err := timestampValue(dt, unit)
			switch err {
			case errFiner:
				return fmt.Errorf("%s has a finer fraction of a second than %s holds", quote(s), d.name)
			case errRange:
				return fmt.Errorf("%s is out of range for %s", quote(s), d.name)
			}
			if put {
				b.Append(arrow.Timestamp(v))
			}
			return nil
		}
		fromText()
	case *array.ListBuilder:
		elem, err := newDecoder(b.ValueBuilder())
		if err != nil {
			return nil, err
		}
		d.nested = true
		d.json = func(v []byte, put bool) error {
			if v[0] != '[' {
				return wrongJSON(v, "an array", d.name)
			}
			if put {
				b.Append(true)
			}
			i := 0
			return eachElement(v, func(e []byte) error {
				i++
				if err := appendJSON(elem, e, put); err != nil {
					return fmt.Errorf("element %d: %w", i, err)
				}
				return nil
			})
		}
		d.text = jsonText(d)
	case *array.StructBuilder:
		st := t.(*arrow.StructType)
		fields := make([]*decoder, st.NumFields())
		for i := range fields {
			f, err := newDecoder(b.FieldBuilder(i))
			if err != nil {
				return nil, fmt.Errorf("field %q: %w", st.Field(i).Name, err)
			}
			fields[i] = f
		}
		idx := newNames(st.Fields())
		d.nested = true
		d.json = func(v []byte, put bool) error {
			if v[0] != '{' {
				return wrongJSON(v, "an object", d.name)
			}
			if put {
				b.Append(true)
			}
			var seen []bool
			if len(fields) <= 64 {
				var arr [64]bool
				seen = arr[:len(fields)]
			} else {
				seen = make([]bool, len(fields))
			}
			err := eachMember(v, func(k, e []byte) error {
				i, ok := idx.find(k)
				if !ok {
					return fmt.Errorf("%s is not a field of %s", quote(k), d.name)
				}
				if seen[i] {
					return fmt.Errorf("field %s twice", quote(k))
				}
				seen[i] = true
				if err := appendJSON(fields[i], e, put); err != nil {
					return fmt.Errorf("field %q: %w", st.Field(i).Name, err)
				}
				return nil
			})
			if err == nil && put {
				for i, ok := range seen {
					if !ok { // a field not given is null
						fields[i].b.AppendNull()
					}
				}
			}
			return err
		}
		d.text = jsonText(d)
	case *array.MapBuilder:
		key, err := newDecoder(b.KeyBuilder())
		if err != nil {
			return nil, err
		}
		item, err := newDecoder(b.ItemBuilder())
		if err != nil {
			return nil, err
		}
		d.nested = true
		d.json = func(v []byte, put bool) error {
			if v[0] != '{' {
				return wrongJSON(v, "an object", d.name)
			}
			if put {
				b.Append(true)
			}
			return eachMember(v, func(k, e []byte) error {
				if err := key.text(k, put); err != nil {
					return fmt.Errorf("key: %w", err)
				}
				if err := appendJSON(item, e, put); err != nil {
					return fmt.Errorf("value of %s: %w", quote(k), err)
				}
				return nil
			})
		}
		d.text = jsonText(d)
	default:
		return nil, fmt.Errorf("load cannot read %s from text", t)
	}
	return d, nil
}

// appendJSON appends the JSON value v, null too (see decoder for put).
func appendJSON(d *decoder, v []byte, put bool) error {
	if v[0] == 'n' {
		if put {
			d.b.AppendNull()
		}
		return nil
	}
	return d.json(v, put)
}

// appendValue appends one value through f (d.text or d.json): a nested
// value is checked first, so that an error appends nothing.
func appendValue(d *decoder, f func([]byte, bool) error, v []byte) error {
	if d.nested {
		if err := f(v, false); err != nil {
			return err
		}
	}
	return f(v, true)
}

// jsonText reads a nested value's text as JSON, as resultfmt writes it.
func jsonText(d *decoder) func([]byte, bool) error {
	return func(s []byte, put bool) error {
		start := skipSpace(s, 0)
		end, err := (&scanner{b: s, final: true}).value(start, 0)
		if err == nil && skipSpace(s, end) != len(s) {
			err = fmt.Errorf("text after the value at byte %d", end)
		}
		if err != nil {
			return fmt.Errorf("%s is not a %s written as JSON: %v", quote(s), d.name, err)
		}
		return appendJSON(d, s[start:end], put)
	}
}

// floatJSON reads a number, or the strings "NaN", "Infinity" and
// "-Infinity", which JSON has no number for.
func floatJSON(d *decoder) func([]byte, bool) error {
	return func(v []byte, put bool) error {
		if v[0] == '"' {
			s, err := jsonString(v, d.name)
			if err != nil {
				return err
			}
			switch string(s) {
			case "NaN", "Infinity", "-Infinity":
				return d.text(s, put)
			}
			return fmt.Errorf("a string %s is not a %s (only \"NaN\", \"Infinity\" and \"-Infinity\" may be)", quote(s), d.name)
		}
		if v[0] != '-' && (v[0] < '0' || v[0] > '9') {
			return wrongJSON(v, "a number", d.name)
		}
		return d.text(v, put)
	}
}

// jsonString is the text of the JSON string v.
func jsonString(v []byte, name string) ([]byte, error) {
	if v[0] != '"' {
		return nil, wrongJSON(v, "a string", name)
	}
	return unquote(v)
}

// wrongJSON says that v is not the JSON a type takes.
func wrongJSON(v []byte, want, name string) error {
	kind := "a number"
	switch v[0] {
	case '"':
		kind = "a string"
	case '{':
		kind = "an object"
	case '[':
		kind = "an array"
	case 't', 'f':
		kind = "a boolean"
	}
	return fmt.Errorf("expected %s for %s, found %s %s", want, name, kind, quote(v))
}

// names finds fields by name: exactly, else ignoring case, as the server
// matches columns.
type names struct {
	exact map[string]int
	fold  map[string]int
}

func newNames(fs []arrow.Field) names {
	n := names{exact: map[string]int{}, fold: map[string]int{}}
	for i, f := range fs {
		n.exact[f.Name] = i
		if _, ok := n.fold[strings.ToLower(f.Name)]; !ok {
			n.fold[strings.ToLower(f.Name)] = i
		}
	}
	return n
}

func (n names) find(k []byte) (int, bool) {
	if i, ok := n.exact[string(k)]; ok {
		return i, true
	}
	i, ok := n.fold[strings.ToLower(string(k))]
	return i, ok
}
