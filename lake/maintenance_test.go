package lake

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/lake/manifest"
	"github.com/flightd/flightd/lake/paimontype"
)

// ---- maintenance scenarios: run on local disk and on S3 (Versity) ----

var maintenanceScenarios = []lakeScenario{
	{"Compact", scenarioCompact},
	{"ManifestMerge", scenarioManifestMerge},
	{"ExpireSnapshots", scenarioExpire},
	{"RemoveOrphanFiles", scenarioOrphans},
}

func TestMaintenanceScenarios(t *testing.T) { runOnBackends(t, maintenanceScenarios) }

// tierModel drives tiering-like commits (upserts and deletes with increasing sequence numbers)
// and keeps the expected table content.
type tierModel struct {
	tb     *Table
	rng    *rand.Rand
	seq    int64
	round  int
	want   map[string]string // "id,dt" -> row string as scanAll prints it
	latest int64
}

func newTierModel(tb *Table, seed uint64) *tierModel {
	return &tierModel{tb: tb, rng: rand.New(rand.NewPCG(seed, 1)), want: map[string]string{}}
}

func (m *tierModel) expected() []string {
	var out []string
	for _, v := range m.want {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// commit writes n random changes over keys 0..keys-1 in partitions a and b.
func (m *tierModel) commit(t *testing.T, n, keys int) *Snapshot {
	ctx := context.Background()
	m.round++
	var rows []row
	var kinds []RowKind
	var seqs []int64
	for i := 0; i < n; i++ {
		id := int64(m.rng.IntN(keys))
		dt := []string{"a", "b"}[m.rng.IntN(2)]
		k := fmt.Sprintf("%d,%s", id, dt)
		m.seq++
		name := fmt.Sprintf("r%d-%d", m.round, i)
		if m.rng.IntN(4) == 0 {
			rows = append(rows, row{id, nil, dt})
			kinds = append(kinds, Delete)
			delete(m.want, k)
		} else {
			rows = append(rows, row{id, sp(name), dt})
			kinds = append(kinds, []RowKind{Insert, UpdateAfter}[m.rng.IntN(2)])
			m.want[k] = fmt.Sprintf("%d,%s,%s", id, name, dt)
		}
		seqs = append(seqs, m.seq)
	}
	w := m.tb.NewWrite(ctx)
	writeRows(t, w, m.tb, rows, kinds, seqs)
	s, err := w.Commit(ctx, CommitOptions{CommitUser: "tier", Identifier: m.latest + 1, ExpectedLatest: m.latest,
		Properties: map[string]string{"lakestream.log-offsets": fmt.Sprintf("off-%d", m.seq)}})
	require.NoError(t, err)
	m.latest = s.ID
	return s
}

func pkPartitionedTable(t *testing.T, c *Catalog, name string, opts map[string]string) *Table {
	o := map[string]string{"bucket": "2"}
	for k, v := range opts {
		o[k] = v
	}
	tb, err := c.CreateTable(t.Context(), "db", name, paimontype.Schema{Columns: testCols, PrimaryKeys: []string{"id", "dt"}, PartitionKeys: []string{"dt"}, Options: o}, false)
	require.NoError(t, err)
	return tb
}

func scenarioCompact(t *testing.T, b lakeBackend) {
	ctx := context.Background()
	c := openWithDB(t, b)
	tb := pkPartitionedTable(t, c, "pk", nil)

	// nothing to compact on an empty table
	s, err := tb.Compact(ctx, CompactOptions{CommitUser: "tier"})
	require.NoError(t, err)
	require.Nil(t, s)

	m := newTierModel(tb, 1)
	for i := 0; i < 7; i++ {
		m.commit(t, 40, 30)
	}
	prev, err := tb.LatestSnapshot(ctx)
	require.NoError(t, err)
	before := scanAll(t, tb, prev, nil)
	require.Equal(t, m.expected(), before)
	prevLive, _, err := tb.dataFiles(ctx, prev)
	require.NoError(t, err)

	// fencing
	_, err = tb.Compact(ctx, CompactOptions{CommitUser: "tier", ExpectedLatest: prev.ID - 1})
	require.ErrorIs(t, err, ErrCommitConflict)
	// below MinFiles: nothing
	s, err = tb.Compact(ctx, CompactOptions{CommitUser: "tier", ExpectedLatest: prev.ID, MinFiles: 8})
	require.NoError(t, err)
	require.Nil(t, s)

	cs, err := tb.Compact(ctx, CompactOptions{CommitUser: "tier", ExpectedLatest: prev.ID})
	require.NoError(t, err)
	require.NotNil(t, cs)
	require.Equal(t, prev.ID+1, cs.ID)
	require.Equal(t, CommitKindCompact, cs.CommitKind)
	require.Equal(t, prev.Properties, cs.Properties, "properties carried forward")
	require.Equal(t, prev.CommitIdentifier, cs.CommitIdentifier)
	require.Equal(t, before, scanAll(t, tb, cs, nil))

	live, _, err := tb.dataFiles(ctx, cs)
	require.NoError(t, err)
	perBucket := map[string]int{}
	var added int64
	for _, e := range live {
		perBucket[fmt.Sprintf("%x/%d", e.Partition, e.Bucket)]++
		require.Equal(t, int32(5), e.File.Level)
		require.Equal(t, int32(1), *e.File.FileSource)
		require.Equal(t, int64(0), *e.File.DeleteRowCount)
		added += e.File.RowCount
	}
	require.Len(t, perBucket, 4) // 2 partitions x 2 buckets
	for k, n := range perBucket {
		require.Equal(t, 1, n, k)
	}
	require.Equal(t, int64(len(before)), added, "no deleted rows survive")

	// the delta: DELETE of every input (same identity as its ADD) and ADD of the outputs
	metas, err := tb.readManifestList(ctx, cs.DeltaManifestList)
	require.NoError(t, err)
	require.Len(t, metas, 1)
	delta, err := tb.readManifest(ctx, metas[0].FileName)
	require.NoError(t, err)
	var deleted int64
	dels := map[fileIdentity]bool{}
	for i := range delta {
		if delta[i].Kind == manifest.FileKindDelete {
			dels[identityOf(&delta[i])] = true
			deleted += delta[i].File.RowCount
		}
	}
	require.Len(t, dels, len(prevLive))
	var maxSeqBefore, maxSeqAfter int64
	for i := range prevLive {
		require.True(t, dels[identityOf(&prevLive[i])])
		maxSeqBefore = max(maxSeqBefore, prevLive[i].File.MaxSequenceNumber)
	}
	for _, e := range live {
		maxSeqAfter = max(maxSeqAfter, e.File.MaxSequenceNumber)
	}
	require.Equal(t, maxSeqBefore, maxSeqAfter)
	require.Equal(t, added-deleted, cs.DeltaRecordCount)
	require.Equal(t, prev.TotalRecordCount+cs.DeltaRecordCount, cs.TotalRecordCount)
	require.Equal(t, added, cs.TotalRecordCount)

	// nothing left to compact
	s, err = tb.Compact(ctx, CompactOptions{CommitUser: "tier", ExpectedLatest: cs.ID})
	require.NoError(t, err)
	require.Nil(t, s)
	latest, err := tb.LatestSnapshot(ctx)
	require.NoError(t, err)
	require.Equal(t, cs.ID, latest.ID)

	// a later write wins over compacted rows, even with sequence numbers below theirs
	m.latest = cs.ID
	k := before[0]
	var id int64
	var dt string
	fmt.Sscanf(k, "%d,", &id)
	dt = k[len(k)-1:]
	w := tb.NewWrite(ctx)
	writeRows(t, w, tb, []row{{id, sp("after"), dt}}, []RowKind{UpdateAfter}, []int64{1})
	s2, err := w.Commit(ctx, CommitOptions{CommitUser: "tier", Identifier: cs.ID + 1, ExpectedLatest: cs.ID})
	require.NoError(t, err)
	m.latest = s2.ID
	m.want[fmt.Sprintf("%d,%s", id, dt)] = fmt.Sprintf("%d,after,%s", id, dt)
	require.Equal(t, m.expected(), scanAll(t, tb, s2, nil))
	// more rounds, then compact again (levels 0 and 5 merged)
	for i := 0; i < 5; i++ {
		m.commit(t, 30, 30)
	}
	latest, err = tb.LatestSnapshot(ctx)
	require.NoError(t, err)
	cs2, err := tb.Compact(ctx, CompactOptions{CommitUser: "other", ExpectedLatest: latest.ID, Properties: map[string]string{"x": "y"}})
	require.NoError(t, err)
	require.NotNil(t, cs2)
	require.Equal(t, map[string]string{"x": "y"}, cs2.Properties)
	require.Equal(t, int64(9223372036854775807), cs2.CommitIdentifier)
	require.Equal(t, m.expected(), scanAll(t, tb, cs2, nil))

	// a bucket whose keys are all deleted compacts to nothing
	tb2 := pkPartitionedTable(t, c, "gone", map[string]string{"bucket": "1"})
	var last int64
	for i := int64(0); i < 5; i++ {
		w := tb2.NewWrite(ctx)
		kind := Insert
		if i == 4 {
			kind = Delete
		}
		writeRows(t, w, tb2, []row{{1, sp("v"), "a"}}, []RowKind{kind}, []int64{i + 1})
		s, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: i + 1, ExpectedLatest: last})
		require.NoError(t, err)
		last = s.ID
	}
	gs, err := tb2.Compact(ctx, CompactOptions{CommitUser: "u", ExpectedLatest: last})
	require.NoError(t, err)
	require.NotNil(t, gs)
	require.Empty(t, scanAll(t, tb2, gs, nil))
	live, _, err = tb2.dataFiles(ctx, gs)
	require.NoError(t, err)
	require.Empty(t, live)
	require.Equal(t, int64(0), gs.TotalRecordCount)

	// append tables: not compacted
	ap, err := c.CreateTable(ctx, "db", "ap", paimontype.Schema{Columns: testCols}, false)
	require.NoError(t, err)
	for i := int64(0); i < 6; i++ {
		w := ap.NewWrite(ctx)
		writeRows(t, w, ap, []row{{i, sp("v"), "a"}}, nil, nil)
		_, err := w.Commit(ctx, CommitOptions{CommitUser: "u", Identifier: i + 1, ExpectedLatest: i})
		require.NoError(t, err)
	}
	s, err = ap.Compact(ctx, CompactOptions{CommitUser: "u", ExpectedLatest: 6})
	require.NoError(t, err)
	require.Nil(t, s)
}

// manifestStats returns the number of manifests in a snapshot's base list and the ADD/DELETE
// entries of all its manifests.
func manifestStats(t *testing.T, tb *Table, s *Snapshot) (base, adds, dels int) {
	ctx := context.Background()
	bm, err := tb.readManifestList(ctx, s.BaseManifestList)
	require.NoError(t, err)
	dm, err := tb.readManifestList(ctx, s.DeltaManifestList)
	require.NoError(t, err)
	for _, mf := range append(bm, dm...) {
		es, err := tb.readManifest(ctx, mf.FileName)
		require.NoError(t, err)
		for _, e := range es {
			if e.Kind == manifest.FileKindAdd {
				adds++
			} else {
				dels++
			}
		}
		require.Equal(t, int(mf.NumAddedFiles+mf.NumDeletedFiles), len(es))
	}
	return len(bm), adds, dels
}

func scenarioManifestMerge(t *testing.T, b lakeBackend) {
	ctx := context.Background()
	c := openWithDB(t, b)
	tb := pkPartitionedTable(t, c, "pk", nil)
	m := newTierModel(tb, 2)
	wants := map[int64][]string{}
	var maxBase int
	for i := 0; i < 50; i++ {
		s := m.commit(t, 10, 50)
		if s.ID%10 == 0 {
			wants[s.ID] = m.expected()
		}
		bm, err := tb.readManifestList(ctx, s.BaseManifestList)
		require.NoError(t, err)
		maxBase = max(maxBase, len(bm))
	}
	latest, err := tb.LatestSnapshot(ctx)
	require.NoError(t, err)
	base, _, _ := manifestStats(t, tb, latest)
	require.LessOrEqual(t, maxBase, defaultManifestMergeMinCount, "base list stays below merge-min-count")
	require.Less(t, base, 50)
	for id, want := range wants {
		s, err := tb.Snapshot(ctx, id)
		require.NoError(t, err)
		require.Equal(t, want, scanAll(t, tb, s, nil), "snapshot %d", id)
	}

	// ADD/DELETE pairs cancel when merged: after compaction and a few more commits with a small
	// merge-min-count, the manifests hold only the live files.
	tb2 := pkPartitionedTable(t, c, "small", map[string]string{"manifest.merge-min-count": "3"})
	m2 := newTierModel(tb2, 3)
	for i := 0; i < 6; i++ {
		m2.commit(t, 20, 30)
	}
	cs, err := tb2.Compact(ctx, CompactOptions{CommitUser: "tier", ExpectedLatest: m2.latest})
	require.NoError(t, err)
	m2.latest = cs.ID
	var s *Snapshot
	for i := 0; i < 3; i++ {
		s = m2.commit(t, 5, 30)
	}
	live, _, err := tb2.dataFiles(ctx, s)
	require.NoError(t, err)
	base, adds, dels := manifestStats(t, tb2, s)
	require.LessOrEqual(t, base, 3)
	require.Equal(t, 0, dels)
	require.Equal(t, len(live), adds)
	require.Equal(t, m2.expected(), scanAll(t, tb2, s, nil))

	// full compaction: every manifest is above the target size, so minor merging never applies;
	// once the manifests after the leading DELETE-free ones reach the threshold, everything is
	// rewritten to live ADDs only.
	tb3 := pkPartitionedTable(t, c, "full", map[string]string{"manifest.target-file-size": "1 b",
		"manifest.full-compaction-threshold-size": "20kb"})
	m3 := newTierModel(tb3, 4)
	for i := 0; i < 6; i++ {
		m3.commit(t, 20, 30)
	}
	cs, err = tb3.Compact(ctx, CompactOptions{CommitUser: "tier", ExpectedLatest: m3.latest})
	require.NoError(t, err)
	m3.latest = cs.ID
	sawFull := false
	for i := 0; i < 12; i++ {
		s = m3.commit(t, 5, 30)
		metas, err := tb3.readManifestList(ctx, s.BaseManifestList)
		require.NoError(t, err)
		var dels int64
		for _, mf := range metas {
			dels += mf.NumDeletedFiles
		}
		if dels == 0 {
			sawFull = true
		}
	}
	require.Equal(t, m3.expected(), scanAll(t, tb3, s, nil))
	require.True(t, sawFull, "full compaction dropped the DELETE entries")
	live, _, err = tb3.dataFiles(ctx, s)
	require.NoError(t, err)
	_, adds, dels = manifestStats(t, tb3, s)
	require.Equal(t, 0, dels)
	require.Equal(t, len(live), adds)
}

// buildHistory makes n tiering-like commits with a compaction after every 6th and returns the
// expected rows per snapshot id.
func buildHistory(t *testing.T, m *tierModel, n int) map[int64][]string {
	ctx := context.Background()
	wants := map[int64][]string{}
	for i := 1; i <= n; i++ {
		s := m.commit(t, 15, 25)
		wants[s.ID] = m.expected()
		if i%6 == 0 {
			cs, err := m.tb.Compact(ctx, CompactOptions{CommitUser: "tier", ExpectedLatest: s.ID})
			require.NoError(t, err)
			require.NotNil(t, cs)
			m.latest = cs.ID
			wants[cs.ID] = m.expected()
		}
	}
	return wants
}

func checkSnapshots(t *testing.T, tb *Table, wants map[int64][]string, retainedFrom int64) {
	ctx := context.Background()
	for id, want := range wants {
		s, err := tb.Snapshot(ctx, id)
		if id < retainedFrom {
			require.ErrorIs(t, err, fs.ErrNotExist, "snapshot %d should be expired", id)
			continue
		}
		require.NoError(t, err, "snapshot %d", id)
		require.Equal(t, want, scanAll(t, tb, s, nil), "snapshot %d", id)
	}
}

// noOrphans checks that every file under the table is referenced (expiration left nothing behind).
func noOrphans(t *testing.T, tb *Table) {
	n, err := tb.RemoveOrphanFiles(context.Background(), time.Millisecond, time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.Equal(t, 0, n, "files left unreferenced")
}

func scenarioExpire(t *testing.T, b lakeBackend) {
	ctx := context.Background()
	c := openWithDB(t, b)
	tb := pkPartitionedTable(t, c, "pk", nil)
	n, err := tb.ExpireSnapshots(ctx, ExpireOptions{})
	require.NoError(t, err)
	require.Equal(t, 0, n)
	m := newTierModel(tb, 5)
	wants := buildHistory(t, m, 20) // 20 appends + 3 compactions = 23 snapshots
	require.Equal(t, int64(23), m.latest)

	// all young: nothing expires
	n, err = tb.ExpireSnapshots(ctx, ExpireOptions{RetainMin: 2})
	require.NoError(t, err)
	require.Equal(t, 0, n)
	_, err = tb.ExpireSnapshots(ctx, ExpireOptions{RetainMin: 5, RetainMax: 3})
	require.Error(t, err)

	later := time.Now().Add(2 * time.Hour)
	// a protected snapshot and everything newer survive
	n, err = tb.ExpireSnapshots(ctx, ExpireOptions{RetainMin: 3, Now: later, Protect: func(id int64) bool { return id == 8 || id == 15 }})
	require.NoError(t, err)
	require.Equal(t, 7, n)
	checkSnapshots(t, tb, wants, 8)
	noOrphans(t, tb)
	hint, err := tb.fio.Read(ctx, filepath.Join(tb.snapshotDir(), "EARLIEST"))
	require.NoError(t, err)
	require.Equal(t, "8", string(hint))

	// the time limit: snapshots committed after the cutoff stay
	var cutoffID int64 = 12
	s12, err := tb.Snapshot(ctx, cutoffID)
	require.NoError(t, err)
	n, err = tb.ExpireSnapshots(ctx, ExpireOptions{RetainMin: 1, OlderThan: time.Hour,
		Now: time.UnixMilli(s12.TimeMillis).Add(time.Hour), Protect: func(id int64) bool { return id == 15 }})
	require.NoError(t, err)
	// snapshots 8..(first snapshot with time >= s12.time)-1 expire; commits within one
	// millisecond share a time, so count what is left
	ids, err := tb.snapshotIDs(ctx)
	require.NoError(t, err)
	require.LessOrEqual(t, ids[0], cutoffID)
	require.Equal(t, int(ids[0]-8), n)
	checkSnapshots(t, tb, wants, ids[0])
	noOrphans(t, tb)

	// RetainMax wins over the time limit; RetainMin over nothing
	n, err = tb.ExpireSnapshots(ctx, ExpireOptions{RetainMin: 2, RetainMax: 4, OlderThan: 1000 * time.Hour})
	require.NoError(t, err)
	require.Equal(t, int(23-4+1-ids[0]), n)
	checkSnapshots(t, tb, wants, 20)
	noOrphans(t, tb)

	// writes and compaction continue on the expired table
	buildHistory(t, m, 6)
	require.Equal(t, m.expected(), scanAll(t, tb, mustLatest(t, tb), nil))
	n, err = tb.ExpireSnapshots(ctx, ExpireOptions{RetainMin: 1, Now: later})
	require.NoError(t, err)
	require.Greater(t, n, 0)
	ids, err = tb.snapshotIDs(ctx)
	require.NoError(t, err)
	require.Equal(t, []int64{m.latest}, ids)
	require.Equal(t, m.expected(), scanAll(t, tb, mustLatest(t, tb), nil))
	noOrphans(t, tb)
}

func mustLatest(t *testing.T, tb *Table) *Snapshot {
	s, err := tb.LatestSnapshot(context.Background())
	require.NoError(t, err)
	return s
}

func scenarioOrphans(t *testing.T, b lakeBackend) {
	ctx := context.Background()
	c := openWithDB(t, b)
	tb := pkPartitionedTable(t, c, "pk", nil)
	m := newTierModel(tb, 6)
	wants := buildHistory(t, m, 8)

	put := func(p string) {
		require.NoError(t, tb.fio.CreateExclusive(ctx, p, []byte("orphan")))
	}
	// files of a crashed commit and of a crashed atomic write
	live, _, err := tb.dataFiles(ctx, mustLatest(t, tb))
	require.NoError(t, err)
	cache := newManifestCache(tb)
	ps, err := cache.dataPaths(&live[0])
	require.NoError(t, err)
	orphans := []string{
		filepath.Join(filepath.Dir(ps[0]), "data-00000000-0000-0000-0000-000000000000-0.parquet"),
		tb.manifestPath("manifest-00000000-0000-0000-0000-000000000000-0"),
		tb.manifestPath("manifest-list-00000000-0000-0000-0000-000000000000-1"),
		filepath.Join(tb.path, "index", "index-00000000-0000-0000-0000-000000000000-0"),
		filepath.Join(tb.snapshotDir(), ".snapshot-99.1234.tmp"),
	}
	for _, p := range orphans {
		put(p)
	}
	// young files are never removed
	n, err := tb.RemoveOrphanFiles(ctx, time.Hour, time.Now())
	require.NoError(t, err)
	require.Equal(t, 0, n)
	n, err = tb.RemoveOrphanFiles(ctx, time.Millisecond, time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.Equal(t, len(orphans), n)
	for _, p := range orphans {
		ok, err := tb.fio.Exists(ctx, p)
		require.NoError(t, err)
		require.False(t, ok, p)
	}
	checkSnapshots(t, tb, wants, 1)

	// a crash of ExpireSnapshots after deleting snapshot files leaves orphans that are found
	for id := int64(1); id <= 6; id++ {
		require.NoError(t, tb.fio.Remove(ctx, tb.snapshotPath(id)))
	}
	n, err = tb.RemoveOrphanFiles(ctx, time.Millisecond, time.Now().Add(time.Hour))
	require.NoError(t, err)
	require.Greater(t, n, 0)
	checkSnapshots(t, tb, wants, 7)
	noOrphans(t, tb)
	// and expiration still works after that
	_, err = tb.ExpireSnapshots(ctx, ExpireOptions{RetainMin: 1, Now: time.Now().Add(2 * time.Hour)})
	require.NoError(t, err)
	checkSnapshots(t, tb, wants, m.latest)
	noOrphans(t, tb)
}

func TestRawConvertible(t *testing.T) {
	zero, one := int64(0), int64(1)
	for _, tc := range []struct {
		name  string
		files []manifest.DataFileMeta
		want  bool
	}{
		{"one L0 file without retractions", []manifest.DataFileMeta{{Level: 0, DeleteRowCount: &zero}}, true},
		{"one file with a retraction", []manifest.DataFileMeta{{Level: 0, DeleteRowCount: &one}}, false},
		{"unknown delete count", []manifest.DataFileMeta{{Level: 5}}, false},
		{"two L0 files", []manifest.DataFileMeta{{Level: 0, DeleteRowCount: &zero}, {Level: 0, DeleteRowCount: &zero}}, false},
		{"one level", []manifest.DataFileMeta{{Level: 5, DeleteRowCount: &zero}, {Level: 5, DeleteRowCount: &zero}}, true},
		{"two levels", []manifest.DataFileMeta{{Level: 4, DeleteRowCount: &zero}, {Level: 5, DeleteRowCount: &zero}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, rawConvertible(tc.files))
		})
	}
}

func TestUnsupportedTablesAreRefused(t *testing.T) {
	for _, opts := range []map[string]string{
		{"bucket": "1", "merge-engine": "partial-update"},
		{"bucket": "1", "merge-engine": "first-row"},
	} {
		cat, err := OpenCatalog(t.TempDir())
		require.NoError(t, err)
		require.NoError(t, cat.CreateDatabase(t.Context(), "db", false))
		bigint, _ := paimontype.ParseType("BIGINT")
		tbl, err := cat.CreateTable(t.Context(), "db", "t", paimontype.Schema{Columns: []paimontype.Column{{Name: "id", Type: bigint}, {Name: "v", Type: bigint}}, PrimaryKeys: []string{"id"}, Options: opts}, false)
		require.NoError(t, err)
		_, err = tbl.Scan(context.Background(), nil, ScanOptions{})
		require.ErrorIs(t, err, ErrUnsupported, "%v", opts)
		require.ErrorContains(t, err, "db.t")
	}
}
