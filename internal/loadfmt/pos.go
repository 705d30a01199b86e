package loadfmt

import (
	"fmt"
)

// Pos is where a row is in its file.
type Pos struct {
	File string
	// Row is the row's index in the file, from 0.
	Row int64
	// Line is the line a row of a text file starts on, from 1; 0 for
	// Parquet and Arrow files.
	Line int64
	// Group and GroupRow: the row group of a Parquet file (the record
	// batch of an Arrow file) and the row's index in it, from 0.
	Group    int
	GroupRow int64
	// Kind is "row group" or "batch" for Parquet and Arrow files.
	Kind string
}

// String names the position as an error message does: file:line, or
// "file: row group 2, row 1530 (row 131602 of the file)".
func (p Pos) String() string {
	if p.Kind == "" {
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	return fmt.Sprintf("%s: %s %d, row %d (row %d of the file, counting from 0)", p.File, p.Kind, p.Group, p.GroupRow, p.Row)
}

// RowError is a row a reader could not read or convert.
type RowError struct {
	Pos    Pos
	Column string // "" when the row as a whole is wrong
	Err    error
}

func (e *RowError) Error() string {
	if e.Column == "" {
		return fmt.Sprintf("%s: %v", e.Pos, e.Err)
	}
	return fmt.Sprintf("%s: column %q: %v", e.Pos, e.Column, e.Err)
}

func (e *RowError) Unwrap() error { return e.Err }
