package paimontype

import (
	"encoding/json"
	"strconv"
	"strings"
)

// JSONObject is an ordered JSON object used to reproduce the exact key order and
// layout that Java Paimon writes with Jackson's default pretty printer.
type JSONObject []JSONField

// JSONField is one key and value of a JSONObject.
type JSONField struct {
	Key   string
	Value any // string, int, int64, bool, nil, JSONObject, []any, json.RawMessage
}

// Add appends the key k with value v.
func (o *JSONObject) Add(k string, v any) { *o = append(*o, JSONField{k, v}) }

// JacksonPretty renders v like Jackson's DefaultPrettyPrinter: objects one key
// per line indented by two spaces per object nesting level, " : " between key
// and value, arrays inline as "[ a, b ]", empty containers as "{ }" and "[ ]".
func JacksonPretty(v any) []byte {
	var sb strings.Builder
	writePretty(&sb, v, 0)
	return []byte(sb.String())
}

func writePretty(sb *strings.Builder, v any, nesting int) {
	switch x := v.(type) {
	case JSONObject:
		if len(x) == 0 {
			sb.WriteString("{ }")
			return
		}
		sb.WriteString("{")
		for i, kv := range x {
			if i > 0 {
				sb.WriteString(",")
			}
			sb.WriteString("\n")
			sb.WriteString(strings.Repeat("  ", nesting+1))
			writeJSONString(sb, kv.Key)
			sb.WriteString(" : ")
			writePretty(sb, kv.Value, nesting+1)
		}
		sb.WriteString("\n")
		sb.WriteString(strings.Repeat("  ", nesting))
		sb.WriteString("}")
	case []any:
		if len(x) == 0 {
			sb.WriteString("[ ]")
			return
		}
		sb.WriteString("[ ")
		for i, e := range x {
			if i > 0 {
				sb.WriteString(", ")
			}
			writePretty(sb, e, nesting)
		}
		sb.WriteString(" ]")
	case []string:
		a := make([]any, len(x))
		for i := range x {
			a[i] = x[i]
		}
		writePretty(sb, a, nesting)
	case string:
		writeJSONString(sb, x)
	case int:
		sb.WriteString(strconv.Itoa(x))
	case int64:
		sb.WriteString(strconv.FormatInt(x, 10))
	case bool:
		sb.WriteString(strconv.FormatBool(x))
	case nil:
		sb.WriteString("null")
	default:
		b, err := json.Marshal(x)
		if err != nil {
			panic(err)
		}
		sb.Write(b)
	}
}

// writeJSONString escapes like Jackson: only control chars, quote and backslash.
func writeJSONString(sb *strings.Builder, s string) {
	sb.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			sb.WriteString(`\"`)
		case r == '\\':
			sb.WriteString(`\\`)
		case r == '\n':
			sb.WriteString(`\n`)
		case r == '\r':
			sb.WriteString(`\r`)
		case r == '\t':
			sb.WriteString(`\t`)
		case r == '\b':
			sb.WriteString(`\b`)
		case r == '\f':
			sb.WriteString(`\f`)
		case r < 0x20:
			sb.WriteString(`\u00`)
			sb.WriteString(strconv.FormatInt(int64(r)>>4, 16))
			sb.WriteString(strconv.FormatInt(int64(r)&0xf, 16))
		default:
			sb.WriteRune(r)
		}
	}
	sb.WriteByte('"')
}

// SortedJSONObject returns a string map (options, properties) as an object in sorted key order
// (Java's TableSchema keeps insertion order; sorted is stable and deterministic).
func SortedJSONObject(m map[string]string) JSONObject {
	keys := sortedKeys(m)
	o := make(JSONObject, 0, len(keys))
	for _, k := range keys {
		o.Add(k, m[k])
	}
	return o
}
