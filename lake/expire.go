package lake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/flightd/flightd/lake/manifest"
	"github.com/flightd/flightd/lake/paimontype"
)

// ExpireOptions controls ExpireSnapshots. Zero values take Paimon's defaults.
type ExpireOptions struct {
	RetainMin int           // snapshot.num-retained.min: always keep this many newest snapshots (default 10, at least 1)
	RetainMax int           // snapshot.num-retained.max: never keep more (default 100)
	OlderThan time.Duration // snapshot.time-retained: expire only snapshots committed before Now-OlderThan (default 1h)
	Now       time.Time     // default time.Now()
	// MaxDeletes bounds how many snapshots one call expires, from the
	// earliest (Paimon's snapshot.expire.limit, max_deletes); 0: no bound.
	MaxDeletes int
	// Protect reports snapshots that must stay readable (pinned by running reads, or needed by the
	// caller): such a snapshot and every newer one are never expired. nil protects nothing.
	Protect func(snapshotID int64) bool
}

// manifestCache reads each manifest once per maintenance call (manifests are immutable).
type manifestCache struct {
	t       *Table
	entries map[string][]manifest.Entry
	lists   map[string][]manifest.FileMeta
	paths   map[string]string // partition bytes + bucket -> bucket dir
}

func newManifestCache(t *Table) *manifestCache {
	return &manifestCache{t: t, entries: map[string][]manifest.Entry{}, lists: map[string][]manifest.FileMeta{}, paths: map[string]string{}}
}

func (c *manifestCache) manifest(ctx context.Context, name string) ([]manifest.Entry, error) {
	if es, ok := c.entries[name]; ok {
		return es, nil
	}
	es, err := c.t.readManifest(ctx, name)
	if err != nil {
		return nil, err
	}
	c.entries[name] = es
	return es, nil
}

func (c *manifestCache) list(ctx context.Context, name string) ([]manifest.FileMeta, error) {
	if ms, ok := c.lists[name]; ok {
		return ms, nil
	}
	ms, err := c.t.readManifestList(ctx, name)
	if err != nil {
		return nil, err
	}
	c.lists[name] = ms
	return ms, nil
}

// dataPaths returns the paths of a data file and its extra files (nil for external files, which
// maintenance never touches).
func (c *manifestCache) dataPaths(e *manifest.Entry) ([]string, error) {
	if e.File.ExternalPath != nil && *e.File.ExternalPath != "" {
		return nil, nil
	}
	k := string(e.Partition) + "/" + strconv.Itoa(int(e.Bucket))
	dir, ok := c.paths[k]
	if !ok {
		ts := c.t.schema
		types := make([]paimontype.DataType, len(ts.PartitionKeys))
		for i, pk := range ts.PartitionKeys {
			types[i] = ts.Fields[ts.FieldIndex(pk)].Type
		}
		_, row, err := manifest.DeserializeBinaryRow(e.Partition)
		if err != nil {
			return nil, err
		}
		vals, err := manifest.DecodeBinaryRow(types, row)
		if err != nil {
			return nil, err
		}
		dir = c.t.bucketDir(types, vals, e.Bucket)
		c.paths[k] = dir
	}
	out := []string{filepath.Join(dir, e.File.FileName)}
	for _, x := range e.File.ExtraFiles {
		out = append(out, filepath.Join(dir, x))
	}
	return out, nil
}

// fileSet is a set of table files: data files by path, manifest-directory files and index files by
// name.
type fileSet struct {
	data      map[string]bool
	dataNames map[string]bool // base names of data, so that a directory spelled differently never loses a live file
	manifests map[string]bool
	index     map[string]bool
}

func newFileSet() *fileSet {
	return &fileSet{data: map[string]bool{}, dataNames: map[string]bool{}, manifests: map[string]bool{}, index: map[string]bool{}}
}

// indexFiles returns the file names an index manifest mentions (ADD or DELETE).
func (t *Table) indexFiles(ctx context.Context, name string) ([]string, error) {
	p := t.manifestPath(name)
	data, err := t.fio.Read(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("lake: %s: read index manifest %s: %w", t.FullName(), p, err)
	}
	out, err := manifest.IndexFileNames(data)
	if err != nil {
		return nil, fmt.Errorf("lake: %s: decode index manifest %s: %w", t.FullName(), p, err)
	}
	return out, nil
}

// addLive adds everything snap needs to read: its manifest lists, manifests, index manifest and
// index files, and the data files live in it (mergeEntries of base + delta; changelog files too).
func (c *manifestCache) addLive(ctx context.Context, snap *Snapshot, live *fileSet) error {
	t := c.t
	var lists []string
	for _, l := range []string{snap.BaseManifestList, snap.DeltaManifestList} {
		if l != "" {
			lists = append(lists, l)
		}
	}
	var metas []manifest.FileMeta
	for _, l := range lists {
		live.manifests[l] = true
		ms, err := c.list(ctx, l)
		if err != nil {
			return err
		}
		metas = append(metas, ms...)
	}
	alive := map[fileIdentity]*manifest.Entry{}
	for _, mf := range metas {
		live.manifests[mf.FileName] = true
		es, err := c.manifest(ctx, mf.FileName)
		if err != nil {
			return err
		}
		for i := range es {
			id := identityOf(&es[i])
			if es[i].Kind == manifest.FileKindAdd {
				alive[id] = &es[i]
			} else {
				delete(alive, id)
			}
		}
	}
	markData := func(e *manifest.Entry) error {
		ps, err := c.dataPaths(e)
		if err != nil {
			return err
		}
		for _, p := range ps {
			live.data[p] = true
			live.dataNames[filepath.Base(p)] = true
		}
		return nil
	}
	for _, e := range alive {
		if err := markData(e); err != nil {
			return err
		}
	}
	if snap.ChangelogManifestList != nil && *snap.ChangelogManifestList != "" {
		live.manifests[*snap.ChangelogManifestList] = true
		ms, err := c.list(ctx, *snap.ChangelogManifestList)
		if err != nil {
			return err
		}
		for _, mf := range ms {
			live.manifests[mf.FileName] = true
			es, err := c.manifest(ctx, mf.FileName)
			if err != nil {
				return err
			}
			for i := range es {
				if err := markData(&es[i]); err != nil {
					return err
				}
			}
		}
	}
	if snap.IndexManifest != nil && *snap.IndexManifest != "" {
		live.manifests[*snap.IndexManifest] = true
		names, err := t.indexFiles(ctx, *snap.IndexManifest)
		if err != nil {
			return err
		}
		for _, n := range names {
			live.index[n] = true
		}
	}
	return nil
}

// addMentioned adds every file snap mentions (for expiration candidates): lists, manifests,
// index manifest and files, and every data file of any ADD or DELETE entry. Files that are
// already gone are skipped.
func (c *manifestCache) addMentioned(ctx context.Context, snap *Snapshot, out *fileSet) error {
	t := c.t
	lists := []string{snap.BaseManifestList, snap.DeltaManifestList}
	if snap.ChangelogManifestList != nil {
		lists = append(lists, *snap.ChangelogManifestList)
	}
	for _, l := range lists {
		if l == "" {
			continue
		}
		out.manifests[l] = true
		ms, err := c.list(ctx, l)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return err
		}
		for _, mf := range ms {
			out.manifests[mf.FileName] = true
			es, err := c.manifest(ctx, mf.FileName)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			} else if err != nil {
				return err
			}
			for i := range es {
				ps, err := c.dataPaths(&es[i])
				if err != nil {
					return err
				}
				for _, p := range ps {
					out.data[p] = true
				}
			}
		}
	}
	if snap.IndexManifest != nil && *snap.IndexManifest != "" {
		out.manifests[*snap.IndexManifest] = true
		names, err := t.indexFiles(ctx, *snap.IndexManifest)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		for _, n := range names {
			out.index[n] = true
		}
	}
	return nil
}

// snapshotIDs lists the ids of the snapshot files, ascending.
func (t *Table) snapshotIDs(ctx context.Context) ([]int64, error) {
	ents, err := t.fio.List(ctx, t.snapshotDir())
	if err != nil {
		return nil, fmt.Errorf("lake: %s: list snapshots: %w", t.FullName(), err)
	}
	var ids []int64
	for _, e := range ents {
		if e.IsDir || !strings.HasPrefix(e.Name, "snapshot-") {
			continue
		}
		if id, err := strconv.ParseInt(strings.TrimPrefix(e.Name, "snapshot-"), 10, 64); err == nil && id > 0 {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, nil
}

// tagSnapshots reads Java Paimon's tags (tag/tag-<name>, snapshot JSON): their files must stay.
func (t *Table) tagSnapshots(ctx context.Context) ([]*Snapshot, error) {
	dir := filepath.Join(t.path, "tag")
	ents, err := t.fio.List(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("lake: %s: list tags: %w", t.FullName(), err)
	}
	var out []*Snapshot
	for _, e := range ents {
		if e.IsDir || !strings.HasPrefix(e.Name, "tag-") {
			continue
		}
		p := filepath.Join(dir, e.Name)
		data, err := t.fio.Read(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("lake: %s: read tag %s: %w", t.FullName(), p, err)
		}
		var s Snapshot
		if err := json.Unmarshal(data, &s); err != nil {
			return nil, fmt.Errorf("lake: %s: parse tag %s: %w: %w", t.FullName(), p, manifest.ErrCorrupt, err)
		}
		out = append(out, &s)
	}
	return out, nil
}

// minConsumerSnapshot is the smallest nextSnapshot of Java Paimon's consumers
// (consumer/consumer-<id>), or 0 when there are none.
func (t *Table) minConsumerSnapshot(ctx context.Context) (int64, error) {
	dir := filepath.Join(t.path, "consumer")
	ents, err := t.fio.List(ctx, dir)
	if err != nil {
		return 0, fmt.Errorf("lake: %s: list consumers: %w", t.FullName(), err)
	}
	var minNext int64
	for _, e := range ents {
		if e.IsDir || !strings.HasPrefix(e.Name, "consumer-") {
			continue
		}
		data, err := t.fio.Read(ctx, filepath.Join(dir, e.Name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return 0, err
		}
		var c struct {
			NextSnapshot int64 `json:"nextSnapshot"`
		}
		if err := json.Unmarshal(data, &c); err != nil {
			return 0, fmt.Errorf("lake: %s: parse consumer %s: %w: %w", t.FullName(), e.Name, manifest.ErrCorrupt, err)
		}
		if minNext == 0 || c.NextSnapshot < minNext {
			minNext = c.NextSnapshot
		}
	}
	return minNext, nil
}

// hasBranches reports whether Java Paimon branches exist (branch/branch-<name>); their snapshots
// share the table's data files, which this package does not follow.
func (t *Table) hasBranches(ctx context.Context) (bool, error) {
	ents, err := t.fio.List(ctx, filepath.Join(t.path, "branch"))
	if err != nil {
		return false, err
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name, "branch-") {
			return true, nil
		}
	}
	return false, nil
}

// retainedLive computes the files that the given snapshots and all tags need.
func (t *Table) retainedLive(ctx context.Context, c *manifestCache, snaps []*Snapshot) (*fileSet, error) {
	live := newFileSet()
	tags, err := t.tagSnapshots(ctx)
	if err != nil {
		return nil, err
	}
	for _, s := range append(append([]*Snapshot{}, snaps...), tags...) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := c.addLive(ctx, s, live); err != nil {
			return nil, fmt.Errorf("lake: %s: snapshot %d: %w", t.FullName(), s.ID, err)
		}
	}
	return live, nil
}

// ExpireSnapshots deletes old snapshots as Java's ExpireSnapshotsImpl does and then the files that
// only they needed. Snapshots older than the newest RetainMax are expired; of the others, those
// committed before Now-OlderThan are expired too, but the newest RetainMin are always kept, and
// so are a snapshot for which Protect returns true, every newer one, and any snapshot at or after
// the smallest nextSnapshot of Java consumers. Expiration stops at the first snapshot that must
// stay (only a prefix of the history is removed).
//
// Order (crash safety): the files that the retained snapshots (and tags) need are computed first
// from their manifests; then the expired snapshot files are deleted, oldest first; then EARLIEST
// is written; then data files, manifests and manifest lists that were mentioned by an expired
// snapshot and are needed by no retained one. A crash or error part way leaves only unreferenced
// files (see RemoveOrphanFiles), never a retained snapshot with missing files. Data files are not
// deleted when the table has Java branches. It returns the number of snapshots deleted.
//
// A reader that holds an expired *Snapshot gets an error matching fs.ErrNotExist when it scans
// it; use Protect for snapshots in use.
func (t *Table) ExpireSnapshots(ctx context.Context, opts ExpireOptions) (expired int, err error) {
	if opts.RetainMin <= 0 {
		opts.RetainMin = 10
	}
	if opts.RetainMax <= 0 {
		opts.RetainMax = 100
	}
	if opts.RetainMax < opts.RetainMin {
		return 0, fmt.Errorf("lake: %s: RetainMax %d < RetainMin %d", t.FullName(), opts.RetainMax, opts.RetainMin)
	}
	if opts.OlderThan == 0 {
		opts.OlderThan = time.Hour
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	ids, err := t.snapshotIDs(ctx)
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	earliest, latest := ids[0], ids[len(ids)-1]
	lo := max(latest-int64(opts.RetainMax)+1, earliest)
	maxExclusive := latest - int64(opts.RetainMin) + 1
	if opts.Protect != nil {
		for _, id := range ids {
			if id >= maxExclusive {
				break
			}
			if opts.Protect(id) {
				maxExclusive = id
				break
			}
		}
	}
	if opts.MaxDeletes > 0 {
		maxExclusive = min(maxExclusive, earliest+int64(opts.MaxDeletes))
	}
	consumer, err := t.minConsumerSnapshot(ctx)
	if err != nil {
		return 0, err
	}
	if consumer > 0 {
		maxExclusive = min(maxExclusive, consumer)
	}
	cutoff := opts.Now.Add(-opts.OlderThan).UnixMilli()
	end := maxExclusive
	for _, id := range ids {
		if id < lo {
			continue
		}
		if id >= maxExclusive {
			break
		}
		s, err := t.Snapshot(ctx, id)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return 0, err
		}
		if s.TimeMillis >= cutoff {
			end = id
			break
		}
	}
	var expiredIDs []int64
	var retained []*Snapshot
	for _, id := range ids {
		if id < end {
			expiredIDs = append(expiredIDs, id)
			continue
		}
		s, err := t.Snapshot(ctx, id)
		if err != nil {
			return 0, err // never delete anything while a retained snapshot cannot be read
		}
		retained = append(retained, s)
	}
	if len(expiredIDs) == 0 {
		return 0, nil
	}

	c := newManifestCache(t)
	live, err := t.retainedLive(ctx, c, retained)
	if err != nil {
		return 0, err
	}
	cand := newFileSet()
	var snapFiles []string
	for _, id := range expiredIDs {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		s, err := t.Snapshot(ctx, id)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return 0, err
		}
		if err := c.addMentioned(ctx, s, cand); err != nil {
			return 0, fmt.Errorf("lake: %s: snapshot %d: %w", t.FullName(), id, err)
		}
		snapFiles = append(snapFiles, t.snapshotPath(id))
	}
	branches, err := t.hasBranches(ctx)
	if err != nil {
		return 0, err
	}

	// 1. snapshot files, oldest first
	for _, p := range snapFiles {
		if err := ctx.Err(); err != nil {
			return expired, err
		}
		if err := t.fio.Remove(ctx, p); err != nil {
			return expired, fmt.Errorf("lake: %s: delete %s: %w", t.FullName(), p, err)
		}
		expired++
	}
	// The deletions must be durable before any file they alone needed goes: else a power
	// cut could bring back a snapshot whose files are gone.
	if expired > 0 {
		if err := t.fio.SyncDir(ctx, t.snapshotDir()); err != nil {
			return expired, fmt.Errorf("lake: %s: %w", t.FullName(), err)
		}
	}
	// 2. the EARLIEST hint (validated by existence by readers)
	_ = t.fio.WriteAtomic(ctx, filepath.Join(t.snapshotDir(), "EARLIEST"), []byte(strconv.FormatInt(end, 10)))
	// 3. unreferenced files: data, index, then manifests and lists
	remove := func(p string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := t.fio.Remove(ctx, p); err != nil {
			return fmt.Errorf("lake: %s: delete %s: %w", t.FullName(), p, err)
		}
		return nil
	}
	if !branches {
		for _, p := range sortedSet(cand.data) {
			if !live.data[p] && !live.dataNames[filepath.Base(p)] {
				if err := remove(p); err != nil {
					return expired, err
				}
			}
		}
	}
	for _, n := range sortedSet(cand.index) {
		if !live.index[n] {
			if err := remove(filepath.Join(t.path, "index", n)); err != nil {
				return expired, err
			}
		}
	}
	var lists []string
	for _, n := range sortedSet(cand.manifests) {
		if live.manifests[n] {
			continue
		}
		if strings.HasPrefix(n, "manifest-list-") {
			lists = append(lists, n)
			continue
		}
		if err := remove(t.manifestPath(n)); err != nil {
			return expired, err
		}
	}
	for _, n := range lists {
		if err := remove(t.manifestPath(n)); err != nil {
			return expired, err
		}
	}
	return expired, nil
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
