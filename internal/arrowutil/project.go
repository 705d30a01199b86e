package arrowutil

import (
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// ProjectReader hands out the columns idx of another reader's batches,
// without copying, under its own schema. It takes over the caller's
// reference to r.
type ProjectReader struct {
	refs   atomic.Int64
	r      array.RecordReader
	idx    []int
	schema *arrow.Schema
	cur    arrow.RecordBatch
}

var _ array.RecordReader = (*ProjectReader)(nil)

// NewProjectReader returns a reader of the columns idx of r.
func NewProjectReader(r array.RecordReader, idx []int) *ProjectReader {
	fields := make([]arrow.Field, len(idx))
	for i, j := range idx {
		fields[i] = r.Schema().Field(j)
	}
	p := &ProjectReader{r: r, idx: idx, schema: arrow.NewSchema(fields, nil)}
	p.refs.Store(1)
	return p
}

// NewSchemaReader returns r's batches under schema, which has r's columns
// with other names or metadata, without copying.
func NewSchemaReader(r array.RecordReader, schema *arrow.Schema) *ProjectReader {
	idx := make([]int, schema.NumFields())
	for i := range idx {
		idx[i] = i
	}
	p := &ProjectReader{r: r, idx: idx, schema: schema}
	p.refs.Store(1)
	return p
}

// Retain adds a reference.
func (p *ProjectReader) Retain() { p.refs.Add(1) }

// Release drops a reference; the last one releases the underlying reader.
func (p *ProjectReader) Release() {
	if p.refs.Add(-1) != 0 {
		return
	}
	if p.cur != nil {
		p.cur.Release()
		p.cur = nil
	}
	p.r.Release()
}

// Schema is the projected schema.
func (p *ProjectReader) Schema() *arrow.Schema { return p.schema }

// Next advances to the next batch.
func (p *ProjectReader) Next() bool {
	if p.cur != nil {
		p.cur.Release()
		p.cur = nil
	}
	if !p.r.Next() {
		return false
	}
	p.cur = ProjectRecord(p.r.RecordBatch(), p.schema, p.idx)
	return true
}

// ProjectRecord returns the columns idx of rec under schema (a new batch
// sharing rec's arrays; the caller releases it).
func ProjectRecord(rec arrow.RecordBatch, schema *arrow.Schema, idx []int) arrow.RecordBatch {
	cols := make([]arrow.Array, len(idx))
	for i, j := range idx {
		cols[i] = rec.Column(j)
	}
	return array.NewRecordBatch(schema, cols, rec.NumRows())
}

// RecordBatch returns the current batch, valid until the next Next.
func (p *ProjectReader) RecordBatch() arrow.RecordBatch { return p.cur }

// Record is the deprecated spelling of RecordBatch.
func (p *ProjectReader) Record() arrow.RecordBatch { return p.cur }

// Err is the underlying reader's error.
func (p *ProjectReader) Err() error { return p.r.Err() }
