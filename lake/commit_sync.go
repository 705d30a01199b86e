package lake

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/flightd/flightd/lake/fileio"
	"github.com/flightd/flightd/lake/manifest"
	"github.com/flightd/flightd/lake/paimontype"
)

// The syncs of a commit (see the package doc on power loss): the files a snapshot names are
// made durable under their names before it is published, and the snapshot right after.

// commitDirs are the directories whose entries must be durable before a snapshot that adds the
// given entries is published: the bucket directory of every added data file (and its extra
// files) and the manifest directory. Their parents were synced when they were created.
func (t *Table) commitDirs(entries []manifest.Entry) (map[string]bool, error) {
	dirs := map[string]bool{filepath.Join(t.path, "manifest"): true}
	ts := t.schema
	types := make([]paimontype.DataType, len(ts.PartitionKeys))
	for i, pk := range ts.PartitionKeys {
		types[i] = ts.Fields[ts.FieldIndex(pk)].Type
	}
	seen := map[string]bool{}
	for i := range entries {
		e := &entries[i]
		if e.Kind != manifest.FileKindAdd || (e.File.ExternalPath != nil && *e.File.ExternalPath != "") {
			continue
		}
		k := string(e.Partition) + "/" + strconv.Itoa(int(e.Bucket))
		if seen[k] {
			continue
		}
		seen[k] = true
		_, row, err := manifest.DeserializeBinaryRow(e.Partition)
		if err != nil {
			return nil, err
		}
		vals, err := manifest.DecodeBinaryRow(types, row)
		if err != nil {
			return nil, err
		}
		dirs[t.bucketDir(types, vals, e.Bucket)] = true
	}
	return dirs, nil
}

// syncBeforePublish makes the files a snapshot will name durable under their names: their
// contents were synced when they were closed or created, their directories are synced here,
// once each.
func (t *Table) syncBeforePublish(ctx context.Context, entries []manifest.Entry) error {
	dirs, err := t.commitDirs(entries)
	if err != nil {
		return fmt.Errorf("lake: %s: %w", t.FullName(), err)
	}
	if err := fileio.SyncDirs(ctx, t.fio, dirs); err != nil {
		return fmt.Errorf("lake: %s: sync before commit: %w", t.FullName(), err)
	}
	return nil
}

// errPublishedNotSynced: the snapshot was created, visible to readers, but its directory could
// not be synced. Nothing it names may be removed.
var errPublishedNotSynced = errors.New("created but not synced")

// syncPublished makes snapshot-id durable once it was created. If that fails the snapshot is
// visible but may not survive a power cut: the commit fails, but the files it names stay
// (*written is cleared), since readers may already use them.
func (t *Table) syncPublished(ctx context.Context, id int64, written *[]string) error {
	if err := t.fio.SyncDir(ctx, t.snapshotDir()); err != nil {
		*written = nil
		return fmt.Errorf("lake: %s: snapshot %d %w: %w", t.FullName(), id, errPublishedNotSynced, err)
	}
	return nil
}
