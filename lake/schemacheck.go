package lake

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
)

// SchemaState is what Table.CheckSchema found.
type SchemaState int

const (
	// SchemaCurrent: the table's latest schema is the one the Table was opened with.
	SchemaCurrent SchemaState = iota
	// SchemaNewer: the same table has a newer schema (ALTER TABLE, by any engine or
	// process): open it again for its columns and options.
	SchemaNewer
	// SchemaReplaced: the schema file the Table was opened with is gone or holds other
	// bytes: the table was dropped, renamed away, or dropped and created again under its
	// name (maybe altered since, to the same schema id). The Table is not the table of that
	// name any more; open it again to find out whether there is one.
	SchemaReplaced
)

func (s SchemaState) String() string {
	switch s {
	case SchemaCurrent:
		return "current"
	case SchemaNewer:
		return "newer"
	case SchemaReplaced:
		return "replaced"
	}
	return fmt.Sprintf("SchemaState(%d)", int(s))
}

// schemaFile is the schema file a Table was opened with: its id and its bytes.
type schemaFile struct {
	id   int64
	data []byte
}

// CheckSchema tells whether t is still the table of its name at its latest schema, as
// another process (another flightd node, Java Paimon) may have altered, dropped, renamed or
// re-created it: it reads schema-N, the file t was opened with, and compares its bytes, and
// looks for schema-(N+1). Both at once: on S3 a GET of a small object and a HEAD, one round
// trip; locally a read and a stat. Schema files are created exclusively with consecutive ids
// and never rewritten, so the same bytes at schema-N and no schema-(N+1) mean the same table
// at the same schema. A table dropped and created again with byte-identical schema-0 (same
// columns, options and creation millisecond) cannot be told from the old one by its schema
// (its snapshots can: LatestSnapshot checks its file's version); tables that carry a fresh
// id in an option (lakestream.table-id) never are.
//
// A Table from AtSchema is checked as the Table it came from.
func (t *Table) CheckSchema(ctx context.Context) (SchemaState, error) {
	if t.opened == nil || t.opened.data == nil {
		return 0, fmt.Errorf("lake: %s: the table was not opened from a schema file", t.FullName())
	}
	return checkSchemaFile(ctx, t, t.opened)
}

// checkSchemaFile is CheckSchema of opened, a schema file of t's table. The next schema is
// looked for with a stat (one HEAD on S3; an existence test of a missing key would add a
// LIST for a directory of that name). A table found replaced loses what the catalog knew of
// its snapshots: they are another table's.
func checkSchemaFile(ctx context.Context, t *Table, opened *schemaFile) (SchemaState, error) {
	id := opened.id
	next := make(chan error, 1)
	go func() {
		_, err := t.fio.Version(ctx, schemaPath(t.path, id+1))
		next <- err
	}()
	data, err := t.fio.Read(ctx, schemaPath(t.path, id))
	nextErr := <-next
	switch {
	case errors.Is(err, fs.ErrNotExist) || (err == nil && !bytes.Equal(data, opened.data)):
		t.latest.reset()
		return SchemaReplaced, nil
	case err != nil:
		return 0, fmt.Errorf("lake: %s: check schema %d: %w", t.FullName(), id, err)
	case nextErr == nil:
		return SchemaNewer, nil
	case !errors.Is(nextErr, fs.ErrNotExist):
		return 0, fmt.Errorf("lake: %s: look for schema %d: %w", t.FullName(), id+1, nextErr)
	}
	return SchemaCurrent, nil
}

// SameSchemaFile reports whether t and o are the same table at the same schema, opened from
// the same schema file: the same path, schema id and bytes (a Table from AtSchema is at
// another schema than its origin).
func (t *Table) SameSchemaFile(o *Table) bool {
	if t.opened == nil || o.opened == nil {
		return false
	}
	return t.path == o.path && t.schema.ID == o.schema.ID && t.opened.id == o.opened.id && bytes.Equal(t.opened.data, o.opened.data)
}
