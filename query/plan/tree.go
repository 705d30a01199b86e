package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
)

// Object is a JSON object of DuckDB's parse tree that keeps its key order,
// so walks of a tree visit it as DuckDB wrote it, the same way every time
// (the parse cache's literal slots, the order of a statement's tables).
// A tree is read-only once decoded: trees are shared by the callers that
// parse one statement (Statement.Tree) and copied out of the parse cache.
type Object struct {
	keys []string
	vals map[string]any
}

// Get is the value of key k (nil when absent): an *Object, []any,
// json.Number, string, bool or nil.
func (o *Object) Get(k string) any { return o.vals[k] }

func (o *Object) set(k string, v any) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

// MarshalJSON writes the keys in their original order.
func (o *Object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := json.Marshal(o.vals[k])
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// ParseTree decodes json_serialize_sql output. ok is false when DuckDB could
// not serialise the statement (not a plain SELECT, or a syntax error).
func ParseTree(js string) (tree *Object, ok bool) {
	v, err := decodeOrdered(js)
	if err != nil {
		return nil, false
	}
	tree, _ = v.(*Object)
	if tree == nil {
		return nil, false
	}
	if e, _ := tree.Get("error").(bool); e {
		return nil, false
	}
	return tree, true
}

// decodeOrdered parses JSON into *Object, []any, json.Number, string, bool
// and nil.
func decodeOrdered(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber() // query_location is a uint64 that float64 would round
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("plan: trailing data after JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &Object{vals: map[string]any{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				o.set(k, v)
			}
			_, err := dec.Token() // '}'
			return o, err
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			_, err := dec.Token() // ']'
			return arr, err
		}
		return nil, errors.New("plan: unexpected " + t.String() + " in JSON")
	default:
		return t, nil
	}
}

// copyTree deep-copies a decoded JSON value.
func copyTree(v any) any {
	switch x := v.(type) {
	case *Object:
		o := &Object{keys: append([]string(nil), x.keys...), vals: make(map[string]any, len(x.vals))}
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
