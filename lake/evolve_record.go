package lake

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/lake/paimontype"
)

// SchemaByID returns the table's schema-id (the table's own schema without reading it). A
// missing schema returns an error matching fs.ErrNotExist.
func (t *Table) SchemaByID(ctx context.Context, id int64) (*paimontype.TableSchema, error) {
	if id == t.schema.ID {
		return t.schema, nil
	}
	if t.older != nil {
		if s := t.older.get(id); s != nil {
			return s, nil
		}
	}
	s, err := readSchema(ctx, t.fio, t.path, id)
	if err != nil {
		return nil, fmt.Errorf("lake: %s: %w", t.FullName(), err)
	}
	if t.older != nil {
		t.older.put(id, s)
	}
	return s, nil
}

// olderSchemas caches the schemas of a table's older ids: schema files are
// written once and never change, and a point lookup read and parsed the
// schema of every file written before the last ALTER (5% of its CPU).
type olderSchemas struct {
	mu sync.Mutex
	m  map[int64]*paimontype.TableSchema
}

func (o *olderSchemas) get(id int64) *paimontype.TableSchema {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.m[id]
}

func (o *olderSchemas) put(id int64, s *paimontype.TableSchema) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[int64]*paimontype.TableSchema{}
	}
	o.m[id] = s
}

// NewerSchema reports whether a schema newer than the table's exists (another engine, or
// another Table value, changed the columns or options): one existence check of
// schema-(id+1), a stat locally and a HEAD on S3. Schema files are created exclusively with
// consecutive ids, so when the next one does not exist no later one does. It does not notice
// a table dropped, renamed or created again under its name: CheckSchema does.
func (t *Table) NewerSchema(ctx context.Context) (bool, error) {
	ok, err := t.fio.Exists(ctx, schemaPath(t.path, t.schema.ID+1))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("lake: %s: look for schema %d: %w", t.FullName(), t.schema.ID+1, err)
	}
	return ok, nil
}

// SameColumns reports whether a and b have the same fields (ids, names and types), so that
// rows of one are rows of the other (they may differ in options).
func SameColumns(a, b *paimontype.TableSchema) bool {
	if len(a.Fields) != len(b.Fields) {
		return false
	}
	for i := range a.Fields {
		fa, fb := a.Fields[i], b.Fields[i]
		if fa.ID != fb.ID || fa.Name != fb.Name || !reflect.DeepEqual(fa.Type, fb.Type) {
			return false
		}
	}
	return true
}

// EvolveRecord returns rec, rows laid out as from.ArrowSchema(), as rows of schema to, the way
// a data file written under from is read under to: columns are matched by field id, so a
// renamed column keeps its values, a column added after from is null, a dropped one is left
// out, a changed type is cast (a value that does not fit is an error, as is a null in a NOT
// NULL column), and fields of nested ROWs are matched by id too. The result carries
// to.ArrowSchema(); rec is not released.
func EvolveRecord(ctx context.Context, rec arrow.RecordBatch, from, to *paimontype.TableSchema, mem memory.Allocator) (arrow.RecordBatch, error) {
	if int(rec.NumCols()) != len(from.Fields) {
		return nil, fmt.Errorf("lake: rows of schema %d have %d columns, the schema %d", from.ID, rec.NumCols(), len(from.Fields))
	}
	byID := make(map[int]int, len(from.Fields))
	for i, f := range from.Fields {
		byID[f.ID] = i
		if at, want := rec.Column(i).DataType(), f.Type.ArrowType(); !arrow.TypeEqual(at, want) {
			return nil, fmt.Errorf("lake: rows of schema %d hold column %s as %s, the schema %s", from.ID, f.Name, at, want)
		}
	}
	schema := to.ArrowSchema()
	cols := make([]arrow.Array, len(to.Fields))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	n := int(rec.NumRows())
	for i, tf := range to.Fields {
		j, ok := byID[tf.ID]
		if !ok {
			if tf.Type.NotNull && n > 0 {
				return nil, fmt.Errorf("lake: column %s (NOT NULL) is not in schema %d, so its rows have no value for it", tf.Name, from.ID)
			}
			cols[i] = array.MakeArrayOfNull(mem, schema.Field(i).Type, n)
			continue
		}
		ff := from.Fields[j]
		c, err := evolveArray(ctx, rec.Column(j), ff.Type, tf.Type, mem)
		if err != nil {
			return nil, fmt.Errorf("lake: column %s (%s %s in schema %d) as %s: %w", tf.Name, ff.Name, ff.Type, from.ID, tf.Type, err)
		}
		cols[i] = c
		if tf.Type.NotNull && c.NullN() > 0 {
			return nil, fmt.Errorf("lake: column %s is NOT NULL, but %d row(s) of schema %d hold null", tf.Name, c.NullN(), from.ID)
		}
	}
	return array.NewRecordBatch(schema, cols, rec.NumRows()), nil
}
