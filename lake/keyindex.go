package lake

import (
	"fmt"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/flightd/flightd/internal/arrowutil"
)

// A union read (t$rt) drops the lake rows whose key has a newer version in
// the log (ScanTuning.Exclude). Finding them by decoding every file's
// key column on every read cost as much as the rest of an aggregate (the
// key column is the one that compresses best, so it is the dearest to
// decompress), although the files never change. So the key of every row of
// a file is decoded once and kept by the file's path (data files are
// immutable: a name is never written twice), and a read finds the rows to
// drop by searching them for the log's keys, without reading the column.

//
// Most of the log's keys are the same from one read to the next (a
// dashboard refreshing between writes, or writes to recent keys only), so
// each row group also remembers the positions its last read found and
// reuses them while the log's keys in its range are the same.

// KeyIndexCacheBytes bounds the decoded keys of data files kept in memory
// (8 bytes a row, and up to 4 more for the remembered positions). Set it
// before the first scan; 0 disables the cache, and a read then decodes the
// keys of each file it excludes keys from.
var KeyIndexCacheBytes int64 = 256 << 20

var fileKeyIndexes = newLRUCache[*keyIndex](&KeyIndexCacheBytes)

// keyIndex is the primary key of every row of a data file, in row order.
type keyIndex struct {
	keys   []int64
	sorted bool // ascending: a primary-key file written by Paimon's rules always is

	mu    sync.Mutex
	found map[[2]int64]*foundKeys // by the range of rows dropped searched
}

// foundKeys is what dropped last found in a range of rows: the keys it
// searched for and the positions of those it found.
type foundKeys struct {
	set, pos []int64
}

// keyIndexCost is the memory a key index of rows rows is charged: its keys
// and the positions it remembers, which dropped keeps only while the keys
// searched for are at most a quarter of the rows searched (16 bytes each).
func keyIndexCost(rows int) int64 { return 64 + 12*int64(rows) }

// IntKey reports whether t's primary key, as its data files store it (the
// trimmed key), is one integer-like column, the key a scan can exclude rows
// by (ScanTuning.Exclude).
func (t *Table) IntKey() bool {
	_, ok := t.intKeyField()
	return ok
}

func (t *Table) intKeyField() (arrow.Field, bool) {
	keys := t.schema.TrimmedPrimaryKeys()
	if len(keys) != 1 {
		return arrow.Field{}, false
	}
	f := t.schema.ArrowSchema().Field(t.schema.FieldIndex(keys[0]))
	switch f.Type.ID() {
	case arrow.INT64, arrow.INT32, arrow.DATE32, arrow.DATE64, arrow.TIMESTAMP:
		return f, true
	}
	return arrow.Field{}, false
}

// keyValues returns the values of an integer-like key column (IntKey) as
// int64s, in the order Paimon sorts them.
func keyValues(a arrow.Array) ([]int64, error) {
	keys, err := arrowutil.Int64Values(a)
	if err != nil {
		return nil, fmt.Errorf("the key column has %w", err)
	}
	return keys, nil
}

// mayHoldKeys reports whether row group rg of the reader's file may hold
// one of the keys of set: false when the key column's statistics put the
// row group's keys between two of them, so that it needs neither the key
// index nor a filter (log keys clustered on recent rows leave old files
// untouched, which then cost a read of t, and not even one decode of their
// keys).
func (fr *fileReader) mayHoldKeys(rg int, set []int64) bool {
	if fr.keyLeaf == 0 {
		fr.keyLeaf = -1
		if field, ok := fr.r.t.intKeyField(); ok {
			fr.r.planMu.Lock()
			plan, err := fr.r.filePlan(fr.f, []arrow.Field{field})
			fr.r.planMu.Unlock()
			if err == nil && plan[0].read != nil { // a widened key (INT to BIGINT) keeps its range
				if leaves := fr.pf.fieldLeaves(plan[0].read.Name); len(leaves) == 1 {
					fr.keyLeaf = leaves[0] + 1
				}
			}
		}
	}
	if fr.keyLeaf < 0 {
		return true
	}
	cc, err := fr.pf.pr.MetaData().RowGroup(rg).ColumnChunk(fr.keyLeaf - 1)
	if err != nil {
		return true
	}
	if ok, err := cc.StatsSet(); err != nil || !ok {
		return true
	}
	st, err := cc.Statistics()
	if err != nil || st == nil || !st.HasMinMax() {
		return true
	}
	var lo, hi int64
	switch s := st.(type) {
	case *metadata.Int64Statistics:
		lo, hi = s.Min(), s.Max()
	case *metadata.Int32Statistics:
		lo, hi = int64(s.Min()), int64(s.Max())
	default:
		return true
	}
	i, _ := slices.BinarySearch(set, lo)
	return i < len(set) && set[i] <= hi
}

// keys returns the key index of the reader's file, from the cache or
// decoded now (and cached).
func (fr *fileReader) keys() (*keyIndex, error) {
	if fr.keyIdx != nil {
		return fr.keyIdx, nil
	}
	if idx, ok := fileKeyIndexes.get(fr.path); ok {
		fr.keyIdx = idx
		return idx, nil
	}
	r, pf := fr.r, fr.pf
	field, ok := r.t.intKeyField()
	if !ok {
		return nil, fmt.Errorf("the primary key is not one integer column")
	}
	want := []arrow.Field{field}
	r.planMu.Lock()
	plan, err := r.filePlan(fr.f, want)
	r.planMu.Unlock()
	if err != nil {
		return nil, err
	}
	idx := &keyIndex{keys: make([]int64, 0, pf.pr.NumRows()), sorted: true}
	for rg := 0; rg < pf.pr.NumRowGroups(); rg++ {
		rec, err := readPlanned(r.ctx, pf, rg, plan, want, r.mem)
		if err != nil {
			return nil, err
		}
		ks, err := keyValues(rec.Column(0))
		if err == nil {
			idx.keys = append(idx.keys, ks...)
		}
		rec.Release()
		if err != nil {
			return nil, err
		}
	}
	for i := 1; i < len(idx.keys) && idx.sorted; i++ {
		idx.sorted = idx.keys[i-1] < idx.keys[i]
	}
	fileKeyIndexes.put(fr.path, keyIndexCost(cap(idx.keys)), idx)
	fr.keyIdx = idx
	return idx, nil
}

// dropped appends to out the positions, relative to start, of the rows in
// [start, end) whose key is in set (sorted, distinct), in ascending order.
func (k *keyIndex) dropped(start, end int64, set []int64, out []int64) []int64 {
	keys := k.keys[start:end]
	if len(keys) == 0 || len(set) == 0 {
		return out
	}
	if !k.sorted {
		for i, key := range keys {
			if _, ok := slices.BinarySearch(set, key); ok {
				out = append(out, int64(i))
			}
		}
		return out
	}
	lo, _ := slices.BinarySearch(set, keys[0])
	hi, found := slices.BinarySearch(set, keys[len(keys)-1])
	if found {
		hi++
	}
	set = set[lo:hi]
	k.mu.Lock()
	last := k.found[[2]int64{start, end}]
	k.mu.Unlock()
	if last != nil && slices.Equal(last.set, set) {
		return append(out, last.pos...)
	}
	n := len(out)
	from := 0
	for _, key := range set {
		from += gallop(keys[from:], key)
		if from < len(keys) && keys[from] == key {
			out = append(out, int64(from))
		}
	}
	if len(set) > 0 && 4*len(set) <= len(keys) {
		f := &foundKeys{set: slices.Clone(set), pos: slices.Clone(out[n:])}
		k.mu.Lock()
		if k.found == nil {
			k.found = map[[2]int64]*foundKeys{}
		}
		k.found[[2]int64{start, end}] = f
		k.mu.Unlock()
	}
	return out
}

// gallop returns the position of the first of the sorted keys that is at
// least key (len(keys) if none), probing 1, 2, 4, ... rows ahead before a
// binary search: the log's keys are dense in a file's key range (1% of
// the keys is one every hundred rows), so each search stays within a few
// cache lines of the last one, where a binary search over the whole row
// group took a cache miss per step (a sixth of a t$rt aggregate's CPU).
func gallop(keys []int64, key int64) int {
	bound := 1
	for bound < len(keys) && keys[bound] < key {
		bound *= 2
	}
	lo, hi := bound/2, min(bound+1, len(keys))
	i, _ := slices.BinarySearch(keys[lo:hi], key)
	return lo + i
}
