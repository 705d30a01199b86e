package lake

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/lake/manifest"
	"github.com/flightd/flightd/lake/paimontype"
)

// Schema evolution on read, as Java Paimon: a data file written under schema S (its _SCHEMA_ID)
// holds the columns of S, found by S's names. They are mapped to the reading schema by field id:
// a renamed column keeps its data, a column added after S reads as null, a column dropped and
// re-added under the same name (a new id) reads as null for the older files, and a column whose
// type changed is cast to the new type. Fields of nested ROWs are matched by id the same way.

// fileSchema returns schema id of the table, from the cache of the scan.
func (r *scanReader) fileSchema(id int64) (*paimontype.TableSchema, error) {
	if id == r.t.schema.ID {
		return r.t.schema, nil
	}
	if s, ok := r.schemas[id]; ok {
		return s, nil
	}
	if r.prune != nil { // the pruner read it to prune the file
		if v := r.prune.cachedView(id); v != nil {
			return v.schema, nil
		}
	}
	s, err := r.t.SchemaByID(r.ctx, id)
	if err != nil {
		return nil, err
	}
	if r.schemas == nil {
		r.schemas = map[int64]*paimontype.TableSchema{}
	}
	r.schemas[id] = s
	return s, nil
}

// fileColumn is how one wanted column is read from a data file.
type fileColumn struct {
	read *arrow.Field        // the column as the file's schema has it; nil: not in the file, all null
	from paimontype.DataType // its type in the file's schema (value columns of an older schema)
	to   paimontype.DataType
	cast bool // evolve from -> to
}

// filePlan maps the wanted columns (named as in the table's current schema, or system columns)
// to the columns of a file written under schema f.SchemaID.
func (r *scanReader) filePlan(f *manifest.DataFileMeta, want []arrow.Field) ([]fileColumn, error) {
	ts := r.t.schema
	plan := make([]fileColumn, len(want))
	if f.SchemaID == ts.ID {
		for i := range want {
			plan[i] = fileColumn{read: &want[i]}
		}
		return plan, nil
	}
	fs, err := r.fileSchema(f.SchemaID)
	if err != nil {
		return nil, fmt.Errorf("schema %d of the file: %w", f.SchemaID, err)
	}
	byID := make(map[int]int, len(fs.Fields))
	for i, fd := range fs.Fields {
		byID[fd.ID] = i
	}
	for i, w := range want {
		if w.Name == seqNumberField || w.Name == valueKindField || strings.HasPrefix(w.Name, keyFieldPrefix) {
			plan[i] = fileColumn{read: &want[i]}
			continue
		}
		ci := ts.FieldIndex(w.Name)
		if ci < 0 {
			return nil, fmt.Errorf("column %s is not in the table", w.Name)
		}
		cur := ts.Fields[ci]
		j, ok := byID[cur.ID]
		if !ok {
			plan[i] = fileColumn{} // added after the file was written (or dropped and re-added)
			continue
		}
		old := fs.Fields[j]
		rf := paimontype.ArrowField(old.Name, old.Type, old.ID)
		plan[i] = fileColumn{read: &rf, from: old.Type, to: cur.Type, cast: true}
	}
	return plan, nil
}

// readPlanned reads row group rg of pf by plan and returns a record with exactly the want fields.
func readPlanned(ctx context.Context, pf *parquetFile, rg int, plan []fileColumn, want []arrow.Field, mem memory.Allocator) (arrow.RecordBatch, error) {
	return readPlannedRows(ctx, pf, rg, plan, want, nil, mem)
}

// readPlannedRows is readPlanned of the rows of row group rg (nil: all),
// see parquetFile.readRows.
func readPlannedRows(ctx context.Context, pf *parquetFile, rg int, plan []fileColumn, want []arrow.Field, rows rowRuns, mem memory.Allocator) (arrow.RecordBatch, error) {
	var read []arrow.Field
	pos := make([]int, len(plan))
	for i, p := range plan {
		pos[i] = -1
		if p.read != nil {
			pos[i] = len(read)
			read = append(read, *p.read)
		}
	}
	nrows := pf.pr.MetaData().RowGroups[rg].NumRows
	if rows != nil {
		nrows = rows.count()
	}
	var rec arrow.RecordBatch
	if len(read) > 0 {
		var err error
		rec, err = pf.readRows(ctx, rg, read, rows, mem)
		if err != nil {
			return nil, err
		}
		defer rec.Release()
		nrows = rec.NumRows()
	}
	cols := make([]arrow.Array, len(want))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, p := range plan {
		switch {
		case pos[i] < 0:
			cols[i] = array.MakeArrayOfNull(mem, want[i].Type, int(nrows))
		case p.cast:
			c, err := evolveArray(ctx, rec.Column(pos[i]), p.from, p.to, mem)
			if err != nil {
				return nil, fmt.Errorf("column %s (%s in the file): read %s as %s: %w", want[i].Name, p.read.Name, p.from, p.to, err)
			}
			cols[i] = c
		default:
			c := rec.Column(pos[i])
			c.Retain()
			cols[i] = c
		}
	}
	return array.NewRecordBatch(arrow.NewSchema(want, nil), cols, nrows), nil
}

// offsetZero returns arr with a zero data offset (a copy when it is a slice).
func offsetZero(arr arrow.Array, mem memory.Allocator) (arrow.Array, error) {
	if arr.Data().Offset() == 0 {
		arr.Retain()
		return arr, nil
	}
	return array.Concatenate([]arrow.Array{arr}, mem)
}

// evolveArray converts arr, values of Paimon type from (laid out as from.ArrowType()), to type to:
// ROW fields by id (missing ones null), ARRAY/MAP/MULTISET element-wise, other types cast.
func evolveArray(ctx context.Context, arr arrow.Array, from, to paimontype.DataType, mem memory.Allocator) (arrow.Array, error) {
	target := to.ArrowType()
	if from.Root != to.Root || !from.IsComposite() {
		if arrow.TypeEqual(arr.DataType(), target) {
			arr.Retain()
			return arr, nil
		}
		return castArray(ctx, arr, target, mem)
	}
	src, err := offsetZero(arr, mem)
	if err != nil {
		return nil, err
	}
	defer src.Release()
	d := src.Data()
	switch to.Root {
	case paimontype.TypeRow:
		st, ok := src.(*array.Struct)
		if !ok {
			return nil, fmt.Errorf("ROW read as %s", src.DataType())
		}
		byID := map[int]int{}
		for i, f := range from.Fields {
			byID[f.ID] = i
		}
		children := make([]arrow.ArrayData, len(to.Fields))
		defer func() {
			for _, c := range children {
				if c != nil {
					c.Release()
				}
			}
		}()
		for i, tf := range to.Fields {
			j, ok := byID[tf.ID]
			if !ok || j >= st.NumField() {
				n := array.MakeArrayOfNull(mem, tf.Type.ArrowType(), st.Len())
				children[i] = n.Data()
				children[i].Retain()
				n.Release()
				continue
			}
			c, err := evolveArray(ctx, st.Field(j), from.Fields[j].Type, tf.Type, mem)
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", tf.Name, err)
			}
			children[i] = c.Data()
			children[i].Retain()
			c.Release()
		}
		out := array.NewData(target, d.Len(), d.Buffers()[:1], children, d.NullN(), 0)
		defer out.Release()
		return array.MakeFromData(out), nil
	case paimontype.TypeArray:
		l, ok := src.(*array.List)
		if !ok {
			return nil, fmt.Errorf("ARRAY read as %s", src.DataType())
		}
		vals, err := evolveArray(ctx, l.ListValues(), *from.Elem, *to.Elem, mem)
		if err != nil {
			return nil, fmt.Errorf("element: %w", err)
		}
		defer vals.Release()
		out := array.NewData(target, d.Len(), d.Buffers()[:2], []arrow.ArrayData{vals.Data()}, d.NullN(), 0)
		defer out.Release()
		return array.MakeFromData(out), nil
	case paimontype.TypeMap, paimontype.TypeMultiset:
		m, ok := src.(*array.Map)
		if !ok {
			return nil, fmt.Errorf("%s read as %s", to.SQLString(), src.DataType())
		}
		fk, fv, tk, tv := from.Key, from.Value, to.Key, to.Value
		if to.Root == paimontype.TypeMultiset {
			count := paimontype.DataType{Root: paimontype.TypeInt, NotNull: true}
			fk, fv, tk, tv = from.Elem, &count, to.Elem, &count
		}
		keys, err := evolveArray(ctx, m.Keys(), *fk, *tk, mem)
		if err != nil {
			return nil, fmt.Errorf("key: %w", err)
		}
		defer keys.Release()
		items, err := evolveArray(ctx, m.Items(), *fv, *tv, mem)
		if err != nil {
			return nil, fmt.Errorf("value: %w", err)
		}
		defer items.Release()
		mt := target.(*arrow.MapType)
		entries := array.NewData(mt.Elem(), keys.Len(), []*memory.Buffer{nil}, []arrow.ArrayData{keys.Data(), items.Data()}, 0, 0)
		defer entries.Release()
		out := array.NewData(target, d.Len(), d.Buffers()[:2], []arrow.ArrayData{entries}, d.NullN(), 0)
		defer out.Release()
		return array.MakeFromData(out), nil
	}
	return nil, fmt.Errorf("cannot evolve %s to %s", from, to)
}

// conformArray gives arr, as read from Parquet, the Arrow type target: nested types with other
// field names (a Parquet map's key_value, a list's element) get target's layout names, children
// matched by position; leaves of another type are cast.
func conformArray(ctx context.Context, arr arrow.Array, target arrow.DataType, mem memory.Allocator) (arrow.Array, error) {
	if arrow.TypeEqual(arr.DataType(), target) {
		arr.Retain()
		return arr, nil
	}
	nested := func() bool {
		switch target.(type) {
		case *arrow.StructType:
			_, ok := arr.(*array.Struct)
			return ok
		case *arrow.MapType:
			_, ok := arr.(*array.Map)
			return ok
		case *arrow.ListType:
			_, ok := arr.(*array.List)
			return ok
		}
		return false
	}()
	if !nested {
		return castArray(ctx, arr, target, mem)
	}
	src, err := offsetZero(arr, mem)
	if err != nil {
		return nil, err
	}
	defer src.Release()
	d := src.Data()
	switch tt := target.(type) {
	case *arrow.StructType:
		st := src.(*array.Struct)
		if st.NumField() != tt.NumFields() {
			return nil, fmt.Errorf("struct with %d fields read as %s", tt.NumFields(), st.DataType())
		}
		children := make([]arrow.ArrayData, tt.NumFields())
		defer func() {
			for _, c := range children {
				if c != nil {
					c.Release()
				}
			}
		}()
		for i := range children {
			c, err := conformArray(ctx, st.Field(i), tt.Field(i).Type, mem)
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", tt.Field(i).Name, err)
			}
			children[i] = c.Data()
			children[i].Retain()
			c.Release()
		}
		out := array.NewData(target, d.Len(), d.Buffers()[:1], children, d.NullN(), 0)
		defer out.Release()
		return array.MakeFromData(out), nil
	case *arrow.MapType:
		m := src.(*array.Map)
		keys, err := conformArray(ctx, m.Keys(), tt.KeyType(), mem)
		if err != nil {
			return nil, fmt.Errorf("key: %w", err)
		}
		defer keys.Release()
		items, err := conformArray(ctx, m.Items(), tt.ItemType(), mem)
		if err != nil {
			return nil, fmt.Errorf("value: %w", err)
		}
		defer items.Release()
		entries := array.NewData(tt.Elem(), keys.Len(), []*memory.Buffer{nil}, []arrow.ArrayData{keys.Data(), items.Data()}, 0, 0)
		defer entries.Release()
		out := array.NewData(target, d.Len(), d.Buffers()[:2], []arrow.ArrayData{entries}, d.NullN(), 0)
		defer out.Release()
		return array.MakeFromData(out), nil
	case *arrow.ListType:
		l := src.(*array.List)
		vals, err := conformArray(ctx, l.ListValues(), tt.Elem(), mem)
		if err != nil {
			return nil, fmt.Errorf("element: %w", err)
		}
		defer vals.Release()
		out := array.NewData(target, d.Len(), d.Buffers()[:2], []arrow.ArrayData{vals.Data()}, d.NullN(), 0)
		defer out.Release()
		return array.MakeFromData(out), nil
	}
	return castArray(ctx, arr, target, mem)
}

// castArray casts a leaf array, failing on values that do not fit.
func castArray(ctx context.Context, arr arrow.Array, target arrow.DataType, mem memory.Allocator) (arrow.Array, error) {
	out, err := compute.CastArray(compute.WithAllocator(ctx, mem), arr, compute.SafeCastOptions(target))
	if err != nil {
		return nil, fmt.Errorf("cast %s to %s: %w", arr.DataType(), target, err)
	}
	return out, nil
}
