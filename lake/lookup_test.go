package lake

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/expr"
	"github.com/flightd/flightd/lake/paimontype"
)

// scanCounts scans s with filter and returns the ids it returns, with the
// numbers of files and row groups the pruner let the scan read.
func scanCounts(t *testing.T, tb *Table, s *Snapshot, filter []expr.Predicate) (ids []int64, files, groups int) {
	t.Helper()
	rr, err := tb.Scan(context.Background(), s, ScanOptions{Columns: []string{"id"}, Filter: filter})
	require.NoError(t, err)
	defer rr.Release()
	for rr.Next() {
		ids = append(ids, rr.RecordBatch().Column(0).(*array.Int64).Int64Values()...)
	}
	require.NoError(t, rr.Err())
	p := rr.(*scanReader).prune
	require.NotNil(t, p)
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, int(p.filesKept.Load()), int(p.groupsKept.Load())
}

// TestPointLookupPrunesAfterAlterTableSet: ALTER TABLE ... SET writes a new
// schema id with the same columns; files written before it must still be
// pruned by their statistics (manifest key or value statistics, Parquet row
// group statistics) exactly as before, on a primary-key and an append table.
func TestPointLookupPrunesAfterAlterTableSet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestCatalog(t)
	for _, tc := range []struct {
		name string
		sc   paimontype.Schema
	}{
		{"pk", paimontype.Schema{Columns: testCols, PrimaryKeys: []string{"id"}, Options: map[string]string{"bucket": "1"}}},
		{"ap", paimontype.Schema{Columns: testCols}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb, err := c.CreateTable(ctx, "db", tc.name, tc.sc, false)
			require.NoError(t, err)
			// Three files: one of three row groups, two small ones of disjoint ids.
			var snap *Snapshot
			for i, span := range [][2]int64{{0, 2*maxRowGroupRows + 10}, {1 << 30, 1<<30 + 100}, {1 << 40, 1<<40 + 100}} {
				var rows []row
				for id := span[0]; id < span[1]; id++ {
					rows = append(rows, row{id, sp(fmt.Sprint("n", id)), "x"})
				}
				w := tb.NewWrite(ctx)
				var kinds []RowKind
				var seqs []int64
				if tb.Schema().HasPrimaryKey() {
					kinds = make([]RowKind, len(rows))
					for j := range rows {
						seqs = append(seqs, int64(j))
					}
				}
				writeRows(t, w, tb, rows, kinds, seqs)
				snap, err = w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: int64(i + 1), ExpectedLatest: int64(i)})
				require.NoError(t, err)
			}
			filters := [][]expr.Predicate{
				{{Column: "id", Op: expr.OpEq, Values: []any{int64(maxRowGroupRows + 5)}}},
				{{Column: "id", Op: expr.OpIn, Values: []any{int64(3), int64(1<<30 + 7)}}},
				{{Column: "id", Op: expr.OpGe, Values: []any{int64(1 << 40)}}},
				{{Column: "id", Op: expr.OpEq, Values: []any{int64(-1)}}},
			}
			type counts struct {
				rows, files, groups int
				sum                 int64 // of the ids returned
			}
			summary := func(ids []int64, files, groups int) counts {
				c := counts{rows: len(ids), files: files, groups: groups}
				for _, id := range ids {
					c.sum += id
				}
				return c
			}
			var before []counts
			for _, f := range filters {
				before = append(before, summary(scanCounts(t, tb, snap, f)))
			}
			require.Equal(t, 1, before[0].files)
			require.Equal(t, 1, before[0].groups)
			require.Equal(t, 2, before[1].files)
			require.Equal(t, 2, before[1].groups)
			require.Equal(t, 1, before[2].files)
			require.Equal(t, 0, before[3].groups)

			tb, err = c.AlterTableOptions(ctx, "db", tc.name, map[string]string{"snapshot.num-retained.max": "50"})
			require.NoError(t, err)
			require.Equal(t, int64(1), tb.Schema().ID)
			for i, f := range filters {
				require.Equal(t, before[i], summary(scanCounts(t, tb, snap, f)), "filter %v after ALTER TABLE SET", f)
			}
		})
	}
}

// TestPruningByFieldIDAfterRenameAndAdd: after columns a and b swap names
// (same field ids) and a column c is added, a filter on a new name never
// prunes by the statistics the older files keep under that name (they
// belong to the other column), and every matching row is returned.
func TestPruningByFieldIDAfterRenameAndAdd(t *testing.T) {
	for _, pk := range []bool{false, true} {
		name := map[bool]string{false: "ap", true: "pk"}[pk]
		t.Run(name, func(t *testing.T) {
			c := newTestCatalog(t)
			bigint := paimontype.DataType{Root: paimontype.TypeBigInt}
			s := paimontype.Schema{Columns: []paimontype.Column{{Name: "id", Type: bigint}, {Name: "a", Type: bigint}, {Name: "b", Type: bigint}}}
			if pk {
				s.PrimaryKeys = []string{"id"}
				s.Options = map[string]string{"bucket": "1"}
			}
			tb, err := c.CreateTable(t.Context(), "db", name, s, false)
			require.NoError(t, err)
			var rows []map[string]any
			for i := int64(0); i < 10; i++ {
				rows = append(rows, map[string]any{"id": i, "a": i, "b": 100 + i})
			}
			commitAny(t, tb, rows)
			tb = evolve(t, c, name, func(ts *paimontype.TableSchema) {
				ts.Fields[1].Name, ts.Fields[2].Name = "b", "a"
				ts.Fields = append(ts.Fields, paimontype.DataField{ID: ts.HighestFieldID + 1, Name: "c", Type: bigint})
				ts.HighestFieldID++
			})
			rows = nil
			for i := int64(10); i < 20; i++ {
				rows = append(rows, map[string]any{"id": i, "a": 1000 + i, "b": 2000 + i, "c": 3000 + i})
			}
			snap := commitAny(t, tb, rows)
			// The first file holds a (new name) = 100..109, b = 0..9, c null.
			for _, tc := range []struct {
				p    expr.Predicate
				want []int64
			}{
				{expr.Predicate{Column: "a", Op: expr.OpEq, Values: []any{int64(105)}}, []int64{5}},
				{expr.Predicate{Column: "a", Op: expr.OpGe, Values: []any{int64(100)}}, []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}},
				{expr.Predicate{Column: "b", Op: expr.OpLt, Values: []any{int64(5)}}, []int64{0, 1, 2, 3, 4}},
				{expr.Predicate{Column: "c", Op: expr.OpEq, Values: []any{int64(3015)}}, []int64{15}},
				{expr.Predicate{Column: "c", Op: expr.OpLt, Values: []any{int64(0)}}, nil},
			} {
				rr, err := tb.Scan(context.Background(), snap, ScanOptions{Columns: []string{"id", "a", "b", "c"}, Filter: []expr.Predicate{tc.p}})
				require.NoError(t, err)
				var got []int64
				for rr.Next() {
					rec := rr.RecordBatch()
					col := rec.Column(map[string]int{"a": 1, "b": 2, "c": 3}[tc.p.Column]).(*array.Int64)
					bound, ok := expr.Bind(expr.KindInt64, tc.p)
					require.True(t, ok)
					conj := expr.Conj{bound}
					for r := 0; r < int(rec.NumRows()); r++ {
						if !col.IsNull(r) && conj.MayMatchValue(col.Value(r)) {
							got = append(got, rec.Column(0).(*array.Int64).Value(r))
						}
					}
				}
				require.NoError(t, rr.Err())
				rr.Release()
				sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
				require.Equal(t, tc.want, got, "%s %v %v", tc.p.Column, tc.p.Op, tc.p.Values)
			}
		})
	}
}

// predHolds is SQL's "v op values" for int64 and string values (null: false).
func predHolds(p expr.Predicate, v any) bool {
	if v == nil {
		return false
	}
	cmp := func(c any) int {
		switch x := v.(type) {
		case int64:
			return cmpTest(x, c.(int64))
		case string:
			return cmpTest(x, c.(string))
		}
		panic("type")
	}
	switch p.Op {
	case expr.OpEq:
		return cmp(p.Values[0]) == 0
	case expr.OpLt:
		return cmp(p.Values[0]) < 0
	case expr.OpLe:
		return cmp(p.Values[0]) <= 0
	case expr.OpGt:
		return cmp(p.Values[0]) > 0
	case expr.OpGe:
		return cmp(p.Values[0]) >= 0
	case expr.OpIn:
		for _, c := range p.Values {
			if cmp(c) == 0 {
				return true
			}
		}
	}
	return false
}

func cmpTest[T int64 | string](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// scanRows scans s with filter and returns its rows as "id,name,dt" with
// the values by column for predicates, sorted.
func scanRows(t *testing.T, tb *Table, s *Snapshot, filter []expr.Predicate) (keys []string, vals []map[string]any) {
	t.Helper()
	rr, err := tb.Scan(context.Background(), s, ScanOptions{Filter: filter})
	require.NoError(t, err)
	defer rr.Release()
	type r struct {
		k string
		v map[string]any
	}
	var rows []r
	for rr.Next() {
		rec := rr.RecordBatch()
		ids := rec.Column(0).(*array.Int64)
		names := rec.Column(1).(*array.String)
		dts := rec.Column(2).(*array.String)
		for i := 0; i < int(rec.NumRows()); i++ {
			v := map[string]any{"id": ids.Value(i), "name": names.Value(i), "dt": nil}
			if dts.IsValid(i) {
				v["dt"] = dts.Value(i)
			}
			rows = append(rows, r{fmt.Sprint(v["id"], ",", v["name"], ",", v["dt"]), v})
		}
	}
	require.NoError(t, rr.Err())
	sort.Slice(rows, func(i, j int) bool { return rows[i].k < rows[j].k })
	for _, x := range rows {
		keys = append(keys, x.k)
		vals = append(vals, x.v)
	}
	return keys, vals
}

// Randomized: on a primary-key table with a two-column key, written by
// commits of inserts, updates and deletes over few keys, with and without a
// full compaction, a scan filtered on key columns returns exactly the rows
// of a full scan that match the filter (the scan drops the rows whose key
// cannot match, never a matching one, and merges every version of the keys
// it returns), and a filter that also names a value column loses no match.
func TestPointLookupReturnsExactlyTheKeysRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(18, 3))
	names := []string{"", "a", "b", "bb", "c"}
	for trial := 0; trial < 4; trial++ {
		c := newTestCatalog(t)
		sc := paimontype.Schema{Columns: testCols, PrimaryKeys: []string{"id", "name"}, Options: map[string]string{"bucket": fmt.Sprint(1 + trial%3)}}
		tb, err := c.CreateTable(ctx, "db", fmt.Sprint("t", trial), sc, false)
		require.NoError(t, err)
		randPred := func(col string) expr.Predicate {
			var v func() any
			if col == "id" {
				v = func() any { return int64(rng.IntN(34) - 2) }
			} else if col == "name" {
				v = func() any { return names[rng.IntN(len(names))] }
			} else {
				v = func() any { return fmt.Sprint("d", rng.IntN(5)) }
			}
			p := expr.Predicate{Column: col, Op: expr.Op(rng.IntN(6)), Values: []any{v()}}
			if rng.IntN(2) == 0 {
				p.Op = expr.OpEq // point lookups most of all
			}
			if p.Op == expr.OpIn {
				for k := rng.IntN(3); k >= 0; k-- {
					p.Values = append(p.Values, v())
				}
			}
			return p
		}
		check := func(s *Snapshot) {
			_, all := scanRows(t, tb, s, nil)
			for q := 0; q < 60; q++ {
				var f []expr.Predicate
				switch rng.IntN(4) {
				case 0:
					f = []expr.Predicate{randPred("id")}
				case 1:
					f = []expr.Predicate{randPred("id"), randPred("name")}
				case 2:
					f = []expr.Predicate{randPred("name")}
				case 3:
					f = []expr.Predicate{randPred("id"), randPred("dt")}
				}
				holds := func(v map[string]any, f []expr.Predicate) bool {
					for _, p := range f {
						if !predHolds(p, v[p.Column]) {
							return false
						}
					}
					return true
				}
				var keyF []expr.Predicate
				for _, p := range f {
					if p.Column != "dt" {
						keyF = append(keyF, p)
					}
				}
				var want, wantAll []string
				for _, v := range all {
					k := fmt.Sprint(v["id"], ",", v["name"], ",", v["dt"])
					if holds(v, keyF) {
						want = append(want, k)
					}
					if holds(v, f) {
						wantAll = append(wantAll, k)
					}
				}
				got, gotVals := scanRows(t, tb, s, f)
				var gotAll []string
				for i, v := range gotVals {
					if holds(v, f) {
						gotAll = append(gotAll, got[i])
					}
				}
				require.Equal(t, want, got, "filter %v", f)
				require.Equal(t, wantAll, gotAll, "filter %v", f)
			}
		}
		var latest int64
		for commit := 0; commit < 8; commit++ {
			seen := map[string]bool{}
			var rows []row
			var kinds []RowKind
			var seqs []int64
			for k := rng.IntN(40); k >= 0; k-- {
				id, name := int64(rng.IntN(30)), names[rng.IntN(len(names))]
				if seen[fmt.Sprint(id, name)] {
					continue
				}
				seen[fmt.Sprint(id, name)] = true
				kind := Insert
				if rng.IntN(4) == 0 {
					kind = Delete
				}
				rows = append(rows, row{id, sp(name), fmt.Sprint("d", rng.IntN(5))})
				kinds = append(kinds, kind)
				seqs = append(seqs, int64(len(seqs)))
			}
			w := tb.NewWrite(ctx)
			writeRows(t, w, tb, rows, kinds, seqs)
			s, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: latest + 1, ExpectedLatest: latest})
			require.NoError(t, err)
			latest = s.ID
		}
		s, err := tb.Snapshot(ctx, latest)
		require.NoError(t, err)
		check(s)
		cs, err := tb.Compact(ctx, CompactOptions{CommitUser: "u", ExpectedLatest: latest, MinFiles: 2})
		require.NoError(t, err)
		if cs != nil {
			check(cs)
		}
	}
}

// TestPointLookupSeeksPagesOfLargeFiles: primary-key files have several
// data pages per column chunk and an offset index; lookups of a few keys
// (read by seeking to their pages) and of many keys (whole row groups,
// rows taken) in files of several row groups return the rows written,
// nullable strings and INT96 timestamps included, from one file (read
// without merging) and from two (merged, updates winning).
func TestPointLookupSeeksPagesOfLargeFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newTestCatalog(t)
	ty := func(s string) paimontype.DataType { return mustType(t, s) }
	tb, err := c.CreateTable(ctx, "db", "t", paimontype.Schema{Columns: []paimontype.Column{{Name: "id", Type: ty("BIGINT")}, {Name: "name", Type: ty("STRING")},
		{Name: "ts", Type: ty("TIMESTAMP(9)")}, {Name: "n", Type: ty("INT")}}, PrimaryKeys: []string{"id"}, Options: map[string]string{"bucket": "1"}}, false)
	require.NoError(t, err)
	n := 2*maxRowGroupRows + 1000
	type val struct {
		name *string
		ts   int64
		n    int32
	}
	model := map[int64]val{}
	write := func(ids []int64, round int) *Snapshot {
		sc := tb.Schema().ArrowSchema()
		rb := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		defer rb.Release()
		for _, id := range ids {
			v := val{ts: id*1_000_000_007 + int64(round), n: int32(id) + int32(round)}
			if id%5 != 0 {
				v.name = sp(fmt.Sprintf("name-%d-%d", id, round))
			}
			model[id] = v
			rb.Field(0).(*array.Int64Builder).Append(id)
			if v.name == nil {
				rb.Field(1).AppendNull()
			} else {
				rb.Field(1).(*array.StringBuilder).Append(*v.name)
			}
			rb.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(v.ts))
			rb.Field(3).(*array.Int32Builder).Append(v.n)
		}
		rec := rb.NewRecordBatch()
		defer rec.Release()
		seqs := make([]int64, len(ids))
		for i := range seqs {
			seqs[i] = int64(i)
		}
		latest, err := tb.latestSnapshotID(ctx)
		require.NoError(t, err)
		w := tb.NewWrite(ctx)
		require.NoError(t, w.Write(ctx, 0, rec, make([]RowKind, len(ids)), seqs))
		s, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: latest + 1, ExpectedLatest: latest})
		require.NoError(t, err)
		return s
	}
	var ids []int64
	for i := 0; i < n; i++ {
		ids = append(ids, int64(i)*3)
	}
	s1 := write(ids, 0)

	// The file: several row groups, several pages per column chunk, an offset index.
	entries, _, err := tb.dataFiles(ctx, s1)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	pf, err := openParquet(ctx, tb.fio, tb.dataFilePath(nil, nil, 0, entries[0].File.FileName), memory.DefaultAllocator)
	require.NoError(t, err)
	require.Equal(t, 3, pf.pr.NumRowGroups())
	leaf := pf.fieldLeaves("id")[0]
	oi, err := pf.pr.GetPageIndexReader().RowGroup(0)
	require.NoError(t, err)
	idx, err := oi.GetOffsetIndex(leaf)
	require.NoError(t, err)
	require.Greater(t, len(idx.GetPageLocations()), 4)
	require.True(t, pf.canSeek(0, []int{leaf, pf.fieldLeaves("name")[0]}, 1))
	require.NoError(t, pf.Close())

	rng := rand.New(rand.NewPCG(5, 8))
	check := func(s *Snapshot, what string) {
		for q := 0; q < 40; q++ {
			var keys []any
			for k := 1 + rng.IntN(map[bool]int{true: 3, false: 20}[q%2 == 0]); k > 0; k-- {
				keys = append(keys, int64(rng.IntN(3*n+2))) // a third of them exist
			}
			p := expr.Predicate{Column: "id", Op: expr.OpIn, Values: keys}
			rr, err := tb.Scan(ctx, s, ScanOptions{Columns: []string{"n", "ts", "name", "id"}, Filter: []expr.Predicate{p}})
			require.NoError(t, err)
			got := map[int64]val{}
			for rr.Next() {
				rec := rr.RecordBatch()
				for r := 0; r < int(rec.NumRows()); r++ {
					id := rec.Column(3).(*array.Int64).Value(r)
					v := val{n: rec.Column(0).(*array.Int32).Value(r), ts: int64(rec.Column(1).(*array.Timestamp).Value(r))}
					if names := rec.Column(2).(*array.String); names.IsValid(r) {
						v.name = sp(names.Value(r))
					}
					_, dup := got[id]
					require.False(t, dup, "%s: key %d twice", what, id)
					got[id] = v
				}
			}
			require.NoError(t, rr.Err())
			rr.Release()
			want := map[int64]val{}
			for _, k := range keys {
				if v, ok := model[k.(int64)]; ok {
					want[k.(int64)] = v
				}
			}
			require.Equal(t, want, got, "%s: keys %v", what, keys)
		}
	}
	check(s1, "one file")
	var upd []int64
	for i := 0; i < n; i += 7 {
		upd = append(upd, int64(i)*3)
	}
	check(write(upd, 1), "merged with updates")
}

// A point lookup read and parsed the schema of every file written before
// the last ALTER, once per scan: older schemas are now read once per Table.
func TestSchemaByIDReadsAnOlderSchemaOnce(t *testing.T) {
	ctx := context.Background()
	c := newTestCatalog(t)
	_, err := c.CreateTable(ctx, "db", "t", paimontype.Schema{Columns: testCols, PrimaryKeys: []string{"id"}, Options: map[string]string{"bucket": "1"}}, false)
	require.NoError(t, err)
	tb, err := c.AlterTableOptions(ctx, "db", "t", map[string]string{"x.y": "1"})
	require.NoError(t, err)
	require.EqualValues(t, 1, tb.Schema().ID)
	first, err := tb.SchemaByID(ctx, 0)
	require.NoError(t, err)
	// The file is immutable: a second read must not need it.
	require.NoError(t, tb.fio.Remove(ctx, tb.Path()+"/schema/schema-0"))
	again, err := tb.SchemaByID(ctx, 0)
	require.NoError(t, err)
	require.Same(t, first, again)
}

// TestRowRunsMapPositions checks the run helpers a lookup uses to keep its
// candidate pages as runs: random ascending positions survive runsOf and
// positions, and the cursor maps the i-th candidate row to its position.
func TestRowRunsMapPositions(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for iter := 0; iter < 200; iter++ {
		var rows []int64
		for r := int64(rng.IntN(3)); r < 500; r += 1 + int64(rng.IntN(4)*rng.IntN(3)) {
			rows = append(rows, r)
		}
		runs := runsOf(rows)
		require.Equal(t, int64(len(rows)), runs.count())
		require.Equal(t, rows, runs.positions())
		for i := 1; i < len(runs); i++ {
			require.Less(t, runs[i-1][1], runs[i][0], "runs touch or overlap")
		}
		c := newRunCursor(runs)
		for i := 0; i < len(rows); i += 1 + rng.IntN(5) {
			require.Equal(t, rows[i], c.position(int64(i)))
		}
	}
	require.Equal(t, int64(42), newRunCursor(nil).position(42))
}
