package paimontype

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
)

// TypeRoot identifies the kind of a Paimon data type.
type TypeRoot int8

// Paimon type roots.
const (
	TypeBoolean TypeRoot = iota + 1
	TypeTinyInt
	TypeSmallInt
	TypeInt
	TypeBigInt
	TypeFloat
	TypeDouble
	TypeDecimal
	TypeChar
	TypeVarChar
	TypeBinary
	TypeVarBinary
	TypeDate
	TypeTime
	TypeTimestamp
	TypeTimestampLTZ
	TypeArray
	TypeMap
	TypeMultiset
	TypeRow
)

// MaxLength is the length of STRING (VARCHAR) and BYTES (VARBINARY).
const MaxLength = 2147483647

// MaxTypeDepth bounds how deeply composite types (ARRAY, MULTISET, MAP, ROW)
// nest: ARRAY<INT> has depth 1, and a type nested deeper is refused, both as
// type text and in a schema file. Every walk over a type recurses once per
// level, and the pretty-printed schema file grows with the square of the
// depth, so an unbounded depth is a stack overflow or a huge file away.
const MaxTypeDepth = 32

// ErrTypeTooDeep is returned (wrapped) for a type nested deeper than MaxTypeDepth.
var ErrTypeTooDeep = fmt.Errorf("type nested deeper than %d levels", MaxTypeDepth)

// DataType is a Paimon data type. The zero value is invalid.
type DataType struct {
	Root      TypeRoot
	NotNull   bool
	Length    int         // CHAR, VARCHAR, BINARY, VARBINARY
	Precision int         // DECIMAL, TIME, TIMESTAMP, TIMESTAMP_LTZ
	Scale     int         // DECIMAL
	Elem      *DataType   // ARRAY, MULTISET
	Key       *DataType   // MAP
	Value     *DataType   // MAP
	Fields    []DataField // ROW; ids are assigned by the schema
}

// Nullable reports whether the type admits null.
func (t DataType) Nullable() bool { return !t.NotNull }

// WithNullable returns a copy of t with the given nullability.
func (t DataType) WithNullable(n bool) DataType { t.NotNull = !n; return t }

// String returns the Paimon spelling (asSQLString plus " NOT NULL").
func (t DataType) String() string {
	s := t.SQLString()
	if t.NotNull {
		s += " NOT NULL"
	}
	return s
}

// SQLString is the Paimon spelling without " NOT NULL" (Java's asSQLString).
func (t DataType) SQLString() string {
	switch t.Root {
	case TypeBoolean:
		return "BOOLEAN"
	case TypeTinyInt:
		return "TINYINT"
	case TypeSmallInt:
		return "SMALLINT"
	case TypeInt:
		return "INT"
	case TypeBigInt:
		return "BIGINT"
	case TypeFloat:
		return "FLOAT"
	case TypeDouble:
		return "DOUBLE"
	case TypeDecimal:
		return fmt.Sprintf("DECIMAL(%d, %d)", t.Precision, t.Scale)
	case TypeChar:
		return fmt.Sprintf("CHAR(%d)", t.Length)
	case TypeVarChar:
		if t.Length == MaxLength {
			return "STRING"
		}
		return fmt.Sprintf("VARCHAR(%d)", t.Length)
	case TypeBinary:
		return fmt.Sprintf("BINARY(%d)", t.Length)
	case TypeVarBinary:
		if t.Length == MaxLength {
			return "BYTES"
		}
		return fmt.Sprintf("VARBINARY(%d)", t.Length)
	case TypeDate:
		return "DATE"
	case TypeTime:
		return fmt.Sprintf("TIME(%d)", t.Precision)
	case TypeTimestamp:
		return fmt.Sprintf("TIMESTAMP(%d)", t.Precision)
	case TypeTimestampLTZ:
		return fmt.Sprintf("TIMESTAMP(%d) WITH LOCAL TIME ZONE", t.Precision)
	case TypeArray:
		return "ARRAY<" + t.Elem.String() + ">"
	case TypeMultiset:
		return "MULTISET<" + t.Elem.String() + ">"
	case TypeMap:
		return "MAP<" + t.Key.String() + ", " + t.Value.String() + ">"
	case TypeRow:
		parts := make([]string, len(t.Fields))
		for i, f := range t.Fields {
			parts[i] = quoteIdent(f.Name) + " " + f.Type.String()
			if f.Description != "" {
				parts[i] += " '" + strings.ReplaceAll(f.Description, "'", "''") + "'"
			}
		}
		return "ROW<" + strings.Join(parts, ", ") + ">"
	}
	return fmt.Sprintf("UNKNOWN(%d)", t.Root)
}

func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// IsComposite reports whether t is an ARRAY, MAP, MULTISET or ROW.
func (t DataType) IsComposite() bool {
	return t.Root == TypeArray || t.Root == TypeMap || t.Root == TypeMultiset || t.Root == TypeRow
}

// ArrowType is the Arrow type used for values of t.
func (t DataType) ArrowType() arrow.DataType {
	switch t.Root {
	case TypeBoolean:
		return arrow.FixedWidthTypes.Boolean
	case TypeTinyInt:
		return arrow.PrimitiveTypes.Int8
	case TypeSmallInt:
		return arrow.PrimitiveTypes.Int16
	case TypeInt:
		return arrow.PrimitiveTypes.Int32
	case TypeBigInt:
		return arrow.PrimitiveTypes.Int64
	case TypeFloat:
		return arrow.PrimitiveTypes.Float32
	case TypeDouble:
		return arrow.PrimitiveTypes.Float64
	case TypeDecimal:
		return &arrow.Decimal128Type{Precision: int32(t.Precision), Scale: int32(t.Scale)}
	case TypeChar, TypeVarChar:
		return arrow.BinaryTypes.String
	case TypeBinary, TypeVarBinary:
		return arrow.BinaryTypes.Binary
	case TypeDate:
		return arrow.FixedWidthTypes.Date32
	case TypeTime:
		return arrow.FixedWidthTypes.Time32ms
	case TypeTimestamp, TypeTimestampLTZ:
		tz := ""
		if t.Root == TypeTimestampLTZ {
			tz = "UTC"
		}
		unit := arrow.Nanosecond
		switch {
		case t.Precision <= 3:
			unit = arrow.Millisecond
		case t.Precision <= 6:
			unit = arrow.Microsecond
		}
		return &arrow.TimestampType{Unit: unit, TimeZone: tz}
	case TypeArray:
		return arrow.ListOfField(arrow.Field{Name: "element", Type: t.Elem.ArrowType(), Nullable: t.Elem.Nullable()})
	case TypeMultiset:
		return arrow.MapOf(t.Elem.ArrowType(), arrow.PrimitiveTypes.Int32)
	case TypeMap:
		m := arrow.MapOf(t.Key.ArrowType(), t.Value.ArrowType())
		m.SetItemNullable(t.Value.Nullable())
		return m
	case TypeRow:
		fs := make([]arrow.Field, len(t.Fields))
		for i, f := range t.Fields {
			fs[i] = arrow.Field{Name: f.Name, Type: f.Type.ArrowType(), Nullable: f.Type.Nullable(), Metadata: FieldIDMetadata(f.ID)}
		}
		return arrow.StructOf(fs...)
	}
	return arrow.Null
}

// ---- JSON (schema file) form ----

// MarshalJSON writes the compact JSON form of the type (a string for atomic types,
// an object for composite types).
func (t DataType) MarshalJSON() ([]byte, error) {
	return json.Marshal(t.jsonValue())
}

// jsonValue returns the value tree used by the pretty printer.
func (t DataType) jsonValue() any {
	nn := ""
	if t.NotNull {
		nn = " NOT NULL"
	}
	switch t.Root {
	case TypeArray, TypeMultiset:
		name := "ARRAY"
		if t.Root == TypeMultiset {
			name = "MULTISET"
		}
		return JSONObject{{"type", name + nn}, {"element", t.Elem.jsonValue()}}
	case TypeMap:
		return JSONObject{{"type", "MAP" + nn}, {"key", t.Key.jsonValue()}, {"value", t.Value.jsonValue()}}
	case TypeRow:
		fs := make([]any, len(t.Fields))
		for i, f := range t.Fields {
			fs[i] = f.jsonValue()
		}
		return JSONObject{{"type", "ROW" + nn}, {"fields", fs}}
	}
	return t.String()
}

func (jo JSONObject) MarshalJSON() ([]byte, error) {
	var sb strings.Builder
	sb.WriteByte('{')
	for i, kv := range jo {
		if i > 0 {
			sb.WriteByte(',')
		}
		writeJSONString(&sb, kv.Key)
		sb.WriteByte(':')
		b, err := json.Marshal(kv.Value)
		if err != nil {
			return nil, err
		}
		sb.Write(b)
	}
	sb.WriteByte('}')
	return []byte(sb.String()), nil
}

// UnmarshalJSON reads either form. The JSON is decoded once and the type built
// from that tree: letting encoding/json call UnmarshalJSON at every nesting
// level re-validates each subtree per level, cubic in the depth of a
// pretty-printed schema.
func (t *DataType) UnmarshalJSON(b []byte) error {
	v, err := decodeJSONTree(b)
	if errors.Is(err, ErrTypeTooDeep) {
		return err
	} else if err != nil {
		return fmt.Errorf("paimontype: bad type json %s: %w", clip(string(b)), err)
	}
	dt, err := typeFromJSON(v, 0)
	if err != nil {
		return err
	}
	*t = dt
	return nil
}

// maxTypeJSONDepth bounds the object and array nesting of a schema file: a
// field's type adds at most three levels per composite type (ROW: type
// object, fields array, field object) around the four of the file itself.
const maxTypeJSONDepth = 3*MaxTypeDepth + 4

// checkJSONDepth refuses b (JSON) nested deeper than limit, stopping at the
// first place it does, before anything is decoded.
func checkJSONDepth(b []byte, limit int) error {
	depth, inString := 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			if depth++; depth > limit {
				return fmt.Errorf("paimontype: %w: JSON nested more than %d deep", ErrTypeTooDeep, limit)
			}
		case '}', ']':
			depth--
		}
	}
	return nil
}

// decodeJSONTree decodes the JSON of a type or field, refusing nesting that
// no type within MaxTypeDepth needs before building anything.
func decodeJSONTree(b []byte) (any, error) {
	if err := checkJSONDepth(b, maxTypeJSONDepth); err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err == nil {
		return nil, errors.New("trailing data")
	}
	return v, nil
}

// typeFromJSON builds a type from its decoded JSON; depth is the number of
// composite types around it.
func typeFromJSON(v any, depth int) (DataType, error) {
	switch x := v.(type) {
	case string:
		return parseTypeAt(x, depth)
	case map[string]any:
	default:
		return DataType{}, fmt.Errorf("paimontype: bad type json: %s", jsonKind(v))
	}
	o := v.(map[string]any)
	typ, ok := o["type"].(string)
	if !ok {
		return DataType{}, fmt.Errorf("paimontype: bad type json: \"type\" is %s, not a string", jsonKind(o["type"]))
	}
	notNull := strings.Contains(strings.ToUpper(typ), "NOT NULL")
	base := strings.TrimSpace(strings.Replace(strings.ToUpper(typ), "NOT NULL", "", 1))
	switch base {
	case "ARRAY", "MULTISET", "MAP", "ROW":
	default:
		return DataType{}, fmt.Errorf("paimontype: unsupported type %q", clip(typ))
	}
	if depth+1 > MaxTypeDepth {
		return DataType{}, fmt.Errorf("paimontype: %w: a %s inside %d composite types", ErrTypeTooDeep, base, depth)
	}
	child := func(key string) (*DataType, error) {
		c, ok := o[key]
		if !ok || c == nil {
			return nil, fmt.Errorf("paimontype: bad type json: %s without %s", base, key)
		}
		ct, err := typeFromJSON(c, depth+1)
		if err != nil {
			return nil, err
		}
		return &ct, nil
	}
	switch base {
	case "ARRAY", "MULTISET":
		e, err := child("element")
		if err != nil {
			return DataType{}, err
		}
		root := TypeArray
		if base == "MULTISET" {
			root = TypeMultiset
		}
		return DataType{Root: root, NotNull: notNull, Elem: e}, nil
	case "MAP":
		k, err := child("key")
		if err != nil {
			return DataType{}, err
		}
		val, err := child("value")
		if err != nil {
			return DataType{}, err
		}
		return DataType{Root: TypeMap, NotNull: notNull, Key: k, Value: val}, nil
	}
	var fields []DataField
	switch fs := o["fields"].(type) {
	case nil:
	case []any:
		if len(fs) > 0 {
			fields = make([]DataField, len(fs))
		}
		for i, f := range fs {
			df, err := fieldFromJSON(f, depth+1)
			if err != nil {
				return DataType{}, err
			}
			fields[i] = df
		}
	default:
		return DataType{}, fmt.Errorf("paimontype: bad type json: ROW fields are %s", jsonKind(fs))
	}
	return DataType{Root: TypeRow, NotNull: notNull, Fields: fields}, nil
}

// fieldFromJSON builds a field of a schema or a ROW from its decoded JSON.
func fieldFromJSON(v any, depth int) (DataField, error) {
	o, ok := v.(map[string]any)
	if !ok {
		return DataField{}, fmt.Errorf("paimontype: bad field json: %s", jsonKind(v))
	}
	var f DataField
	switch id := o["id"].(type) {
	case nil:
	case json.Number:
		n, err := strconv.Atoi(id.String())
		if err != nil {
			return DataField{}, fmt.Errorf("paimontype: bad field json: id %s", clip(id.String()))
		}
		f.ID = n
	default:
		return DataField{}, fmt.Errorf("paimontype: bad field json: id is %s", jsonKind(id))
	}
	switch n := o["name"].(type) {
	case nil:
	case string:
		f.Name = n
	default:
		return DataField{}, fmt.Errorf("paimontype: bad field json: name is %s", jsonKind(n))
	}
	switch d := o["description"].(type) {
	case nil:
	case string:
		f.Description = d
	default:
		return DataField{}, fmt.Errorf("paimontype: bad field json: description of %q is %s", clip(f.Name), jsonKind(d))
	}
	if o["type"] == nil {
		return DataField{}, fmt.Errorf("paimontype: bad field json: field %q has no type", clip(f.Name))
	}
	t, err := typeFromJSON(o["type"], depth)
	if err != nil {
		return DataField{}, fmt.Errorf("paimontype: field %q: %w", clip(f.Name), err)
	}
	f.Type = t
	return f, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// clip shortens text quoted in an error message.
func clip(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return fmt.Sprintf("%s... (%d bytes)", s[:max], len(s))
}

// ---- parser ----

// ParseType parses a Paimon JSON type string or a SQL type spelling. Types
// nested deeper than MaxTypeDepth are refused (ErrTypeTooDeep).
func ParseType(s string) (DataType, error) { return parseTypeAt(s, 0) }

// parseTypeAt parses s as a type found inside depth composite types.
func parseTypeAt(s string, depth int) (DataType, error) {
	p := &typeParser{src: s, depth: depth}
	if !utf8.ValidString(s) {
		// A schema file is JSON, which holds only Unicode text.
		return DataType{}, p.errf("not valid UTF-8")
	}
	if err := p.lex(); err != nil {
		return DataType{}, err
	}
	t, err := p.parseType()
	if err != nil {
		return DataType{}, err
	}
	if !p.eof() {
		return DataType{}, p.errf("unexpected %q", p.peek().text)
	}
	return t, nil
}

type tokKind int

const (
	tokIdent tokKind = iota
	tokNum
	tokSym
	tokQuoted // `ident`
	tokString // 'comment'
)

type token struct {
	kind tokKind
	text string
}

type typeParser struct {
	src   string
	toks  []token
	pos   int
	depth int // composite types around the one being parsed
}

func (p *typeParser) errf(format string, args ...any) error {
	return fmt.Errorf("paimontype: invalid type %q: %s", clip(p.src), clip(fmt.Sprintf(format, args...)))
}

func (p *typeParser) tooDeep() error {
	return fmt.Errorf("paimontype: invalid type %q: %w", clip(p.src), ErrTypeTooDeep)
}

func (p *typeParser) lex() error {
	s := p.src
	// Each composite type opens one bracket and a type's parameters one
	// more: deeper brackets are refused before the rest is tokenized.
	brackets := p.depth
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '(' || c == ')' || c == '<' || c == '>' || c == ',' || c == ':' || c == '[' || c == ']':
			switch c {
			case '(', '<':
				if brackets++; brackets > MaxTypeDepth+1 {
					return p.tooDeep()
				}
			case ')', '>':
				brackets--
			}
			p.toks = append(p.toks, token{tokSym, string(c)})
			i++
		case c >= '0' && c <= '9':
			j := i
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			p.toks = append(p.toks, token{tokNum, s[i:j]})
			i = j
		case c == '`' || c == '\'' || c == '"':
			q := c
			var sb strings.Builder
			j := i + 1
			for {
				if j >= len(s) {
					return p.errf("unterminated quote")
				}
				if s[j] == q {
					if j+1 < len(s) && s[j+1] == q {
						sb.WriteByte(q)
						j += 2
						continue
					}
					break
				}
				sb.WriteByte(s[j])
				j++
			}
			k := tokQuoted
			if q == '\'' {
				k = tokString
			}
			p.toks = append(p.toks, token{k, sb.String()})
			i = j + 1
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80:
			j := i
			for j < len(s) && (s[j] == '_' || s[j] == '$' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9' || s[j] >= 0x80) {
				j++
			}
			p.toks = append(p.toks, token{tokIdent, s[i:j]})
			i = j
		default:
			return p.errf("unexpected character %q", c)
		}
	}
	return nil
}

func (p *typeParser) eof() bool { return p.pos >= len(p.toks) }

func (p *typeParser) peek() token {
	if p.eof() {
		return token{kind: -1}
	}
	return p.toks[p.pos]
}

func (p *typeParser) isKeyword(kw string) bool {
	t := p.peek()
	return t.kind == tokIdent && strings.EqualFold(t.text, kw)
}

func (p *typeParser) acceptKeyword(kw string) bool {
	if p.isKeyword(kw) {
		p.pos++
		return true
	}
	return false
}

func (p *typeParser) acceptSym(sym string) bool {
	t := p.peek()
	if t.kind == tokSym && t.text == sym {
		p.pos++
		return true
	}
	return false
}

func (p *typeParser) expectSym(sym string) error {
	if !p.acceptSym(sym) {
		if p.eof() {
			return p.errf("expected %q at end", sym)
		}
		return p.errf("expected %q, got %q", sym, p.peek().text)
	}
	return nil
}

func (p *typeParser) expectKeyword(kw string) error {
	if !p.acceptKeyword(kw) {
		return p.errf("expected %s", kw)
	}
	return nil
}

// optInts parses an optional "(a[, b])".
func (p *typeParser) optInts() ([]int, error) {
	if !p.acceptSym("(") {
		return nil, nil
	}
	var out []int
	for {
		t := p.peek()
		if t.kind != tokNum {
			return nil, p.errf("expected a number")
		}
		n, err := strconv.Atoi(t.text)
		if err != nil {
			return nil, p.errf("bad number %q", t.text)
		}
		out = append(out, n)
		p.pos++
		if p.acceptSym(")") {
			return out, nil
		}
		if err := p.expectSym(","); err != nil {
			return nil, err
		}
	}
}

func (p *typeParser) parseType() (DataType, error) {
	t, err := p.parseBase()
	if err != nil {
		return DataType{}, err
	}
	// DuckDB's spelling of an array: INT[] is ARRAY<INT>, INT[][] an
	// ARRAY of them. A fixed size (INT[3]) is no Paimon type.
	for p.acceptSym("[") {
		if tk := p.peek(); tk.kind == tokNum {
			return DataType{}, p.errf("%s[%s]: a fixed-size array is not a Paimon type; write %s[] (ARRAY<%s>)", t, tk.text, t, t)
		}
		if err := p.expectSym("]"); err != nil {
			return DataType{}, err
		}
		e := t
		t = DataType{Root: TypeArray, Elem: &e}
		if p.depth+compositeDepth(t) > MaxTypeDepth {
			return DataType{}, p.tooDeep()
		}
	}
	if p.acceptKeyword("NOT") {
		if err := p.expectKeyword("NULL"); err != nil {
			return DataType{}, err
		}
		t.NotNull = true
	} else {
		p.acceptKeyword("NULL")
	}
	return t, nil
}

func (p *typeParser) oneInt(args []int, def int, name string) (int, error) {
	switch len(args) {
	case 0:
		return def, nil
	case 1:
		return args[0], nil
	}
	return 0, p.errf("%s takes one parameter", name)
}

func (p *typeParser) parseBase() (DataType, error) {
	tk := p.peek()
	if tk.kind != tokIdent {
		if p.eof() {
			return DataType{}, p.errf("missing type")
		}
		return DataType{}, p.errf("unexpected %q", tk.text)
	}
	p.pos++
	kw := strings.ToUpper(tk.text)
	simple := map[string]TypeRoot{
		"BOOLEAN": TypeBoolean, "BOOL": TypeBoolean, "TINYINT": TypeTinyInt, "SMALLINT": TypeSmallInt,
		"INT": TypeInt, "INTEGER": TypeInt, "BIGINT": TypeBigInt, "FLOAT": TypeFloat, "REAL": TypeFloat,
		"DATE": TypeDate,
	}
	if r, ok := simple[kw]; ok {
		return DataType{Root: r}, nil
	}
	switch kw {
	case "DOUBLE":
		p.acceptKeyword("PRECISION")
		return DataType{Root: TypeDouble}, nil
	case "STRING", "TEXT":
		return DataType{Root: TypeVarChar, Length: MaxLength}, nil
	case "BYTES":
		return DataType{Root: TypeVarBinary, Length: MaxLength}, nil
	case "CHAR", "CHARACTER", "VARCHAR", "BINARY", "VARBINARY":
		if kw == "CHARACTER" || kw == "CHAR" {
			if p.acceptKeyword("VARYING") {
				kw = "VARCHAR"
			} else {
				kw = "CHAR"
			}
		}
		args, err := p.optInts()
		if err != nil {
			return DataType{}, err
		}
		def := 1
		if kw == "VARCHAR" || kw == "VARBINARY" {
			def = MaxLength
		}
		n, err := p.oneInt(args, def, kw)
		if err != nil {
			return DataType{}, err
		}
		if n < 1 {
			return DataType{}, p.errf("%s length must be positive", kw)
		}
		root := map[string]TypeRoot{"CHAR": TypeChar, "VARCHAR": TypeVarChar, "BINARY": TypeBinary, "VARBINARY": TypeVarBinary}[kw]
		return DataType{Root: root, Length: n}, nil
	case "DECIMAL", "DEC", "NUMERIC":
		args, err := p.optInts()
		if err != nil {
			return DataType{}, err
		}
		prec, scale := 10, 0
		switch len(args) {
		case 0:
		case 1:
			prec = args[0]
		case 2:
			prec, scale = args[0], args[1]
		default:
			return DataType{}, p.errf("DECIMAL takes at most two parameters")
		}
		if prec < 1 || prec > 38 || scale < 0 || scale > prec {
			return DataType{}, p.errf("DECIMAL(%d, %d) out of range", prec, scale)
		}
		return DataType{Root: TypeDecimal, Precision: prec, Scale: scale}, nil
	case "TIME":
		args, err := p.optInts()
		if err != nil {
			return DataType{}, err
		}
		n, err := p.oneInt(args, 0, kw)
		if err != nil {
			return DataType{}, err
		}
		if n < 0 || n > 9 {
			return DataType{}, p.errf("TIME precision out of range")
		}
		if p.acceptKeyword("WITHOUT") {
			if err := p.timeZoneTail(); err != nil {
				return DataType{}, err
			}
		}
		return DataType{Root: TypeTime, Precision: n}, nil
	case "TIMESTAMP", "TIMESTAMP_LTZ":
		args, err := p.optInts()
		if err != nil {
			return DataType{}, err
		}
		n, err := p.oneInt(args, 6, kw)
		if err != nil {
			return DataType{}, err
		}
		if n < 0 || n > 9 {
			return DataType{}, p.errf("TIMESTAMP precision out of range")
		}
		root := TypeTimestamp
		if kw == "TIMESTAMP_LTZ" {
			root = TypeTimestampLTZ
		} else if p.acceptKeyword("WITH") {
			if err := p.expectKeyword("LOCAL"); err != nil {
				return DataType{}, err
			}
			if err := p.timeZoneTail(); err != nil {
				return DataType{}, err
			}
			root = TypeTimestampLTZ
		} else if p.acceptKeyword("WITHOUT") {
			if err := p.timeZoneTail(); err != nil {
				return DataType{}, err
			}
		}
		return DataType{Root: root, Precision: n}, nil
	case "ARRAY", "MULTISET", "MAP", "ROW":
		if p.depth+1 > MaxTypeDepth {
			return DataType{}, p.tooDeep()
		}
		p.depth++
		t, err := p.parseComposite(kw)
		p.depth--
		return t, err
	}
	return DataType{}, p.errf("unknown type %q", clip(tk.text))
}

// parseComposite parses the rest of an ARRAY, MULTISET, MAP or ROW type.
func (p *typeParser) parseComposite(kw string) (DataType, error) {
	switch kw {
	case "ARRAY", "MULTISET":
		if err := p.expectSym("<"); err != nil {
			return DataType{}, err
		}
		e, err := p.parseType()
		if err != nil {
			return DataType{}, err
		}
		if err := p.expectSym(">"); err != nil {
			return DataType{}, err
		}
		root := TypeArray
		if kw == "MULTISET" {
			root = TypeMultiset
		}
		return DataType{Root: root, Elem: &e}, nil
	case "MAP":
		if err := p.expectSym("<"); err != nil {
			return DataType{}, err
		}
		k, err := p.parseType()
		if err != nil {
			return DataType{}, err
		}
		if err := p.expectSym(","); err != nil {
			return DataType{}, err
		}
		v, err := p.parseType()
		if err != nil {
			return DataType{}, err
		}
		if err := p.expectSym(">"); err != nil {
			return DataType{}, err
		}
		return DataType{Root: TypeMap, Key: &k, Value: &v}, nil
	case "ROW":
		closer := ">"
		if p.acceptSym("(") {
			closer = ")"
		} else if err := p.expectSym("<"); err != nil {
			return DataType{}, err
		}
		var fields []DataField
		if p.acceptSym(closer) {
			// Parquet has no group without fields, nor Arrow a useful
			// struct: refused here, where a user writes it.
			return DataType{}, p.errf("a ROW needs at least one field")
		}
		for {
			nt := p.peek()
			if nt.kind != tokIdent && nt.kind != tokQuoted {
				return DataType{}, p.errf("expected a field name in ROW")
			}
			p.pos++
			p.acceptSym(":")
			ft, err := p.parseType()
			if err != nil {
				return DataType{}, err
			}
			f := DataField{ID: -1, Name: nt.text, Type: ft}
			if c := p.peek(); c.kind == tokString {
				f.Description = c.text
				p.pos++
			}
			fields = append(fields, f)
			if p.acceptSym(closer) {
				break
			}
			if err := p.expectSym(","); err != nil {
				return DataType{}, err
			}
		}
		return DataType{Root: TypeRow, Fields: fields}, nil
	}
	return DataType{}, p.errf("unknown type %q", clip(kw))
}

func (p *typeParser) timeZoneTail() error {
	if err := p.expectKeyword("TIME"); err != nil {
		return err
	}
	return p.expectKeyword("ZONE")
}

// compositeDepth is how many composite types t nests, itself included.
func compositeDepth(t DataType) int {
	d := 0
	for _, c := range []*DataType{t.Elem, t.Key, t.Value} {
		if c != nil {
			d = max(d, compositeDepth(*c))
		}
	}
	for _, f := range t.Fields {
		d = max(d, compositeDepth(f.Type))
	}
	if t.IsComposite() {
		d++
	}
	return d
}
