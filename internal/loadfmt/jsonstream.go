package loadfmt

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// jsonStream reads the JSON values of a file one after another: values
// separated by white space (JSON lines), or the elements of one array
// that holds the whole file. It keeps the line each value starts on.
type jsonStream struct {
	r    io.Reader
	buf  []byte
	pos  int  // the next unread byte of buf
	eof  bool // r has no more
	line int64
	// mode: 0 before the first value, lines, inArray, or arrayDone.
	mode int
}

const (
	modeLines = 1 + iota
	modeArray
	modeArrayDone
)

func newJSONStream(r io.Reader) *jsonStream {
	return &jsonStream{r: r, buf: make([]byte, 0, 1<<20), line: 1}
}

// streamError is a syntax error in the file, on line Line.
type streamError struct {
	Line int64
	Err  error
}

func (e *streamError) Error() string { return e.Err.Error() }

// fill reads more of r into buf, keeping buf[pos:].
func (s *jsonStream) fill() error {
	if s.eof {
		return io.EOF
	}
	if s.pos > 0 {
		n := copy(s.buf, s.buf[s.pos:])
		s.buf, s.pos = s.buf[:n], 0
	}
	if len(s.buf) == cap(s.buf) {
		s.buf = append(s.buf, make([]byte, cap(s.buf))...)[:len(s.buf)]
	}
	n, err := s.r.Read(s.buf[len(s.buf):cap(s.buf)])
	s.buf = s.buf[:len(s.buf)+n]
	if err == io.EOF {
		s.eof = true
		return nil
	}
	return err
}

// skip moves past white space (counting lines); false at the end of
// the input.
func (s *jsonStream) skip() (bool, error) {
	for {
		for s.pos < len(s.buf) {
			switch s.buf[s.pos] {
			case '\n':
				s.line++
			case ' ', '\t', '\r':
			default:
				return true, nil
			}
			s.pos++
		}
		if err := s.fill(); err == io.EOF {
			return false, nil
		} else if err != nil {
			return false, err
		}
		if s.pos >= len(s.buf) && s.eof {
			return false, nil
		}
	}
}

// next returns the next value and the line it starts on; v is nil at
// the end of the input. v is valid until the next call.
func (s *jsonStream) next() (v []byte, line int64, err error) {
	more, err := s.skip()
	if err != nil {
		return nil, 0, err
	}
	if s.mode == 0 {
		s.mode = modeLines
		if more && s.buf[s.pos] == '[' {
			s.mode = modeArray
			s.pos++
			if more, err = s.skip(); err != nil {
				return nil, 0, err
			}
			if more && s.buf[s.pos] == ']' {
				s.pos++
				s.mode = modeArrayDone
				if more, err = s.skip(); err != nil {
					return nil, 0, err
				}
			}
		}
	} else if s.mode == modeArray && more {
		switch s.buf[s.pos] {
		case ',':
			s.pos++
			if more, err = s.skip(); err != nil {
				return nil, 0, err
			}
		case ']':
			s.pos++
			s.mode = modeArrayDone
			if more, err = s.skip(); err != nil {
				return nil, 0, err
			}
		default:
			return nil, 0, s.errAt(s.pos, fmt.Errorf("invalid character %s after an array element (expected ',' or ']')", charName(s.buf[s.pos])))
		}
	}
	if !more {
		if s.mode == modeArray {
			return nil, 0, &streamError{Line: s.line, Err: errors.New("the file ends inside the array of rows (no closing ']')")}
		}
		return nil, 0, nil
	}
	if s.mode == modeArrayDone {
		return nil, 0, s.errAt(s.pos, fmt.Errorf("invalid character %s after the array of rows", charName(s.buf[s.pos])))
	}
	for {
		sc := scanner{b: s.buf[s.pos:], final: s.eof}
		end, err := sc.value(0, 0)
		if errors.Is(err, errIncomplete) && !s.eof {
			if err := s.fill(); err != nil && err != io.EOF {
				return nil, 0, err
			}
			continue
		}
		if errors.Is(err, errIncomplete) {
			return nil, 0, &streamError{Line: s.line, Err: errors.New("the file ends inside this value")}
		}
		if err != nil {
			var se *syntaxError
			if errors.As(err, &se) {
				return nil, 0, s.errAt(s.pos+se.Off, err)
			}
			return nil, 0, err
		}
		v = s.buf[s.pos : s.pos+end]
		line = s.line
		s.line += int64(bytes.Count(v, []byte{'\n'}))
		s.pos += end
		return v, line, nil
	}
}

// errAt is err at byte off of buf, with its line.
func (s *jsonStream) errAt(off int, err error) error {
	return &streamError{Line: s.line + int64(bytes.Count(s.buf[s.pos:off], []byte{'\n'})), Err: fmt.Errorf("invalid JSON: %w", err)}
}
