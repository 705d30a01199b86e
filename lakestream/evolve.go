package lakestream

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/internal/logcodec"
	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lake/paimontype"
)

// Log entries and schema changes.
//
// A log entry holds its rows with the columns of the schema the table had
// when they were written, and records that schema's id (logcodec version 3).
// Another engine may change the table's schema while rows wait in the log
// (Java Paimon's ALTER TABLE: add, rename, drop a column, widen a type).
// Every reader of the log (t$rt, tiering, the changelog) asks for the rows
// under the schema it works with, and entries of another schema are evolved
// as the lake evolves its data files (lake.EvolveRecord): by field id, added
// columns null, renamed ones keeping their values, widened types cast,
// dropped columns dropped. An entry written before schema ids were recorded
// (logcodec versions 1 and 2) is taken to be of the newest schema whose Arrow
// schema (names, types, nullability, field ids) equals its own: flightd
// wrote every entry with exactly those. A cached entry evolved for a read is
// cached evolved, so the work is done once per entry.

// inherit keeps the schemas old had read (the table's history does not change).
func (m *tableMeta) inherit(old *tableMeta) {
	old.mu.Lock()
	defer old.mu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, sc := range old.schemas {
		if _, ok := m.schemas[id]; !ok {
			m.schemas[id] = sc
		}
	}
}

// schemaByID returns schema id of m's table.
func (m *tableMeta) schemaByID(ctx context.Context, id int64) (*paimontype.TableSchema, error) {
	m.mu.Lock()
	sc := m.schemas[id]
	m.mu.Unlock()
	if sc != nil {
		return sc, nil
	}
	sc, err := m.table.SchemaByID(ctx, id)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.schemas[id] = sc
	m.mu.Unlock()
	return sc, nil
}

// entrySchema returns the id of the schema that the log entry payload, decoded
// as rec, was written under.
func (m *tableMeta) entrySchema(ctx context.Context, payload []byte, rec arrow.RecordBatch) (int64, error) {
	if id, ok := logcodec.SchemaID(payload); ok {
		return id, nil
	}
	have := rec.Schema()
	if have.Equal(m.schema) {
		return m.ts.ID, nil
	}
	for id := m.ts.ID - 1; id >= 0; id-- {
		sc, err := m.schemaByID(ctx, id)
		if err != nil {
			continue // expired or never there: an older one may still match
		}
		if sc.ArrowSchema().Equal(have) {
			return id, nil
		}
	}
	names := make([]string, have.NumFields())
	for i, f := range have.Fields() {
		names[i] = f.Name + " " + f.Type.String()
	}
	return 0, fmt.Errorf("%w: a log entry of %s was written before log entries recorded their schema, and no schema of the table has its columns (%s)",
		ErrSchemaMismatch, m.table.FullName(), strings.Join(names, ", "))
}

// evolve returns rec, rows of schema id, as rows of m's schema: rec itself
// (retained) when the columns are the same. The caller still owns rec.
func (s *Service) evolve(ctx context.Context, m *tableMeta, rec arrow.RecordBatch, id int64) (arrow.RecordBatch, error) {
	if id == m.ts.ID {
		rec.Retain()
		return rec, nil
	}
	from, err := m.schemaByID(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("%w: log rows of %s were written under schema %d: %w", ErrSchemaMismatch, m.table.FullName(), id, err)
	}
	if lake.SameColumns(from, m.ts) && int(rec.NumCols()) == len(from.Fields) {
		rec.Retain()
		return rec, nil
	}
	out, err := lake.EvolveRecord(ctx, rec, from, m.ts, s.mem)
	if err != nil {
		return nil, fmt.Errorf("%w: log rows of %s written under schema %d, read under schema %d: %w", ErrSchemaMismatch, m.table.FullName(), id, m.ts.ID, err)
	}
	return out, nil
}

// metaFor returns the metadata for t: the cached one when it is of t's
// schema, else one made for t.
func (s *Service) metaFor(t *lake.Table) *tableMeta {
	k := metaKey(t.Database(), t.Name())
	s.mu.Lock()
	cur := s.meta[k]
	s.mu.Unlock()
	id := TableID(t)
	if cur != nil && (cur.table == t || cur.table.SameSchemaFile(t)) {
		return cur
	}
	m := newMeta(t)
	if cur != nil && cur.id == id {
		m.inherit(cur)
	}
	return m
}
