package union

import (
	"context"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// seqMerge is the log side of a union read whose versions are ordered by
// sequence fields (MergeLogVersions). The log's winner of each key is known
// before the lake is read; whether it survives is known only after: a lake
// row with larger sequence values beats it. lakeFilter, run on every lake
// batch (on the scan's workers, concurrently), marks the beaten winners;
// settle then takes the log rows that are left.
type seqMerge struct {
	ctx    context.Context
	mem    memory.Allocator
	schema *arrow.Schema
	v      *Versions
	log    []LogBatch

	mu   sync.Mutex
	keep [][]bool // per log batch and row: its key's winner, no retraction, not beaten

	lakeFilter func(arrow.RecordBatch) (arrow.RecordBatch, error)
}

type logPos struct{ batch, row int32 }

func newSeqMerge[K comparable](ctx context.Context, mem memory.Allocator, schema *arrow.Schema, log []LogBatch, v *Versions, keysOf func(arrow.RecordBatch) ([]K, error)) (*seqMerge, error) {
	m := &seqMerge{ctx: compute.WithAllocator(ctx, mem), mem: mem, schema: schema, v: v, log: log, keep: make([][]bool, len(log))}
	newest := make(map[K]logPos)
	cmps := map[[2]int32]func(a, b int) int{}
	across := func(x, y int32) (func(a, b int) int, error) {
		f := cmps[[2]int32{x, y}]
		if f == nil {
			var err error
			if f, err = v.Order.Across(log[x].Rec, log[y].Rec); err != nil {
				return nil, err
			}
			cmps[[2]int32{x, y}] = f
		}
		return f, nil
	}
	for bi, b := range log {
		keys, err := keysOf(b.Rec)
		if err != nil {
			m.release()
			return nil, err
		}
		for ri, k := range keys {
			cur := logPos{int32(bi), int32(ri)}
			if old, ok := newest[k]; ok {
				f, err := across(cur.batch, old.batch)
				if err != nil {
					m.release()
					return nil, fmt.Errorf("union: %w", err)
				}
				if f(int(cur.row), int(old.row)) < 0 {
					continue // an older sequence value arrived later: it loses
				}
			}
			newest[k] = cur
		}
	}
	for bi, b := range log {
		m.keep[bi] = make([]bool, b.Rec.NumRows())
	}
	for _, p := range newest {
		m.keep[p.batch][p.row] = !isRetract(log[p.batch].Kinds, int(p.row))
	}
	if len(newest) == 0 && !v.LakeKinds {
		return m, nil
	}
	m.lakeFilter = func(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
		keys, err := keysOf(rec)
		if err != nil {
			return nil, err
		}
		var kinds *array.Int8
		if v.LakeKinds {
			k, ok := rec.Column(int(rec.NumCols()) - 1).(*array.Int8)
			if !ok || int(rec.NumCols()) != schema.NumFields()+1 {
				return nil, fmt.Errorf("union: a lake batch of %d columns has no row kinds after the table's %d", rec.NumCols(), schema.NumFields())
			}
			kinds = k
		}
		keep := make([]bool, len(keys))
		cmps := map[int32]func(a, b int) int{}
		for i, k := range keys {
			retract := kinds != nil && isRetractKind(byte(kinds.Value(i)))
			p, ok := newest[k]
			if !ok {
				keep[i] = !retract
				continue
			}
			f := cmps[p.batch]
			if f == nil {
				if f, err = v.Order.Across(rec, log[p.batch].Rec); err != nil {
					return nil, fmt.Errorf("union: %w", err)
				}
				cmps[p.batch] = f
			}
			if f(i, int(p.row)) > 0 { // the lake's version is newer than every log version
				keep[i] = !retract
				m.mu.Lock()
				m.keep[p.batch][p.row] = false
				m.mu.Unlock()
			}
		}
		if kinds != nil {
			cols := rec.Columns()[:schema.NumFields()]
			rec = array.NewRecordBatch(schema, cols, rec.NumRows())
			defer rec.Release()
		}
		return filterBatch(m.ctx, mem, rec, keep)
	}
	return m, nil
}

// settle returns the surviving log rows, in log order; call it once the
// lake has been read.
func (m *seqMerge) settle() ([]arrow.RecordBatch, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []arrow.RecordBatch
	for bi, b := range m.log {
		f, err := filterBatch(m.ctx, m.mem, b.Rec, m.keep[bi])
		if err != nil {
			releaseBatches(out)
			return nil, err
		}
		if f != nil {
			out = append(out, f)
		}
	}
	return out, nil
}

func (m *seqMerge) release() {
	for _, b := range m.log {
		b.Rec.Release()
	}
	m.log = nil
}
