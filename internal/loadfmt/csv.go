package loadfmt

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// csvReader splits CSV text into records (RFC 4180): fields separated by
// the delimiter, records by line breaks (\n or \r\n); a field in double
// quotes may hold delimiters, quotes (written twice) and line breaks. It
// remembers which fields were quoted, so that an empty quoted field ("")
// can be told from an empty one (NULL). Blank lines are skipped. A quote
// inside an unquoted field is taken as it is.
type csvReader struct {
	r     *bufio.Reader
	delim byte
	line  int64 // lines read
	start int64 // the line the last record starts on

	buf    []byte // the record's fields, one after another
	ends   []int  // where each field ends in buf
	quoted []bool
	long   []byte // a line longer than r's buffer
}

func newCSVReader(r io.Reader, delim byte) *csvReader {
	return &csvReader{r: bufio.NewReaderSize(r, 1<<20), delim: delim}
}

// errUnclosed: the file ends inside a quoted field.
var errUnclosed = errors.New("a quoted field is not closed before the end of the file")

// read reads the next record; ok is false at the end of the input. An
// error in a record's syntax leaves start at the record's first line.
func (c *csvReader) read() (ok bool, err error) {
	for {
		line, err := c.readLine()
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if c.line == 1 {
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf")) // a byte order mark
		}
		if len(trimEOL(line)) == 0 {
			continue
		}
		c.start = c.line
		return true, c.parse(line)
	}
}

// fields is how many fields the record has.
func (c *csvReader) fields() int { return len(c.ends) }

// field is the i-th field's text, valid until the next read.
func (c *csvReader) field(i int) []byte {
	s := 0
	if i > 0 {
		s = c.ends[i-1]
	}
	return c.buf[s:c.ends[i]]
}

// readLine returns the next line with its line break, valid until the
// next call; io.EOF at the end.
func (c *csvReader) readLine() ([]byte, error) {
	line, err := c.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		c.long = append(c.long[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = c.r.ReadSlice('\n')
			c.long = append(c.long, line...)
		}
		line = c.long
	}
	if err == io.EOF {
		if len(line) == 0 {
			return nil, io.EOF
		}
		err = nil
	}
	if err != nil {
		return nil, &readError{err}
	}
	c.line++
	return line, nil
}

// readError is a failed read (not bad CSV).
type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

func (c *csvReader) parse(line []byte) error {
	c.buf, c.ends, c.quoted = c.buf[:0], c.ends[:0], c.quoted[:0]
	pos := 0
	for {
		if pos < len(line) && line[pos] == '"' {
			pos++
			for {
				i := bytes.IndexByte(line[pos:], '"')
				if i < 0 { // the field goes on on the next line
					c.buf = append(c.buf, line[pos:]...)
					var err error
					if line, err = c.readLine(); err != nil {
						if err == io.EOF {
							return errUnclosed
						}
						return err
					}
					pos = 0
					continue
				}
				c.buf = append(c.buf, line[pos:pos+i]...)
				pos += i + 1
				if pos < len(line) && line[pos] == '"' { // "" is a quote
					c.buf = append(c.buf, '"')
					pos++
					continue
				}
				break
			}
			c.ends, c.quoted = append(c.ends, len(c.buf)), append(c.quoted, true)
			rest := line[pos:]
			switch {
			case len(rest) > 0 && rest[0] == c.delim:
				pos++
				continue
			case len(trimEOL(rest)) == 0:
				return nil
			}
			where := ""
			if c.line != c.start {
				where = fmt.Sprintf(" (on line %d)", c.line)
			}
			return fmt.Errorf("%s after the closing quote of field %d%s: a quote inside a quoted field is written twice (\"\")", quote(trimEOL(rest)), len(c.ends), where)
		}
		rest := line[pos:]
		i := bytes.IndexByte(rest, c.delim)
		if i < 0 {
			c.buf = append(c.buf, trimEOL(rest)...)
			c.ends, c.quoted = append(c.ends, len(c.buf)), append(c.quoted, false)
			return nil
		}
		c.buf = append(c.buf, rest[:i]...)
		c.ends, c.quoted = append(c.ends, len(c.buf)), append(c.quoted, false)
		pos += i + 1
	}
}

// trimEOL drops a line break (\n, \r\n) from the end of b.
func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b
}
