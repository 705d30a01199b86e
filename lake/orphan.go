package lake

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/flightd/flightd/lake/fileio"
)

// RemoveOrphanFiles deletes files of the table that no snapshot and no tag references and that
// were last modified before now-olderThan (olderThan 0 means one day; it must exceed the longest
// commit, whose new files are unreferenced until its snapshot appears): data files (and changelog
// or extra files) under the bucket directories, manifests and manifest lists under manifest/,
// index files under index/, and temporary files left in snapshot/ and schema/ by a crash. Files
// whose modification time is unknown are kept. Snapshots are read before the directories are
// listed, so a snapshot committed meanwhile only references files that are too new to remove or
// that were already live. It returns the number of files removed; tables with Java branches are
// refused (their snapshots share the data files).
func (t *Table) RemoveOrphanFiles(ctx context.Context, olderThan time.Duration, now time.Time) (removed int, err error) {
	if olderThan <= 0 {
		olderThan = 24 * time.Hour
	}
	if now.IsZero() {
		now = time.Now()
	}
	cutoff := now.Add(-olderThan)
	branches, err := t.hasBranches(ctx)
	if err != nil {
		return 0, err
	}
	if branches {
		return 0, fmt.Errorf("lake: %s: remove orphan files: tables with branches are not supported", t.FullName())
	}
	ids, err := t.snapshotIDs(ctx)
	if err != nil {
		return 0, err
	}
	c := newManifestCache(t)
	live := newFileSet()
	for _, id := range ids {
		s, err := t.Snapshot(ctx, id)
		if errors.Is(err, fs.ErrNotExist) {
			continue // expired meanwhile
		} else if err != nil {
			return 0, err
		}
		if err := c.addLive(ctx, s, live); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				if ok, xerr := t.fio.Exists(ctx, t.snapshotPath(id)); xerr == nil && !ok {
					continue // expired while we read it
				}
			}
			return 0, fmt.Errorf("lake: %s: snapshot %d: %w", t.FullName(), id, err)
		}
	}
	tags, err := t.tagSnapshots(ctx)
	if err != nil {
		return 0, err
	}
	for _, s := range tags {
		if err := c.addLive(ctx, s, live); err != nil {
			return 0, fmt.Errorf("lake: %s: tag of snapshot %d: %w", t.FullName(), s.ID, err)
		}
	}

	old := func(fi fileio.FileInfo) bool { return !fi.ModTime.IsZero() && fi.ModTime.Before(cutoff) }
	remove := func(p string) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := t.fio.Remove(ctx, p); err != nil {
			return fmt.Errorf("lake: %s: delete %s: %w", t.FullName(), p, err)
		}
		removed++
		return nil
	}
	// manifest/ and index/
	for _, d := range []struct {
		dir  string
		live map[string]bool
	}{{"manifest", live.manifests}, {"index", live.index}} {
		dir := filepath.Join(t.path, d.dir)
		ents, err := t.fio.List(ctx, dir)
		if err != nil {
			return removed, err
		}
		for _, e := range ents {
			if !e.IsDir && !d.live[e.Name] && old(e) {
				if err := remove(filepath.Join(dir, e.Name)); err != nil {
					return removed, err
				}
			}
		}
	}
	// temporary files of a crashed atomic write
	for _, d := range []string{"snapshot", "schema"} {
		dir := filepath.Join(t.path, d)
		ents, err := t.fio.List(ctx, dir)
		if err != nil {
			return removed, err
		}
		for _, e := range ents {
			if !e.IsDir && strings.HasPrefix(e.Name, ".") && strings.HasSuffix(e.Name, ".tmp") && old(e) {
				if err := remove(filepath.Join(dir, e.Name)); err != nil {
					return removed, err
				}
			}
		}
	}
	// data: [k=v/...]bucket-N/ directories
	var walk func(dir string, depth int) error
	walk = func(dir string, depth int) error {
		ents, err := t.fio.List(ctx, dir)
		if err != nil {
			return err
		}
		for _, e := range ents {
			p := filepath.Join(dir, e.Name)
			switch {
			case e.IsDir && strings.HasPrefix(e.Name, "bucket-"):
				files, err := t.fio.List(ctx, p)
				if err != nil {
					return err
				}
				for _, f := range files {
					fp := filepath.Join(p, f.Name)
					if !f.IsDir && !live.data[fp] && !live.dataNames[f.Name] && old(f) {
						if err := remove(fp); err != nil {
							return err
						}
					}
				}
			case e.IsDir && strings.Contains(e.Name, "=") && depth < len(t.schema.PartitionKeys):
				if err := walk(p, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(t.path, 0); err != nil {
		return removed, err
	}
	return removed, nil
}
