package lake

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/fileio"
	"github.com/flightd/flightd/lake/fileio/fileiotest"
	"github.com/flightd/flightd/lake/paimontype"
)

// The power-cut tests run the lake over a fileiotest.StrictMem (fileio.Local's own code, with
// the operating system replaced): they cut the power at every counted file system operation of a
// run in turn, and check what survives against a model.

// tableModel is what a table holds after a step: its latest snapshot, the content of every
// snapshot by id, and the oldest snapshot that must still exist.
type tableModel struct {
	created  bool
	latest   int64
	earliest int64 // snapshots below may have been expired
	content  map[int64][]string
}

type lakeModel map[string]*tableModel

func (m lakeModel) clone() lakeModel {
	out := lakeModel{}
	for k, v := range m {
		c := *v
		c.content = maps.Clone(v.content)
		out[k] = &c
	}
	return out
}

// powerCutEnv is one run of the scenario over a file system.
type powerCutEnv struct {
	ctx    context.Context
	cat    *Catalog
	tables map[string]*Table
	model  lakeModel
	pk     map[string]string // the primary-key table's rows by key
	app    map[string]string // the append table's rows (unique ids)
	seq    int64             // sequence numbers of primary-key rows
}

func sortedValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// commitRows writes rows (id, name or nil for a delete, dt) and commits them.
func (e *powerCutEnv) commitRows(name string, rows []row, kinds []RowKind) (*Snapshot, error) {
	tb := e.tables[name]
	w := tb.NewWrite(e.ctx)
	defer w.Abort()
	rec, err := buildRowsErr(tb, rows)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	buckets, err := tb.Buckets(rec)
	if err != nil {
		return nil, err
	}
	byBucket := map[int32][]int64{}
	for i, b := range buckets {
		byBucket[b] = append(byBucket[b], int64(i))
	}
	for b, idx := range byBucket {
		sub, err := takeRecord(e.ctx, rec, idx, memory.DefaultAllocator)
		if err != nil {
			return nil, err
		}
		var ks []RowKind
		var seqs []int64
		if kinds != nil {
			for _, i := range idx {
				ks = append(ks, kinds[i])
				e.seq++
				seqs = append(seqs, e.seq)
			}
		}
		err = w.Write(e.ctx, b, sub, ks, seqs)
		sub.Release()
		if err != nil {
			return nil, err
		}
	}
	latest := e.model[name].latest
	return w.Commit(e.ctx, CommitOptions{CommitUser: "cut", Identifier: latest + 1, ExpectedLatest: latest})
}

// powerCutSteps is the scenario: a database, an append and a primary-key table (both
// partitioned, new partitions in later rounds), two rounds of commits, compaction of both,
// expiration, and one more round after it. The tables' data files are uncompressed: a cut
// tests which file system operations happen in which order, which the codec does not change
// (the same operations are counted), while setting up a zstd encoder per file of a few rows
// was half of the test's CPU under -race.
func powerCutSteps() []func(e *powerCutEnv) error {
	var steps []func(e *powerCutEnv) error
	steps = append(steps, func(e *powerCutEnv) error { return e.cat.CreateDatabase(context.Background(), "db", false) })
	create := func(name string, s paimontype.Schema) func(e *powerCutEnv) error {
		return func(e *powerCutEnv) error {
			tb, err := e.cat.CreateTable(context.Background(), "db", name, s, false)
			if err != nil {
				return err
			}
			e.tables[name] = tb
			e.model[name] = &tableModel{created: true, earliest: 1, content: map[int64][]string{0: nil}}
			return nil
		}
	}
	steps = append(steps,
		create("ap", paimontype.Schema{Columns: testCols, PartitionKeys: []string{"dt"}, Options: map[string]string{"file.compression": "none"}}),
		create("pk", paimontype.Schema{Columns: testCols, PrimaryKeys: []string{"id", "dt"}, PartitionKeys: []string{"dt"}, Options: map[string]string{"bucket": "2", "file.compression": "none"}}))
	nextID := int64(0)
	round := func(r int) []func(e *powerCutEnv) error {
		appendStep := func(e *powerCutEnv) error {
			var rows []row
			for i := 0; i < 3; i++ {
				nextID++
				dt := "p0" // compacted, and written again after expiration
				if i == 2 {
					dt = fmt.Sprintf("p%d", r+1) // a new partition in every round
				}
				rows = append(rows, row{nextID, sp(fmt.Sprintf("a%d", r)), dt})
			}
			s, err := e.commitRows("ap", rows, nil)
			if err != nil {
				return err
			}
			for _, x := range rows {
				e.app[strconv.FormatInt(x.id, 10)] = fmt.Sprintf("%d,%s,%s", x.id, *x.name, x.dt)
			}
			e.record("ap", s, sortedValues(e.app))
			return nil
		}
		pkStep := func(e *powerCutEnv) error {
			var rows []row
			var kinds []RowKind
			for i := 0; i < 4; i++ {
				id := int64((r*3 + i) % 5)
				dt := fmt.Sprintf("q%d", (r+i)%3)
				if (r+i)%4 == 3 {
					rows = append(rows, row{id, nil, dt})
					kinds = append(kinds, Delete)
				} else {
					rows = append(rows, row{id, sp(fmt.Sprintf("v%d-%d", r, i)), dt})
					kinds = append(kinds, Insert)
				}
			}
			s, err := e.commitRows("pk", rows, kinds)
			if err != nil {
				return err
			}
			for i, x := range rows {
				k := fmt.Sprintf("%d,%s", x.id, x.dt)
				if kinds[i] == Delete {
					delete(e.pk, k)
				} else {
					e.pk[k] = fmt.Sprintf("%d,%s,%s", x.id, *x.name, x.dt)
				}
			}
			e.record("pk", s, sortedValues(e.pk))
			return nil
		}
		return []func(e *powerCutEnv) error{appendStep, pkStep}
	}
	for r := 0; r < 2; r++ {
		steps = append(steps, round(r)...)
	}
	compact := func(name string) func(e *powerCutEnv) error {
		return func(e *powerCutEnv) error {
			tb := e.tables[name]
			opts := CompactOptions{CommitUser: "cut", ExpectedLatest: e.model[name].latest, MinFiles: 2}
			var s *Snapshot
			var err error
			if name == "pk" {
				s, err = tb.Compact(e.ctx, opts)
			} else {
				s, err = tb.CompactAppend(e.ctx, opts)
			}
			if err != nil {
				return err
			}
			if s == nil {
				return fmt.Errorf("%s: nothing compacted", name)
			}
			e.record(name, s, e.model[name].content[e.model[name].latest])
			return nil
		}
	}
	expire := func(name string) func(e *powerCutEnv) error {
		return func(e *powerCutEnv) error {
			n, err := e.tables[name].ExpireSnapshots(e.ctx, ExpireOptions{RetainMin: 1, RetainMax: 1, Now: time.Now().Add(48 * time.Hour)})
			if err != nil {
				return err
			}
			if n == 0 {
				return fmt.Errorf("%s: nothing expired", name)
			}
			e.model[name].earliest = e.model[name].latest
			return nil
		}
	}
	steps = append(steps, compact("ap"), compact("pk"), expire("ap"), expire("pk"))
	for r := 2; r < 3; r++ {
		steps = append(steps, round(r)...)
	}
	return steps
}

func (e *powerCutEnv) record(name string, s *Snapshot, content []string) {
	tm := e.model[name]
	if s.ID != tm.latest+1 {
		panic(fmt.Sprintf("%s: snapshot %d after %d", name, s.ID, tm.latest))
	}
	tm.latest = s.ID
	tm.content[s.ID] = content
}

// runPowerCut runs the scenario until a step fails, returning how many steps returned
// successfully and the model after every step (models[0] is before the first).
func runPowerCut(fsys *fileiotest.StrictMem) (acked int, models []lakeModel, err error) {
	ctx := context.Background()
	e := &powerCutEnv{ctx: ctx, tables: map[string]*Table{}, model: lakeModel{}, pk: map[string]string{}, app: map[string]string{}}
	models = append(models, e.model.clone())
	e.cat, err = OpenCatalogFileIO(ctx, "/wh", fileio.Local{FS: fsys})
	if err != nil {
		return 0, models, err
	}
	for i, step := range powerCutSteps() {
		if err := step(e); err != nil {
			return i, models, fmt.Errorf("step %d: %w", i, err)
		}
		models = append(models, e.model.clone())
	}
	return len(models) - 1, models, nil
}

// checkAfterPowerCut reopens the warehouse that survived and checks it against the models of
// the acknowledged step and the step in progress.
func checkAfterPowerCut(t *testing.T, fsys *fileiotest.StrictMem, done, inProgress lakeModel) {
	ctx := context.Background()
	c, err := OpenCatalogFileIO(ctx, "/wh", fileio.Local{FS: fsys})
	require.NoError(t, err)
	if len(done) > 0 {
		ok, err := c.DatabaseExists(ctx, "db")
		require.NoError(t, err)
		require.True(t, ok, "acknowledged database lost")
	}
	for _, name := range []string{"ap", "pk"} {
		d, p := done[name], inProgress[name]
		if p == nil {
			continue // not even being created
		}
		tb, err := c.GetTable(ctx, "db", name)
		if d == nil {
			if err != nil {
				continue // creation in progress, not acknowledged
			}
			d = &tableModel{created: true, earliest: 1, content: map[int64][]string{0: nil}}
		} else {
			require.NoError(t, err, "acknowledged table %s lost", name)
		}
		latest, err := tb.latestSnapshotID(ctx)
		require.NoError(t, err, name)
		require.Contains(t, []int64{d.latest, p.latest}, latest, "%s: latest snapshot", name)
		// Every snapshot still there reads exactly what was committed: none names a missing or
		// short file.
		ents, err := c.FileIO().List(ctx, tb.snapshotDir())
		require.NoError(t, err)
		present := map[int64]bool{}
		for _, en := range ents {
			if id, err := strconv.ParseInt(strings.TrimPrefix(en.Name, "snapshot-"), 10, 64); err == nil && strings.HasPrefix(en.Name, "snapshot-") {
				present[id] = true
				snap, err := tb.Snapshot(ctx, id)
				require.NoError(t, err, "%s: snapshot %d", name, id)
				got, err := scanStrings(ctx, tb, snap)
				require.NoError(t, err, "%s: snapshot %d", name, id)
				require.Equal(t, p.content[id], got, "%s: snapshot %d", name, id)
			}
		}
		for id := max(p.earliest, d.earliest); id <= d.latest; id++ {
			require.True(t, present[id], "%s: acknowledged snapshot %d lost", name, id)
		}
		// A further commit succeeds on top of what survived.
		w := tb.NewWrite(ctx)
		rec, err := buildRowsErr(tb, []row{{1000, sp("after"), "z"}})
		require.NoError(t, err)
		buckets, err := tb.Buckets(rec)
		require.NoError(t, err)
		var kinds []RowKind
		var seqs []int64
		if tb.Schema().HasPrimaryKey() {
			kinds, seqs = []RowKind{Insert}, []int64{1 << 40}
		}
		require.NoError(t, w.Write(ctx, buckets[0], rec, kinds, seqs))
		rec.Release()
		s, err := w.Commit(ctx, CommitOptions{CommitUser: "after", Identifier: latest + 1, ExpectedLatest: latest})
		require.NoError(t, err, name)
		got, err := scanStrings(ctx, tb, s)
		require.NoError(t, err)
		want := append([]string{"1000,after,z"}, p.content[latest]...)
		sort.Strings(want)
		require.Equal(t, want, got, name)
	}
}

// TestPowerCutNeverLeavesSnapshotPointingAtMissingFile cuts the power at every counted file
// system operation of the scenario in turn: what survives holds every acknowledged commit, no
// snapshot names a missing or short file, and the table takes a further commit.
func TestPowerCutNeverLeavesSnapshotPointingAtMissingFile(t *testing.T) {
	t.Parallel()
	clean := fileiotest.NewStrictMem()
	acked, models, err := runPowerCut(clean)
	require.NoError(t, err)
	n := clean.Ops()
	t.Logf("%d steps, %d operations", acked, n)
	// Without a cut, what was synced is everything.
	checkAfterPowerCut(t, clean.Crash(), models[acked], models[acked])

	stride := 1 // every operation
	if testing.Short() {
		stride = 7
	}
	// Each cut is a run of its own over its own file system: they run side
	// by side (up to -parallel at a time).
	var cuts atomic.Int64
	t.Run("cuts", func(t *testing.T) {
		for i := 0; i < n; i += stride {
			t.Run(fmt.Sprintf("cut%03d", i), func(t *testing.T) {
				t.Parallel()
				fsys := fileiotest.NewStrictMem()
				fsys.CutAt(i)
				k, _, err := runPowerCut(fsys)
				if err == nil {
					return // the cut fell on an operation whose failure was ignored at the end
				}
				require.ErrorIs(t, err, fileiotest.ErrPowerCut, "cut at %d", i)
				cuts.Add(1)
				defer func() {
					if t.Failed() {
						t.Errorf("power cut at operation %d (during step %d) lost or corrupted committed data", i, k)
					}
				}()
				checkAfterPowerCut(t, fsys.Crash(), models[k], models[k+1])
			})
		}
	})
	t.Logf("%d power cuts checked", cuts.Load())
}

// buildRowsErr builds rows (id, name, dt) in tb's columns; a column it does
// not know is an error.
func buildRowsErr(tb *Table, rows []row) (arrow.RecordBatch, error) {
	sc := tb.Schema().ArrowSchema()
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, r := range rows {
		for i, f := range sc.Fields() {
			switch f.Name {
			case "id":
				b.Field(i).(*array.Int64Builder).Append(r.id)
			case "name":
				if r.name == nil {
					b.Field(i).AppendNull()
				} else {
					b.Field(i).(*array.StringBuilder).Append(*r.name)
				}
			case "dt":
				b.Field(i).(*array.StringBuilder).Append(r.dt)
			default:
				return nil, fmt.Errorf("unexpected column %s", f.Name)
			}
		}
	}
	return b.NewRecordBatch(), nil
}

// scanStrings reads a snapshot as sorted "id,name,dt" strings.
func scanStrings(ctx context.Context, tb *Table, snap *Snapshot) ([]string, error) {
	rr, err := tb.Scan(ctx, snap, ScanOptions{})
	if err != nil {
		return nil, err
	}
	defer rr.Release()
	var out []string
	for rr.Next() {
		rec := rr.RecordBatch()
		for r := 0; r < int(rec.NumRows()); r++ {
			var parts []string
			for c := 0; c < int(rec.NumCols()); c++ {
				if col := rec.Column(c); col.IsNull(r) {
					parts = append(parts, "null")
				} else {
					parts = append(parts, col.ValueStr(r))
				}
			}
			out = append(out, strings.Join(parts, ","))
		}
	}
	if err := rr.Err(); err != nil {
		return nil, err
	}
	sort.Strings(out)
	return out, nil
}

// failSnapshotSync fails the sync of a snapshot directory, as a failing fsync would.
type failSnapshotSync struct{ fileio.FileIO }

func (f failSnapshotSync) SyncDir(ctx context.Context, dir string) error {
	if strings.HasSuffix(dir, "/snapshot") {
		return fmt.Errorf("sync %s: input/output error", dir)
	}
	return f.FileIO.SyncDir(ctx, dir)
}

// TestCommitWhoseSnapshotSyncFailsKeepsItsFiles: when the snapshot is linked but its
// directory cannot be synced, the commit fails (it is not known to be durable), yet the
// snapshot is visible to readers, so the files it names must not be removed.
func TestCommitWhoseSnapshotSyncFailsKeepsItsFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c, err := OpenCatalogFileIO(ctx, dir, failSnapshotSync{fileio.Local{}})
	require.NoError(t, err)
	require.NoError(t, c.CreateDatabase(ctx, "db", false))
	tb, err := c.CreateTable(ctx, "db", "t", paimontype.Schema{Columns: testCols}, false)
	require.NoError(t, err)
	w := tb.NewWrite(ctx)
	for i, name := range []string{"a", "b"} { // a flushed file and a file of the commit
		rec, err := buildRowsErr(tb, []row{{int64(i + 1), sp(name), "x"}})
		require.NoError(t, err)
		require.NoError(t, w.Write(ctx, 0, rec, nil, nil))
		rec.Release()
		if i == 0 {
			require.NoError(t, w.Flush(ctx, 1))
		}
	}
	_, err = w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: 1})
	require.ErrorContains(t, err, "snapshot 1 created but not synced")
	w.Abort()

	c2, err := OpenCatalog(dir)
	require.NoError(t, err)
	tb2, err := c2.GetTable(ctx, "db", "t")
	require.NoError(t, err)
	snap, err := tb2.LatestSnapshot(ctx)
	require.NoError(t, err)
	require.NotNil(t, snap)
	got, err := scanStrings(ctx, tb2, snap)
	require.NoError(t, err)
	require.Equal(t, []string{"1,a,x", "2,b,x"}, got)
}
