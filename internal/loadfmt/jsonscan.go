package loadfmt

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// A small JSON scanner: it finds where a value ends (checking its syntax
// as encoding/json would) without decoding it, so that a row's values
// are parsed once, straight into their columns' types.

// maxDepth bounds how deeply values nest.
const maxDepth = 512

// errIncomplete: the buffer ends inside the value (more input may
// complete it).
var errIncomplete = errors.New("unexpected end of input")

// syntaxError is invalid JSON at byte Off of the scanned buffer.
type syntaxError struct {
	Off int
	Msg string
}

func (e *syntaxError) Error() string { return e.Msg }

type scanner struct {
	b []byte
	// final: b is all there is, so a number running to its end is
	// complete.
	final bool
}

func (s *scanner) errf(off int, format string, args ...any) error {
	return &syntaxError{Off: off, Msg: fmt.Sprintf(format, args...)}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// value returns the end of the value that starts at b[i].
func (s *scanner) value(i, depth int) (int, error) {
	b := s.b
	if i >= len(b) {
		return i, errIncomplete
	}
	switch c := b[i]; {
	case c == '{' || c == '[':
		if depth >= maxDepth {
			return i, s.errf(i, "values nested more than %d deep", maxDepth)
		}
		return s.container(i, depth)
	case c == '"':
		return s.str(i)
	case c == '-' || '0' <= c && c <= '9':
		return s.number(i)
	case c == 't':
		return s.literal(i, "true")
	case c == 'f':
		return s.literal(i, "false")
	case c == 'n':
		return s.literal(i, "null")
	default:
		return i, s.errf(i, "invalid character %s looking for a value", charName(c))
	}
}

func (s *scanner) container(i, depth int) (int, error) {
	b := s.b
	obj := b[i] == '{'
	closer := byte(']')
	if obj {
		closer = '}'
	}
	i = skipSpace(b, i+1)
	if i >= len(b) {
		return i, errIncomplete
	}
	if b[i] == closer {
		return i + 1, nil
	}
	for {
		var err error
		if obj {
			if b[i] != '"' {
				return i, s.errf(i, "invalid character %s looking for a key (a string)", charName(b[i]))
			}
			if i, err = s.str(i); err != nil {
				return i, err
			}
			if i = skipSpace(b, i); i >= len(b) {
				return i, errIncomplete
			}
			if b[i] != ':' {
				return i, s.errf(i, "invalid character %s after a key (expected ':')", charName(b[i]))
			}
			i = skipSpace(b, i+1)
		}
		if i, err = s.value(i, depth+1); err != nil {
			return i, err
		}
		if i = skipSpace(b, i); i >= len(b) {
			return i, errIncomplete
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
			if i >= len(b) {
				return i, errIncomplete
			}
		case closer:
			return i + 1, nil
		default:
			return i, s.errf(i, "invalid character %s after a value (expected ',' or '%c')", charName(b[i]), closer)
		}
	}
}

func (s *scanner) str(i int) (int, error) {
	b := s.b
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return j + 1, nil
		case c == '\\':
			j++
			if j >= len(b) {
				return j, errIncomplete
			}
			switch b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(b) {
					return j, errIncomplete
				}
				for _, h := range b[j+1 : j+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return j, s.errf(j, "invalid \\u escape in a string")
					}
				}
				j += 4
			default:
				return j, s.errf(j, "invalid escape \\%c in a string", b[j])
			}
		case c < 0x20:
			return j, s.errf(j, "control character %s in a string (escape it)", charName(c))
		}
	}
	return len(b), errIncomplete
}

func (s *scanner) number(i int) (int, error) {
	b := s.b
	j := i
	if b[j] == '-' {
		j++
	}
	end := func(j int) (int, error) {
		if j >= len(b) && !s.final {
			return j, errIncomplete
		}
		return j, nil
	}
	if j >= len(b) {
		if !s.final {
			return j, errIncomplete
		}
		return j, s.errf(j, "a number ends after '-'")
	}
	switch {
	case b[j] == '0':
		j++
	case '1' <= b[j] && b[j] <= '9':
		for j < len(b) && '0' <= b[j] && b[j] <= '9' {
			j++
		}
	default:
		return j, s.errf(j, "invalid character %s in a number", charName(b[j]))
	}
	if j < len(b) && b[j] == '.' {
		j++
		k := j
		for j < len(b) && '0' <= b[j] && b[j] <= '9' {
			j++
		}
		if j == k {
			if j >= len(b) && !s.final {
				return j, errIncomplete
			}
			return j, s.errf(j, "a number needs a digit after '.'")
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		k := j
		for j < len(b) && '0' <= b[j] && b[j] <= '9' {
			j++
		}
		if j == k {
			if j >= len(b) && !s.final {
				return j, errIncomplete
			}
			return j, s.errf(j, "a number needs a digit in its exponent")
		}
	}
	return end(j)
}

func (s *scanner) literal(i int, lit string) (int, error) {
	b := s.b
	for k := 0; k < len(lit); k++ {
		if i+k >= len(b) {
			return i + k, errIncomplete
		}
		if b[i+k] != lit[k] {
			return i + k, s.errf(i+k, "invalid character %s in literal %s", charName(b[i+k]), lit)
		}
	}
	return i + len(lit), nil
}

func charName(c byte) string {
	switch {
	case c == '\'':
		return `'\''`
	case c == '"':
		return `'"'`
	case c < 0x20 || c >= 0x7f:
		return fmt.Sprintf("0x%02x", c)
	}
	return "'" + string(c) + "'"
}

// eachElement calls f with each element of the array v (valid JSON).
func eachElement(v []byte, f func(e []byte) error) error {
	s := &scanner{b: v, final: true}
	i := skipSpace(v, 1)
	if v[i] == ']' {
		return nil
	}
	for {
		end, err := s.value(i, 0)
		if err != nil {
			return err
		}
		if err := f(v[i:end]); err != nil {
			return err
		}
		i = skipSpace(v, end)
		if v[i] == ']' {
			return nil
		}
		i = skipSpace(v, i+1) // ','
	}
}

// eachMember calls f with each key (unquoted) and value of the object v
// (valid JSON).
func eachMember(v []byte, f func(k, e []byte) error) error {
	s := &scanner{b: v, final: true}
	i := skipSpace(v, 1)
	if v[i] == '}' {
		return nil
	}
	for {
		kEnd, err := s.str(i)
		if err != nil {
			return err
		}
		k, err := unquote(v[i:kEnd])
		if err != nil {
			return err
		}
		i = skipSpace(v, skipSpace(v, kEnd)+1) // ':'
		end, err := s.value(i, 0)
		if err != nil {
			return err
		}
		if err := f(k, v[i:end]); err != nil {
			return err
		}
		i = skipSpace(v, end)
		if v[i] == '}' {
			return nil
		}
		i = skipSpace(v, i+1) // ','
	}
}

// unquote is the text of the JSON string v (quotes included): its bytes
// when it has no escapes, else decoded. Invalid UTF-8 is an error.
func unquote(v []byte) ([]byte, error) {
	inner := v[1 : len(v)-1]
	for _, c := range inner {
		if c == '\\' {
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return nil, err
			}
			if !utf8.Valid(inner) {
				return nil, fmt.Errorf("%s is not valid UTF-8", quote(inner))
			}
			return []byte(s), nil
		}
	}
	if !utf8.Valid(inner) {
		return nil, fmt.Errorf("%s is not valid UTF-8", quote(inner))
	}
	return inner, nil
}
