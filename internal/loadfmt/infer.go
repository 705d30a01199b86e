package loadfmt

import (
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
)

// Types of columns that no table gives: a file read without
// Options.Table gets them from its values (the first batch's rows).
//
//   - CSV: BOOLEAN when every value is true or false, BIGINT when every
//     one is an integer that fits, DOUBLE when a number, DATE when
//     YYYY-MM-DD, TIMESTAMP(6) (9 with finer fractions) when a date and
//     time, WITH LOCAL TIME ZONE when every one has a zone; else STRING.
//     A column with no value but NULL is STRING.
//   - JSON: true/false BOOLEAN; numbers BIGINT when all are integers that
//     fit, else DOUBLE; strings as CSV's text (DATE, TIMESTAMP or
//     STRING); arrays ARRAY of their elements' type; objects ROW of their
//     keys (in the order first seen). Two kinds in one column (a number
//     and a string) are an error naming both lines.

// textKind infers a column's type from text values.
type textKind struct {
	n                          int64
	fracDigits                 int
	notBool, notInt, notFloat  bool
	notDate, notTS, notAllZone bool
}

func (k *textKind) add(s []byte) {
	k.n++
	if !k.notBool {
		if _, err := parseBool(s); err != nil || len(s) == 1 {
			k.notBool = true // 1, 0, t and f are no evidence of a boolean
		}
	}
	if !k.notInt {
		if _, err := strconv.ParseInt(str(s), 10, 64); err != nil {
			k.notInt = true
		}
	}
	if !k.notFloat {
		if _, err := strconv.ParseFloat(str(s), 64); err != nil {
			k.notFloat = true
		}
	}
	if !k.notDate || !k.notTS {
		d, ok := parseTimestamp(s)
		switch {
		case !ok:
			k.notDate, k.notTS = true, true
		case d.hasTime:
			k.notDate = true
			k.fracDigits = max(k.fracDigits, d.digits)
			if !d.hasZone {
				k.notAllZone = true
			}
		default:
			k.notTS = true // a date alone
		}
	}
}

func (k *textKind) typ() arrow.DataType {
	switch {
	case k.n == 0:
		return arrow.BinaryTypes.String
	case !k.notBool:
		return arrow.FixedWidthTypes.Boolean
	case !k.notInt:
		return arrow.PrimitiveTypes.Int64
	case !k.notFloat:
		return arrow.PrimitiveTypes.Float64
	case !k.notDate:
		return arrow.FixedWidthTypes.Date32
	case !k.notTS:
		t := &arrow.TimestampType{Unit: arrow.Microsecond}
		if k.fracDigits > 6 {
			t.Unit = arrow.Nanosecond
		}
		if !k.notAllZone {
			t.TimeZone = "UTC"
		}
		return t
	}
	return arrow.BinaryTypes.String
}

// jsonKind infers a type from JSON values.
type jsonKind struct {
	kind     byte // 0: only nulls so far; 'b', 'n' (number), 's', 'a', 'o'
	line     int64
	integer  bool // every number so far is an integer that fits int64
	text     textKind
	elem     *jsonKind
	fields   []string
	children map[string]*jsonKind
}

func kindName(k byte) string {
	return map[byte]string{'b': "a boolean", 'n': "a number", 's': "a string", 'a': "an array", 'o': "an object"}[k]
}

// add takes the JSON value v, on line.
func (k *jsonKind) add(v []byte, line int64) error {
	var kind byte
	switch v[0] {
	case 'n':
		return nil
	case 't', 'f':
		kind = 'b'
	case '"':
		kind = 's'
	case '[':
		kind = 'a'
	case '{':
		kind = 'o'
	default:
		kind = 'n'
	}
	if k.kind == 0 {
		k.kind, k.line, k.integer = kind, line, true
	} else if k.kind != kind {
		return fmt.Errorf("holds %s on line %d but %s on line %d; create the table with the type you want first (CREATE TABLE), then load into it", kindName(k.kind), k.line, kindName(kind), line)
	}
	switch kind {
	case 'n':
		if k.integer {
			if _, err := strconv.ParseInt(str(v), 10, 64); err != nil {
				k.integer = false
			}
		}
	case 's':
		s, err := unquote(v)
		if err != nil {
			return err
		}
		k.text.add(s)
	case 'a':
		if k.elem == nil {
			k.elem = &jsonKind{}
		}
		return eachElement(v, func(e []byte) error {
			if err := k.elem.add(e, line); err != nil {
				return fmt.Errorf("its elements: %w", err)
			}
			return nil
		})
	case 'o':
		if k.children == nil {
			k.children = map[string]*jsonKind{}
		}
		return eachMember(v, func(key, e []byte) error {
			c, ok := k.children[string(key)]
			if !ok {
				c = &jsonKind{}
				k.children[string(key)] = c
				k.fields = append(k.fields, string(key))
			}
			if err := c.add(e, line); err != nil {
				return fmt.Errorf("field %q %w", key, err)
			}
			return nil
		})
	}
	return nil
}

func (k *jsonKind) typ() arrow.DataType {
	switch k.kind {
	case 'b':
		return arrow.FixedWidthTypes.Boolean
	case 'n':
		if k.integer {
			return arrow.PrimitiveTypes.Int64
		}
		return arrow.PrimitiveTypes.Float64
	case 's':
		t := k.text
		t.notBool, t.notInt, t.notFloat = true, true, true // a string is no number
		return t.typ()
	case 'a':
		return arrow.ListOfField(arrow.Field{Name: "element", Type: k.elem.typ(), Nullable: true})
	case 'o':
		fs := make([]arrow.Field, len(k.fields))
		for i, name := range k.fields {
			fs[i] = arrow.Field{Name: name, Type: k.children[name].typ(), Nullable: true}
		}
		if len(fs) == 0 { // only {}: a ROW needs a field
			return arrow.BinaryTypes.String
		}
		return arrow.StructOf(fs...)
	}
	return arrow.BinaryTypes.String
}
