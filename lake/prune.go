package lake

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/flightd/flightd/lake/expr"
	"github.com/flightd/flightd/lake/manifest"
	"github.com/flightd/flightd/lake/paimontype"
)

// ScanOptions narrow a scan.
type ScanOptions struct {
	// Columns is the projection in output order; nil reads every column.
	Columns []string
	// Filter is a conjunction used to skip partitions, buckets, data files
	// and row groups that cannot hold a matching row (partition values, the
	// bucket of equal keys, key statistics, and value statistics of append
	// tables). A primary-key table also drops the rows whose key cannot
	// match (predicates on key columns, as KeyRows); no other row is
	// filtered: the caller applies its filter. Predicates on unknown
	// columns, on columns of other types than integers, DATE and strings,
	// or that do not bind (expr.Bind) are ignored: they never prune.
	Filter []expr.Predicate
	// Split, when its Count is above 1, reads one of Count disjoint parts
	// of the scan; the parts of one snapshot together are the whole scan
	// (see Split).
	Split Split
	// TopLevel reads a primary-key table's files at the top level only
	// (num-levels - 1, where full compaction writes): Paimon's
	// read-optimized t$ro, which needs no merge and misses what was written
	// since the last full compaction. An append table is read whole.
	TopLevel bool
	// KeepKinds reads a primary-key table as Paimon's t$audit_log does:
	// every bucket merged, each key's newest version kept with its stored
	// row kind, retractions (-U/-D) included, in a last column
	// _VALUE_KIND (RowKind as int8). Not for append tables.
	KeepKinds bool
}

// Split names part Index of Count parts of a scan. A primary-key table's
// part holds the buckets b with b % Count == Index, whole, so that each
// key is merged in one part (and a caller merging a log split the same way
// finds each key's log rows in the same part). An append table's part holds
// every Count-th data file of the pruned scan, in manifest order, so that
// a table of one bucket splits too.
type Split struct{ Index, Count int }

// In reports whether the part holds bucket n of a primary-key table, or
// the n-th file of an append table.
func (s Split) In(n int) bool { return s.Count <= 1 || n%s.Count == s.Index }

// kindOf is the comparison domain of a column of type t: expr.KindOf of
// its Arrow type.
func kindOf(t paimontype.DataType) expr.Kind {
	switch t.Root {
	case paimontype.TypeTinyInt:
		return expr.KindInt8
	case paimontype.TypeSmallInt:
		return expr.KindInt16
	case paimontype.TypeInt:
		return expr.KindInt32
	case paimontype.TypeBigInt:
		return expr.KindInt64
	case paimontype.TypeDate:
		return expr.KindDate
	case paimontype.TypeChar, paimontype.TypeVarChar:
		return expr.KindString
	}
	return expr.KindNone
}

// bindFilter keeps the predicates that can prune, per column name:
// predicates on unknown columns, or that do not bind (expr.Bind), are
// left out.
func (t *Table) bindFilter(f []expr.Predicate) map[string]expr.Conj {
	out := map[string]expr.Conj{}
	for _, p := range f {
		i := t.schema.FieldIndex(p.Column)
		if i < 0 {
			continue
		}
		fd := t.schema.Fields[i]
		if b, ok := expr.Bind(kindOf(fd.Type), p); ok {
			out[fd.Name] = append(out[fd.Name], b)
		}
	}
	return out
}

// pruner decides, for one scan, which manifest entries can hold matching rows.
type pruner struct {
	ctx     context.Context // the scan's: older schemas are read under it (view)
	t       *Table
	preds   map[string]expr.Conj
	buckets map[int32]bool // nil: any bucket
	parts   map[string]bool
	viewsMu sync.Mutex            // the scan's workers prune row groups concurrently
	views   map[int64]*schemaView // by schema id of the files

	// Primary-key tables: the key columns the filter constrains and the rows
	// of a batch they let through (nil: none constrained); see readRowGroup.
	keys    []keyCol
	keyRows func(rec arrow.RecordBatch) []bool

	// Counts of what the scan reads after pruning, for tests and benchmarks.
	filesKept, groupsKept atomic.Int64
}

func (t *Table) newPruner(ctx context.Context, f []expr.Predicate) *pruner {
	preds := t.bindFilter(f)
	if len(preds) == 0 {
		return nil
	}
	p := &pruner{ctx: ctx, t: t, preds: preds, parts: map[string]bool{}}
	p.buckets = t.bucketsOf(preds)
	if t.schema.HasPrimaryKey() {
		p.keys = t.keyCols(preds)
		p.keyRows = keyRowsOf(p.keys)
	}
	return p
}

// AllowedBuckets returns the buckets that can hold rows matching f: when f
// fixes every bucket-key column to one or a few values, only their buckets;
// otherwise ok is false (any bucket).
func (t *Table) AllowedBuckets(f []expr.Predicate) (buckets map[int32]bool, ok bool) {
	b := t.bucketsOf(t.bindFilter(f))
	return b, b != nil
}

// bucketsOf computes the buckets of the equality predicates on every bucket
// key column (at most 256 combinations), or nil.
func (t *Table) bucketsOf(preds map[string]expr.Conj) map[int32]bool {
	nb := t.schema.NumBuckets()
	keys := t.schema.BucketKeys()
	if nb <= 0 || len(keys) == 0 {
		return nil
	}
	choices := make([][]any, len(keys))
	types := make([]paimontype.DataType, len(keys))
	combos := 1
	for i, k := range keys {
		types[i] = t.schema.Fields[t.schema.FieldIndex(k)].Type
		var vals []any
		found := false
		for _, p := range preds[k] {
			if p.Op() == expr.OpEq || p.Op() == expr.OpIn {
				vals, found = p.Values(), true
				break
			}
		}
		if !found {
			return nil
		}
		for _, v := range vals {
			if iv, ok := internalOf(types[i], v); ok {
				choices[i] = append(choices[i], iv)
			}
		}
		combos *= max(len(choices[i]), 1)
		if combos > 256 {
			return nil
		}
	}
	out := map[int32]bool{}
	row := make([]any, len(keys))
	var rec func(i int)
	rec = func(i int) {
		if i == len(keys) {
			out[manifest.BucketOf(manifest.HashBinaryRow(manifest.EncodeBinaryRow(types, row)), nb)] = true
			return
		}
		for _, v := range choices[i] {
			row[i] = v
			rec(i + 1)
		}
	}
	rec(0)
	return out // empty: no key value fits the column type, nothing matches
}

// internalOf converts a normalised value to the internal value of type t, as
// BinaryRow encodes it; ok is false when it is out of the type's range.
func internalOf(t paimontype.DataType, v any) (any, bool) {
	switch x := v.(type) {
	case int64:
		switch t.Root {
		case paimontype.TypeTinyInt:
			return int8(x), x == int64(int8(x))
		case paimontype.TypeSmallInt:
			return int16(x), x == int64(int16(x))
		case paimontype.TypeInt, paimontype.TypeDate:
			return int32(x), x == int64(int32(x))
		case paimontype.TypeBigInt:
			return x, true
		}
	case string:
		return x, true
	}
	return nil, false
}

// keep reports whether the entry's file can hold a matching row.
func (p *pruner) keep(e *manifest.Entry) bool {
	ok := p.keepFile(e)
	if ok {
		p.filesKept.Add(1)
	}
	return ok
}

func (p *pruner) keepFile(e *manifest.Entry) bool {
	if p.buckets != nil && !p.buckets[e.Bucket] {
		return false
	}
	ts := p.t.schema
	if len(ts.PartitionKeys) > 0 {
		k := string(e.Partition)
		ok, seen := p.parts[k]
		if !seen {
			ok = p.partitionMatches(e.Partition)
			p.parts[k] = ok
		}
		if !ok {
			return false
		}
	}
	f := &e.File
	v := p.view(f.SchemaID)
	if v == nil {
		return true
	}
	if ts.HasPrimaryKey() {
		return p.statsMatch(v, v.schema.TrimmedPrimaryKeys(), f.KeyStats, f.RowCount)
	}
	names := f.ValueStatsCols
	if names == nil {
		for _, fd := range v.schema.Fields {
			names = append(names, fd.Name)
		}
	}
	return p.statsMatch(v, names, f.ValueStats, f.RowCount)
}

// schemaView is how the filter applies to the statistics of the files written
// under one schema: the schema that names and types their columns, and the
// predicates that may prune them, by column name in that schema.
type schemaView struct {
	schema *paimontype.TableSchema
	preds  map[string]expr.Conj
}

// view returns the schemaView of files written under schema id, nil when the
// schema cannot be read (the file is kept; reading it reports the error).
// Statistics of an older schema are named and typed by it: a predicate
// prunes them only when its column has the same field id, the same name and
// the same type (nullability aside) there. A renamed column, a column added
// later or dropped and re-added (a new id), or a changed type (a widened
// INT, a longer VARCHAR) is conservatively not pruned: the same name may be
// another column, and statistics of another type may compare differently.
func (p *pruner) view(id int64) *schemaView {
	p.viewsMu.Lock()
	defer p.viewsMu.Unlock()
	if v, ok := p.views[id]; ok {
		return v
	}
	var v *schemaView
	ts := p.t.schema
	if id == ts.ID {
		v = &schemaView{schema: ts, preds: p.preds}
	} else if fs, err := p.t.SchemaByID(p.ctx, id); err == nil {
		v = &schemaView{schema: fs, preds: map[string]expr.Conj{}}
		for name, preds := range p.preds {
			cur := ts.Fields[ts.FieldIndex(name)]
			for _, old := range fs.Fields {
				if old.ID == cur.ID {
					if old.Name == cur.Name && sameStatsType(old.Type, cur.Type) {
						v.preds[name] = preds
					}
					break
				}
			}
		}
	}
	if p.views == nil {
		p.views = map[int64]*schemaView{}
	}
	p.views[id] = v
	return v
}

// sameStatsType reports whether statistics of type a compare as those of
// type b: the same type, nullability aside.
func sameStatsType(a, b paimontype.DataType) bool {
	return reflect.DeepEqual(a.WithNullable(true), b.WithNullable(true))
}

func (p *pruner) partitionMatches(part []byte) bool {
	ts := p.t.schema
	types := make([]paimontype.DataType, len(ts.PartitionKeys))
	for i, k := range ts.PartitionKeys {
		types[i] = ts.Fields[ts.FieldIndex(k)].Type
	}
	_, row, err := manifest.DeserializeBinaryRow(part)
	if err != nil {
		return true
	}
	vals, err := manifest.DecodeBinaryRow(types, row)
	if err != nil {
		return true
	}
	for i, k := range ts.PartitionKeys {
		if preds := p.preds[k]; len(preds) > 0 && !preds.MayMatchValue(vals[i]) {
			return false
		}
	}
	return true
}

// statsMatch checks the predicates of v on the columns names (of v's schema)
// against the file statistics laid out in that order. Missing or partial
// statistics keep the file.
func (p *pruner) statsMatch(v *schemaView, names []string, st manifest.SimpleStats, rows int64) bool {
	idx := map[string]int{}
	var types []paimontype.DataType
	for i, n := range names {
		fi := v.schema.FieldIndex(n)
		if fi < 0 {
			return true
		}
		idx[n] = i
		types = append(types, v.schema.Fields[fi].Type)
	}
	var mins, maxs []any
	decoded := false
	for col, preds := range v.preds {
		i, ok := idx[col]
		if !ok {
			continue
		}
		if !decoded {
			decoded = true
			var err1, err2 error
			mins, err1 = decodeStatsRow(types, st.MinValues)
			maxs, err2 = decodeStatsRow(types, st.MaxValues)
			if err1 != nil || err2 != nil {
				return true
			}
		}
		if i < len(st.NullCounts) && st.NullCounts[i] != nil && *st.NullCounts[i] == rows && rows > 0 {
			return false // only nulls, which match no comparison
		}
		if i >= len(mins) || i >= len(maxs) || mins[i] == nil || maxs[i] == nil {
			continue
		}
		if !preds.MayMatchRange(mins[i], maxs[i]) {
			return false
		}
	}
	return true
}

// decodeStatsRow decodes a serialized stats BinaryRow; an empty row (no
// statistics) decodes to nil.
func decodeStatsRow(types []paimontype.DataType, b []byte) ([]any, error) {
	arity, row, err := manifest.DeserializeBinaryRow(b)
	if err != nil {
		return nil, err
	}
	if arity != len(types) {
		return nil, nil
	}
	return manifest.DecodeBinaryRow(types, row)
}

// rowGroupMatches reports whether row group rg of a data file can hold a
// row matching the filter, by the row group's Parquet column statistics:
// key columns for primary-key tables (every version of a key shares it),
// any column for append tables. Columns are those of the file's schema
// (see view: an older schema's column prunes when it is the same field,
// name and type), string statistics are used only in files flightd wrote
// (older writers may order them as signed bytes), and missing statistics
// keep the group.
func (p *pruner) rowGroupMatches(pf *parquetFile, f *manifest.DataFileMeta, rg int) bool {
	ok := p.groupMatches(pf, f, rg)
	if ok {
		p.groupsKept.Add(1)
	}
	return ok
}

func (p *pruner) groupMatches(pf *parquetFile, f *manifest.DataFileMeta, rg int) bool {
	v := p.view(f.SchemaID)
	if v == nil {
		return true
	}
	fs := v.schema
	cols := fs.TrimmedPrimaryKeys()
	if !fs.HasPrimaryKey() {
		cols = nil
		for _, fd := range fs.Fields {
			cols = append(cols, fd.Name)
		}
	}
	md := pf.pr.MetaData()
	ours := strings.HasPrefix(md.GetCreatedBy(), "flightd")
	rgm := md.RowGroup(rg)
	for _, c := range cols {
		preds := v.preds[c]
		if len(preds) == 0 {
			continue
		}
		leaves := pf.fieldLeaves(c)
		if len(leaves) != 1 {
			continue
		}
		cc, err := rgm.ColumnChunk(leaves[0])
		if err != nil {
			continue
		}
		if set, err := cc.StatsSet(); err != nil || !set {
			continue
		}
		st, err := cc.Statistics()
		if err != nil || st == nil {
			continue
		}
		if st.HasNullCount() && st.NullCount() == rgm.NumRows() && rgm.NumRows() > 0 {
			return false // only nulls
		}
		if !st.HasMinMax() {
			continue
		}
		var may bool
		switch s := st.(type) {
		case *metadata.Int32Statistics:
			may = preds.MayMatchInts(int64(s.Min()), int64(s.Max()))
		case *metadata.Int64Statistics:
			may = preds.MayMatchInts(s.Min(), s.Max())
		case *metadata.ByteArrayStatistics:
			if !ours {
				continue
			}
			may = preds.MayMatchStrings(string(s.Min()), string(s.Max()))
		default:
			continue
		}
		if !may {
			return false
		}
	}
	return true
}

// KeyRows returns, for a filter, a function that says which rows of a batch
// can match f's predicates on primary-key columns (those of integer, date
// and string types; the batch's columns are found by name). All versions of
// a key agree on them, so a primary-key merge may drop the other rows
// before it merges, and a point query merges only its key's versions. It
// returns nil when f constrains no such column, and the function returns
// nil when every row can match.
func (t *Table) KeyRows(f []expr.Predicate) func(rec arrow.RecordBatch) []bool {
	return keyRowsOf(t.keyCols(t.bindFilter(f)))
}

// keyCol is a primary-key column the filter constrains.
type keyCol struct {
	name  string
	typ   paimontype.DataType
	preds expr.Conj
}

// keyCols returns the primary-key columns that preds constrain.
func (t *Table) keyCols(preds map[string]expr.Conj) []keyCol {
	var cols []keyCol
	for _, k := range t.schema.PrimaryKeys {
		if p := preds[k]; len(p) > 0 {
			cols = append(cols, keyCol{k, t.schema.Fields[t.schema.FieldIndex(k)].Type, p})
		}
	}
	return cols
}

// keyRowsOf is KeyRows of the key columns cols (nil: none).
func keyRowsOf(cols []keyCol) func(rec arrow.RecordBatch) []bool {
	if len(cols) == 0 {
		return nil
	}
	return func(rec arrow.RecordBatch) []bool {
		var keep []bool
		for _, c := range cols {
			idx := rec.Schema().FieldIndices(c.name)
			if len(idx) == 0 {
				continue
			}
			if match, ok := c.preds.Matcher(rec.Column(idx[0])); ok {
				keep = expr.Narrow(keep, int(rec.NumRows()), match)
			}
		}
		return keep
	}
}

// cachedView returns the schemaView already loaded for schema id, if any.
func (p *pruner) cachedView(id int64) *schemaView {
	p.viewsMu.Lock()
	defer p.viewsMu.Unlock()
	return p.views[id]
}
