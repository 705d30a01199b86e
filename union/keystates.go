package union

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/internal/arrowutil"
)

// KeyStates keeps, per key, the state a run of changelog ranges left it in
// (FinalState of each, the later replacing the earlier): a row with its
// image, or the row that removed it. A stream's round hands the states of
// its new rows' keys to the next Changelog (For, then AddState), so that a
// round costs O(its new rows) instead of replaying every row since the
// lake snapshot it starts from.
//
// The states live in the FinalState batches, indexed by key; a key's older
// rows become garbage, and the batches are compacted into one once they
// hold more than twice the live rows. Memory: about a row and an index
// entry per key.
type KeyStates struct {
	mem    memory.Allocator
	schema *arrow.Schema
	idx    stateIndex
	parts  []LogBatch // FinalState batches; Kinds says present (+I) or removed
	rows   int64      // rows in parts, live or not
}

// keyStatesCompactRows is the fewest rows KeyStates compacts (a variable
// for tests).
var keyStatesCompactRows int64 = 4096

// statePos is a state's row: parts[part], row.
type statePos struct{ part, row int32 }

// stateIndex maps keys to their states' rows.
type stateIndex interface {
	// find adds the positions of the states of rec's keys to found.
	find(rec arrow.RecordBatch, found map[statePos]struct{}) error
	// set makes the rows of rec (parts[part]) their keys' states.
	set(rec arrow.RecordBatch, part int32) error
	live() int
	positions() []statePos
	reset()
}

type stateMap[K comparable] struct {
	keysOf func(arrow.RecordBatch) ([]K, error)
	m      map[K]statePos
}

func (s *stateMap[K]) find(rec arrow.RecordBatch, found map[statePos]struct{}) error {
	keys, err := s.keysOf(rec)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if p, ok := s.m[k]; ok {
			found[p] = struct{}{}
		}
	}
	return nil
}

func (s *stateMap[K]) set(rec arrow.RecordBatch, part int32) error {
	keys, err := s.keysOf(rec)
	if err != nil {
		return err
	}
	for i, k := range keys {
		s.m[k] = statePos{part, int32(i)}
	}
	return nil
}

func (s *stateMap[K]) live() int { return len(s.m) }

func (s *stateMap[K]) positions() []statePos {
	out := make([]statePos, 0, len(s.m))
	for _, p := range s.m {
		out = append(out, p)
	}
	return out
}

func (s *stateMap[K]) reset() { clear(s.m) }

// NewKeyStates returns an empty KeyStates for rows of schema, keyed by the
// columns pk.
func NewKeyStates(mem memory.Allocator, schema *arrow.Schema, pk []int) *KeyStates {
	s := &KeyStates{mem: mem, schema: schema}
	if key, ok := int64Key(schema, pk); ok {
		s.idx = &stateMap[int64]{keysOf: int64Keys(key), m: map[int64]statePos{}}
	} else {
		s.idx = &stateMap[string]{keysOf: func(rec arrow.RecordBatch) ([]string, error) { return rowKeys(rec, pk) }, m: map[string]statePos{}}
	}
	return s
}

// Keys is how many keys have a state.
func (s *KeyStates) Keys() int { return s.idx.live() }

// Bytes is what the states' batches hold, the replaced states not yet
// compacted away included.
func (s *KeyStates) Bytes() int64 {
	var n int64
	for _, p := range s.parts {
		n += arrowutil.RecordBytes(p.Rec) + int64(len(p.Kinds))
	}
	return n
}

// For returns the states of the keys the entries' rows hold, as a batch
// for Changelog.AddState (Rec nil when none has one; the caller releases
// Rec).
func (s *KeyStates) For(ctx context.Context, entries []ChangelogEntry) (LogBatch, error) {
	if s.idx.live() == 0 {
		return LogBatch{}, nil
	}
	found := map[statePos]struct{}{}
	for _, e := range entries {
		if err := s.idx.find(e.Rec, found); err != nil {
			return LogBatch{}, err
		}
	}
	pos := make([]statePos, 0, len(found))
	for p := range found {
		pos = append(pos, p)
	}
	return s.gather(ctx, pos)
}

// gather takes the rows at pos from the parts, in part order.
func (s *KeyStates) gather(ctx context.Context, pos []statePos) (LogBatch, error) {
	if len(pos) == 0 {
		return LogBatch{}, nil
	}
	slices.SortFunc(pos, func(a, b statePos) int {
		if c := cmp.Compare(a.part, b.part); c != 0 {
			return c
		}
		return cmp.Compare(a.row, b.row)
	})
	var recs []arrow.RecordBatch
	defer func() { releaseBatches(recs) }()
	kinds := make([]byte, 0, len(pos))
	for i := 0; i < len(pos); {
		j := i
		var rows []int64
		for ; j < len(pos) && pos[j].part == pos[i].part; j++ {
			rows = append(rows, int64(pos[j].row))
			kinds = append(kinds, s.parts[pos[j].part].Kinds[pos[j].row])
		}
		rec, err := takeRows(ctx, s.mem, s.parts[pos[i].part].Rec, rows)
		if err != nil {
			return LogBatch{}, err
		}
		recs = append(recs, rec)
		i = j
	}
	if len(recs) == 1 {
		recs[0].Retain()
		return LogBatch{Rec: recs[0], Kinds: kinds}, nil
	}
	rec, err := arrowutil.ConcatRecords(recs, s.mem)
	if err != nil {
		return LogBatch{}, fmt.Errorf("union: key states: %w", err)
	}
	out := array.NewRecordBatch(s.schema, rec.Columns(), rec.NumRows())
	rec.Release()
	return LogBatch{Rec: out, Kinds: kinds}, nil
}

// Update makes st's rows (a FinalState) their keys' states, replacing
// older ones. It takes over st.
func (s *KeyStates) Update(ctx context.Context, st LogBatch) error {
	if st.Rec == nil {
		return nil
	}
	if err := checkColumns(s.schema, st.Rec); err != nil {
		st.Rec.Release()
		return fmt.Errorf("union: key states: %w", err)
	}
	if len(st.Kinds) != int(st.Rec.NumRows()) {
		st.Rec.Release()
		return fmt.Errorf("union: key states: %d kinds for %d rows", len(st.Kinds), st.Rec.NumRows())
	}
	part := int32(len(s.parts))
	s.parts = append(s.parts, st)
	s.rows += st.Rec.NumRows()
	if err := s.idx.set(st.Rec, part); err != nil {
		return err
	}
	if live := int64(s.idx.live()); s.rows > 2*live && s.rows > keyStatesCompactRows {
		return s.compact(ctx)
	}
	return nil
}

// compact copies the live states into one batch.
func (s *KeyStates) compact(ctx context.Context) error {
	one, err := s.gather(ctx, s.idx.positions())
	if err != nil {
		return err
	}
	s.Release()
	if one.Rec == nil {
		return nil
	}
	s.idx.reset()
	s.parts = []LogBatch{one}
	s.rows = one.Rec.NumRows()
	return s.idx.set(one.Rec, 0)
}

// Release frees the states.
func (s *KeyStates) Release() {
	for _, p := range s.parts {
		p.Rec.Release()
	}
	s.parts, s.rows = nil, 0
	s.idx.reset()
}
